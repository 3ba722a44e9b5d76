"""Hand-written conversations for bench/summary_retention.py: what a rolling summary must
keep besides names and numbers (docs/performance.md, "Rolling summary: constraints,
corrections, tool results").

Four planning conversations in four domains (a wedding, a family's care, a software
project, a holiday), each folded at ``autoCompactThreshold`` THRESHOLD through /v1, with
what its final summary must show:

- ``rules``: constraints said once early on (an allergy, a medicine, "no ... please", a
  hard budget, a deadline, about the user or people they name), each a user message;
  kept when the final summary has the sentence;
- ``changed``: statements a later message of the same thread corrects ("Scratch that,
  ...", "The airline rescheduled us: ..."); one stays current when the final summary
  has it without the summariser's mark (memoryapp.llm.summary_changes.CHANGED_MARK);
- ``corrections``: the correcting sentences; kept when the final summary has them;
- ``tool facts``: values from a ``tool`` message (a client's tool result) the
  conversation goes on from; kept when the final summary has them.

Written for the bench, not taken from any test: the cases a summariser is tuned on
are elsewhere (tests/test_summary_*.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Small, as a chat agent's thread may set it: every case folds several times.
THRESHOLD = 6


@dataclass(frozen=True)
class Case:
    """One conversation and what its final summary must show (module docstring)."""

    name: str
    turns: list[tuple[str, str]]
    rules: list[str]
    changed: list[str] = field(default_factory=list)
    corrections: list[str] = field(default_factory=list)
    tool_facts: list[str] = field(default_factory=list)


WEDDING = Case(
    name="wedding",
    turns=[
        ("user", "We're getting married next summer and I need help planning the catering."),
        ("assistant", "Congratulations! How many guests are you expecting, and where is it?"),
        ("user", "About 110 guests at Oakridge Barn near Harrogate."),
        ("user", "My mother-in-law Helen is severely allergic to tree nuts, so nothing with almonds or walnuts please."),
        ("assistant", "Understood. Do you have a style in mind: plated, buffet or family style?"),
        ("user", "Family style, with big sharing platters."),
        ("user", "We booked the venue for June 14th."),
        ("assistant", "June is lovely there. Shall I look at caterers from York and Leeds?"),
        ("user", "Yes please, and our total catering budget is $4,000, that's a hard limit."),
        ("assistant", "Thyme & Table in York does family style from $32 a head, Brassica in Leeds from $38."),
        ("user", "Thyme & Table sounds good, my cousin Dev used them for his birthday."),
        ("assistant", "Great. I'll ask them for a tasting menu with a summer theme."),
        ("tool", '{"venue": "Oakridge Barn", "capacity": 120, "date": "2027-06-21", "deposit_due": "2027-03-01", "price_usd": 2800, "url": "https://example.test/oakridge"}'),
        ("user", "Change of plan: the venue moved us to June 21st."),
        ("assistant", "Noted, June 21st at Oakridge Barn, with a $2,800 venue fee and the deposit due March 1."),
        ("user", "Our friend Zara is vegan, she'll need a proper main, not just salad."),
        ("assistant", "Thyme & Table do a roasted cauliflower with harissa and lentils."),
        ("user", "Perfect. The band is The Lanterns, they play from 8pm to midnight."),
        ("assistant", "Lovely. Late-night food around 10pm? Bacon rolls and fries are popular."),
        ("user", "Yes, bacon rolls and fries, plus a veggie option."),
        ("assistant", "Done. I'll draft the order for 110 plus 6 suppliers."),
        ("user", "The florist is Petal & Stem, Jo will bring the centrepieces at 2pm."),
        ("assistant", "Got it, Jo from Petal & Stem at 2pm."),
        ("user", "Thanks so much, this is really coming together!"),
        ("assistant", "It is! Anything else for today?"),
        ("user", "That's all for now, speak soon."),
    ],
    rules=[
        "My mother-in-law Helen is severely allergic to tree nuts, so nothing with almonds or walnuts please.",
        "Yes please, and our total catering budget is $4,000, that's a hard limit.",
        "Our friend Zara is vegan, she'll need a proper main, not just salad.",
    ],
    changed=["We booked the venue for June 14th."],
    corrections=["Change of plan: the venue moved us to June 21st."],
    tool_facts=["Oakridge Barn", "2027-06-21", "2027-03-01"],
)

CARE = Case(
    name="care",
    turns=[
        ("user", "Can you help me organise the family's appointments this autumn?"),
        ("assistant", "Of course. Who is on the list?"),
        ("user", "Me, my son Eli who is 9, and my dad Walter."),
        ("user", "I take warfarin, so never suggest aspirin or ibuprofen for my headaches."),
        ("assistant", "Noted. What does Eli need?"),
        ("user", "Eli has asthma and can't be around cigarette smoke, so no smoking areas anywhere."),
        ("assistant", "Understood. Any regular appointments already?"),
        ("user", "My physio is on Tuesdays at 5pm with Dr. Amara Osei."),
        ("user", "I can only do appointments after 4pm on weekdays because of work."),
        ("assistant", "Got it. Walter's check-ups: where does he go?"),
        ("user", "Walter goes to the Millbrook surgery, Dr. Patel, every 3 months."),
        ("tool", "Pharmacy lookup: Greenway Pharmacy, 14 Elm Street, open until 9pm, has paracetamol 500mg in stock."),
        ("assistant", "Greenway Pharmacy on Elm Street is open until 9pm and has paracetamol."),
        ("user", "Actually the physio is now on Thursdays at 5:30pm, she changed her hours."),
        ("assistant", "Thursdays at 5:30pm with Dr. Osei, noted."),
        ("user", "Eli's inhaler review is due in October."),
        ("assistant", "Shall I book it for an afternoon after 4pm?"),
        ("user", "Yes, any Wednesday works."),
        ("assistant", "I found Wednesday 15 October at 4:20pm at the Millbrook surgery."),
        ("user", "Great, book it."),
        ("assistant", "Booked. Reference MB-2291."),
        ("user", "Thanks! We also have the school play on 23 October."),
        ("assistant", "Lovely, I'll keep that evening free."),
        ("user", "Perfect, that's everything."),
        ("assistant", "You're welcome, take care."),
        ("user", "Bye for now."),
    ],
    rules=[
        "I take warfarin, so never suggest aspirin or ibuprofen for my headaches.",
        "Eli has asthma and can't be around cigarette smoke, so no smoking areas anywhere.",
        "I can only do appointments after 4pm on weekdays because of work.",
    ],
    changed=["My physio is on Tuesdays at 5pm with Dr. Amara Osei."],
    corrections=["Actually the physio is now on Thursdays at 5:30pm, she changed her hours."],
    tool_facts=["Greenway Pharmacy", "14 Elm Street", "9pm"],
)

PROJECT = Case(
    name="project",
    turns=[
        ("user", "I'm leading a small team building a booking app for Northwind Clinics."),
        ("assistant", "Sounds great. What's the stack?"),
        ("user", "Django on the backend and React on the front."),
        ("user", "The demo for Northwind has to be ready by March 3."),
        ("assistant", "That's tight. How many people on the team?"),
        ("user", "Four: me, Ingrid, Tomas and Wei."),
        ("user", "Don't use any GPL libraries, legal won't allow it."),
        ("assistant", "Understood, MIT, BSD and Apache 2.0 only then."),
        ("user", "We're deploying on Postgres 14 on AWS."),
        ("assistant", "RDS or self-managed?"),
        ("user", "RDS, and keep the AWS bill under $300 a month."),
        ("assistant", "A db.t4g.medium with 100 GB fits that with room for the app servers."),
        ("user", "Scratch that, we're switching to Postgres 16 instead."),
        ("assistant", "Postgres 16 on RDS works the same, and you get better logical replication."),
        ("tool", '{"build": "passed", "tests": 412, "failed": 0, "coverage": "87%", "commit": "a1b2c3d", "request_id": "req-77"}'),
        ("assistant", "The build is green."),
        ("user", "Ingrid is doing the calendar sync with Google and Outlook."),
        ("assistant", "Good. Tomas on payments?"),
        ("user", "Yes, Tomas is on Stripe, Wei on the admin dashboard."),
        ("assistant", "Shall I draft a sprint plan for the next 2 weeks?"),
        ("user", "Please do, with the demo as the milestone."),
        ("assistant", "Drafted: sprint 1 auth and booking, sprint 2 payments and admin."),
        ("user", "Looks right to me."),
        ("assistant", "Great, I'll share it with the team."),
        ("user", "Thanks, talk tomorrow."),
        ("assistant", "Talk tomorrow!"),
    ],
    rules=[
        "The demo for Northwind has to be ready by March 3.",
        "Don't use any GPL libraries, legal won't allow it.",
        "RDS, and keep the AWS bill under $300 a month.",
    ],
    changed=["We're deploying on Postgres 14 on AWS."],
    corrections=["Scratch that, we're switching to Postgres 16 instead."],
    tool_facts=["412", "87%", "a1b2c3d"],
)

HOLIDAY = Case(
    name="holiday",
    turns=[
        ("user", "We're planning two weeks in Portugal with the kids this August."),
        ("assistant", "Lovely! How old are the kids?"),
        ("user", "Mia is 7 and Noah is 2."),
        ("user", "Mia gets motion sick, so no long boat trips please."),
        ("assistant", "Noted. Where would you like to start?"),
        ("user", "Lisbon, then the Algarve."),
        ("user", "Noah is only 2, so we need a cot in every hotel."),
        ("assistant", "I'll filter for family rooms with cots."),
        ("user", "We fly out of Manchester on August 2nd."),
        ("assistant", "Great. How about Alfama for the Lisbon part?"),
        ("user", "Alfama sounds charming but hilly with a buggy."),
        ("assistant", "Then Baixa or Chiado are flatter and close to the trams."),
        ("tool", '{"hotel": "Casa Azul", "city": "Lisbon", "nights": 5, "cot_available": true, "price_per_night_eur": 145}'),
        ("assistant", "Casa Azul in Lisbon has a cot."),
        ("user", "The airline rescheduled us: we now fly out on August 4th."),
        ("assistant", "No problem, I'll shift the first night to August 4th."),
        ("user", "We must be back home by August 20 for school."),
        ("assistant", "So a return flight on August 19 or 20 from Faro."),
        ("user", "Faro on the 19th is better."),
        ("assistant", "In the Algarve, Lagos and Tavira both have calm beaches."),
        ("user", "Tavira, the kids love the little train to the beach there."),
        ("assistant", "The Ilha de Tavira train runs every 15 minutes in summer."),
        ("user", "Fantastic, thank you!"),
        ("assistant", "Anything else?"),
        ("user", "No, that's plenty for today."),
        ("assistant", "Enjoy the planning!"),
    ],
    rules=[
        "Mia gets motion sick, so no long boat trips please.",
        "Noah is only 2, so we need a cot in every hotel.",
        "We must be back home by August 20 for school.",
    ],
    changed=["We fly out of Manchester on August 2nd."],
    corrections=["The airline rescheduled us: we now fly out on August 4th."],
    tool_facts=["Casa Azul", "145"],
)

CASES = [WEDDING, CARE, PROJECT, HOLIDAY]

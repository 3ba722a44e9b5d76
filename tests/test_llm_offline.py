"""The offline adapter's extractive summary (memoryapp/llm/offline.py).

DESIGN.md section 7 ("offline: deterministic, no network: an extractive summary") and
section 6 items 3 and 11 (a rolling run folds the previous summary in; budgets are counted
by memoryapp.tokens).
"""

from __future__ import annotations

import re

import pytest
from django.conf import settings

from memoryapp.llm.offline import SUMMARY_HEADER, OfflineModel, extractive_summary
from memoryapp.llm.port import Summary, TranscriptMessage, Usage
from memoryapp.tokens import count_tokens

CONVERSATION = [
    ("user", "Hi there!"),
    ("assistant", "Hello! How can I help you today?"),
    ("user", "I'm Priya Raman and I'm looking for a family car."),
    ("assistant", "Happy to help. What is your budget?"),
    ("user", "My budget is $30,000, and we have two kids."),
    ("assistant", "Do you prefer a hybrid or a petrol car?"),
    ("user", "Thanks. I prefer a hybrid because I commute 60 km a day."),
    ("assistant", "The Toyota Corolla Hybrid is a great fit."),
    ("user", "Ok."),
    ("user", "We decided on the Corolla Hybrid after talking it over."),
    ("assistant", "Great, thanks!"),
    ("user", "I booked a test drive at Lyon Motors for March 3, 2026 at 10:30."),
    ("user", "Should I bring anything to the test drive?"),
    ("assistant", "Bring your driving licence and proof of insurance."),
    ("user", "Can my wife Ana drive it too?"),
    ("assistant", "Yes, both drivers should bring a licence."),
    ("user", "Bye"),
]
MESSAGES = [
    TranscriptMessage(i, role, content) for i, (role, content) in enumerate(CONVERSATION, start=1)
]

KEY_LINES = [
    "- user: I'm Priya Raman and I'm looking for a family car.",
    "- user: My budget is $30,000, and we have two kids.",
    "- user: I prefer a hybrid because I commute 60 km a day.",
    "- user: We decided on the Corolla Hybrid after talking it over.",
    "- user: I booked a test drive at Lyon Motors for March 3, 2026 at 10:30.",
    "- user: Can my wife Ana drive it too?",
]
CHATTER = ["Hi there", "Hello!", "Happy to help", "Thanks.", "Ok.", "Great, thanks", "Bye"]


def summary_lines(text: str) -> list[str]:
    return text.splitlines()


def test_it_keeps_names_numbers_dates_decisions_and_questions_in_order() -> None:
    text = extractive_summary(previous_summary=None, messages=MESSAGES, max_tokens=1024)

    lines = summary_lines(text)
    assert lines[0] == SUMMARY_HEADER
    assert [line for line in lines if line in KEY_LINES] == KEY_LINES
    assert "- assistant: The Toyota Corolla Hybrid is a great fit." in lines
    # The assistant's answer is kept, not its questions the user's lines answer already.
    assert "- assistant: Bring your driving licence and proof of insurance." in lines
    assert "- assistant: What is your budget?" not in lines


def test_it_leaves_out_chatter() -> None:
    text = extractive_summary(previous_summary=None, messages=MESSAGES, max_tokens=1024)

    for chatter in CHATTER:
        assert not any(line.split(": ", 1)[-1].startswith(chatter) for line in summary_lines(text))
    # Shorter than the 158 tokens it replaced, so the less informative lines go.
    assert len(summary_lines(text)) == 1 + 9


def test_it_keeps_the_most_informative_lines_when_the_budget_is_tight() -> None:
    text = extractive_summary(previous_summary=None, messages=MESSAGES, max_tokens=60)

    lines = summary_lines(text)
    assert count_tokens(text) <= 60
    assert "- user: I booked a test drive at Lyon Motors for March 3, 2026 at 10:30." in lines
    assert "- assistant: Bring your driving licence and proof of insurance." not in lines
    assert len(lines) < 1 + 12


def test_it_carries_the_previous_summary_forward_before_the_new_lines() -> None:
    first = extractive_summary(previous_summary=None, messages=MESSAGES[:9], max_tokens=1024)
    second = extractive_summary(previous_summary=first, messages=MESSAGES[9:], max_tokens=1024)

    carried = summary_lines(first)[1:]
    lines = summary_lines(second)
    assert carried  # the first half has content worth keeping
    assert lines.count(SUMMARY_HEADER) == 1
    assert lines[1 : 1 + len(carried)] == carried
    assert lines[1 + len(carried) :] == [
        "- user: We decided on the Corolla Hybrid after talking it over.",
        "- user: I booked a test drive at Lyon Motors for March 3, 2026 at 10:30.",
        "- assistant: Bring your driving licence and proof of insurance.",
        "- user: Can my wife Ana drive it too?",
    ]


def test_it_splits_a_prose_previous_summary_into_lines() -> None:
    previous = "The user is Priya Raman. She lives in Lyon and works at Airbus since 2019."

    text = extractive_summary(previous_summary=previous, messages=[MESSAGES[4]], max_tokens=1024)

    # No room for the header nor the first sentence: shorter than the 29 tokens replaced.
    assert summary_lines(text) == [
        "- She lives in Lyon and works at Airbus since 2019.",
        "- user: My budget is $30,000, and we have two kids.",
    ]


def test_it_keeps_room_for_new_messages_when_the_previous_summary_fills_the_budget() -> None:
    previous = "\n".join(
        f"- user: On May {day}, 2025 Priya paid invoice {day} of $1,{day:03d} to Lyon Motors."
        for day in range(1, 29)
    )
    new = [TranscriptMessage(40, "user", "I want to sell the old car soon.")]

    text = extractive_summary(previous_summary=previous, messages=new, max_tokens=150)

    assert count_tokens(text) <= 150
    assert summary_lines(text)[-1] == "- user: I want to sell the old car soon."
    assert sum(line.startswith("- user: On May") for line in summary_lines(text)) >= 3


def test_it_writes_a_repeated_sentence_once() -> None:
    repeated = "My flight to Oslo is on Friday at 09:15."
    messages = [
        TranscriptMessage(1, "user", repeated),
        TranscriptMessage(2, "user", repeated),
        TranscriptMessage(3, "user", "  my flight to  Oslo is on Friday at 09:15."),
    ]
    previous = f"- user: {repeated}"

    text = extractive_summary(previous_summary=previous, messages=messages, max_tokens=200)

    assert summary_lines(text) == [SUMMARY_HEADER, f"- user: {repeated}"]


def _huge_conversation() -> list[TranscriptMessage]:
    return [
        TranscriptMessage(
            i,
            "user" if i % 2 else "assistant",
            f"Order {i} for Priya ships to Lyon on May {i % 28 + 1}, 2026. "
            f"I decided to pay ${i * 7}. Is the tracking code TRK{i:05d} right?",
        )
        for i in range(1, 2001)
    ]


@pytest.mark.parametrize("max_tokens", [1, 2, 5, 17, 32, 33, 100, 1024, 4000])
def test_it_never_exceeds_the_budget_for_a_huge_conversation(max_tokens: int) -> None:
    text = extractive_summary(
        previous_summary=None, messages=_huge_conversation(), max_tokens=max_tokens
    )

    assert 0 < count_tokens(text) <= max_tokens
    if max_tokens >= 100:
        assert summary_lines(text)[0] == SUMMARY_HEADER


@pytest.mark.parametrize(
    "content",
    [
        "x" * (1024 * 1024),  # one mebibyte without a sentence break
        "Contract signed. " * 60_000,
        "東京で3月3日に会議があります。🚗🚗🚗 " * 20_000,
        ("Supercalifragilisticexpialidocious" * 40 + " ") * 50,
    ],
    ids=["no-breaks", "many-short", "cjk-emoji", "long-words"],
)
@pytest.mark.parametrize("max_tokens", [1, 3, 40, 1024])
def test_it_never_exceeds_the_budget_for_huge_messages(content: str, max_tokens: int) -> None:
    previous = "- user: " + "Earlier note with 12 numbers and Names Here. " * 200

    text = extractive_summary(
        previous_summary=previous,
        messages=[TranscriptMessage(1, "user", content)],
        max_tokens=max_tokens,
    )

    assert 0 < count_tokens(text) <= max_tokens


def test_it_is_deterministic() -> None:
    model = OfflineModel()
    previous = extractive_summary(previous_summary=None, messages=MESSAGES[:5], max_tokens=80)

    runs = [
        model.summarize(previous_summary=previous, messages=MESSAGES[5:], max_tokens=90)
        for _ in range(3)
    ]
    other = OfflineModel().summarize(
        previous_summary=previous, messages=MESSAGES[5:], max_tokens=90
    )

    assert runs[0] == runs[1] == runs[2] == other


def test_it_reports_the_summary_with_its_usage() -> None:
    previous = "- user: I live in Lyon since 2019."

    summary = OfflineModel().summarize(
        previous_summary=previous, messages=MESSAGES, max_tokens=1024
    )

    assert summary == Summary(
        text=summary.text,
        model="offline-extractive",
        usage=Usage(
            input_tokens=sum(count_tokens(m.content) for m in MESSAGES) + count_tokens(previous),
            output_tokens=count_tokens(summary.text),
        ),
    )
    assert summary_lines(summary.text)[1] == "- user: I live in Lyon since 2019."


def messages_of(turns: list[tuple[str, str]], start: int = 1) -> list[TranscriptMessage]:
    return [TranscriptMessage(i, role, text) for i, (role, text) in enumerate(turns, start=start)]


def test_it_keeps_each_short_answer_with_the_question_it_answers() -> None:
    messages = messages_of(
        [
            ("user", "My name?"),
            ("assistant", "What is your name?"),
            ("user", "Alice."),
            ("assistant", "Which day suits you?"),
            ("user", "Tuesday"),
            ("assistant", "Which colour?"),
            ("user", "Blue, please."),
            ("user", "Yes, book it."),
        ]
    )

    text = extractive_summary(previous_summary=None, messages=messages, max_tokens=1024)

    # Only what fits in fewer tokens than the messages had; a pair stays one line.
    assert summary_lines(text) == [
        "- user: My name?",
        "- assistant: Which day suits you? → user: Tuesday",
        "- user: Yes, book it.",
    ]


def test_it_scores_a_question_and_its_answer_above_chatter_when_the_budget_is_tight() -> None:
    messages = messages_of(
        [
            ("assistant", "Which day suits you?"),
            ("user", "Tuesday"),
            ("assistant", "That sounds like a really nice plan for the family."),
            ("user", "It really does sound nice."),
        ]
    )
    pair = "- assistant: Which day suits you? → user: Tuesday"

    # Room for that line (and its newline) alone.
    max_tokens = count_tokens(pair) + 1

    text = extractive_summary(previous_summary=None, messages=messages, max_tokens=max_tokens)

    assert text == pair


def test_it_keeps_a_yes_or_no_answer_to_a_yes_no_question_but_not_small_talk() -> None:
    messages = messages_of(
        [
            ("assistant", "Shall I book the table for Friday?"),
            ("user", "Yes."),
            ("assistant", "Do you need parking?"),
            ("user", "No."),
            ("assistant", "How are you?"),
            ("user", "Good, thanks."),
        ]
    )

    text = extractive_summary(previous_summary=None, messages=messages, max_tokens=1024)

    assert summary_lines(text) == ["- assistant: Shall I book the table for Friday? → user: Yes."]


def test_it_carries_a_question_and_its_answer_as_one_line() -> None:
    question = "Which of the " + "very " * 74 + "long options?"
    first = extractive_summary(
        previous_summary=None,
        messages=messages_of(
            [("assistant", question), ("user", "Option 3."), ("assistant", "Great, thanks! " * 8)]
        ),
        max_tokens=1024,
    )

    second = extractive_summary(
        previous_summary=first,
        messages=messages_of(
            [
                (
                    "user",
                    "I fly to Oslo on Friday with my sister Ana and her two kids, Leo and Mia. Great, thanks a lot! Great, thanks a lot!",
                )
            ],
            start=3,
        ),
        max_tokens=1024,
    )

    assert len(question) > 380
    assert summary_lines(second) == [
        SUMMARY_HEADER,
        f"- assistant: {question} → user: Option 3.",
        "- user: I fly to Oslo on Friday with my sister Ana and her two kids, Leo and Mia.",
    ]


MSG_LINES = [f"- {'user' if i % 2 else 'assistant'}: msg {i}" for i in range(1, 19)]


def test_it_keeps_short_messages_that_carry_a_number_run_after_run() -> None:
    messages = messages_of([("user" if i % 2 else "assistant", f"msg {i}") for i in range(1, 19)])

    first = extractive_summary(previous_summary=None, messages=messages[:9], max_tokens=1024)
    second = extractive_summary(previous_summary=first, messages=messages[9:], max_tokens=1024)

    # Each summary is shorter than what it replaced (18 tokens, then 12 + 27): the lines
    # with the most new numbers per token win (a "user" line costs a token less than an
    # "assistant" one), newer first on ties, carried and new alike.
    assert summary_lines(first) == [MSG_LINES[4], MSG_LINES[6], MSG_LINES[8]]
    assert summary_lines(second) == MSG_LINES[8:18:2]


CHATTER_ONLY = [
    ("user", "ok"),
    ("assistant", "hmm"),
    ("user", "lol"),
    ("assistant", "Great, thanks!"),
    ("user", "bye"),
]


def test_it_keeps_the_most_recent_lines_when_nothing_scores() -> None:
    messages = messages_of(CHATTER_ONLY)

    roomy = extractive_summary(previous_summary=None, messages=messages, max_tokens=1024)
    tight = extractive_summary(previous_summary=None, messages=messages, max_tokens=12)

    assert summary_lines(roomy) == ["- user: bye"]
    assert summary_lines(tight) == ["- user: bye"]


def test_it_keeps_the_most_recent_lines_after_the_carried_ones_when_nothing_scores() -> None:
    previous = "\n".join(
        [SUMMARY_HEADER]
        + [
            f"- user: On May {day}, 2025 Priya paid invoice {day} to Lyon Motors."
            for day in range(1, 21)
        ]
    )

    text = extractive_summary(
        previous_summary=previous, messages=messages_of(CHATTER_ONLY), max_tokens=120
    )

    lines = summary_lines(text)
    assert count_tokens(text) <= 120
    assert lines == [
        SUMMARY_HEADER,
        *(
            f"- user: On May {day}, 2025 Priya paid invoice {day} to Lyon Motors."
            for day in (6, 7, 8, 9)
        ),
        *(f"- {role}: {text}" for role, text in CHATTER_ONLY),
    ]


def test_it_prefers_a_line_with_a_new_name_to_one_repeating_names_it_kept() -> None:
    tail = " and walked around the old town for the whole afternoon."
    new_name = f"- user: Bruno visited Braga{tail}"
    repeated = f"- user: Ana moved to Porto{tail}"
    latest = f"- user: Ana stayed in Porto{tail}"
    # Chatter the summary drops, so the budget, not "shorter than what it replaced", binds.
    chatter = [("assistant", "Great, thanks! " * 12)]
    messages = messages_of(
        [("user", line.removeprefix("- user: ")) for line in (new_name, repeated, latest)] + chatter
    )
    max_tokens = count_tokens(SUMMARY_HEADER) + count_tokens(new_name) + count_tokens(latest) + 2

    text = extractive_summary(previous_summary=None, messages=messages, max_tokens=max_tokens)

    assert summary_lines(text) == [SUMMARY_HEADER, new_name, latest]


def test_it_prefers_a_line_with_a_new_number_to_one_repeating_a_number_it_kept() -> None:
    tail = " euros and came with a lovely view over the harbour from the deck."
    new_number = f"- user: The hotel room cost 180{tail}"
    repeated = f"- user: The train ticket cost 45{tail}"
    latest = f"- user: The ferry ticket cost 45{tail}"
    messages = messages_of(
        [("user", line.removeprefix("- user: ")) for line in (new_number, repeated, latest)]
    )
    max_tokens = count_tokens(SUMMARY_HEADER) + count_tokens(new_number) + count_tokens(latest) + 2

    text = extractive_summary(previous_summary=None, messages=messages, max_tokens=max_tokens)

    assert summary_lines(text) == [SUMMARY_HEADER, new_number, latest]


# A realistic chat: an assistant that talks at length, a user who states the facts.
MOVING_HOUSE = [
    ("user", "Hi! I need help planning our move from Leeds to Edinburgh."),
    (
        "assistant",
        "Of course, happy to help with that. Moving between cities takes a lot of coordination, so it helps to break the work into small steps and to tackle them one at a time. A simple checklist, kept somewhere everyone in the household can see it, usually does more good than any clever app. Start with the tasks that depend on other people, such as landlords, schools and utility companies, because those are the ones that take longest to sort out. What date are you aiming for?",
    ),
    ("user", "We want to move on Saturday 14 June."),
    (
        "assistant",
        "That gives you a good amount of time to prepare if you start soon. Most families find that the last fortnight is the busiest part, so anything you can settle early will take pressure off later, when the boxes start piling up in the hallway. How many people are moving?",
    ),
    ("user", "Four."),
    ("assistant", "Thanks. Who is moving with you?"),
    ("user", "My wife Hannah and our two sons, Oliver and Finn."),
    (
        "assistant",
        "Lovely. Moving with children can be stressful, but keeping them involved in the process usually makes it easier for everyone and helps them feel settled in the new place much sooner. Letting them pack a small box of their own favourite things, and carry it themselves on the day, is a simple way to give them a sense of control. It also helps to visit the new neighbourhood together before the move, so that the parks, shops and the route to school already feel a little familiar.",
    ),
    ("user", "Oliver starts at Leith Academy in August."),
    ("assistant", "Which school will Finn go to?"),
    ("user", "Trinity Primary."),
    ("assistant", "Great, thanks!"),
    ("user", "We found a flat on Ferry Road for £1,450 a month."),
    (
        "assistant",
        "That sounds like a sensible choice for a family. It is worth reading the tenancy agreement carefully before you sign anything, and asking about anything that seems unclear to you. Take photos of every room when you get the keys, so that there is no argument about the condition of the place when you eventually leave. Keep copies of every email and receipt in one folder as well, since you may need them when the tenancy ends and the deposit is returned.",
    ),
    ("user", "The letting agent is Morgan Lettings."),
    ("assistant", "Did you pay the deposit yet?"),
    ("user", "Yes, £2,900 on 2 May."),
    ("assistant", "Good to have that done. Have you booked a removal company?"),
    ("user", "Not yet."),
    (
        "assistant",
        "It is usually a good idea to get several quotes, because prices vary a lot and the cheapest offer is not always the most reliable one when it comes to careful handling of furniture and boxes. Ask each company what their insurance covers, whether they charge extra for stairs, and how they deal with delays on the road. A short video call, where you walk them through each room, gives a much more accurate quote than a rough estimate of the number of boxes.",
    ),
    ("user", "Highland Removals quoted £1,200 and Swift Vans quoted £950."),
    ("assistant", "Which one do you prefer?"),
    ("user", "Highland Removals, they have better reviews."),
    ("assistant", "Sounds good."),
    ("user", "Their van arrives at 8:30 on the day."),
    (
        "assistant",
        "Make sure everything is packed and labelled the night before, so that the crew can load the van quickly and nothing important gets left behind in the rush of the morning. Keep a separate bag with chargers, documents, medicines and a change of clothes for everyone, and travel with it yourself rather than putting it in the van.",
    ),
    ("user", "Ok."),
    ("user", "What about the internet at the new flat?"),
    (
        "assistant",
        "It is worth arranging the broadband early, because installation slots can fill up weeks in advance and it is frustrating to be without a connection while you are trying to settle in. In the meantime, a mobile hotspot can cover the basics, although it will not be quick enough for everyone at once. Remember to cancel or transfer the contract at the old address too, so that you are not paying for two connections at the same time.",
    ),
    ("user", "I ordered fibre from Vodafone, installation on 16 June."),
    ("assistant", "Perfect. Is there anything else you are worried about?"),
    ("user", "Our cat Pepper hates car journeys."),
    (
        "assistant",
        "Many cats find travel stressful, so it helps to keep them in a familiar carrier with a blanket that smells of home, and to keep the car calm and quiet for the whole of the journey. When you arrive, give the cat one quiet room with food, water and a litter tray, and let it explore the rest of the home gradually over a few days.",
    ),
    ("user", "The vet, Dr Patel, suggested a mild sedative."),
    ("assistant", "How long is the drive?"),
    ("user", "About 4 hours."),
    (
        "assistant",
        "That is manageable with a couple of short breaks along the way, and it gives everyone a chance to stretch their legs, have something to eat and get some fresh air. Children usually cope much better with a long car journey when they know in advance roughly when the next stop will be. Plan the stops before you leave, so that nobody has to make decisions while tired and hungry in the middle of the motorway.",
    ),
    ("user", "Thanks, that helps a lot."),
    ("assistant", "You're welcome. Good luck with the move!"),
    ("user", "Bye!"),
]

MOVING_HOUSE_FACTS = [
    "Leeds",
    "Edinburgh",
    "Saturday 14 June",
    "Four",
    "Hannah",
    "Oliver",
    "Finn",
    "Leith Academy",
    "August",
    "Trinity Primary",
    "Ferry Road",
    "£1,450",
    "Morgan Lettings",
    "£2,900",
    "2 May",
    "Highland Removals",
    "£1,200",
    "Swift Vans",
    "£950",
    "8:30",
    "Vodafone",
    "16 June",
    "Pepper",
    "Dr Patel",
    "4 hours",
]


def test_it_keeps_every_name_number_and_date_of_a_long_conversation_at_the_default_budget() -> None:
    messages = messages_of(MOVING_HOUSE)
    budget = int(settings.MEMORY_SUMMARY_MAX_TOKENS)
    # Every word of the conversation that is capitalised mid-sentence or has a digit.
    stated = {
        word.strip(".,!?")
        for _, text in MOVING_HOUSE
        for sentence in re.split(r"(?<=[.!?])\s+", text)
        for word in sentence.split()[1:]
        if word[0].isupper() or any(ch.isdigit() for ch in word)
    }

    at_once = extractive_summary(previous_summary=None, messages=messages, max_tokens=budget)
    # As auto-compaction at threshold 30 folds it: 1-29, then the rest on top.
    rolled = extractive_summary(
        previous_summary=extractive_summary(
            previous_summary=None, messages=messages[:29], max_tokens=budget
        ),
        messages=messages[29:],
        max_tokens=budget,
    )

    assert len(messages) == 40 and budget == 1024
    # The conversation does not fit, so the summary had to choose.
    assert sum(count_tokens(f"- {m.role}: {m.content}") for m in messages) > budget + 200
    assert stated <= {w for fact in MOVING_HOUSE_FACTS for w in fact.split()}
    for text in (at_once, rolled):
        assert count_tokens(text) <= budget
        missing = [fact for fact in MOVING_HOUSE_FACTS if fact not in text]
        assert missing == []
        for chatter in ("Great, thanks!", "Sounds good.", "- user: Ok.", "You're welcome", "Bye!"):
            assert chatter not in text


# --- tool use ------------------------------------------------------------------------------

from memoryapp.llm.port import ChatMessage, ToolCall, ToolResult, ToolSpec  # noqa: E402

OPEN = ToolSpec(name="open_memory", description="Open a note.", parameters={"type": "object"})


def test_it_calls_the_offered_tools_the_user_names() -> None:
    message = ChatMessage("user", 'Please\n/open_memory {"name": "car"}\n/unknown {"a": 1}')

    chunks = list(OfflineModel().reply(system_instruction="", messages=[message], tools=[OPEN]))

    assert [c.tool_calls for c in chunks] == [
        (ToolCall(name="open_memory", arguments={"name": "car"}, call_id="offline-1"),),
        (),
    ]
    assert (chunks[-1].done, "".join(c.text for c in chunks)) == (True, "")


def test_it_reports_a_tool_result() -> None:
    messages = [
        ChatMessage("user", '/open_memory {"name": "car"}'),
        ChatMessage("assistant", tool_calls=(ToolCall("open_memory", {"name": "car"}),)),
        ChatMessage("tool", tool_result=ToolResult("open_memory", "Honda Civic")),
    ]

    chunks = list(OfflineModel().reply(system_instruction="", messages=messages, tools=[OPEN]))

    assert "".join(c.text for c in chunks) == "[offline model] open_memory answered: Honda Civic"


def test_it_calls_no_tool_when_none_is_offered() -> None:
    message = ChatMessage("user", '/open_memory {"name": "car"}')

    chunks = list(OfflineModel().reply(system_instruction="", messages=[message]))

    assert [c.tool_calls for c in chunks if c.tool_calls] == []


# --- issue 10 item 3: what the summary folds and how long it may be -------------------------


def test_it_never_folds_its_own_replies_or_quotes() -> None:
    messages = messages_of(
        [
            ("user", "Our budget is $4,000 and we fly to Lisbon on May 12."),
            (
                "assistant",
                "[offline model] No language model is set up (no GEMINI_API_KEY), so I answer"
                " from memory.\nFrom memory:\n> Our budget is $4,000 (recent user message)",
            ),
            ("user", "> Our budget is $4,000\nAnd Marta Silva joins us on Friday."),
            ("assistant", "Our budget is $4,000 and we fly to Lisbon on May 12. Noted!"),
        ]
    )

    text = extractive_summary(previous_summary=None, messages=messages, max_tokens=1024)

    assert summary_lines(text) == [
        SUMMARY_HEADER,
        "- user: Our budget is $4,000 and we fly to Lisbon on May 12.",
        "- user: And Marta Silva joins us on Friday.",
    ]


def test_it_keeps_a_sentence_with_a_title_or_initial_as_one_bullet() -> None:
    messages = messages_of(
        [("user", "I saw Dr. Jones and J. Smith on Monday about the 3 tickets. Ok, thanks!")]
    )

    text = extractive_summary(previous_summary=None, messages=messages, max_tokens=1024)

    assert summary_lines(text) == [
        "- user: I saw Dr. Jones and J. Smith on Monday about the 3 tickets."
    ]


def test_it_carries_a_long_bullet_whole() -> None:
    bullet = "- user: " + "We met Ana. " * 30 + "She paid 40 euros."
    new = messages_of([("user", "I fly to Oslo on Friday with Leo, Mia and Ana at 9:30. " * 3)])

    text = extractive_summary(previous_summary=bullet, messages=new, max_tokens=1024)

    assert bullet in summary_lines(text)


@pytest.mark.parametrize("size", [1, 3, 9, 17])
def test_it_is_always_shorter_than_what_it_replaced(size: int) -> None:
    previous = extractive_summary(previous_summary=None, messages=MESSAGES[:size], max_tokens=1024)
    replaced = count_tokens(previous) + sum(count_tokens(m.content) for m in MESSAGES[size:])

    text = extractive_summary(previous_summary=previous, messages=MESSAGES[size:], max_tokens=1024)

    assert count_tokens(text) < replaced
    assert count_tokens(text) <= 1024


def test_it_states_the_names_and_numbers_in_sentences_not_in_a_bare_list() -> None:
    messages = messages_of(
        [
            ("user", f"On day {day} I met {name} at the market and we talked for a while.")
            for day, name in zip(range(1, 41), ["Ana", "Bruno", "Carla", "Diego"] * 10, strict=True)
        ]
    )

    text = extractive_summary(previous_summary=None, messages=messages, max_tokens=200)

    # Each line adds a name or a day no kept line states; "Ana" costs a token less than
    # the other names, so her lines win the ties on new terms per token.
    days = [13, 17, 21, 25, 29, 33, 37, 38, 39, 40]
    names = {day: ["Ana", "Bruno", "Carla", "Diego"][(day - 1) % 4] for day in days}
    assert summary_lines(text) == [
        SUMMARY_HEADER,
        *(
            f"- user: On day {d} I met {names[d]} at the market and we talked for a while."
            for d in days
        ),
    ]
    assert count_tokens(text) <= 200


# --- greedy coverage: the lines that state the most names and numbers not yet kept ----------

WEEKEND = messages_of(
    [
        (
            "user",
            "We are planning a long weekend away together with the whole family, and it should"
            " be relaxing for everyone, including Grandpa.",
        ),
        ("assistant", "Do you want to go to Porto or to Braga?"),
        ("user", "Porto, with Marta and Leo."),
        (
            "assistant",
            "Porto is lovely in spring and the old town along the river is wonderful for walks"
            " with Grandpa.",
        ),
        ("user", "The hotel costs 120 euros a night, 3 nights."),
        ("assistant", "That is a fair price for Porto."),
    ]
)
WEEKEND_PAIR = (
    "- assistant: Do you want to go to Porto or to Braga? → user: Porto, with Marta and Leo."
)
WEEKEND_HOTEL = "- user: The hotel costs 120 euros a night, 3 nights."


def test_it_chooses_the_lines_with_the_most_new_names_and_numbers_per_token() -> None:
    tight = extractive_summary(previous_summary=None, messages=WEEKEND, max_tokens=60)
    roomy = extractive_summary(previous_summary=None, messages=WEEKEND, max_tokens=100)

    # Tight: the pair (Porto, Braga, Marta, Leo) and the hotel (120, 3) first.
    assert summary_lines(tight) == [SUMMARY_HEADER, WEEKEND_PAIR, WEEKEND_HOTEL]
    # Roomy: "Grandpa" too, from the user's line that names him first (the assistant's
    # shorter line only echoes him) and states their plan.
    assert summary_lines(roomy) == [
        SUMMARY_HEADER,
        "- user: We are planning a long weekend away together with the whole family, and it"
        " should be relaxing for everyone, including Grandpa.",
        WEEKEND_PAIR,
        WEEKEND_HOTEL,
    ]
    assert (count_tokens(tight), count_tokens(roomy)) == (52, 85)


def test_it_carries_a_previous_bullet_for_its_names_but_not_a_bare_index_line() -> None:
    previous = f"{SUMMARY_HEADER}\n- user: My sister Ines lives in Faro.\n- Also mentioned: Zoe, 77"

    text = extractive_summary(previous_summary=previous, messages=WEEKEND, max_tokens=80)

    assert summary_lines(text) == [
        SUMMARY_HEADER,
        "- user: My sister Ines lives in Faro.",
        WEEKEND_PAIR,
        WEEKEND_HOTEL,
        "- assistant: That is a fair price for Porto.",
    ]


# --- the user's statements about themselves over small talk and tool traffic ---------------
# (memoryapp.llm.summary_info: content words count, the user's self-statements twice,
# greetings, echoes and tool calls and results nothing)

VEGETARIAN = "- user: I'm vegetarian, and my hobby is rock climbing."
PLEASANTRY = "- assistant: Nice to meet you, Alex!"


def test_compact_keeps_the_users_statement_not_the_pleasantry() -> None:
    """POST .../compact dropped the user's diet and hobby and kept the greeting."""
    messages = messages_of(
        [
            ("user", "Hi, I'm Alex."),
            ("assistant", "Nice to meet you, Alex!"),
            ("user", "I'm vegetarian, and my hobby is rock climbing."),
            ("assistant", "That sounds fun!"),
        ]
    )
    one_line = messages_of(
        [("assistant", "Nice to meet you, Alex!"), ("user", VEGETARIAN.removeprefix("- user: "))]
    )

    text = extractive_summary(previous_summary=None, messages=messages, max_tokens=1024)
    tight = extractive_summary(
        previous_summary=None, messages=one_line, max_tokens=count_tokens(VEGETARIAN) + 1
    )

    assert VEGETARIAN in summary_lines(text)
    assert PLEASANTRY not in summary_lines(text)
    assert tight == VEGETARIAN


def test_auto_compaction_keeps_the_users_new_job_not_the_assistants_question() -> None:
    """Auto-compaction at threshold 6 (five messages folded, the sixth kept) dropped
    "I now work as a nurse manager at Harborview" and kept "How is Seattle treating you?"."""
    turns = [
        ("user", "I moved to Seattle in March."),
        ("assistant", "How is Seattle treating you?"),
        ("user", "I now work as a nurse manager at Harborview."),
        ("assistant", "Great!"),
        ("user", "The shifts are long."),
    ]
    job = "- user: I now work as a nurse manager at Harborview."
    question = "- assistant: How is Seattle treating you?"
    first = extractive_summary(
        previous_summary=None, messages=messages_of(turns[:1]), max_tokens=1024
    )

    text = extractive_summary(previous_summary=None, messages=messages_of(turns), max_tokens=1024)
    tight = extractive_summary(
        previous_summary=first,
        messages=messages_of(turns[1:], start=2),
        max_tokens=count_tokens(job) + 1,
    )

    assert job in summary_lines(text)
    assert question not in summary_lines(text)
    # With room for one new line and Seattle already carried, the job wins.
    assert question not in summary_lines(tight)
    assert job in summary_lines(tight)


def test_an_agents_checkpoint_keeps_the_users_turns_not_tool_errors() -> None:
    """An agent with compaction maxTokens 400 (a 100-token summary) kept three lines of
    tool errors and the last turn; the user's statements were lost."""
    turns: list[tuple[str, str]] = []
    facts = [
        "I'm training for the Berlin marathon in September.",
        "My knee has been sore since the 20 km run.",
        "I switched to a plant-based diet last month.",
    ]
    for fact in facts:
        turns += [
            ("user", fact),
            ("tool", 'open_memory({"name": "Training Plan"})'),
            ("tool", "Error: no memory named 'Training Plan'; create it with write_memory first."),
            ("assistant", "Noted, thanks!"),
        ]
    turns += [("tool", "Error: the memory 'Training Plan' is over the limit of 4,096 bytes.")]
    turns += [("user", "ok")]

    text = extractive_summary(previous_summary=None, messages=messages_of(turns), max_tokens=100)

    lines = summary_lines(text)
    assert count_tokens(text) <= 100
    assert [line for line in lines if line.startswith("- tool:")] == []
    assert [f"- user: {fact}" for fact in facts] == [
        line for line in lines if line.startswith(("- user: I", "- user: My"))
    ]

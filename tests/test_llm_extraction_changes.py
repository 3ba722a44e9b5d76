"""Life changes in offline extraction (memoryapp/llm/extraction_changes.py): moves, job
changes, ended states, losses, births, and statements that say nothing.

Each family is checked on several phrasings of its own, as facts (exact texts) and,
through the database, as invalidations of the stale fact.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoryapp import episodic, semantic, working
from memoryapp.llm.extraction_offline import extract_episode
from memoryapp.llm.port import TranscriptMessage
from memoryapp.models import Fact, Project
from tests.conftest import Clock

WHEN = datetime(2026, 3, 11, 15, 30, tzinfo=UTC)


def _facts(content: str) -> list[tuple[str, str, str]]:
    message = TranscriptMessage(sequence_number=1, role="user", content=content, created_at=WHEN)
    return [(f.text, f.attribute, f.value) for f in extract_episode([message]).facts]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        # Moves: the new place is where one lives.
        ("I moved from Berlin to Lisbon.", [("The user moved from Berlin to Lisbon.", "lives in", "Lisbon")]),
        (
            "We've relocated from Toronto to Vancouver.",
            [("The user and others have relocated from Toronto to Vancouver.", "lives in", "Vancouver")],
        ),
        ("We made the move to Lisbon.", [("The user and others made the move to Lisbon.", "lives in", "Lisbon")]),
        ("I just moved to Vancouver for the job.", [("The user just moved to Vancouver for the job.", "lives in", "Vancouver")]),
        ("We're now living in Utrecht.", [("The user and others are now living in Utrecht.", "lives in", "Utrecht")]),
        ("My home is now Lisbon.", [("The user's home is now Lisbon.", "lives in", "Lisbon")]),
        ("Last spring I moved back to Porto.", [("Last spring the user moved back to Porto.", "lives in", "Porto")]),
        (
            "I moved to the city from my hometown.",
            [("The user moved to the city from their hometown.", "lives in", "city")],
        ),
        (
            "We moved here from Chicago to be near family.",
            [("The user and others moved here from Chicago to be near family.", "former home", "Chicago")],
        ),
        (
            "We packed up and moved to Lisbon in July.",
            [("The user and others packed up and moved to Lisbon in July (July 2025).", "lives in", "Lisbon")],
        ),
        # Job changes: the title, the employer apart.
        ("I started working as a chef last month.", [("The user started working as a chef last month (February 2026).", "job", "chef")]),
        (
            "These days I'm working as a chef at Taberna.",
            [
                ("These days the user is working as a chef at Taberna.", "job", "chef"),
                ("The user works at Taberna.", "works at", "Taberna"),
            ],
        ),
        (
            "I've been working as a nurse since March.",
            [("The user has been working as a nurse since March.", "job", "nurse")],
        ),
        ("I got a new job as a line cook.", [("The user got a new job as a line cook.", "job", "line cook")]),
        (
            "I'm currently working as a software engineer at Google.",
            [
                ("The user is currently working as a software engineer at Google.", "job", "software engineer"),
                ("The user works at Google.", "works at", "Google"),
            ],
        ),
        ("I switched careers to nursing.", [("The user switched careers to nursing.", "job", "nursing")]),
        # Ended states: what ended, never a value "no longer".
        ("I'm not a teacher anymore.", [("The user is not a teacher anymore.", "former job", "teacher")]),
        ("I'm no longer a nurse.", [("The user is no longer a nurse.", "former job", "nurse")]),
        ("I no longer work as a teacher.", [("The user no longer works as a teacher.", "former job", "teacher")]),
        ("I stopped being a teacher.", [("The user stopped being a teacher.", "former job", "teacher")]),
        (
            "I'm not working as a barista anymore.",
            [("The user is not working as a barista anymore.", "former job", "barista")],
        ),
        ("I gave up my job as a barista.", [("The user gave up their job as a barista.", "former job", "barista")]),
        (
            "I've stopped working at the cafe.",
            [("The user has stopped working at the cafe.", "former employer", "cafe")],
        ),
        ("I don't work at Acme anymore.", [("The user doesn't work at Acme anymore.", "former employer", "Acme")]),
        ("We no longer live in Berlin.", [("The user and others no longer live in Berlin.", "former home", "Berlin")]),
        # Losses: a fact of the speaker's, naming the one lost.
        ("Sadly Rex died in spring.", [("Sadly Rex died in spring.", "lost", "Rex")]),
        (
            "Our old cat Luna passed away.",
            [("The user's old cat Luna passed away.", "lost", "Luna")],
        ),
        ("We had to rehome our dog Rex.", [("The user and others had to rehome the user's dog Rex.", "lost", "Rex")]),
        ("We gave Biscuit away.", [("The user and others gave Biscuit away.", "lost", "Biscuit")]),
        ("My dad died in 2019.", [("The user's dad died in 2019.", "lost", "dad")]),
        # Births and adoptions: the child's relation.
        (
            "We had a baby girl, Ines, in January.",
            [("The user and others had a baby girl, Ines, in January (January 2026).", "daughter", "Ines")],
        ),
        ("We adopted a boy, Sam.", [("The user and others adopted a boy, Sam.", "son", "Sam")]),
        ("I gave birth to a daughter named Mia.", [("The user gave birth to a daughter named Mia.", "daughter", "Mia")]),
        (
            "Our son Leo was born in May.",
            [("The user's son is Leo.", "son", "Leo"), ("The user's son Leo was born in May.", "born", "May")],
        ),
        ("I don't have any kids.", [("The user doesn't have any kids.", "kids", "none")]),
        ("We have no children.", [("The user and others have no children.", "kids", "none")]),
        # A time phrase is never an object.
        ("I quit 2 years ago", [("The user quit 2 years ago (2024).", "", "")]),
        ("I gave up 3 months ago.", [("The user gave up 3 months ago (December 2025).", "", "")]),
        (
            "I started running 3 weeks ago.",
            [("The user started running 3 weeks ago (the week of 18 February 2026).", "stance on running", "does")],
        ),
        ("I stopped in 2023.", [("The user stopped in 2023.", "", "")]),
        ("I love summer.", [("The user loves summer.", "stance on summer", "likes")]),
        # Statements with no content.
        ("...my wife is.", []),
        ("and then we were", []),
        ("parallel message number 12 about my dog and job", []),
        ("Test message 3 about my car", []),
        ("this is a test", []),
        ("just testing", []),
    ],
)
def test_it_reads_life_changes_and_drops_empty_statements(
    content: str, expected: list[tuple[str, str, str]]
) -> None:
    assert _facts(content) == expected


def _told(project: Project, clock: Clock, when: str, *lines: str) -> None:
    """One thread of user messages at ``when``, ended and extracted offline."""
    clock.set(when)
    thread = working.thread_create(project=project, dataset="changes")
    rows = [working.message_append(thread=thread, role="user", content=c).message for c in lines]
    assert episodic.episode_build(
        thread_id=thread.pk,
        from_sequence=rows[0].sequence_number,
        to_sequence=rows[-1].sequence_number,
    ).created


def _current(project: Project) -> set[str]:
    facts, _ = semantic.fact_list(project=project, dataset="changes")
    return {f.text for f in facts}


@pytest.mark.parametrize(
    ("before", "after", "stale"),
    [
        ("I live in Berlin.", "I moved from Berlin to Lisbon in July.", "The user lives in Berlin."),
        ("We live in Leeds.", "We relocated to York last year.", "The user and others live in Leeds."),
        ("I live in Berlin.", "I don't live in Berlin anymore.", "The user lives in Berlin."),
        ("I live in Chicago.", "We moved here from Chicago to be near family.", "The user lives in Chicago."),
        ("I now work as a barista.", "These days I'm working as a chef at Taberna.", "The user now works as a barista."),
        ("I'm a teacher.", "I started a new job as a designer.", "The user is a teacher."),
        ("I'm a teacher.", "I'm not a teacher anymore.", "The user is a teacher."),
        ("I work as a nurse.", "I no longer work as a nurse.", "The user works as a nurse."),
        ("I work at Acme.", "I don't work at Acme anymore.", "The user works at Acme."),
        ("I have a dog called Rex.", "Sadly Rex died in spring.", "The user has a dog called Rex."),
        ("My cat Luna is 12.", "Our cat Luna passed away last week.", "The user's cat is Luna."),
        ("I have a dog named Rex.", "We had to rehome Rex.", "The user has a dog named Rex."),
        ("I don't have any kids.", "We had a baby girl, Ines, in January.", "The user doesn't have any kids."),
        ("I have no kids.", "We adopted a boy, Sam.", "The user has no kids."),
        ("I'm childless.", "I became a dad last month.", "The user is childless."),
        ("We don't have kids.", "Our son Leo was born in May.", "The user and others don't have kids."),
        ("I have no children.", "We have two kids, Lily and Tom.", "The user has no children."),
    ],
)
def test_a_life_change_ends_the_stale_fact(
    project: Project, clock: Clock, before: str, after: str, stale: str
) -> None:
    _told(project, clock, "2025-01-10T10:00:00Z", before)
    _told(project, clock, "2025-08-16T09:00:00Z", after)
    assert stale not in _current(project)
    old = Fact.objects.get(text=stale)
    assert old.invalidated_at is not None and old.invalidated_by is not None


def test_a_loss_ends_only_the_one_it_names(project: Project, clock: Clock) -> None:
    """Rex's death ends the dog Rex, not the dog Bella nor the partner."""
    _told(project, clock, "2025-01-10T10:00:00Z", "I have a dog called Rex.", "I have a dog called Bella.", "My wife is Ana.")
    _told(project, clock, "2025-08-16T09:00:00Z", "Sadly Rex died in spring.")
    assert _current(project) == {
        "The user has a dog called Bella.",
        "The user's wife is Ana.",
        "Sadly Rex died in spring.",
    }


def test_an_ended_state_ends_only_a_job_it_names(project: Project, clock: Clock) -> None:
    _told(project, clock, "2025-01-10T10:00:00Z", "I'm a nurse.")
    _told(project, clock, "2025-08-16T09:00:00Z", "I'm not a teacher anymore.")
    assert "The user is a nurse." in _current(project)


def test_meta_chatter_gives_no_facts(project: Project, clock: Clock) -> None:
    _told(project, clock, "2025-01-10T10:00:00Z", *(f"parallel message number {n} about my dog and job" for n in range(1, 8)))
    assert _current(project) == set()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        # Promoted, by whoever employs one: the new title (or "promoted" without one).
        ("They promoted me to senior engineer.", [("They promoted the user to senior engineer.", "job", "senior engineer")]),
        (
            "My company promoted me to team lead in March.",
            [("The user's company promoted the user to team lead in March (March 2026).", "job", "team lead")],
        ),
        ("I got a promotion to head chef!", [("The user got a promotion to head chef!", "job", "head chef")]),
        ("I finally got a promotion at work.", [("The user finally got a promotion at work.", "job", "promoted")]),
        ("Acme promoted me last week.", [("Acme promoted the user last week (the week before 11 March 2026).", "job", "promoted")]),
        # Let go by the employer: a lost job, an event.
        ("They laid me off last week.", [("They laid the user off last week (the week before 11 March 2026).", "job", "lost job")]),
        ("My boss fired me.", [("The user's boss fired the user.", "job", "lost job")]),
        ("The hospital let me go in January.", [("The hospital let the user go in January (January 2026).", "job", "lost job")]),
        ("They made me redundant.", [("They made the user redundant.", "job", "lost job")]),
        # Retirement said otherwise than "I retired".
        ("I took early retirement last year.", [("The user took early retirement last year (2025).", "job", "retired")]),
        ("I've been retired since 2019.", [("The user has been retired since 2019.", "job", "retired")]),
        # Not (yet) a change: a hope, a fear, a plan, a negation, someone else's job.
        ("I hope to get promoted soon.", [("The user hopes to get promoted soon.", "", "")]),
        ("I didn't get the promotion.", [("The user didn't get the promotion.", "", "")]),
        ("I wasn't promoted.", [("The user wasn't promoted.", "", "")]),
        ("I'm afraid they'll lay me off.", []),
        ("I might get laid off.", [("The user might get laid off.", "", "")]),
        ("I almost got fired.", [("The user almost got fired.", "", "")]),
        ("I'm thinking about retiring.", [("The user is thinking about retiring.", "", "")]),
        ("I plan to retire next year.", [("The user plans to retire next year (2027).", "", "")]),
        ("They were nice to me.", []),
    ],
)
def test_it_reads_job_changes_others_make_and_retirement(content: str, expected: list[tuple[str, str, str]]) -> None:
    assert _facts(content) == expected


def test_a_job_change_by_the_employer_is_an_event_only_when_lost() -> None:
    """And it is the speaker's, never the employer's ("Acme promoted me" was Acme's)."""

    def events(content: str) -> list[tuple[str, bool, tuple[str, ...]]]:
        message = TranscriptMessage(sequence_number=1, role="user", content=content, created_at=WHEN)
        facts = extract_episode([message]).facts
        assert {f.subject for f in facts} == {"user"}
        return [(f.value, f.event, f.retires) for f in facts]

    assert events("They laid me off last week.") == [("lost job", True, ("works at",))]
    assert events("Acme promoted me.") == [("promoted", False, ())]
    assert events("I took early retirement.") == [("retired", False, ("works at",))]
    assert events("They promoted me to senior engineer.") == [("senior engineer", False, ())]


@pytest.mark.parametrize(
    ("before", "after", "stale", "kept"),
    [
        ("I'm an engineer at Acme.", "They promoted me to senior engineer.", "The user is an engineer at Acme.", "The user works at Acme."),
        ("I'm a cook at Nopa.", "I got a promotion to head chef!", "The user is a cook at Nopa.", "The user works at Nopa."),
        ("I work at Acme as a nurse.", "My company laid me off.", "The user works at Acme.", ""),
        ("I work as a teacher.", "I took early retirement last year.", "The user works as a teacher.", ""),
        ("I work at the bank.", "They let me go in January.", "The user works at the bank.", ""),
    ],
)
def test_a_job_change_replaces_the_job_state(
    project: Project, clock: Clock, before: str, after: str, stale: str, kept: str
) -> None:
    _told(project, clock, "2025-01-10T10:00:00Z", before)
    _told(project, clock, "2025-08-16T09:00:00Z", after)
    current = _current(project)
    assert stale not in current
    if kept:
        assert kept in current
    old = Fact.objects.get(text=stale)
    assert old.invalidated_by is not None and old.invalidated_by.source_message_ids != old.source_message_ids


def _about(*contents: str) -> list[tuple[str, str, str, str]]:
    messages = [
        TranscriptMessage(sequence_number=i, role="user", content=c, created_at=WHEN) for i, c in enumerate(contents, 1)
    ]
    return [(f.subject or "", f.text, f.attribute, f.value) for f in extract_episode(messages).facts]


@pytest.mark.parametrize(
    ("contents", "expected"),
    [
        # Someone's death one read or heard about, or history: no loss of the speaker's.
        (
            ["I was reading that Napoleon died in exile."],
            [("user", "The user was reading that Napoleon died in exile.", "", "")],
        ),
        (["Napoleon died in exile."], [("Napoleon", "Napoleon died in exile.", "", "")]),
        (
            ["I heard that David Bowie passed away."],
            [("user", "The user heard that David Bowie passed away.", "", "")],
        ),
        (
            ["I watched a documentary about Napoleon.", "He died in exile on Saint Helena."],
            [
                ("user", "The user watched a documentary about Napoleon.", "", ""),
                ("Napoleon", "Napoleon died in exile on Saint Helena.", "", ""),
            ],
        ),
        (["Apparently Prince died in 2016."], [("Prince", "Apparently Prince died in 2016.", "", "")]),
        (["Rex passed away last night."], [("Rex", "Rex passed away last night (10 March 2026).", "", "")]),
        # Someone else's job: never the speaker's retirement.
        (["My favourite singer retired last year."], [("user", "The user's favourite singer retired last year (2025).", "", "")]),
        (["I read that Tom Brady retired."], [("user", "The user read that Tom Brady retired.", "", "")]),
        # The speaker's own loss: told as grief, or of one the episode says is theirs.
        (["Rex passed away last night, we're heartbroken."], [("user", "Rex passed away last night (10 March 2026).", "lost", "Rex")]),
        (["Unfortunately Biscuit died."], [("user", "Unfortunately Biscuit died.", "lost", "Biscuit")]),
        (
            ["I have a cat named Luna.", "I just heard Luna passed away."],
            [
                ("user", "The user has a cat named Luna.", "cat", "Luna"),
                ("user", "The user just heard Luna passed away.", "lost", "Luna"),
            ],
        ),
        (
            ["My grandma Rose was 90.", "She passed away in March."],
            [
                ("user", "The user's grandma Rose was 90.", "grandma", "Rose"),
                ("user", "Rose passed away in March (March 2026).", "lost", "Rose"),
            ],
        ),
        (["Apparently my old teacher passed away."], [("user", "Apparently the user's old teacher passed away.", "lost", "teacher")]),
    ],
)
def test_a_loss_is_the_speakers_only_when_the_one_lost_is_theirs(
    contents: list[str], expected: list[tuple[str, str, str, str]]
) -> None:
    assert _about(*contents) == expected


def test_a_death_read_about_ends_no_relation_of_the_same_name(project: Project, clock: Clock) -> None:
    """The user's cat Napoleon outlives the emperor (a loss of a bare name ended every
    relation naming it)."""
    _told(project, clock, "2025-01-10T10:00:00Z", "I have a cat called Napoleon.")
    _told(project, clock, "2025-08-16T09:00:00Z", "I was reading that Napoleon died in exile.", "Napoleon died in 1821.")
    assert _current(project) == {
        "The user has a cat called Napoleon.",
        "The user was reading that Napoleon died in exile.",
        "Napoleon died in 1821.",
    }
    subject = Fact.objects.get(text="Napoleon died in 1821.").subject
    assert subject is not None and subject.name == "Napoleon"


@pytest.mark.parametrize(
    ("contents", "expected"),
    [
        # A bare correction restates the episode's fact naming what it corrects.
        (
            ["My sister lives in Lisbon.", "Sorry, it's Porto, not Lisbon."],
            [
                ("user's sister", "The user's sister lives in Lisbon.", "lives in", "Lisbon"),
                ("user's sister", "The user's sister lives in Porto.", "lives in", "Porto"),
            ],
        ),
        (
            ["I live in Lisbon.", "Sorry, I meant Porto, not Lisbon."],
            [("user", "The user lives in Lisbon.", "lives in", "Lisbon"), ("user", "The user lives in Porto.", "lives in", "Porto")],
        ),
        (
            ["I drive a Civic.", "No wait, a Corolla, not a Civic."],
            [("user", "The user drives a Civic.", "car", "Civic"), ("user", "The user drives a Corolla.", "car", "Corolla")],
        ),
        (
            ["My sister is Maria.", "Oops, Mara, not Maria."],
            [("user", "The user's sister is Maria.", "sister", "Maria"), ("user", "The user's sister is Mara.", "sister", "Mara")],
        ),
        (
            ["My sister lives in Lisbon.", "Not Lisbon, Porto."],
            [
                ("user's sister", "The user's sister lives in Lisbon.", "lives in", "Lisbon"),
                ("user's sister", "The user's sister lives in Porto.", "lives in", "Porto"),
            ],
        ),
        (
            ["I'm allergic to shellfish.", "Correction: peanuts, not shellfish."],
            [
                ("user", "The user is allergic to shellfish.", "allergic to", "shellfish"),
                ("user", "The user is allergic to peanuts.", "allergic to", "peanuts"),
            ],
        ),
        # "X, not Y" that corrects nothing the episode said: no fact changes.
        (["I live in Lisbon.", "Tea, not coffee."], [("user", "The user lives in Lisbon.", "lives in", "Lisbon")]),
        (
            ["I live in Lisbon.", "I want to visit Porto, not Madrid."],
            [
                ("user", "The user lives in Lisbon.", "lives in", "Lisbon"),
                ("user", "The user wants to visit Porto, not Madrid.", "", ""),
            ],
        ),
        (["I'd like tea, not coffee."], [("user", "The user would like tea, not coffee.", "", "")]),
        (["It's Porto, not Lisbon."], []),
    ],
)
def test_a_correction_restates_the_fact_it_corrects(contents: list[str], expected: list[tuple[str, str, str, str]]) -> None:
    assert _about(*contents) == expected


def test_a_correction_of_a_value_among_several_ends_only_that_one() -> None:
    message = TranscriptMessage(sequence_number=1, role="user", content="I'm allergic to peanuts, not shellfish.", created_at=WHEN)
    (fact,) = extract_episode([message]).facts
    assert (fact.attribute, fact.value, fact.retires, fact.retires_when) == ("allergic to", "peanuts", ("allergic to",), "shellfish")


@pytest.mark.parametrize(
    ("before", "after", "stale", "now"),
    [
        (["My sister lives in Lisbon."], ["Sorry, my sister lives in Porto, not Lisbon."], "The user's sister lives in Lisbon.",
         "The user's sister lives in Porto, not Lisbon."),
        (["My sister lives in Lisbon.", "It's Porto, not Lisbon."], [], "The user's sister lives in Lisbon.",
         "The user's sister lives in Porto."),
        (["I have a sister named Maria.", "Sorry, Mara, not Maria."], [], "The user has a sister named Maria.",
         "The user has a sister named Mara."),
        (["I'm allergic to shellfish.", "I'm allergic to dust."], ["I'm allergic to peanuts, not shellfish."],
         "The user is allergic to shellfish.", "The user is allergic to peanuts, not shellfish."),
    ],
)
def test_a_correction_replaces_the_corrected_fact(
    project: Project, clock: Clock, before: list[str], after: list[str], stale: str, now: str
) -> None:
    _told(project, clock, "2025-01-10T10:00:00Z", *before)
    if after:
        _told(project, clock, "2025-08-16T09:00:00Z", *after)
    current = _current(project)
    assert stale not in current and now in current
    old = Fact.objects.get(text=stale)
    assert old.invalidated_by is not None and old.invalidated_by.text == now


def test_a_correction_keeps_the_other_values(project: Project, clock: Clock) -> None:
    _told(project, clock, "2025-01-10T10:00:00Z", "I'm allergic to shellfish.", "I'm allergic to dust.", "I have a sister named Ana.")
    _told(project, clock, "2025-08-16T09:00:00Z", "I'm allergic to peanuts, not shellfish.", "My sister is Maria.", "Sorry, Mara, not Maria.")
    assert _current(project) == {
        "The user is allergic to dust.",
        "The user is allergic to peanuts, not shellfish.",
        "The user has a sister named Ana.",
        "The user's sister is Mara.",
    }


@pytest.mark.parametrize(
    ("content", "text"),
    [
        # A month told in the past gets its year: the latest such month by the message's time.
        ("I retired in March.", "The user retired in March (March 2026)."),
        ("I got promoted to senior engineer in March.", "The user got promoted to senior engineer in March (March 2026)."),
        ("I was laid off in November.", "The user was laid off in November (November 2025)."),
        ("They let me go in late January.", "They let the user go in late January (January 2026)."),
        ("We moved to Lisbon back in August.", "The user and others moved to Lisbon back in August (August 2025)."),
        # A time to come, what goes on, a date already given, a birth: as said.
        ("I will retire in March.", "The user will retire in March."),
        ("I plan to retire in June.", "The user plans to retire in June."),
        ("We're moving to Tallinn in May.", "The user and others are moving to Tallinn in May."),
        ("My sister is getting married in May.", "The user's sister is getting married in May."),
        ("I'm so excited to visit Paris in May.", "The user is so excited to visit Paris in May."),
        ("I moved to Lisbon in March 2019.", "The user moved to Lisbon in March 2019."),
        ("I was born in August.", "The user was born in August."),
        ("I'm retired in March.", "The user is retired in March."),
    ],
)
def test_a_month_told_in_the_past_gets_its_year(content: str, text: str) -> None:
    assert [t for t, _, _ in _facts(content)] == [text]

"""Endings and lists in offline extraction (memoryapp/llm/extraction_offline.py) and what
they end in storage (memoryapp/semantic.py): a possession parted with ends the thing had
or the car driven that it names, by make or by kind; quitting, leaving or resigning ends
the job or employer it names, by occupation or by employer; a list of values of an
attribute holding several ("allergic to cats and dogs") is a fact per value.

Each is checked as the facts extraction gives and, through the database, as the facts
left current, with a case that must end nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoryapp import episodic, semantic, working
from memoryapp.llm.extraction_offline import extract_episode
from memoryapp.llm.port import TranscriptMessage
from memoryapp.models import Fact, Project
from memoryapp.semantic import values_match, word_stem
from tests.conftest import Clock

WHEN = datetime(2026, 3, 11, 15, 30, tzinfo=UTC)
_OWNED = ("has", "car", "dog", "cat", "pet", "puppy", "pup", "kitten", "kitty", "horse", "pony", "bird", "rabbit",
          "bunny", "hamster", "parrot", "turtle", "tortoise", "snake", "lizard", "gecko", "ferret", "fish", "goldfish")
_WORK = ("works at", "job")


def _ends(content: str) -> list[tuple[str, str, str, tuple[str, ...], str]]:
    message = TranscriptMessage(sequence_number=1, role="user", content=content, created_at=WHEN)
    return [(f.text, f.attribute, f.value, f.retires, f.retires_when) for f in extract_episode([message]).facts]


def _told(project: Project, clock: Clock, when: str, *lines: str) -> None:
    """One thread of user messages at ``when``, ended and extracted offline."""
    clock.set(when)
    thread = working.thread_create(project=project, dataset="endings")
    rows = [working.message_append(thread=thread, role="user", content=c).message for c in lines]
    assert episodic.episode_build(
        thread_id=thread.pk,
        from_sequence=rows[0].sequence_number,
        to_sequence=rows[-1].sequence_number,
    ).created


def _current(project: Project) -> set[str]:
    facts, _ = semantic.fact_list(project=project, dataset="endings")
    return {f.text for f in facts}


def _stored(project: Project, clock: Clock, before: tuple[str, ...], after: tuple[str, ...]) -> set[str]:
    _told(project, clock, "2025-01-10T10:00:00Z", *before)
    _told(project, clock, "2025-08-16T09:00:00Z", *after)
    return _current(project)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("I sold my Tesla.", [("The user sold their Tesla.", "", "", _OWNED, "Tesla")]),
        (
            "I traded in my Civic for a Prius.",
            [("The user traded in their Civic for a Prius.", "", "", _OWNED, "Civic")],
        ),
        ("We traded our van in.", [("The user and others traded the user's van in.", "", "", _OWNED, "van")]),
        (
            "I gave my bike to my nephew last week.",
            [("The user gave their bike to their nephew last week (the week before 11 March 2026).",
              "", "", _OWNED, "bike")],
        ),
        (
            "I sold my old Ford truck to a neighbour.",
            [("The user sold their old Ford truck to a neighbour.", "", "", _OWNED, "Ford truck")],
        ),
        ("I got rid of my car.", [("The user got rid of their car.", "car", "sold", ("has",), "car")]),
        ("I gave my car to my son.", [("The user gave their car to their son.", "car", "sold", ("has",), "car")]),
        (
            "I sold my Tesla and my boat last year.",
            [
                ("The user sold their Tesla.", "", "", _OWNED, "Tesla"),
                ("The user sold their boat last year (2025).", "", "", _OWNED, "boat"),
            ],
        ),
        # "and" then someone doing something: no second thing sold.
        (
            "I sold my car and my son cried.",
            [
                ("The user sold their car.", "car", "sold", ("has",), "car"),
                ("The user's son cried.", "", "", (), ""),
            ],
        ),
        # Giving it a wash is no parting with it; a car seat is no car.
        ("I gave my bike a good clean.", [("The user gave their bike a good clean.", "", "", (), "")]),
        ("I sold my car seat.", [("The user sold their car seat.", "", "", _OWNED, "car seat")]),
    ],
)
def test_parting_with_a_possession_names_what_it_ends(
    content: str, expected: list[tuple[str, str, str, tuple[str, ...], str]]
) -> None:
    """"I sold my Tesla" ended the things had and the pets named Tesla, not the car."""
    assert _ends(content) == expected


@pytest.mark.parametrize(
    ("before", "after", "current"),
    [
        (
            ("I drive a Tesla Model 3.",),
            ("I sold my Tesla.",),
            {"The user sold their Tesla."},
        ),
        (
            ("I have a Tesla.", "I drive a Tesla."),
            ("I traded in my Tesla for a Prius.",),
            {"The user traded in their Tesla for a Prius."},
        ),
        (
            ("I drive a Honda Civic.", "I have an electric car."),
            ("I got rid of my car.",),
            {"The user got rid of their car."},
        ),
        (
            ("I have a mountain bike.", "I have a kayak."),
            ("I gave my bike to my nephew.",),
            {"The user has a kayak.", "The user gave their bike to their nephew."},
        ),
        (
            ("I drive a Tesla.", "I have a boat.", "I have a kayak."),
            ("I sold my Tesla and my boat.",),
            {"The user has a kayak.", "The user sold their Tesla.", "The user sold their boat."},
        ),
        # Selling another thing ends neither the car nor the other things had.
        (
            ("I drive a Tesla.", "I have a boat."),
            ("I sold my piano.",),
            {"The user drives a Tesla.", "The user has a boat.", "The user sold their piano."},
        ),
    ],
)
def test_a_possession_parted_with_ends_the_facts_naming_it(
    project: Project, clock: Clock, before: tuple[str, ...], after: tuple[str, ...], current: set[str]
) -> None:
    """"I sold my Tesla" left "The user drives a Tesla Model 3." current."""
    assert _stored(project, clock, before, after) == current


def test_selling_a_car_by_its_make_ends_that_car_only(project: Project, clock: Clock) -> None:
    _told(project, clock, "2025-01-10T10:00:00Z", "I drive a Tesla.")
    _told(project, clock, "2025-08-16T09:00:00Z", "I sold my Tesla.")
    tesla = Fact.objects.get(text="The user drives a Tesla.")
    sold = Fact.objects.get(text="The user sold their Tesla.")
    assert tesla.invalidated_by == sold and tesla.invalidated_at == sold.valid_from


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("I quit nursing.", [("The user quit nursing.", "stance on nursing", "stopped", _WORK, "nursing")]),
        ("I gave up law.", [("The user gave up law.", "stance on law", "stopped", _WORK, "law")]),
        ("I quit Acme.", [("The user quit Acme.", "stance on acme", "stopped", _WORK, "acme")]),
        ("I resigned from the bakery.", [("The user resigned from the bakery.", "", "", _WORK, "bakery")]),
        ("I stepped down as head nurse.", [("The user stepped down as head nurse.", "", "", _WORK, "head nurse")]),
        ("I left nursing last year.", [("The user left nursing last year (2025).", "", "", _WORK, "nursing")]),
        (
            "I left my career in banking.",
            [("The user left their career in banking.", "", "", _WORK, "banking")],
        ),
        # The job itself, whatever it was: it ends, and the employer with it.
        (
            "I quit my job as a nurse.",
            [("The user quit their job as a nurse.", "job", "quit", ("works at",), "")],
        ),
        (
            "I resigned from my position at Acme.",
            [("The user resigned from their position at Acme.", "job", "quit", ("works at",), "")],
        ),
        ("I resigned yesterday.", [("The user resigned yesterday (10 March 2026).", "job", "quit", ("works at",), "")]),
        (
            "I gave my notice to my boss.",
            [("The user gave their notice to their boss.", "job", "quit", ("works at",), "")],
        ),
        ("I left pharmacy for good.", [("The user left pharmacy for good.", "", "", _WORK, "pharmacy")]),
    ],
)
def test_quitting_names_the_work_it_ends(
    content: str, expected: list[tuple[str, str, str, tuple[str, ...], str]]
) -> None:
    """"I resigned from the bakery" ended any job, "I quit nursing" none."""
    assert _ends(content) == expected


@pytest.mark.parametrize(
    ("before", "after", "current"),
    [
        (("I'm a nurse.",), ("I quit nursing.",), {"The user quit nursing."}),
        (("I'm a high school teacher.",), ("I quit teaching last year.",), {"The user quit teaching last year (2024)."}),
        (("I'm a lawyer.",), ("I gave up law.",), {"The user gave up law."}),
        (
            ("I work as a nurse at St Mary's.",),
            ("I quit my job as a nurse.",),
            {"The user quit their job as a nurse."},
        ),
        (("I work at Acme.",), ("I left my job at Acme.",), {"The user left their job at Acme."}),
        (("I work at the bakery.",), ("I resigned from the bakery.",), {"The user resigned from the bakery."}),
        (("I'm an accountant at Deloitte.",), ("I quit Deloitte.",), {"The user quit Deloitte."}),
        (("I'm a software engineer.",), ("I left engineering.",), {"The user left engineering."}),
        (("I work as a pharmacist.",), ("I left pharmacy.",), {"The user left pharmacy."}),
        (("I work at Acme.",), ("I handed in my notice.",), {"The user handed in their notice."}),
        # What names no job or employer of the user's ends none.
        (("I'm a teacher.",), ("I quit smoking.",), {"The user is a teacher.", "The user quit smoking."}),
        (
            ("I work at Acme.",),
            ("I resigned from the school board.",),
            {"The user works at Acme.", "The user resigned from the school board."},
        ),
        (("I'm a nurse.",), ("I left Berlin in May.",), {"The user is a nurse.", "The user left Berlin in May (May 2025)."}),
    ],
)
def test_quitting_ends_the_job_or_employer_it_names(
    project: Project, clock: Clock, before: tuple[str, ...], after: tuple[str, ...], current: set[str]
) -> None:
    """"I quit nursing" left "The user is a nurse." current; "I resigned from the school
    board" ended the job at Acme."""
    assert _stored(project, clock, before, after) == current


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("nursing", "nurs"), ("nurse", "nurs"), ("nurses", "nurs"), ("teaching", "teach"), ("teacher", "teach"),
        ("lawyer", "law"), ("law", "law"), ("engineering", "engin"), ("engineer", "engin"), ("dentistry", "dent"),
        ("pharmacist", "pharmac"), ("pharmacy", "pharmac"), ("acme", "acme"), ("jane", "jane"), ("tesla", "tesla"),
    ],
)
def test_a_word_stem_folds_a_field_and_its_doer(word: str, stem: str) -> None:
    assert word_stem(word) == stem


def test_values_match_by_stems_and_not_by_a_shared_start() -> None:
    assert values_match("nursing", "registered nurse")
    assert values_match("teach", "high school teacher")
    assert not values_match("smoking", "teacher")
    assert not values_match("jan", "jane")


def _listed(content: str) -> list[tuple[str, str, str, str]]:
    message = TranscriptMessage(sequence_number=1, role="user", content=content, created_at=WHEN)
    return [(f.subject or "", f.text, f.attribute, f.value) for f in extract_episode([message]).facts]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "I'm allergic to cats and dogs.",
            [
                ("user", "The user is allergic to cats.", "allergic to", "cats"),
                ("user", "The user is allergic to dogs.", "allergic to", "dogs"),
            ],
        ),
        (
            "I'm allergic to peanuts, shellfish, and dust.",
            [
                ("user", "The user is allergic to peanuts.", "allergic to", "peanuts"),
                ("user", "The user is allergic to shellfish.", "allergic to", "shellfish"),
                ("user", "The user is allergic to dust.", "allergic to", "dust"),
            ],
        ),
        (
            "I'm allergic to latex or penicillin.",
            [
                ("user", "The user is allergic to latex.", "allergic to", "latex"),
                ("user", "The user is allergic to penicillin.", "allergic to", "penicillin"),
            ],
        ),
        (
            "Priya is allergic to bees and wasps since childhood.",
            [
                ("Priya", "Priya is allergic to bees since childhood.", "allergic to", "bees"),
                ("Priya", "Priya is allergic to wasps since childhood.", "allergic to", "wasps"),
            ],
        ),
        (
            "I'm diabetic and asthmatic.",
            [
                ("user", "The user is diabetic.", "condition", "diabetic"),
                ("user", "The user is asthmatic.", "condition", "asthmatic"),
            ],
        ),
        (
            "My sister has a cat and a hamster.",
            [
                ("user's sister", "The user's sister has a cat.", "has", "cat"),
                ("user's sister", "The user's sister has a hamster.", "has", "hamster"),
            ],
        ),
        (
            "I bought a tent and a stove last week.",
            [
                ("user", "The user bought a tent last week (the week before 11 March 2026).", "has", "tent"),
                ("user", "The user bought a stove last week (the week before 11 March 2026).", "has", "stove"),
            ],
        ),
        (
            "I own a boat and two bikes.",
            [
                ("user", "The user owns a boat.", "has", "boat"),
                ("user", "The user owns two bikes.", "number of bikes", "2"),
            ],
        ),
        # No list of values: a verb of a clause of its own, a state that is no condition,
        # a phrase that may be the last value's alone, a single-valued attribute, a stance.
        ("I have a dog and love him.", [("user", "The user has a dog and loves him.", "has", "dog")]),
        (
            "I'm allergic to cats and get hives.",
            [("user", "The user is allergic to cats and get hives.", "allergic to", "cats")],
        ),
        ("I'm diabetic and tired.", [("user", "The user is diabetic and tired.", "condition", "diabetic")]),
        (
            "I'm allergic to reptiles and animals with fur.",
            [("user", "The user is allergic to reptiles and animals with fur.", "allergic to", "reptiles")],
        ),
        (
            "I work at Procter and Gamble.",
            [("user", "The user works at Procter and Gamble.", "works at", "Procter and Gamble")],
        ),
        (
            "I work at Acme and Sundays at the bakery.",
            [("user", "The user works at Acme and Sundays at the bakery.", "works at", "Acme")],
        ),
        ("I love hiking and swimming.", [("user", "The user loves hiking and swimming.", "stance on hiking", "likes")]),
    ],
)
def test_a_list_of_values_of_a_many_valued_attribute_is_a_fact_per_value(
    content: str, expected: list[tuple[str, str, str, str]]
) -> None:
    """"I'm allergic to cats and dogs" was one fact, allergic to "cats"."""
    assert _listed(content) == expected


@pytest.mark.parametrize(
    ("before", "after", "current"),
    [
        (
            ("I'm allergic to cats and dogs.",),
            ("I'm allergic to peanuts, not dogs.",),
            {"The user is allergic to cats.", "The user is allergic to peanuts, not dogs."},
        ),
        (
            ("I have a boat and a bike.",),
            ("I sold my boat.",),
            {"The user has a bike.", "The user sold their boat."},
        ),
    ],
)
def test_a_value_of_a_list_ends_alone(
    project: Project, clock: Clock, before: tuple[str, ...], after: tuple[str, ...], current: set[str]
) -> None:
    """Selling the boat of "a boat and a bike" left the one fact "The user has a boat and
    a bike." current, naming the boat."""
    assert _stored(project, clock, before, after) == current


@pytest.mark.parametrize(
    ("before", "after", "old", "new"),
    [
        ("I drive a Tesla.", "I sold my Tesla, I drive a Kia now.", "The user drives a Tesla.", "The user drives a Kia now."),
        ("I'm a nurse.", "I quit nursing, I'm a chef now.", "The user is a nurse.", "The user is a chef now."),
    ],
)
def test_a_new_value_beside_an_ending_is_what_replaces_the_old_one(
    project: Project, clock: Clock, before: str, after: str, old: str, new: str
) -> None:
    """The sale or the quitting of the same message ended the old value first, so recall
    brought in the sale for it, not the new value."""
    _told(project, clock, "2025-01-10T10:00:00Z", before)
    _told(project, clock, "2025-08-16T09:00:00Z", after)
    assert Fact.objects.get(text=old).invalidated_by == Fact.objects.get(text=new)


_ALLERGY = ("allergic to",)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "I'm not allergic to cats and dogs anymore.",
            [
                ("The user is not allergic to cats anymore.", "", "", _ALLERGY, "cats"),
                ("The user is not allergic to dogs anymore.", "", "", _ALLERGY, "dogs"),
            ],
        ),
        (
            "I am no longer allergic to cats and dogs.",
            [
                ("The user is no longer allergic to cats.", "", "", _ALLERGY, "cats"),
                ("The user is no longer allergic to dogs.", "", "", _ALLERGY, "dogs"),
            ],
        ),
        (
            "I am not allergic to cats, dogs, or horses anymore.",
            [
                ("The user is not allergic to cats anymore.", "", "", _ALLERGY, "cats"),
                ("The user is not allergic to dogs anymore.", "", "", _ALLERGY, "dogs"),
                ("The user is not allergic to horses anymore.", "", "", _ALLERGY, "horses"),
            ],
        ),
        (
            "We don't have a cat and a dog anymore.",
            [
                ("The user and others don't have a cat anymore.", "", "", _OWNED, "cat"),
                ("The user and others don't have a dog anymore.", "", "", _OWNED, "dog"),
            ],
        ),
        # No "anymore": no state said to be over, no list split.
        ("I am not allergic to cats, dogs, or horses.", [("The user is not allergic to cats, dogs, or horses.", "", "", (), "")]),
    ],
)
def test_a_list_said_to_be_over_ends_each_value(
    content: str, expected: list[tuple[str, str, str, tuple[str, ...], str]]
) -> None:
    """"I'm not allergic to cats and dogs anymore" ended cats only; with "cats, dogs, or
    horses" none."""
    assert _ends(content) == expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "I stopped learning Japanese.",
            [("The user stopped learning Japanese.", "stance on learning japanese", "stopped", ("learning",), "Japanese")],
        ),
        (
            "I used to be allergic to peanuts.",
            [
                ("The user used to be allergic to peanuts.", "stance on being allergic to peanuts", "stopped",
                 _ALLERGY, "peanuts"),
            ],
        ),
        (
            "I used to have a dog.",
            [("The user used to have a dog.", "", "", _OWNED, "dog")],
        ),
        (
            "I used to live in Berlin.",
            [("The user used to live in Berlin.", "stance on living in berlin", "stopped", ("lives in",), "Berlin")],
        ),
        (
            "I've stopped learning Spanish and French.",
            [
                ("The user has stopped learning Spanish.", "stance on learning spanish", "stopped", ("learning",),
                 "Spanish"),
                ("The user has stopped learning French.", "stance on learning french", "stopped", ("learning",),
                 "French"),
            ],
        ),
        # Stopping somewhere, an old opinion, a habit that is no state: nothing ends.
        ("I stopped by the store.", [("The user stopped by the store.", "", "", (), "")]),
        ("I used to think so.", [("The user used to think so.", "stance on thinking", "stopped", (), "")]),
        ("I used to have to commute.", [("The user used to have to commute.", "stance on having to commute", "stopped", (), "")]),
    ],
)
def test_a_state_given_up_or_left_behind_names_what_it_ends(
    content: str, expected: list[tuple[str, str, str, tuple[str, ...], str]]
) -> None:
    """"I stopped learning Japanese" and "I used to be allergic to peanuts" ended nothing."""
    assert _ends(content) == expected


@pytest.mark.parametrize(
    ("before", "after", "current"),
    [
        (
            ("I am allergic to cats and dogs.",),
            ("I'm not allergic to cats and dogs anymore.",),
            {"The user is not allergic to cats anymore.", "The user is not allergic to dogs anymore."},
        ),
        (
            ("I am allergic to cats and dogs.",),
            ("I am no longer allergic to cats and dogs.",),
            {"The user is no longer allergic to cats.", "The user is no longer allergic to dogs."},
        ),
        (
            ("I am allergic to cats, dogs and horses.", "I am allergic to peanuts."),
            ("I am not allergic to cats, dogs, or horses anymore.",),
            {
                "The user is allergic to peanuts.",
                "The user is not allergic to cats anymore.",
                "The user is not allergic to dogs anymore.",
                "The user is not allergic to horses anymore.",
            },
        ),
        (
            ("I'm learning Japanese.", "I'm learning Italian."),
            ("I stopped learning Japanese.",),
            {"The user is learning Italian.", "The user stopped learning Japanese."},
        ),
        (
            ("I'm allergic to peanuts.", "I'm allergic to latex."),
            ("I used to be allergic to peanuts.",),
            {"The user is allergic to latex.", "The user used to be allergic to peanuts."},
        ),
        # "I used to live in Berlin" ends that home, not another.
        (("I live in Berlin.",), ("I used to live in Berlin.",), {"The user used to live in Berlin."}),
        (
            ("I live in Lisbon.",),
            ("I used to live in Berlin.",),
            {"The user lives in Lisbon.", "The user used to live in Berlin."},
        ),
        # What names no current state ends none.
        (
            ("I'm learning Japanese.",),
            ("I stopped by the store.", "I used to think so."),
            {"The user is learning Japanese.", "The user stopped by the store.", "The user used to think so."},
        ),
        (
            ("I'm allergic to peanuts.",),
            ("I used to be allergic to shellfish.",),
            {"The user is allergic to peanuts.", "The user used to be allergic to shellfish."},
        ),
    ],
)
def test_an_ending_ends_each_state_it_names(
    project: Project, clock: Clock, before: tuple[str, ...], after: tuple[str, ...], current: set[str]
) -> None:
    """"I am no longer allergic to cats and dogs" left "The user is allergic to dogs."
    current; "I stopped learning Japanese" left "The user is learning Japanese." current;
    "I used to live in Berlin" left "The user lives in Berlin." current."""
    assert _stored(project, clock, before, after) == current


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "I don't have the dog anymore.",
            [("The user doesn't have the dog anymore.", "", "", _OWNED, "dog")],
        ),
        ("I no longer have Luna.", [("The user no longer has Luna.", "", "", _OWNED, "Luna")]),
        # No pet: a stance, nothing ended.
        (
            "I don't have the time anymore.",
            [("The user doesn't have the time anymore.", "stance on having the time", "stopped", (), "")],
        ),
        ("I no longer have time.", [("The user no longer has time.", "stance on time", "stopped", (), "")]),
    ],
)
def test_a_pet_no_longer_had_is_no_stance(
    content: str, expected: list[tuple[str, str, str, tuple[str, ...], str]]
) -> None:
    """"I don't have the dog anymore" was "stance on having the dog: stopped", "I no longer
    have Luna" "stance on luna: stopped", and neither ended the dog named Rex or Luna."""
    assert _ends(content) == expected


@pytest.mark.parametrize(
    ("before", "after", "current"),
    [
        (
            ("I have a dog named Rex.", "I have a cat named Luna."),
            ("I don't have the dog anymore.",),
            {"The user has a cat named Luna.", "The user doesn't have the dog anymore."},
        ),
        (
            ("I have a dog named Rex.", "I have a cat named Luna."),
            ("I no longer have Luna.",),
            {"The user has a dog named Rex.", "The user no longer has Luna."},
        ),
        (
            ("I have a dog named Rex.", "I have a cat named Luna."),
            ("We had to put Rex down.",),
            {"The user has a cat named Luna.", "The user and others had to put Rex down."},
        ),
        (
            ("I have a dog named Rex.", "I have a cat named Luna."),
            ("Sadly Rex passed away.",),
            {"The user has a cat named Luna.", "Sadly Rex passed away."},
        ),
        (
            ("I have a dog named Rex.",),
            ("My dog died.",),
            {"The user's dog died."},
        ),
        # Another's dog, time not had: the user's pets stay.
        (
            ("I have a dog named Rex.",),
            ("My neighbour's dog Rex died.", "I don't have the time anymore."),
            {
                "The user has a dog named Rex.",
                "The user's neighbour's dog Rex died.",
                "The user doesn't have the time anymore.",
            },
        ),
    ],
)
def test_a_pet_or_home_gone_ends_it(
    project: Project, clock: Clock, before: tuple[str, ...], after: tuple[str, ...], current: set[str]
) -> None:
    """"I don't have the dog anymore", "I no longer have Luna" left the pet named current;
    "I used to live in Berlin" left "The user lives in Berlin." current."""
    assert _stored(project, clock, before, after) == current

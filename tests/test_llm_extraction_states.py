"""Present states and values in offline extraction (memoryapp/llm/extraction_offline.py)
and what they end in storage (memoryapp/semantic.py): a present state said to be over
("I'm not allergic to dogs anymore", "I no longer have a cat") ends the current fact
naming it, as the clause without its negation would state it.

Each is checked as the facts extraction gives and, through the database, as the facts
left current, with cases that must end nothing.
"""

from __future__ import annotations

import pytest

from memoryapp.llm.extraction_offline import extract_episode
from memoryapp.llm.port import TranscriptMessage
from memoryapp.models import Fact, Project
from tests.conftest import Clock
from tests.test_llm_extraction_endings import _OWNED, WHEN, _current, _ends, _stored, _told

# The helpers of the endings' tests (one thread per batch, ended and extracted offline;
# the facts left current): the same mechanism, read here for present states.
_facts = _ends


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "I'm not allergic to dogs anymore.",
            [("The user is not allergic to dogs anymore.", "", "", ("allergic to",), "dogs")],
        ),
        ("I'm no longer allergic to dogs.", [("The user is no longer allergic to dogs.", "", "", ("allergic to",), "dogs")]),
        ("I'm not diabetic any more.", [("The user is not diabetic any more.", "", "", ("condition",), "diabetic")]),
        (
            "I don't drive a Tesla anymore.",
            [("The user doesn't drive a Tesla anymore.", "stance on driving a tesla", "stopped", ("car",), "Tesla")],
        ),
        (
            "I'm not working at Acme any longer.",
            [("The user is not working at Acme any longer.", "", "", ("works at", "job"), "Acme")],
        ),
        # A possession no longer had is one parted with: the thing had, the car or pet naming it.
        (
            "I no longer have a cat.",
            [("The user no longer has a cat.", "", "", _OWNED, "cat")],
        ),
        (
            "I don't have the Tesla any more.",
            [("The user doesn't have the Tesla any more.", "stance on having the tesla", "stopped", _OWNED, "Tesla")],
        ),
        (
            "I don't have my car anymore.",
            [("The user doesn't have their car anymore.", "stance on my car", "stopped", ("car",), "")],
        ),
        # "we" includes the speaker.
        (
            "We don't have the boat anymore.",
            [("The user and others don't have the boat anymore.", "", "", _OWNED, "boat")],
        ),
        # No change said ("anymore", "no longer"), no possession named, a stance: nothing ends.
        ("I'm not allergic to dogs.", [("The user is not allergic to dogs.", "", "", (), "")]),
        ("I don't drive a Tesla.", [("The user doesn't drive a Tesla.", "", "", (), "")]),
        ("I no longer have time.", [("The user no longer has time.", "stance on time", "stopped", (), "")]),
        ("I no longer like jazz.", [("The user no longer likes jazz.", "stance on jazz", "stopped", (), "")]),
    ],
)
def test_a_present_state_said_to_be_over_names_what_it_ends(
    content: str, expected: list[tuple[str, str, str, tuple[str, ...], str]]
) -> None:
    """"I'm not allergic to dogs anymore" and "I no longer have a cat" ended nothing."""
    assert _facts(content) == expected


@pytest.mark.parametrize(
    ("before", "after", "current"),
    [
        (
            ("I'm allergic to cats and dogs.",),
            ("I'm not allergic to dogs anymore.",),
            {"The user is allergic to cats.", "The user is not allergic to dogs anymore."},
        ),
        (
            ("I have a cat.", "I have a boat."),
            ("I no longer have a cat.",),
            {"The user has a boat.", "The user no longer has a cat."},
        ),
        (
            ("I drive a Tesla.", "I have a bike."),
            ("I don't have the Tesla any more.",),
            {"The user has a bike.", "The user doesn't have the Tesla any more."},
        ),
        (("I'm a vegetarian.",), ("I'm no longer a vegetarian.",), {"The user is no longer a vegetarian."}),
        (
            ("I work at Acme.",),
            ("I don't work at Acme anymore.",),
            {"The user doesn't work at Acme anymore."},
        ),
        (("I'm diabetic.",), ("I'm not diabetic anymore.",), {"The user is not diabetic anymore."}),
        (("I drive a Honda Civic.",), ("I don't have my car anymore.",), {"The user doesn't have their car anymore."}),
        (
            ("I have a boat.", "I have a camper van."),
            ("We don't have the boat anymore.",),
            {"The user has a camper van.", "The user and others don't have the boat anymore."},
        ),
        # What names no current fact ends none.
        (
            ("I'm allergic to cats.", "I have a dog."),
            ("I'm not allergic to dogs.",),
            {"The user is allergic to cats.", "The user has a dog.", "The user is not allergic to dogs."},
        ),
        (
            ("I have a cat.", "I have a time machine."),
            ("I no longer have time.",),
            {"The user has a cat.", "The user has a time machine.", "The user no longer has time."},
        ),
        (
            ("I drive a Tesla.",),
            ("I don't have a bike anymore.",),
            {"The user drives a Tesla.", "The user doesn't have a bike anymore."},
        ),
    ],
)
def test_a_present_state_said_to_be_over_ends_the_fact_naming_it(
    project: Project, clock: Clock, before: tuple[str, ...], after: tuple[str, ...], current: set[str]
) -> None:
    """"I'm not allergic to dogs anymore" left "The user is allergic to dogs." current."""
    assert _stored(project, clock, before, after) == current


def test_the_state_is_ended_by_the_statement_that_it_is_over(project: Project, clock: Clock) -> None:
    _told(project, clock, "2025-01-10T10:00:00Z", "I'm allergic to penicillin.")
    _told(project, clock, "2025-08-16T09:00:00Z", "I'm no longer allergic to penicillin.")
    old = Fact.objects.get(text="The user is allergic to penicillin.")
    new = Fact.objects.get(text="The user is no longer allergic to penicillin.")
    assert old.invalidated_by == new and old.invalidated_at == new.valid_from


def _valued(content: str) -> list[tuple[str, str, str]]:
    message = TranscriptMessage(sequence_number=1, role="user", content=content, created_at=WHEN)
    return [(f.text, f.attribute, f.value) for f in extract_episode([message]).facts]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "My favorite food is mac and cheese.",
            [("The user's favorite food is mac and cheese.", "favorite food", "mac and cheese")],
        ),
        (
            "My favourite band is Simon and Garfunkel.",
            [("The user's favourite band is Simon and Garfunkel.", "favorite band", "Simon and Garfunkel")],
        ),
        (
            "My favorite music is rock and roll since college.",
            [("The user's favorite music is rock and roll since college.", "favorite music", "rock and roll")],
        ),
        ("I study law and economics.", [("The user studies law and economics.", "studies", "law and economics")]),
        (
            "I live in Bosnia and Herzegovina.",
            [("The user lives in Bosnia and Herzegovina.", "lives in", "Bosnia and Herzegovina")],
        ),
        # A clause after the value, or words that are no name where only a name joins: cut.
        (
            "My favorite food is pizza and I eat it weekly.",
            [
                ("The user's favorite food is pizza.", "favorite food", "pizza"),
                ("The user eats pizza weekly.", "stance on pizza weekly", "does"),
            ],
        ),
        (
            "My favorite food is sushi and ramen is second.",
            [("The user's favorite food is sushi and ramen is second.", "favorite food", "sushi")],
        ),
        ("I live in Boston and work at Acme.", [("The user lives in Boston and works at Acme.", "lives in", "Boston")]),
        ("I drive a Honda and commute daily.", [("The user drives a Honda and commute daily.", "car", "Honda")]),
        ("I work as a nurse and teach yoga.", [("The user works as a nurse and teaches yoga.", "job", "nurse")]),
    ],
)
def test_a_single_value_keeps_a_phrase_joined_by_and(content: str, expected: list[tuple[str, str, str]]) -> None:
    """"My favorite food is mac and cheese" was stored as "mac"."""
    assert _valued(content) == expected


def test_a_single_value_joined_by_and_is_replaced_whole(project: Project, clock: Clock) -> None:
    _told(project, clock, "2025-01-10T10:00:00Z", "My favorite food is mac and cheese.")
    _told(project, clock, "2025-08-16T09:00:00Z", "My favorite food is mac and cheese.", "My favorite drink is gin and tonic.")
    assert _current(project) == {"The user's favorite food is mac and cheese.", "The user's favorite drink is gin and tonic."}
    _told(project, clock, "2025-09-16T09:00:00Z", "My favorite food is macaroni now.")
    assert _current(project) == {"The user's favorite food is macaroni now.", "The user's favorite drink is gin and tonic."}
    assert Fact.objects.get(text="The user's favorite food is mac and cheese.").value == "mac and cheese"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "I'm allergic to penicillin or something like that.",
            [("The user is allergic to penicillin or something like that.", "allergic to", "penicillin")],
        ),
        ("I live in Boston or so.", [("The user lives in Boston or so.", "lives in", "Boston")]),
        ("I moved to Lisbon or so.", [("The user moved to Lisbon or so.", "lives in", "Lisbon")]),
        (
            "I'm allergic to shellfish I think.",
            [("The user is allergic to shellfish.", "allergic to", "shellfish")],
        ),
        ("I drive a Honda I guess.", [("The user drives a Honda.", "car", "Honda")]),
        ("My favorite color is blue kind of.", [("The user's favorite color is blue kind of.", "favorite color", "blue")]),
        (
            "My favourite band is Radiohead probably.",
            [("The user's favourite band is Radiohead probably.", "favorite band", "Radiohead")],
        ),
        (
            "I'm allergic to cats and dogs or something.",
            [
                ("The user is allergic to cats or something.", "allergic to", "cats"),
                ("The user is allergic to dogs or something.", "allergic to", "dogs"),
            ],
        ),
        # "kind of" inside the value is no hedge.
        (
            "My favorite food is a kind of pasta.",
            [("The user's favorite food is a kind of pasta.", "favorite food", "kind of pasta")],
        ),
    ],
)
def test_a_hedge_after_a_value_is_no_part_of_it(content: str, expected: list[tuple[str, str, str]]) -> None:
    """"allergic to penicillin or something like that" was stored as "penicillin or
    something like"."""
    assert _valued(content) == expected


def test_a_hedged_value_is_the_value_stated_plainly(project: Project, clock: Clock) -> None:
    _told(project, clock, "2025-01-10T10:00:00Z", "I'm allergic to penicillin or something like that.")
    _told(project, clock, "2025-08-16T09:00:00Z", "I'm allergic to penicillin.")
    assert _current(project) == {"The user is allergic to penicillin or something like that."}
    assert Fact.objects.get().value == "penicillin"


def _languages(content: str) -> list[tuple[str, str, str, str, bool]]:
    message = TranscriptMessage(sequence_number=1, role="user", content=content, created_at=WHEN)
    return [(f.subject or "", f.text, f.attribute, f.value, f.single_valued) for f in extract_episode([message]).facts]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "I speak English and Spanish.",
            [
                ("user", "The user speaks English.", "speaks", "English", False),
                ("user", "The user speaks Spanish.", "speaks", "Spanish", False),
            ],
        ),
        (
            "I'm fluent in German and a little Italian.",
            [
                ("user", "The user is fluent in German.", "speaks", "German", False),
                ("user", "The user is fluent in a little Italian.", "speaks", "Italian", False),
            ],
        ),
        (
            "I can speak American Sign Language.",
            [("user", "The user can speak American Sign Language.", "speaks", "American Sign Language", False)],
        ),
        (
            "Priya speaks Hindi and English.",
            [
                ("Priya", "Priya speaks Hindi.", "speaks", "Hindi", False),
                ("Priya", "Priya speaks English.", "speaks", "English", False),
            ],
        ),
        (
            "My native language is Portuguese.",
            [("user", "The user's native language is Portuguese.", "native language", "Portuguese", True)],
        ),
        ("My mother tongue is Tagalog.", [("user", "The user's mother tongue is Tagalog.", "native language", "Tagalog", True)]),
        # Learning a language is not speaking it.
        ("I'm learning Japanese.", [("user", "The user is learning Japanese.", "learning", "Japanese", False)]),
        # No language named: "to Anna", "my mind".
        ("I speak to Anna every day.", [("user", "The user speaks to Anna every day.", "", "", False)]),
        ("I speak my mind.", [("user", "The user speaks their mind.", "", "", False)]),
    ],
)
def test_the_languages_one_speaks_are_a_fact_each(content: str, expected: list[tuple[str, str, str, str, bool]]) -> None:
    """"I speak English and Spanish" had no attribute: no question for languages found it."""
    assert _languages(content) == expected


def test_a_language_no_longer_spoken_ends_alone(project: Project, clock: Clock) -> None:
    assert _stored(
        project,
        clock,
        ("I speak English and Spanish.", "I'm learning Japanese."),
        ("I don't speak Spanish anymore.",),
    ) == {"The user speaks English.", "The user is learning Japanese.", "The user doesn't speak Spanish anymore."}


@pytest.mark.parametrize(
    ("content", "subject", "attribute", "value"),
    [
        ("Priya no longer has a cat.", "Priya", "stance on having a cat", "stopped"),
        ("My brother no longer owns a car.", "user's brother", "stance on owning a car", "stopped"),
        ("Priya no longer eats meat.", "Priya", "stance on meat", "stopped"),
    ],
)
def test_someone_elses_verb_after_an_adverb_is_read_in_its_own_person(
    content: str, subject: str, attribute: str, value: str
) -> None:
    """"Priya no longer has a cat" is read as "I no longer have a cat" of Priya: the
    adverb before the verb is no verb ("stance on hasing a cat" before)."""
    message = TranscriptMessage(sequence_number=1, role="user", content=content, created_at=WHEN)
    facts = extract_episode([message]).facts
    assert [(f.subject, f.attribute, f.value) for f in facts] == [(subject, attribute, value)]

"""Requests to remember a statement (memoryapp/llm/remember_cue.py): the request is dropped,
so offline extraction reads the bare statement; a sentence that only mentions
remembering keeps its meaning."""

from __future__ import annotations

from dataclasses import astuple
from datetime import UTC, datetime

import pytest

from memoryapp.llm.extraction_offline import extract_episode
from memoryapp.llm.port import TranscriptMessage
from memoryapp.llm.remember_cue import names_something, remembered, unlabelled

WHEN = datetime(2026, 3, 11, 15, 30, tzinfo=UTC)


def _extracted(content: str) -> list[tuple[object, ...]]:
    episode = extract_episode([TranscriptMessage(sequence_number=1, role="user", content=content, created_at=WHEN)])
    return [astuple(f) for f in episode.facts]


@pytest.mark.parametrize(
    ("sentence", "statement"),
    [
        ("remember that my sister is called Mara and she lives in Lyon",
         "my sister is called Mara and she lives in Lyon"),
        ("Please remember: I'm vegan.", "I'm vegan."),
        ("PLEASE, REMEMBER THAT I'm vegan!", "I'm vegan!"),
        ("Don't forget that I moved to Lyon.", "I moved to Lyon."),
        ("don\u2019t forget I\u2019m allergic to cats", "I'm allergic to cats"),
        ("Note that my flight is on Friday.", "my flight is on Friday."),
        ("Just so you know I'm vegan.", "I'm vegan."),
        ("FYI my sister lives in Oslo", "my sister lives in Oslo"),
        ("Keep in mind that I hate cilantro.", "I hate cilantro."),
        ("For the record, I never liked him.", "I never liked him."),
        ("Heads up: I'm moving to Berlin.", "I'm moving to Berlin."),
        ("Make a note: I'm allergic to nuts.", "I'm allergic to nuts."),
        ("Remember this, my dog is called Rex.", "my dog is called Rex."),
        ("Oh, and remember that I'm vegan", "I'm vegan"),
        ("I want you to remember that my dog is Rex.", "my dog is Rex."),
        ("Remember Mara is my sister.", "Mara is my sister."),
        # An asked request is no question about the statement ("Remember that ...?" is).
        ("Can you remember that I'm vegan?", "I'm vegan."),
        ("Could you please note my birthday is May 3?", "my birthday is May 3."),
        # Closing the statement.
        ("I swim on Tuesdays, remember that.", "I swim on Tuesdays."),
        ("I'm vegan, don't forget it!", "I'm vegan!"),
        ("Remember that I'm vegan, don't forget it!", "I'm vegan!"),
        ("My sister is Mara - FYI", "My sister is Mara"),
        # Nothing to keep.
        ("remember that", ""),
        ("Remember that!", ""),
        ("Please remember.", ""),
        ("remember", ""),
        ("remember, ok?", ""),
        ("remember this for me, thanks", ""),
        ("remember it please", ""),
    ],
)
def test_it_drops_a_request_to_remember_from_its_statement(sentence: str, statement: str) -> None:
    assert remembered(sentence) == statement


@pytest.mark.parametrize(
    "sentence",
    [
        "I remember my first car.",
        "I don't remember her name.",
        "Do you remember that trip?",
        "Remember when we volunteered together last year?",
        "Remember that time I went to Rome.",
        "Remember to call my mom on Friday.",
        "Don't forget to take breaks.",
        "Note-taking is my hobby.",
        "Notes from the meeting are in my inbox.",
        "Remember me?",
        "Remember that my sister is Mara?",
        "Remember that epic block in Game 7 of the Finals?",
        "My sister is Mara.",
    ],
)
def test_a_sentence_that_only_mentions_remembering_is_no_request(sentence: str) -> None:
    assert remembered(sentence) is None


def test_politeness_and_pointers_name_nothing() -> None:
    assert [names_something(t) for t in ("for me, thanks!", "that please", "", "my sister")] == [
        False, False, False, True,
    ]


@pytest.mark.parametrize(
    ("requested", "bare"),
    [
        ("remember that my sister is called Mara and she lives in Lyon",
         "My sister is called Mara and she lives in Lyon"),
        ("Please remember: I'm vegan.", "I'm vegan."),
        ("Don't forget that I moved to Lyon last week.", "I moved to Lyon last week."),
        ("Just so you know I work at Globex Corp.", "I work at Globex Corp."),
        ("FYI, my daughter Lily is 7.", "My daughter Lily is 7."),
        ("Keep in mind that I'm allergic to cats and dogs.", "I'm allergic to cats and dogs."),
        ("For the record I sold my Tesla.", "I sold my Tesla."),
        ("Oh, and could you note that I drive a Honda Civic?", "I drive a Honda Civic."),
        ("I grew up in Nairobi, remember that.", "I grew up in Nairobi."),
        ("Note that we adopted a cat named Pixel last year.", "We adopted a cat named Pixel last year."),
    ],
)
def test_extraction_of_a_requested_statement_is_the_bare_statements(requested: str, bare: str) -> None:
    facts = _extracted(requested)

    assert facts and facts == _extracted(bare)


def test_the_fact_of_a_request_to_remember_states_the_statement_only() -> None:
    (fact,) = extract_episode([TranscriptMessage(
        sequence_number=1, role="user", created_at=WHEN,
        content="remember that my sister is called Mara and she lives in Lyon",
    )]).facts

    assert (fact.text, fact.attribute, fact.value) == (
        "The user's sister is called Mara and she lives in Lyon.", "sister", "Mara",
    )


def test_a_sentence_that_only_mentions_remembering_keeps_its_fact() -> None:
    assert [f[0] for f in _extracted("I remember my first car.")] == ["The user remembers their first car."]
    assert [f[0] for f in _extracted("Remember that time I went to Rome.")] == [
        "Remember that time the user went to Rome."
    ]
    assert _extracted("Remember that!") == []


@pytest.mark.parametrize(
    ("labelled", "bare"),
    [
        ("Remember: I work at IBM", "I work at IBM"),
        ("Reminder: I am vegan", "I am vegan"),
        ("Important: I live in Oslo", "I live in Oslo"),
        ("Note: my sister is called Mara.", "My sister is called Mara."),
        ("PS: I sold my Tesla.", "I sold my Tesla."),
        ("P.S.: we adopted a cat named Pixel last year.", "We adopted a cat named Pixel last year."),
        ("FYI: I drive a Honda Civic.", "I drive a Honda Civic."),
        ("N.B.: I'm allergic to cats.", "I'm allergic to cats."),
        ("Side note: I grew up in Nairobi.", "I grew up in Nairobi."),
        ("I love hiking. Reminder: I work at Globex Corp.", "I love hiking. I work at Globex Corp."),
    ],
)
def test_extraction_of_a_labelled_statement_is_the_bare_statements(labelled: str, bare: str) -> None:
    facts = _extracted(labelled)

    assert facts and facts == _extracted(bare)


def test_a_remember_label_names_no_speaker() -> None:
    episode = extract_episode([TranscriptMessage(
        sequence_number=1, role="user", created_at=WHEN, content="Remember: I work at IBM",
    )])

    assert [(f.subject, f.text, f.entities) for f in episode.facts] == [
        ("user", "The user works at IBM.", ("user", "IBM")),
    ]
    assert [e.name for e in episode.entities] == ["user", "IBM"]


@pytest.mark.parametrize(
    ("sentence", "statement"),
    [
        ("Reminder: I'm vegan.", "I'm vegan."),
        ("PS: my sister lives in Oslo", "my sister lives in Oslo"),
        ("Quick update:  we moved to Lyon", "we moved to Lyon"),
        # A label naming whose or which thing is part of what is said.
        ("My address: 12 Rue X", None),
        ("My wife: I met her in 2010.", None),
        ("The plan: I fly on Friday.", None),
        # What follows is no statement of the speaker's.
        ("Dinner: pasta with Mara.", None),
        ("Important: call the bank", None),
        ("Meeting at 10:30 I think", None),
        ("I'm vegan.", None),
    ],
)
def test_a_label_opening_the_speakers_statement_is_dropped(sentence: str, statement: str | None) -> None:
    assert unlabelled(sentence) == statement


def test_a_label_naming_its_thing_keeps_its_fact() -> None:
    assert [f[0] for f in _extracted("My address: 12 Rue X")] == ["The user's address: 12 Rue X."]
    assert [f[0] for f in _extracted("Mara: I live in Oslo")] == ["Mara lives in Oslo."]

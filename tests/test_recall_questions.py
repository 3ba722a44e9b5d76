"""memoryapp.recall on a whole conversation (tests/data/household.json, 42 messages over
three sessions): what a user asks for is found, and SQLite and PostgreSQL rank it alike
(CI runs this module on both; every expectation below is the same on each)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memoryapp import compaction, working
from memoryapp.episodic import episode_build
from memoryapp.models import Fact, Project
from memoryapp.recall import recall

DATA = Path(__file__).parent / "data" / "household.json"
MOVES = Path(__file__).parent / "data" / "moves.json"
DENVER = "The user and others moved to Denver last week (the week before 15 June 2026)!"
VEGAN = "The user went vegan in January (January 2026) too, so the fridge is all plants."


def _load(project: Project, data: Path, dataset: str) -> Project:
    """``data``'s conversation in ``dataset``, one thread per session, each ended
    (episode, facts), its messages dated by the session."""
    for session in json.loads(data.read_text())["sessions"]:
        thread = working.thread_create(project=project, dataset=dataset)
        start = datetime.fromisoformat(session["date"])
        for minute, (role, content) in enumerate(session["turns"]):
            compaction.message_append_compacting(
                thread=thread, role=role, content=content,
                created_at=start + timedelta(minutes=minute),
            )
        episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=len(session["turns"]))
    return project


@pytest.fixture
def household(project: Project) -> Project:
    """tests/data/household.json in dataset "vikram"."""
    return _load(project, DATA, "vikram")


@pytest.fixture
def moves(project: Project) -> Project:
    """tests/data/moves.json in dataset "alice": Boston, vegetarian and a nurse in March,
    Denver, vegan and a teacher in June."""
    return _load(project, MOVES, "alice")


def _ask(project: Project, query: str, **kw: Any) -> dict[str, Any]:
    return recall(project=project, dataset="vikram", query=query, **kw)


def _ask_alice(project: Project, query: str, **kw: Any) -> dict[str, Any]:
    return recall(project=project, dataset="alice", query=query, **kw)


def _texts(items: list[dict[str, Any]]) -> list[str]:
    return [i.get("text") or i.get("content") or i["title"] for i in items]


def test_it_finds_the_hobbies_the_user_named_without_the_word(household: Project) -> None:
    found = _ask(household, "what are his hobbies?", include=["facts", "raw"], limit=4)
    assert _texts(found["facts"]) == [
        "The user also enjoys swimming.",
        "In the evenings the user plays guitar, mostly old blues songs.",
        "The user loves running.",
    ]
    assert _texts(found["raw"])[:3] == [
        "I also enjoy swimming. Arjun and I go to the lido on Saturday mornings.",
        "In the evenings I play guitar, mostly old blues songs.",
        "I love running. I try to do 5k three times a week along the river.",
    ]


def test_it_answers_a_question_about_the_kids_with_the_son_and_the_daughter(
    household: Project,
) -> None:
    found = _ask(household, "Remind me what my kids are called", include=["facts"], limit=4)
    assert _texts(found["facts"]) == [
        "The user's son Arjun is nine.",
        "The user's daughter Leela is six.",
        "Yes please, remind the user on Monday.",
        "The user's dog is called Biscuit, he's a beagle.",
    ]
    assert [f["score"] for f in found["facts"]] == [1.0, 0.9167, 0.8462, 0.7857]
    raw = _ask(household, "Remind me what my kids are called", include=["raw"], limit=2)
    assert _texts(raw["raw"]) == [
        "Good so far. My son Arjun is nine and my daughter Leela is six.",
        "Yes please, remind me on Monday.",
    ]


def test_it_answers_what_is_my_name_with_the_introduction(household: Project) -> None:
    """"Hi! I'm Vikram." never says "name": the name attribute of the fact does."""
    found = _ask(household, "what is my name?", include=["facts"], limit=3)
    assert _texts(found["facts"]) == ["The user is Vikram."]
    kids = _ask(household, "what are my kids' names?", include=["facts"], limit=3)
    assert _texts(kids["facts"]) == [
        "The user's son Arjun is nine.", "The user's daughter Leela is six.", "The user is Vikram."
    ]


def test_it_ranks_the_users_statement_above_assistant_chatter_about_the_user(
    household: Project,
) -> None:
    found = _ask(household, "where does the user live?", include=["raw"], limit=4)
    assert [(r["role"], r["content"]) for r in found["raw"]] == [
        ("user", "I live in Bristol now, near Clifton. Still unpacking boxes."),
        ("user", "Luckily yes. Her name is Mrs Okafor and she lives two streets away."),
        ("assistant", "Good choice! Have you seen them live?"),
        ("assistant", "Welcome, Vikram! Moving is a lot. What would you like help with first?"),
    ]


def test_it_ranks_and_scores_raw_hits_alike_on_both_engines(household: Project) -> None:
    found = _ask(household, "what is Daniel's job?", include=["raw"], limit=4)
    assert [(r["content"], r["score"]) for r in found["raw"]] == [
        ("Lucky him! What does Daniel do these days?", 1.0),
        ("Daniel is a paramedic, he works nights at Southmead Hospital.", 0.9167),
        ("Never, sadly. My friend Daniel saw them in 1997 though.", 0.8462),
        ("That is demanding work. Night shifts are hard on the body.", 0.7857),
    ]
    assert [r["neighbours"][0]["content"] for r in found["raw"][:1]] == [
        "Daniel is a paramedic, he works nights at Southmead Hospital."
    ]


def test_facts_tied_on_score_and_valid_from_come_in_one_order_on_both_engines(
    project: Project,
) -> None:
    thread = working.thread_create(project=project, dataset="ties")
    compaction.message_append_compacting(thread=thread, role="user", content="Hello there")
    episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=1)
    episode = thread.episodes.get()
    said = datetime.fromisoformat("2026-05-01T10:00:00+00:00")
    # Equal length and words: equal BM25. Created: tea first, then jam and fig together.
    for text, created in [
        ("The user likes tea.", said),
        ("The user likes jam.", said + timedelta(seconds=1)),
        ("The user likes fig.", said + timedelta(seconds=1)),
    ]:
        Fact.objects.create(
            project=project, dataset="ties", episode=episode, thread=thread, text=text,
            valid_from=said, created=created,
        )
    found = recall(project=project, dataset="ties", query="likes", include=["facts"])
    # The later extracted first; then by text.
    assert [(f["text"], f["score"]) for f in found["facts"]] == [
        ("The user likes fig.", 1.0),
        ("The user likes jam.", 0.9167),
        ("The user likes tea.", 0.8462),
    ]


def test_the_context_marks_what_a_newer_fact_replaced(household: Project) -> None:
    found = _ask(household, "what car does he drive?", limit=4)
    focus = [line for line in found["context"].splitlines() if "Ford Focus" in line]
    prius = "The user drives a Toyota Prius now, much cheaper on fuel."
    note = f"[no longer current as of 2026-04-10; now: {prius}]"
    assert focus == [
        f"- The user drives a Ford Focus and it needs a service too. {note}",
        '<message thread="{}" seq="11" date="2026-03-02" role="user">Thanks. I drive a Ford'
        " Focus and it needs a service too.".format(
            next(r["threadId"] for r in found["raw"] if "Ford" in r["content"])
        ),
        f"Stated here: The user drives a Ford Focus and it needs a service too. {note}"
        "</message>",
    ]
    # The lists keep what was said; only the context marks it.
    assert not any(note in e["summary"] for e in found["episodes"])


def test_it_marks_nothing_when_nothing_was_replaced(household: Project) -> None:
    found = _ask(household, "what is Daniel's job?", include=["raw"], limit=4)
    assert found["context"].count("<message ") == 5  # 4 hits, the reply to one
    assert "no longer current" not in found["context"]


def test_the_synthesis_never_states_a_replaced_fact_as_true(moves: Project) -> None:
    """The offline synthesis picked "I'm Alice, I'm 34 and I live in Boston." by its
    words, apart from the mark on the message's next line; the current fact takes its
    place, and the context's labels ("user (2026-03-10): ") are never part of it."""
    where = recall(project=moves, dataset="alice", query="where do I live", include=["synthesis"])
    assert where["synthesis"] == (
        f"The user's brother Sam lives in Chicago. {DENVER}"
    )
    meat = recall(project=moves, dataset="alice", query="do I eat meat", include=["synthesis"])
    assert meat["synthesis"] == f"The user doesn't eat meat. {VEGAN}"
    diet = recall(project=moves, dataset="alice", query="am I vegetarian?", include=["synthesis"])
    assert diet["synthesis"] == VEGAN


def test_the_synthesis_marks_an_invalidated_fact_it_is_given(moves: Project) -> None:
    """With includeInvalidated the fact layer holds "The user lives in Boston."; its line
    in the synthesis input carries its mark, so it is never the answer."""
    found = recall(
        project=moves, dataset="alice", query="Boston", include=["facts", "synthesis"],
        include_invalidated=True,
    )
    assert [f["text"] for f in found["facts"]] == [DENVER, "The user lives in Boston."]
    assert found["synthesis"] == DENVER


def _ranked(found: dict[str, Any]) -> list[str]:
    items = sorted(found["facts"] + found["raw"] + found["episodes"], key=lambda i: i["rank"])
    return _texts(items)


def test_a_question_about_the_user_ranks_the_users_own_attribute_first(moves: Project) -> None:
    """"My brother Sam lives in Chicago." (a fact of the relation, naming Sam) and its
    message ranked above the user's own "lives in" fact and its message."""
    found = _ask_alice(moves, "where do I live?", include=["facts", "raw"], limit=5)
    assert _ranked(found) == [
        "Big news: we moved to Denver last week! The boxes are everywhere and the flat is "
        "still half empty.",
        DENVER,
        "My brother Sam lives in Chicago.",
        "The user's brother Sam lives in Chicago.",
        "Hi! I'm Alice, I'm 34 and I live in Boston.",
    ]


def test_a_question_about_the_users_age_ranks_another_persons_age_below(moves: Project) -> None:
    """"how old am I?" ranked Emma's age (subject Emma) and its message above "The user
    is 34."."""
    found = _ask_alice(moves, "how old am I?", include=["facts", "raw"], limit=5)
    assert _ranked(found) == [
        "The user is 34.",
        "Yes. My daughter Emma just turned 5 and she adores him.",
        "The user's daughter Emma just turned 5 and she adores him.",
    ]
    assert _texts(found["facts"]) == [
        "The user is 34.", "The user's daughter Emma just turned 5 and she adores him."
    ]


def test_the_context_never_marks_a_quitting_as_no_longer_current(moves: Project) -> None:
    """"I quit the hospital job." was job = quit, invalidated by "I'm a teacher now" and
    marked "[no longer current ...]" in the context: the quitting stays true."""
    found = _ask_alice(moves, "did I quit my job?", include=["facts", "raw", "synthesis"], limit=5)
    assert _texts(found["facts"]) == [
        "The user quit the hospital job.", "The user is a teacher now, at a primary school."
    ]
    quit_lines = [line for line in found["context"].splitlines() if "quit" in line]
    assert [line.split(">", 1)[1] for line in quit_lines] == [
        "The user quit the hospital job.</synthesis>",
        "The user quit the hospital job.</fact>",
        "I quit the hospital job. The night shifts were too much.</message>",
    ]
    assert found["synthesis"] == "The user quit the hospital job."
    # The nurse job it ended is marked, with the job held since as what is current now.
    assert (
        "Stated here: The user works as a nurse at the hospital, so the week is busy. "
        "[no longer current as of 2026-05-02; now: The user is a teacher now, at a primary "
        "school.]</message>"
    ) in found["context"]


def test_now_in_a_question_asks_for_what_holds_not_for_the_word(moves: Project) -> None:
    """"where do I live now?" ranked "I'm a teacher now." (its fact and message) first on
    the shared word "now"; "now" asks for the current state, which current facts are."""
    found = _ask_alice(moves, "where do I live now?", include=["facts", "raw"], limit=3)
    assert _ranked(found)[:2] == [
        "Big news: we moved to Denver last week! The boxes are everywhere and the flat is "
        "still half empty.",
        DENVER,
    ]

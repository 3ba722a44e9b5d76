"""The offline adapter answers from memory (memoryapp/llm/offline_reply.py; issue 10 item 3)."""

from __future__ import annotations

from memoryapp.llm.offline import OfflineModel
from memoryapp.llm.offline_reply import REPLY_OPENING, reply_text
from memoryapp.llm.port import ChatMessage
from memoryapp.recall import Outdated, build_context

SUMMARY = "\n".join(
    [
        "Summary of earlier conversation (offline extractive summary):",
        "- user: Our budget is $4,000 for the whole trip.",
        "- user: We land in Lisbon on May 12 and leave on May 19.",
        "- user: Marta likes old trams.",
    ]
)
INSTRUCTION = "\n".join(
    [
        "<long_term_memory>",
        "Recalled from this user's earlier conversations (dataset 'default').",
        "<facts>",
        '<fact id="3f2a9c1e-0000" date="2026-01-04" subject="Marta">Marta is allergic to'
        " peanuts.</fact>",
        "</facts>",
        "</long_term_memory>",
        "Be brief.",
    ]
)


def test_it_quotes_the_context_lines_that_match_with_their_sources() -> None:
    messages = [
        ChatMessage(role="system", content=SUMMARY),
        ChatMessage(role="assistant", content="Shall I look at hotels near the dates?"),
        ChatMessage(role="user", content="remind me of our budget and dates"),
    ]

    text = reply_text(INSTRUCTION, messages)

    assert text == "\n".join(
        [
            REPLY_OPENING,
            "From memory:",
            "> user: Our budget is $4,000 for the whole trip. (summary)",
            "> user: We land in Lisbon on May 12 and leave on May 19. (summary)",
            "> Shall I look at hotels near the dates? (recent assistant message)",
        ]
    )


def test_it_quotes_a_recalled_fact_with_its_id_and_date() -> None:
    messages = [ChatMessage(role="user", content="Is Marta allergic to anything?")]

    assert reply_text(INSTRUCTION, messages) == "\n".join(
        [
            REPLY_OPENING,
            "From memory:",
            "> Marta is allergic to peanuts. (recalled fact 3f2a9c1e of 2026-01-04)",
        ]
    )


def test_it_says_when_nothing_in_memory_matches() -> None:
    messages = [
        ChatMessage(role="system", content=SUMMARY),
        ChatMessage(role="user", content="what is quantum chromodynamics?"),
    ]

    assert reply_text("", messages) == (
        f"{REPLY_OPENING}\nNothing in this turn's memory matches your message"
        " (it holds lines from: summary)."
    )


def test_it_streams_the_memory_answer() -> None:
    messages = [
        ChatMessage(role="system", content=SUMMARY),
        ChatMessage(role="user", content="what was the budget?"),
    ]

    chunks = list(OfflineModel().reply(system_instruction="", messages=messages))

    assert "".join(c.text for c in chunks) == "\n".join(
        [
            REPLY_OPENING,
            "From memory:",
            # "budget" asks for a number; the days of a date are not one (memoryapp.salient),
            # so the dates line does not match it.
            "> user: Our budget is $4,000 for the whole trip. (summary)",
        ]
    )
    assert chunks[-1].done is True


def test_it_quotes_every_line_of_a_recalled_episode_without_markup_and_with_its_source() -> None:
    episode = {
        "episodeId": "e1", "threadId": "7f08dbfe-4866-4f30-921d-c51223e81b45",
        "fromSequence": 1, "toSequence": 14, "startedAt": "2026-03-02T18:00:00.000Z",
        "title": "Bristol", "summary": "- The user lives in Bristol.\n"
        "- The user drives a Ford Focus & it needs a service.",
    }
    outdated = {"e1": [Outdated("The user drives a Ford Focus & it needs a service.",
                                "2026-04-10", "The user drives a Toyota Prius.")]}
    instruction = build_context(dataset="d", raw=[], synthesis=None, episodes=[episode],
                                outdated=outdated)
    messages = [ChatMessage(role="user", content="What car do I drive?")]

    assert reply_text(instruction, messages) == "\n".join(
        [
            REPLY_OPENING,
            "From memory:",
            "> The user drives a Ford Focus & it needs a service. [no longer current as of"
            " 2026-04-10; now: The user drives a Toyota Prius.] (recalled episode, thread"
            " 7f08dbfe messages 1-14)",
        ]
    )
    # recall's preamble is no memory, and no part of the system prompt
    asked = [ChatMessage(role="user", content="Which earlier conversations are recalled?")]
    assert "(system prompt)" not in reply_text(instruction, asked)


def test_a_recalled_message_quoted_carries_the_mark_of_what_it_says_in_other_words() -> None:
    """recall marks "I live in Boston" with a "Stated here: The user lives in Boston.
    [no longer current ...]" line in the same item; quoted alone, the line stated the old
    home as current."""
    mark = "[no longer current as of 2026-06-15; now: The user lives in Denver.]"
    instruction = (
        "<long_term_memory>\n"
        '<message thread="aaaaaaaa-0000" seq="1" date="2026-03-02" role="user">'
        "Hi! I'm Alice, I'm 34 and I live in Boston.\n"
        f"Stated here: The user lives in Boston. {mark}</message>\n"
        "</long_term_memory>"
    )
    long_line = "I live in Boston " + "and love it " * 30
    longer = instruction.replace("Hi! I'm Alice, I'm 34 and I live in Boston.", long_line.strip())
    ask = [ChatMessage(role="user", content="where do I live?")]

    assert reply_text(instruction, ask) == "\n".join(
        [
            REPLY_OPENING,
            "From memory:",
            f"> Hi! I'm Alice, I'm 34 and I live in Boston. {mark} (recalled message, thread aaaaaaaa #1 (user))",
        ]
    )
    quoted = reply_text(longer, ask).splitlines()[2]
    assert quoted.endswith(f"… {mark} (recalled message, thread aaaaaaaa #1 (user))")
    assert len(quoted.split(" (recalled")[0]) == len("> ") + 240

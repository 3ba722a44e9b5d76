"""The offline model's memory tool use on plain cues (memoryapp.llm.offline_memory; spec
004 "The tools"): it creates a note it has not seen with one close_memory, opens one its
input shows before writing it, and recovers when its input hid one."""

from __future__ import annotations

import pytest

from memoryapp import notes
from memoryapp.llm.offline import OfflineModel
from memoryapp.llm.offline_memory import (
    ASK_WHAT,
    NOTE_DESCRIPTION,
    in_second_person,
    notes_state,
    to_remember,
)
from memoryapp.llm.offline_reply import REPLY_OPENING
from memoryapp.llm.port import ChatMessage, ToolCall, ToolResult
from memoryapp.models import MemoryNote

TOOLS = list(notes.TOOL_SPECS)


def _reply(messages: list[ChatMessage]) -> tuple[tuple[ToolCall, ...], str]:
    chunks = list(OfflineModel().reply(system_instruction="", messages=messages, tools=TOOLS))
    calls = tuple(c for chunk in chunks for c in chunk.tool_calls)
    return calls, "".join(c.text for c in chunks)


def _block(*, open_notes: bool) -> ChatMessage:
    note = MemoryNote(name="notes", description=NOTE_DESCRIPTION, content="- my sister is Ada", is_open=open_notes)
    return ChatMessage("system", notes.context_block(summary="Earlier talk.", notes=[note]))


def _exchange(name: str, arguments: dict[str, str], result: str, *, error: bool = False) -> list[ChatMessage]:
    return [
        ChatMessage("assistant", tool_calls=(ToolCall(name, arguments, f"c-{name}"),)),
        ChatMessage("tool", tool_result=ToolResult(name, result, is_error=error, call_id=f"c-{name}")),
    ]


def test_a_first_remember_creates_the_note_with_one_close_memory() -> None:
    calls, text = _reply([ChatMessage("user", "Remember that my sister is called Ada.")])

    assert calls == (
        ToolCall("close_memory", {"name": "notes", "description": NOTE_DESCRIPTION,
                                  "content": "- your sister is called Ada"}, "offline-close_memory"),
    )
    assert text == ""


def test_it_opens_a_note_its_context_block_lists_before_writing_it() -> None:
    for open_notes in (False, True):
        messages = [_block(open_notes=open_notes), ChatMessage("user", "remember that I live in Oslo")]

        calls, _ = _reply(messages)

        assert calls == (ToolCall("open_memory", {"name": "notes"}, "offline-open_memory"),)


def test_it_follows_the_notes_calls_in_its_history() -> None:
    created = _exchange("close_memory", {"name": "notes", "description": "d", "content": "- a"}, "Saved new memory")
    deleted = [
        *_exchange("open_memory", {"name": "notes"}, "- a"),
        *_exchange("delete_memory", {"name": "notes"}, "Deleted memory 'notes'."),
    ]
    other = _exchange("close_memory", {"name": "quest", "description": "d", "content": "x"}, "Saved new memory")
    refused = _exchange("open_memory", {"name": "notes"}, "Error: there is no memory named 'notes'.", error=True)

    assert notes_state([]) == "absent"
    assert notes_state(created) == "closed"
    assert notes_state([*created, *deleted]) == "absent"
    assert notes_state(other) == "absent"
    assert notes_state([_block(open_notes=False), *refused]) == "absent"
    assert notes_state([_block(open_notes=True)]) == "open"
    assert notes_state([_block(open_notes=False)]) == "closed"


def test_a_create_refused_because_the_input_hid_the_note_opens_then_writes_it() -> None:
    said = ChatMessage("user", "Remember that my sister is called Ada.")
    refused = _exchange(
        "close_memory", {"name": "notes", "description": NOTE_DESCRIPTION, "content": "- your sister is called Ada"},
        "Error: memory 'notes' is closed, and a closed memory cannot be written unseen.", error=True,
    )
    opened = _exchange("open_memory", {"name": "notes"}, "- I live in Oslo")

    assert _reply([said, *refused])[0] == (ToolCall("open_memory", {"name": "notes"}, "offline-open_memory"),)
    assert _reply([said, *refused, *opened])[0] == (
        ToolCall("close_memory", {"name": "notes", "content": "- I live in Oslo\n- your sister is called Ada"},
                 "offline-close_memory"),
    )
    saved = _exchange("close_memory", {"name": "notes"}, "Saved memory 'notes' and closed it.")
    assert _reply([said, *refused, *opened, *saved]) == ((), "[offline model] Saved to memory 'notes'.")


def test_asked_what_it_knows_with_no_note_it_says_so_without_a_call() -> None:
    calls, text = _reply([ChatMessage("user", "What do you know about my sister?")])

    assert (calls, text) == ((), "[offline model] I have nothing in memory about your sister.")


def test_without_the_memory_tools_the_cues_are_plain_text() -> None:
    chunks = list(OfflineModel().reply(
        system_instruction="", messages=[ChatMessage("user", "What do you know about my sister?")]
    ))

    assert "nothing in memory" not in "".join(c.text for c in chunks)


def _created(content: str) -> tuple[ToolCall, ...]:
    return (ToolCall("close_memory", {"name": "notes", "description": NOTE_DESCRIPTION, "content": content},
                     "offline-close_memory"),)


def test_a_request_naming_nothing_saves_nothing_and_asks_what_to_remember() -> None:
    for said in ("remember that", "Remember that!", "please remember.", "Remember this for me, thanks!",
                 "remember, ok?", "Thanks! Remember that."):
        assert _reply([ChatMessage("user", said)]) == ((), ASK_WHAT), said
    # With the note open in its input too: no open_memory, no "- that" line.
    assert _reply([_block(open_notes=True), ChatMessage("user", "remember that")]) == ((), ASK_WHAT)
    assert ASK_WHAT == '[offline model] What should I remember? Say it after "remember that".'


def test_a_sentence_that_only_mentions_remembering_is_no_cue() -> None:
    for said in ("I remember my first car.", "Do you remember that trip?", "Remember when we met?"):
        # Not saved: the plain offline reply, from a memory that is empty here.
        assert _reply([ChatMessage("user", said)]) == (
            (), f"{REPLY_OPENING}\nNothing in this turn's memory matches your message (it is empty)."
        ), said


def test_it_keeps_the_statement_of_any_request_and_not_the_request() -> None:
    assert [to_remember(said) for said in (
        "Please don't forget: I'm vegan.",
        "FYI my flight is on Friday",
        "I swim on Tuesdays, remember that.",
        "I'm allergic to peanuts. Remember that!",
        "Hi there.\nRemember that my sister is Mara. She is 30.",
        "I remember my first car.",
        "remember that",
    )] == [
        "I'm vegan.", "my flight is on Friday", "I swim on Tuesdays.", "I'm allergic to peanuts.",
        "my sister is Mara. She is 30.", None, "",
    ]
    assert _reply([ChatMessage("user", "I'm allergic to peanuts. Remember that!")])[0] == _created(
        "- You're allergic to peanuts"
    )


@pytest.mark.parametrize(
    ("said", "told"),
    [
        ("my sister is called Mara", "your sister is called Mara"),
        ("My sister is called Mara", "Your sister is called Mara"),
        ("I'm vegan and I was born in Lyon", "You're vegan and you were born in Lyon"),
        ("I am tired but mine is fine and I\u2019ll rest", "You are tired but yours is fine and you'll rest"),
        ("I've told myself my mom loves me", "You've told yourself your mom loves you"),
        ("I'd like tea. My mum would too", "You'd like tea. Your mum would too"),
        ("you promised me a cake", "I promised you a cake"),
        ("my sister likes you and your jokes", "your sister likes me and my jokes"),
        ("you're the best, yours is mine", "I'm the best, mine is yours"),
        ("Mara said that you were right", "Mara said that I was right"),
        ("Lyon is where Mara lives", "Lyon is where Mara lives"),
    ],
)
def test_it_says_the_users_words_back_in_the_second_person(said: str, told: str) -> None:
    assert in_second_person(said) == told


def test_its_note_and_its_answer_speak_to_the_user() -> None:
    said = ChatMessage("user", "remember that my sister is called Mara and I'm her only brother")
    assert _reply([said])[0] == _created("- your sister is called Mara and you're her only brother")
    note = "- your sister is called Mara and you're her only brother"
    asked = [_block(open_notes=False), ChatMessage("user", "what do you know about Mara")]
    opened = _exchange("open_memory", {"name": "notes"}, note)
    closed = _exchange("close_memory", {"name": "notes"}, "Closed memory 'notes'.")

    assert _reply([*asked, *opened, *closed]) == (
        (), "[offline model] From memory: your sister is called Mara and you're her only brother",
    )


_ABOUT_BOTH = "- your wife's name is Ana\n- You're vegan\n- I promised you a cake\n- my name is Botty"


def _recalled(question: str, note: str = _ABOUT_BOTH) -> tuple[tuple[ToolCall, ...], str]:
    asked = [_block(open_notes=False), ChatMessage("user", question)]
    opened = _exchange("open_memory", {"name": "notes"}, note)
    closed = _exchange("close_memory", {"name": "notes"}, "Closed memory 'notes'.")
    return _reply([*asked, *opened, *closed])


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        # The user's "me" is the note's "you": every line about the user.
        ("what do you know about me?",
         "[offline model] From memory: your wife's name is Ana You're vegan I promised you a cake"),
        ("What do you know about myself",
         "[offline model] From memory: your wife's name is Ana You're vegan I promised you a cake"),
        # The user's "you" is the assistant, the note's "I"/"my".
        ("what do you know about you?", "[offline model] From memory: I promised you a cake my name is Botty"),
        # A person with something else: the something else ("my wife" is "your wife").
        ("what do you know about me and my wife?", "[offline model] From memory: your wife's name is Ana"),
    ],
)
def test_asked_about_me_or_you_it_answers_about_the_user_or_itself(question: str, answer: str) -> None:
    assert _recalled(question) == ((), answer)


def test_a_recall_finding_nothing_names_the_topic_as_the_assistant_says_it() -> None:
    note = "- Mara lives in Oslo"

    assert _recalled("what do you know about me?", note) == (
        (), "[offline model] My memory 'notes' says nothing about you.",
    )
    assert _recalled("what do you know about you?", note) == (
        (), "[offline model] My memory 'notes' says nothing about me.",
    )
    assert _recalled("what do you know about my boss?", note) == (
        (), "[offline model] My memory 'notes' says nothing about your boss.",
    )

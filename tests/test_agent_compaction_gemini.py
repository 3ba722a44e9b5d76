"""The note write-back of an agent's summarize compaction through the real google-genai
client, against the fake Gemini server (memoryapp/agent_compaction.py, memoryapp/llm/
gemini.py _summarize_with_notes; spec 004 "Who writes what", "Limits"; issue 9 item 5).

The offline twin of these tests is tests/test_agent_compaction.py; here the summary and
the rewritten notes come back as the JSON Gemini answers, with the real 1 MB store cap.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoryapp import compaction, notes
from memoryapp.errors import ModelCallFailed
from memoryapp.models import MemoryNote, MemoryNoteVersion, Message, Project, Thread
from tests.fakes.fixtures import fake_gemini_fixture  # noqa: F401  (registers fake_gemini)
from tests.fakes.gemini_server import FakeGeminiServer, FakeResponse, text_response
from tests.test_notes import call, make_thread

QUEST_DESCRIPTION = "What the player is trying to do right now, and why"


def quest_thread(project: Project) -> Thread:
    """An agent's thread (maxOpenTokens 400,000, so a note may hold most of a megabyte)
    with ``quest`` open, a closed ``npcs``, and one new user message to fold."""
    thread = make_thread(project, max_open=400_000, max_tokens=1_000_000)
    call(thread, "close_memory", name="quest", description=QUEST_DESCRIPTION, content="Find the silver key.")
    call(thread, "open_memory", name="quest")
    call(thread, "close_memory", name="npcs", description="Everyone the player has met", content="Ferryman.")
    compaction.message_append_compacting(
        thread=thread, role="user", content="The player now wants the golden crown instead."
    )
    return thread


def answer(fake_gemini: FakeGeminiServer, text: str) -> None:
    fake_gemini.enqueue(FakeResponse(body=text_response(text, input_tokens=300, output_tokens=40)),
                        action="generateContent")


def checkpoint(thread: Thread) -> dict[str, Any]:
    thread.refresh_from_db()
    assert thread.active_summary is not None
    return dict((thread.active_summary.metadata or {})["checkpoint"])


def test_it_writes_back_an_open_note_from_gemini_json(project: Project, fake_gemini: FakeGeminiServer) -> None:
    thread = quest_thread(project)
    answer(fake_gemini, json.dumps({
        "summary": "- The player changed goal: the golden crown.",
        "notes": [{"name": "quest", "content": "Find the golden crown (the silver key is no longer wanted)."}],
    }))
    result = compaction.compact(thread_id=thread.pk)
    assert result is not None
    (request,) = fake_gemini.requests
    assert request.action == "generateContent"
    config = request.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["required"] == ["summary", "notes"]
    assert f'<open_memory name="quest" description="{QUEST_DESCRIPTION}">Find the silver key.</open_memory>' in request.user_text
    assert request.user_text.count("<open_memory ") == 1  # the closed npcs is not sent to be rewritten
    quest = MemoryNote.objects.get(thread=thread, name="quest")
    assert (quest.content, quest.version, quest.is_open) == (
        "Find the golden crown (the silver key is no longer wanted).", 2, True,
    )
    assert MemoryNote.objects.get(thread=thread, name="npcs").version == 1
    last = MemoryNoteVersion.objects.order_by("pk").last()
    assert last is not None
    assert (last.author, last.name, last.version, last.message_id) == ("compactor", "quest", 2, result.summary.pk)
    assert checkpoint(thread) == {
        "kind": "summarize", "forced": False, "summary": "- The player changed goal: the golden crown.",
        "modelCalled": True, "writeBacksRefused": [],
    }
    assert (result.summary.tokens_input, result.summary.tokens_output) == (300, 40)
    assert (
        f"### quest — {QUEST_DESCRIPTION}\nFind the golden crown (the silver key is no longer wanted).\n"
        in result.summary.content
    )


def test_it_refuses_a_gemini_write_back_over_the_1_mb_cap_and_keeps_the_note(
    project: Project, fake_gemini: FakeGeminiServer, settings: Any
) -> None:
    assert notes.store_cap_bytes() == 1024 * 1024  # the real cap, not a test-sized one
    thread = quest_thread(project)
    # A closed note that fills the store to 100 bytes under the cap.
    room = 1024 * 1024 - notes.store_bytes(thread.pk) - 100
    lore = ("lore " * room)[: room - len("lore") - len("Old lore")]
    call(thread, "close_memory", name="lore", description="Old lore", content=lore)
    assert notes.store_bytes(thread.pk) == 1024 * 1024 - 100
    before = notes.store_bytes(thread.pk)
    quest_bytes = MemoryNote.objects.get(thread=thread, name="quest").bytes
    rewrite = "Find the golden crown. " * 10  # 230 bytes of content, 210 more than now
    answer(fake_gemini, json.dumps({"summary": "- New goal: the golden crown.",
                                    "notes": [{"name": "quest", "content": rewrite}]}))
    result = compaction.compact(thread_id=thread.pk)
    assert result is not None
    new_bytes = notes.note_bytes("quest", QUEST_DESCRIPTION, rewrite)
    after = before - quest_bytes + new_bytes
    assert after == 1024 * 1024 - 100 + 210
    assert checkpoint(thread)["writeBacksRefused"] == [{
        "name": "quest",
        "reason": f"refused, the memory store would be {after:,} bytes, over its cap of 1,048,576 bytes "
        f"(it holds {before:,} bytes now; this memory would take {new_bytes:,}). Write less, or delete a "
        "memory you no longer need with delete_memory (open it first).",
    }]
    quest = MemoryNote.objects.get(thread=thread, name="quest")
    assert (quest.content, quest.version, quest.is_open) == ("Find the silver key.", 1, True)
    assert notes.store_bytes(thread.pk) == before
    assert not MemoryNoteVersion.objects.filter(author="compactor").exists()
    # The summary itself is kept: only the write-back was refused.
    assert checkpoint(thread)["summary"] == "- New goal: the golden crown."
    assert f"### quest — {QUEST_DESCRIPTION}\nFind the silver key.\n" in result.summary.content


@pytest.mark.parametrize(
    "text",
    [
        '{"summary": "- cut off', '```json\n{"summary": "fenced"}\n```', '["a list"]', "",
    ],
    ids=["truncated-json", "fenced", "not-an-object", "empty"],
)
def test_it_writes_nothing_when_gemini_answers_malformed_json(
    project: Project, fake_gemini: FakeGeminiServer, text: str
) -> None:
    thread = quest_thread(project)
    versions = MemoryNoteVersion.objects.count()
    answer(fake_gemini, text)
    with pytest.raises(ModelCallFailed) as raised:
        compaction.compact(thread_id=thread.pk)
    assert raised.value.kind == "bad_response"
    thread.refresh_from_db()
    assert (thread.compaction_count, thread.active_summary_id, thread.uncompacted_count) == (0, None, 7)
    assert not Message.objects.filter(thread=thread, is_summary=True).exists()
    assert thread.last_compaction_error.startswith("bad_response: ")
    quest = MemoryNote.objects.get(thread=thread, name="quest")
    assert (quest.content, quest.version, quest.is_open) == ("Find the silver key.", 1, True)
    assert MemoryNoteVersion.objects.count() == versions


def test_it_writes_no_note_from_malformed_note_items(project: Project, fake_gemini: FakeGeminiServer) -> None:
    """Items naming a closed or unknown note, or without string content, are dropped; the
    summary commits and no note changes."""
    thread = quest_thread(project)
    answer(fake_gemini, json.dumps({
        "summary": "- The golden crown.",
        "notes": [
            {"name": "npcs", "content": "Rewritten although closed."},
            {"name": "ghost", "content": "A note that does not exist."},
            {"name": "quest", "content": ["not", "a", "string"]},
            {"name": "quest"},
            "quest",
        ],
    }))
    result = compaction.compact(thread_id=thread.pk)
    assert result is not None
    assert checkpoint(thread) == {
        "kind": "summarize", "forced": False, "summary": "- The golden crown.",
        "modelCalled": True, "writeBacksRefused": [],
    }
    assert [(n.name, n.content, n.version) for n in MemoryNote.objects.filter(thread=thread).order_by("name")] == [
        ("npcs", "Ferryman.", 1), ("quest", "Find the silver key.", 1),
    ]
    assert not MemoryNoteVersion.objects.filter(author="compactor").exists()
    assert not MemoryNote.objects.filter(name="ghost").exists()

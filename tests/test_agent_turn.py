"""A playground turn with an agent's memory tools (memoryapp/agent_turn.py, memoryapp/chat.py
tool loop; spec 004; issue 9 item 6), against the fake Gemini server and offline."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from memoryapp import agents, notes, working
from memoryapp.models import MemoryNote, Message, Project, Thread, Turn
from tests.conftest import World
from tests.fakes.fixtures import fake_gemini_fixture  # noqa: F401
from tests.fakes.gemini_server import (
    FakeGeminiServer,
    FakeResponse,
    RecordedRequest,
    function_call_response,
    stream_chunks,
)
from tests.test_chat import post_chat


@pytest.fixture
def client(world: World) -> Client:
    """The shared world's member of Acme, logged in."""
    return world.client(world.member)


@pytest.fixture
def thread(project: Project) -> Thread:
    agent, _ = agents.agent_define(
        project=project, name="dm", system_prompt="You are the dungeon master.",
        memory={"maxOpenTokens": 1000}, compaction={"type": "summarize", "maxTokens": 8000},
    )
    return working.thread_create(project=project, dataset="user_42", agent=agent)


def scripted(replies: list[dict[str, Any] | str]) -> Any:
    """Stream answers in order: a dict is a function-call body, a str a text reply."""
    queue = list(replies)

    def respond(request: RecordedRequest) -> FakeResponse | None:
        if request.action != "streamGenerateContent":
            return None
        reply = queue.pop(0)
        if isinstance(reply, str):
            return FakeResponse(chunks=stream_chunks([reply], input_tokens=100, output_tokens=10))
        return FakeResponse(body=reply)

    return respond


def test_it_runs_open_then_close_then_answers_against_gemini(
    client: Client, thread: Thread, fake_gemini: FakeGeminiServer, settings: Any
) -> None:
    settings.MEMORY_PRICE_MEMORY_ACCESS = 0.0001
    notes.tool_run(thread_id=thread.pk, name="close_memory",
                   arguments={"name": "quest", "description": "Goal", "content": "Find the key."})
    fake_gemini.responder = scripted([
        function_call_response("open_memory", {"name": "quest"}, input_tokens=100, output_tokens=5),
        function_call_response("close_memory", {"name": "quest", "content": "Find the silver key."},
                               input_tokens=120, output_tokens=9),
        "Noted: the silver key.",
    ])
    resp = post_chat(client, thread, {"content": "It is the silver key."})
    assert resp.status_code == 201, resp.content
    rows = list(Message.objects.filter(thread=thread).order_by("sequence_number"))
    assert [(m.sequence_number, m.role, m.content) for m in rows] == [
        (1, "assistant", 'close_memory({"name": "quest", "description": "Goal", "content": "Find the key."})'),
        (2, "tool", "Saved new memory 'quest' (closed)."),
        (3, "user", "It is the silver key."),
        (4, "assistant", 'open_memory({"name": "quest"})'),
        (5, "tool", "Find the key."),
        (6, "assistant", 'close_memory({"name": "quest", "content": "Find the silver key."})'),
        (7, "tool", "Saved memory 'quest' and closed it. Its description was kept."),
        (8, "assistant", "Noted: the silver key."),
    ]
    note = MemoryNote.objects.get(thread=thread, name="quest")
    assert (note.content, note.is_open, note.version) == ("Find the silver key.", False, 2)
    turn = Turn.objects.get()
    assert [(ln.kind, ln.quantity, ln.cost, ln.detail) for ln in turn.usage_lines.filter(kind="memory_access")] == [
        ("memory_access", 1, Decimal("0.00010000"), "open_memory"),
        ("memory_access", 1, Decimal("0.00010000"), "close_memory"),
    ]
    assert turn.usage_lines.get(kind="model_input").quantity == 100 + 120 + 100
    assert [c["name"] for c in turn.context["toolCalls"]] == ["open_memory", "close_memory"]
    streams = fake_gemini.requests_for("streamGenerateContent")
    assert len(streams) == 3
    declared = (streams[0].body or {})["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declared] == ["open_memory", "close_memory", "delete_memory"]
    assert "You are the dungeon master." in streams[0].system_instruction
    last = streams[2].contents
    assert last[-2]["parts"][0]["functionCall"]["name"] == "close_memory"
    assert "functionResponse" in last[-1]["parts"][0]


def test_it_stops_the_tool_loop_at_its_bound(
    client: Client, thread: Thread, fake_gemini: FakeGeminiServer, settings: Any
) -> None:
    settings.MEMORY_AGENT_MAX_TOOL_ROUNDS = 2
    fake_gemini.responder = scripted([function_call_response("open_memory", {"name": "x"})] * 3)
    resp = post_chat(client, thread, {"content": "Loop."})
    assert resp.status_code == 201, resp.content
    assert resp.json()["assistantMessage"]["content"] == (
        "[stopped: the model asked for more memory tool calls after 2 rounds]"
    )
    assert Message.objects.filter(thread=thread, role="tool").count() == 2
    turn = Turn.objects.get()
    assert turn.context["toolLoopStopped"] is True
    assert turn.usage_lines.filter(kind="memory_access").count() == 2


def test_it_offers_no_tools_to_a_thread_without_a_memory_agent(
    client: Client, project: Project, fake_gemini: FakeGeminiServer
) -> None:
    plain = working.thread_create(project=project, dataset="user_42")
    fake_gemini.responder = scripted(["Hello."])
    assert post_chat(client, plain, {"content": "Hi."}).status_code == 201
    assert "tools" not in (fake_gemini.requests_for("streamGenerateContent")[0].body or {})


def test_it_remembers_and_recalls_offline_on_plain_cues(client: Client, thread: Thread) -> None:
    resp = post_chat(client, thread, {"content": "Remember that my sister is called Ada."})
    assert resp.status_code == 201, resp.content
    assert resp.json()["assistantMessage"]["content"] == "[offline model] Saved to memory 'notes'."
    note = MemoryNote.objects.get(thread=thread, name="notes")
    assert (note.description, note.content, note.is_open) == (
        "Things the user asked me to remember", "- my sister is called Ada", False,
    )
    resp = post_chat(client, thread, {"content": "What do you know about my sister?"})
    assert resp.json()["assistantMessage"]["content"] == "[offline model] From memory: my sister is called Ada"
    calls = [m.metadata["toolCall"]["name"] for m in Message.objects.filter(thread=thread, role="assistant")
             if m.metadata and "toolCall" in m.metadata]
    assert calls == ["open_memory", "close_memory", "open_memory", "close_memory"]
    results = [m.metadata["toolResult"]["isError"] for m in Message.objects.filter(thread=thread, role="tool")
               if m.metadata]
    assert results == [True, False, False, False]
    assert MemoryNote.objects.get(thread=thread, name="notes").is_open is False

"""A transient send on the playground chat route (``"transient": true``; spec 004 "The
tools": "Memory tools are only offered on a normal send. A transient: true send leaves no
trace in the agent's history, so it never gets them"; issue 9 item 6).

The model gets the thread's context (the agent's prompt, the checkpoint, the tail) and
the unsent user message, with no tool declarations; nothing is stored and no event is
sent. Offline and against the fake Gemini server.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import apps
from django.forms.models import model_to_dict
from django.test import Client

from memoryapp import compaction, events, llm, working
from memoryapp.llm.offline import OfflineModel
from memoryapp.llm.registry import GuardedModel
from memoryapp.models import MemoryNote, Project, Thread
from tests.conftest import World
from tests.fakes.fixtures import fake_gemini_fixture  # noqa: F401
from tests.fakes.gemini_server import FakeGeminiServer, FakeResponse, error, stream_chunks
from tests.test_chat import post_chat
from tests.test_notes import call, make_thread


@pytest.fixture
def client(world: World) -> Client:
    """The shared world's member of Acme, logged in."""
    return world.client(world.member)


@pytest.fixture
def thread(project: Project) -> Thread:
    """An agent's thread with memory, one closed note and two messages (#3, #4)."""
    thread = make_thread(project)  # agent "dm", memory on
    call(thread, "close_memory", name="quest", description="Goal", content="Find the key.")
    compaction.message_append_compacting(thread=thread, role="user", content="My sister is called Ada.")
    compaction.message_append_compacting(thread=thread, role="assistant", content="Noted, Ada.")
    return thread


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The groups every event of the test was sent to (memoryapp.events' one exit)."""
    groups: list[str] = []
    monkeypatch.setattr(events, "_group_send", lambda group, build: groups.append(group))
    return groups


def snapshot() -> dict[str, Any]:
    """Every row of every model of the service, by model (the whole database's state)."""
    return {
        model.__name__: sorted(
            (repr(sorted(model_to_dict(row).items())) for row in model._default_manager.all()), key=str
        )
        for model in apps.get_app_config("memoryapp").get_models()
    }


class SpyModel(OfflineModel):
    """The offline model, keeping each reply call's arguments."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def reply(self, **kwargs: Any) -> Iterator[Any]:
        self.calls.append(kwargs)
        return super().reply(**kwargs)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> SpyModel:
    model = SpyModel()
    monkeypatch.setattr(llm, "get_model", lambda: GuardedModel(model))
    return model


def test_a_transient_send_offline_offers_no_tools_and_stores_nothing(
    client: Client, thread: Thread, spy: SpyModel, sent: list[str]
) -> None:
    before = snapshot()
    # With the tools offered, this cue makes the offline model call close_memory.
    resp = post_chat(client, thread, {"content": "Remember that my brother is called Bo.", "transient": True})
    assert resp.status_code == 200, resp.content
    (call,) = spy.calls
    assert call["tools"] is None
    assert [(m.role, m.content or m.tool_calls[0].name) for m in call["messages"][:1]] == [
        ("assistant", "close_memory"),
    ]
    assert call["messages"][1].tool_result.content == "Saved new memory 'quest' (closed)."
    assert [(m.role, m.content) for m in call["messages"][2:]] == [
        ("user", "My sister is called Ada."),
        ("assistant", "Noted, Ada."),
        ("user", "Remember that my brother is called Bo."),
    ]
    assert call["system_instruction"] == "You are the dungeon master."
    body = resp.json()
    reply = (
        "[offline model] No language model is set up (no GEMINI_API_KEY), so I answer from memory.\n"
        "From memory:\n> My sister is called Ada. (recent user message)"
    )
    assert body == {
        "transient": True,
        "assistantMessage": {"role": "assistant", "content": reply, "model": "offline-extractive"},
        "prepare": {"messageCount": 4, "truncated": False, "compacted": False},
        "recallSummary": {"episodeCount": 0, "factCount": 0, "hasContext": False, "hasSynthesis": False},
        "usage": body["usage"],
    }
    assert body["usage"]["inputTokens"] > 0 and body["usage"]["outputTokens"] > 0
    assert snapshot() == before
    assert sent == []
    # A normal send of the same text does take the tools: the difference is the flag.
    assert post_chat(client, thread, {"content": "Remember that my brother is called Bo."}).status_code == 201
    assert spy.calls[1]["tools"] is not None
    assert MemoryNote.objects.filter(thread=thread, name="notes").exists()


def test_a_transient_send_never_compacts_a_thread_at_its_threshold(
    client: Client, project: Project, spy: SpyModel, sent: list[str]
) -> None:
    plain = working.thread_create(project=project, dataset="user_42", auto_compact_threshold=3)
    working.message_append(thread=plain, role="user", content="one")
    working.message_append(thread=plain, role="assistant", content="two")
    before = snapshot()
    resp = post_chat(client, plain, {"content": "three", "transient": True, "verbose": True})
    assert resp.status_code == 200, resp.content
    assert resp.json()["recall"]["facts"] == []
    assert snapshot() == before
    assert sent == []


def test_a_transient_send_to_gemini_declares_no_tools_and_stores_nothing(
    client: Client, thread: Thread, fake_gemini: FakeGeminiServer, sent: list[str]
) -> None:
    fake_gemini.enqueue(
        FakeResponse(chunks=stream_chunks(["Bo, ", "noted."], input_tokens=210, output_tokens=4)),
        action="streamGenerateContent",
    )
    before = snapshot()
    resp = post_chat(client, thread, {"content": "My brother is Bo.", "transient": True})
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["assistantMessage"] == {"role": "assistant", "content": "Bo, noted.", "model": "gemini-2.5-flash"}
    assert body["usage"] == {"inputTokens": 210, "outputTokens": 4}
    (request,) = fake_gemini.requests_for("streamGenerateContent")
    assert "tools" not in request.body
    assert "toolConfig" not in request.body
    assert request.system_instruction == "You are the dungeon master."
    # The client joins the tool result and the next user message into one user turn.
    assert request.contents == [
        {"role": "model", "parts": [{"functionCall": {
            "name": "close_memory", "args": {"name": "quest", "description": "Goal", "content": "Find the key."},
        }}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "close_memory", "response": {"result": "Saved new memory 'quest' (closed)."}}},
            {"text": "My sister is called Ada."},
        ]},
        {"role": "model", "parts": [{"text": "Noted, Ada."}]},
        {"role": "user", "parts": [{"text": "My brother is Bo."}]},
    ]
    assert snapshot() == before
    assert sent == []
    # The same text sent normally declares the three memory tools.
    fake_gemini.enqueue(FakeResponse(chunks=stream_chunks(["Ok."])), action="streamGenerateContent")
    assert post_chat(client, thread, {"content": "My brother is Bo."}).status_code == 201
    declared = fake_gemini.requests_for("streamGenerateContent")[1].body["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declared] == ["open_memory", "close_memory", "delete_memory"]


def test_a_transient_send_that_fails_answers_502_and_stores_nothing(
    client: Client, thread: Thread, fake_gemini: FakeGeminiServer, sent: list[str]
) -> None:
    fake_gemini.enqueue(error(400, "refused"), action="streamGenerateContent")
    before = snapshot()
    resp = post_chat(client, thread, {"content": "Hello?", "transient": True})
    assert resp.status_code == 502
    body = resp.json()
    assert body == {
        "error": "Model call failed", "kind": "unavailable",
        "detail": "Gemini reply: request refused (400 INVALID_ARGUMENT: refused)",
    }
    assert snapshot() == before
    assert sent == []


def test_a_transient_flag_that_is_not_a_boolean_is_a_400_naming_it(client: Client, thread: Thread) -> None:
    resp = post_chat(client, thread, {"content": "Hello?", "transient": "yes"})
    assert resp.status_code == 400
    assert [issue["path"] for issue in resp.json()["issues"]] == [["transient"]]

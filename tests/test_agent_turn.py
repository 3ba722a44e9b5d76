"""A playground turn with an agent's memory tools (memoryapp/agent_turn.py, memoryapp/chat.py
tool loop; spec 004; issue 9 item 6), against the fake Gemini server and offline."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from memoryapp import agents, notes, working, xray
from memoryapp.llm.offline import OfflineModel
from memoryapp.models import MemoryNote, Message, Project, Thread, Turn, UsageLine
from memoryapp.tokens import count_tokens
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
from tests.test_dashboard_views import tree, url


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
    resp = post_chat(client, thread, {"content": "What do you know about my sister?"})
    # No memory yet, and its input shows none: it says so without a tool call.
    assert resp.json()["assistantMessage"]["content"] == "[offline model] I have nothing in memory about your sister."
    resp = post_chat(client, thread, {"content": "Remember that my sister is called Ada."})
    assert resp.status_code == 201, resp.content
    assert resp.json()["assistantMessage"]["content"] == "[offline model] Saved to memory 'notes'."
    note = MemoryNote.objects.get(thread=thread, name="notes")
    assert (note.description, note.content, note.is_open) == (
        "Things the user asked me to remember", "- your sister is called Ada", False,
    )
    resp = post_chat(client, thread, {"content": "What do you know about my sister?"})
    assert resp.json()["assistantMessage"]["content"] == "[offline model] From memory: your sister is called Ada"
    calls = [m.metadata["toolCall"]["name"] for m in Message.objects.filter(thread=thread, role="assistant")
             if m.metadata and "toolCall" in m.metadata]
    # The first note is created by close_memory directly (its input showed no memory
    # 'notes'), not by an open_memory that fails first; the second turn opens the note
    # the history shows it wrote.
    assert calls == ["close_memory", "open_memory", "close_memory"]
    results = [m.metadata["toolResult"]["isError"] for m in Message.objects.filter(thread=thread, role="tool")
               if m.metadata]
    assert results == [False, False, False]
    assert MemoryNote.objects.get(thread=thread, name="notes").is_open is False


def test_the_xray_layers_cost_line_and_message_count_the_same_input_offline(
    client: Client, project: Project
) -> None:
    """Issue 10 "Counts agree everywhere": on an agent turn with memory tools offered, the
    X-ray total, the sum of its layers, the "Tokens per layer" total, the message's input
    tokens and the cost line's input quantity are one figure: the offline adapter counts
    the exact input (tool declarations, tool calls and results included)."""
    agent, _ = agents.agent_define(project=project, name="dm", system_prompt="You are the dungeon master.",
                                   memory={})
    thread = working.thread_create(project=project, dataset="user_42", agent=agent)
    for content in ("remember that my sister is called Mara", "what do you know about Mara", "Thanks, carry on."):
        resp = post_chat(client, thread, {"content": content})
        assert resp.status_code == 201, resp.content
    turn = Turn.objects.get(pk=resp.json()["turnId"])
    stored, layers = turn.context["input"], turn.context["layers"]
    reply = turn.assistant_message
    assert reply is not None
    assert [t["name"] for t in stored["tools"]] == ["open_memory", "close_memory", "delete_memory"]
    assert turn.context["usage"] == {"inputTokens": stored["totalTokens"], "outputTokens":
                                     reply.tokens_output, "source": "counted", "modelCalls": 1}
    # The tool declarations and the tool traffic of the earlier turns are in the count.
    assert stored["layers"]["tools"] == sum(
        count_tokens(json.dumps({"name": t["name"], "description": t["description"],
                                 "parameters": t["parameters"]}, ensure_ascii=False))
        for t in stored["tools"]
    ) > 0
    tool_results = [m for m in stored["messages"] if "toolResult" in m]
    assert tool_results and all(m["tokens"] == count_tokens(m["content"]) > 0 for m in tool_results)
    calls = [m for m in stored["messages"] if "toolCall" in m]
    assert calls and all(m["tokens"] == count_tokens(json.dumps(
        {"name": m["toolCall"]["name"], "arguments": m["toolCall"]["arguments"]}, ensure_ascii=False)) for m in calls)
    # The system instruction's parts add up to its count; the layers to the total.
    assert sum(p["tokens"] for p in stored["systemParts"]) == count_tokens(stored["systemInstruction"])
    assert sum(stored["layers"].values()) == stored["totalTokens"]
    assert stored["layers"]["agentPrompt"] > 0
    assert layers == {
        "recallContext": stored["layers"]["recall"], "agentPrompt": stored["layers"]["agentPrompt"],
        "systemPrompt": stored["layers"]["systemPrompt"], "summary": stored["layers"]["summary"],
        "tail": stored["layers"]["messages"], "tools": stored["layers"]["tools"], "total": stored["totalTokens"],
    }
    # What the offline adapter reports for this very input, the message's "in", the cost line.
    instruction, messages, tools = xray.stored_call(stored)
    done = [c for c in OfflineModel().reply(system_instruction=instruction, messages=messages, tools=tools) if c.done]
    assert done[0].usage is not None and done[0].usage.input_tokens == stored["totalTokens"]
    assert reply.tokens_input == stored["totalTokens"]
    line = turn.usage_lines.get(kind=UsageLine.Kind.MODEL_INPUT)
    assert (line.quantity, line.detail) == (stored["totalTokens"], "offline-extractive")
    page = client.get(reverse("playground:turn-context", args=[turn.pk]) + f"?projectId={project.pk}")
    assert page.context["layers"][-1] == ("Total", stored["totalTokens"])
    assert sum(tokens for label, tokens in page.context["layers"][:-1]) == stored["totalTokens"]
    assert "xray-reported-usage" not in page.content.decode()


def test_it_labels_gemini_input_tokens_as_reported_by_the_model(
    client: Client, project: Project, thread: Thread, fake_gemini: FakeGeminiServer
) -> None:
    """Gemini's input tokens come from its usage metadata (its own tokenizer): the cost
    line and the X-ray say so next to the X-ray's own count, which they need not equal."""
    fake_gemini.responder = scripted([function_call_response("open_memory", {"name": "x"}, input_tokens=100,
                                                             output_tokens=5), "Done."])
    turn = Turn.objects.get(pk=post_chat(client, thread, {"content": "Hi."}).json()["turnId"])
    assert turn.context["usage"] == {"inputTokens": 200, "outputTokens": 15, "source": "model", "modelCalls": 2}
    line = turn.usage_lines.get(kind=UsageLine.Kind.MODEL_INPUT)
    assert line.quantity == 200 and line.detail.endswith(" (tokens reported by the model)")
    html = client.get(reverse("playground:turn-context", args=[turn.pk]) + f"?projectId={project.pk}").content.decode()
    assert "Input tokens reported by the model: 200 over its 2 calls" in html
    assert f"Model input of call 1 (exact): {turn.context['input']['totalTokens']} of" in html


# --- the agent's window in the playground ----------------------------------------------------


def fill(thread: Thread, count: int) -> None:
    for i in range(1, count + 1):
        working.message_append(thread=thread, role="user" if i % 2 else "assistant", content=f"turn {i}")


def test_a_playground_turn_on_an_agents_thread_gets_the_agents_whole_window(
    client: Client, project: Project, thread: Thread
) -> None:
    # The chat route used to send prepare messageLimit 20 whatever the thread: with 30
    # messages since the checkpoint the agent's turn saw only the last 20 (the user's
    # message among them) and nothing said so. Without messageLimit it gets them all.
    fill(thread, 30)
    resp = post_chat(client, thread, {"content": "Where were we?"})
    assert resp.status_code == 201, resp.content
    assert resp.json()["prepare"] == {"messageCount": 31, "truncated": False, "compacted": False}
    turn = Turn.objects.get()
    assert turn.message_limit == 200  # the agent's window, MEMORY_AGENT_MAX_VERBATIM_MESSAGES
    expected = [f"turn {i}" for i in range(1, 31)] + ["Where were we?"]
    assert [m["content"] for m in turn.context["prepare"]["tail"]] == expected
    assert turn.context["prepare"]["warning"] is None
    # The X-ray: the exact model input holds every message of the window, each by its number.
    assert [(m["source"], m["content"]) for m in turn.context["input"]["messages"]] == [
        ({"kind": "message", "sequenceNumber": n}, text) for n, text in enumerate(expected, start=1)
    ]
    page = tree(client.get(url("playground:turn-context", project, turn.pk)))
    assert [node.attrs["data-seq"] for node in page.by_testid("xray-message")] == [str(n) for n in range(1, 32)]
    assert len(page.by_testid("context-tail")[0].all(lambda n: n.tag == "li")) == 31


def test_a_message_limit_sent_for_an_agents_thread_is_kept_and_warned_about(
    client: Client, thread: Thread
) -> None:
    fill(thread, 30)
    resp = post_chat(client, thread, {"content": "Where were we?", "messageLimit": 20})
    assert resp.json()["prepare"] == {"messageCount": 31, "truncated": True, "compacted": False}
    turn = Turn.objects.get()
    assert turn.message_limit == 20
    assert [m["content"] for m in turn.context["prepare"]["tail"]] == [f"turn {i}" for i in range(12, 31)] + [
        "Where were we?"
    ]
    assert turn.context["prepare"]["warning"] == (
        "messageLimit (20) leaves out the 11 oldest of the 31 messages since this agent's checkpoint; "
        "an agent's context is its checkpoint and every message since (spec 004). Send prepare without "
        "messageLimit to get them all."
    )


def test_a_playground_turn_on_an_ordinary_thread_still_gets_twenty_by_default(
    client: Client, project: Project
) -> None:
    plain = working.thread_create(project=project, dataset="user_42")
    fill(plain, 30)
    resp = post_chat(client, plain, {"content": "Where were we?"})
    assert resp.json()["prepare"] == {"messageCount": 31, "truncated": True, "compacted": False}
    turn = Turn.objects.get()
    assert turn.message_limit == 20
    assert [m["content"] for m in turn.context["prepare"]["tail"]] == [f"turn {i}" for i in range(12, 31)] + [
        "Where were we?"
    ]


def test_the_playground_disables_the_message_limit_on_an_agents_thread_and_says_why(
    client: Client, project: Project, thread: Thread
) -> None:
    page = tree(client.get(url("playground:playground", project, thread.pk)))
    limit = page.by_testid("chat-message-limit")[0]
    assert ("disabled" in limit.attrs, "value" in limit.attrs, limit.attrs["placeholder"]) == (
        True, False, "whole window",
    )
    assert page.by_testid("chat-message-limit-hint")[0].full_text() == (
        "An agent's thread: each turn gets the agent's whole window, its checkpoint and every "
        "message since (at most 200), so there is no limit to set."
    )
    plain = working.thread_create(project=project, dataset="user_42")
    page = tree(client.get(url("playground:playground", project, plain.pk)))
    limit = page.by_testid("chat-message-limit")[0]
    assert ("disabled" in limit.attrs, limit.attrs["value"]) == (False, "20")
    assert page.by_testid("chat-message-limit-hint")[0].full_text() == (
        "How many recent messages prepare returns (1\u2013100); the summary comes on top."
    )

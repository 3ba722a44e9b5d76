"""The X-ray of a tool-loop turn (memoryapp.xray ``calls``, playground.xray_views): every
model call of the turn is inspectable (its whole input, pieces, tokens, latency) and
replayable by number, not only the first one."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from memoryapp import agents, working, xray
from memoryapp.llm.offline import OfflineModel
from memoryapp.models import Message, Project, Thread, Turn, UsageLine
from playground import selectors
from tests.conftest import World
from tests.test_chat import post_chat

REMEMBER = "Remember that my sister is called Ada."
CREATE = {"name": "notes", "description": "Things the user asked me to remember",
          "content": "- your sister is called Ada"}


@pytest.fixture
def client(world: World) -> Client:
    """The shared world's member of Acme, logged in."""
    return world.client(world.member)


@pytest.fixture
def thread(project: Project) -> Thread:
    agent, _ = agents.agent_define(project=project, name="dm", system_prompt="You are the dungeon master.", memory={})
    return working.thread_create(project=project, dataset="user_42", agent=agent)


@pytest.fixture
def turn(client: Client, thread: Thread) -> Turn:
    """An offline tool-loop turn: call 1 asks for close_memory, call 2 answers."""
    resp = post_chat(client, thread, {"content": REMEMBER})
    assert resp.status_code == 201, resp.content
    return Turn.objects.get(pk=resp.json()["turnId"])


def _page(client: Client, project: Project, turn: Turn, **query: Any) -> Any:
    url = reverse("playground:turn-context", args=[turn.pk])
    return client.get(url, {"projectId": project.pk, **query})


def test_it_keeps_every_model_call_of_a_tool_loop_with_its_input(turn: Turn, thread: Thread) -> None:
    context = turn.context
    first, second = context["calls"]
    call_row, result_row = Message.objects.filter(thread=thread, sequence_number__in=(2, 3)).order_by("sequence_number")
    assert (first["call"], first["added"], first["toolCalls"]) == (1, [], [{"name": "close_memory", "arguments": CREATE}])
    assert (second["call"], second["toolCalls"], second["text"]) == (2, [], "")
    assert [(m["role"], m["source"], m["content"]) for m in second["added"]] == [
        ("assistant", {"kind": "message", "sequenceNumber": 2}, call_row.content),
        ("tool", {"kind": "message", "sequenceNumber": 3}, result_row.content),
    ]
    assert second["added"][0]["toolCall"]["name"] == "close_memory"
    assert second["added"][1]["toolResult"] == {"id": (result_row.metadata or {})["toolResult"]["id"], "name": "close_memory",
                                                 "isError": False}
    # Call 1 is the stored input; call 2 is it plus the two rows, and its layers add up.
    assert first["totalTokens"] == context["input"]["totalTokens"] == sum(first["layers"].values())
    added = sum(m["tokens"] for m in second["added"])
    assert second["totalTokens"] == first["totalTokens"] + added == sum(second["layers"].values())
    assert second["layers"]["messages"] == context["input"]["layers"]["messages"] + added
    # Each figure is what the offline adapter reported for that call; together the cost line's.
    assert [c["usage"]["inputTokens"] for c in (first, second)] == [first["totalTokens"], second["totalTokens"]]
    line = turn.usage_lines.get(kind=UsageLine.Kind.MODEL_INPUT)
    assert line.quantity == first["totalTokens"] + second["totalTokens"] == context["usage"]["inputTokens"]
    assert all(isinstance(c["ms"], int) and c["ms"] >= 0 for c in (first, second))


def test_call_input_rebuilds_the_exact_input_of_each_call(turn: Turn) -> None:
    context = turn.context
    assert xray.call_count(context) == 2
    assert xray.call_input(context, 1) == context["input"]
    second = xray.call_input(context, 2)
    assert second["messages"][:-2] == context["input"]["messages"]
    assert [m["addedInCall"] for m in second["messages"][-2:]] == [2, 2]
    instruction, messages, tools = xray.stored_call(second)
    done = [c for c in OfflineModel().reply(system_instruction=instruction, messages=messages, tools=tools) if c.done]
    assert done[0].usage is not None and done[0].usage.input_tokens == second["totalTokens"]
    for bad in (0, 3):
        with pytest.raises(ValueError, match="between 1 and 2"):
            xray.call_input(context, bad)


def test_the_xray_page_shows_any_call_of_the_turn(client: Client, project: Project, turn: Turn) -> None:
    second = turn.context["calls"][1]
    page = _page(client, project, turn, call="2")
    assert page.status_code == 200
    assert page.context["xin"]["totalTokens"] == second["totalTokens"]
    html = page.content.decode()
    assert html.count('data-testid="xray-call"') == 2
    assert html.count('data-testid="xray-added"') == 2
    assert f"Model input of call 2 (exact): {second['totalTokens']} of " in html
    assert 'name="call" value="2"' in html
    assert "this is the first call&#x27;s input" not in html and "this is the first call's input" not in html
    first = _page(client, project, turn)
    assert first.context["xin"] == turn.context["input"] and 'data-testid="xray-added"' not in first.content.decode()
    assert 'href="' + reverse("playground:turn-context", args=[turn.pk]) + f"?projectId={project.pk}&amp;call=2" in (
        first.content.decode()
    )


@pytest.mark.parametrize("call", ["3", "0", "two", "-1"])
def test_it_refuses_a_call_the_turn_did_not_make_naming_the_field(
    client: Client, project: Project, turn: Turn, call: str
) -> None:
    page = _page(client, project, turn, call=call)
    assert page.status_code == 400
    assert [i["path"] for i in page.json()["issues"]] == [["call"]]
    url = reverse("playground:turn-replay", args=[turn.pk]) + f"?projectId={project.pk}"
    replay = client.post(url, {"adapter": "offline", "call": call})
    assert replay.status_code == 400 and replay.json() == page.json()
    assert replay.json() == {
        "error": "Validation error",
        "issues": [
            {
                "path": ["call"],
                "message": "call must be a whole number from 1 to 2 (this turn's model calls)",
                "code": "no_such_call",
            }
        ],
    }


def test_replay_says_which_call_it_replays(client: Client, project: Project, turn: Turn) -> None:
    url = reverse("playground:turn-replay", args=[turn.pk]) + f"?projectId={project.pk}"
    second = client.post(url, {"adapter": "offline", "call": "2"})
    assert second.status_code == 200
    assert (second.context["call"], second.context["call_count"]) == (2, 2)
    assert turn.assistant_message is not None
    assert second.context["original"] == turn.assistant_message.content
    assert "Replayed call 2 of 2" in second.content.decode()
    first = client.post(url, {"adapter": "offline", "call": "1"})
    [asked] = first.context["original_asked"]
    assert asked.startswith("close_memory(") and asked.endswith(")")
    assert json.loads(asked.removeprefix("close_memory(").removesuffix(")")) == CREATE
    assert first.context["result"].tool_calls == ("close_memory",)
    assert "Replayed call 1 of 2" in first.content.decode()


def test_the_turn_list_and_stats_count_every_call(client: Client, project: Project, thread: Thread, turn: Turn) -> None:
    first, second = turn.context["calls"]
    listing = client.get(reverse("playground:thread-turns", args=[thread.pk]), {"projectId": project.pk})
    [row] = listing.context["turns"]
    assert (row["input_tokens"], row["model_calls"]) == (first["totalTokens"] + second["totalTokens"], 2)
    assert "(2 calls)" in listing.content.decode()
    assert selectors.thread_chat_totals(thread=thread).last_input_tokens == second["totalTokens"]


def test_a_turn_with_one_model_call_keeps_no_call_list(client: Client, project: Project) -> None:
    plain = working.thread_create(project=project, dataset="user_42")
    resp = post_chat(client, plain, {"content": "hello there"})
    turn = Turn.objects.get(pk=resp.json()["turnId"])
    assert "calls" not in turn.context and xray.call_count(turn.context) == 1
    page = _page(client, project, turn)
    assert page.status_code == 200 and 'data-testid="xray-calls"' not in page.content.decode()

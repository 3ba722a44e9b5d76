"""Agents' context (memoryapp/agents.py; spec 004 "What the agent sees") and a scripted
agent that runs its own "model" against the /v1 tool route."""

from __future__ import annotations

from typing import Any

from memoryapp import notes
from memoryapp.models import MemoryNote
from tests.conftest import BASE, Api
from tests.test_api_agents import agent_thread, put, tool


def prepare(api: Api, thread_id: str, limit: int = 20) -> dict[str, Any]:
    resp = api.post(f"{BASE}/threads/{thread_id}/prepare", {"messageLimit": limit})
    assert resp.status_code == 200, resp.content
    return dict(resp.json())


def _quest_saved(call_id: str) -> list[dict[str, Any]]:
    """The call saving the closed note "quest" and its result, as prepare gives them."""
    return [
        {
            "role": "assistant",
            "content": 'close_memory({"name": "quest", "description": "Goal", "content": "Key."})',
            "toolCall": {"id": call_id, "name": "close_memory",
                         "arguments": {"name": "quest", "description": "Goal", "content": "Key."}},
        },
        {
            "role": "tool",
            "content": "Saved new memory 'quest' (closed).",
            "toolResult": {"id": call_id, "name": "close_memory", "isError": False},
        },
    ]


def test_it_returns_no_block_before_the_first_compaction(api: Api) -> None:
    thread_id = agent_thread(api)
    api.append(thread_id, "Hello.")
    body = prepare(api, thread_id)
    assert body["messages"] == [{"role": "user", "content": "Hello."}]
    assert (body["compacted"], body["messageCount"], "warning" in body) == (False, 1, False)


def test_it_carries_tool_calls_and_results_in_prepare(api: Api) -> None:
    thread_id = agent_thread(api)
    call_id = tool(api, thread_id, "close_memory", name="quest", description="Goal", content="Key.").json()["callId"]
    assert prepare(api, thread_id)["messages"] == _quest_saved(call_id)


def test_it_never_starts_a_window_with_a_result_whose_call_is_outside(api: Api) -> None:
    thread_id = agent_thread(api)
    tool(api, thread_id, "open_memory", name="quest")
    api.append(thread_id, "And now?")
    # messageLimit 2 would begin at the result of #1; it is left out with its call.
    assert prepare(api, thread_id, limit=2)["messages"] == [{"role": "user", "content": "And now?"}]
    assert len(prepare(api, thread_id, limit=3)["messages"]) == 3


def scripted_model(turn: int) -> list[tuple[str, dict[str, Any]]]:
    """What the agent's own model "decides" on each turn: the tool calls it makes."""
    script: list[list[tuple[str, dict[str, Any]]]] = [
        [("close_memory", {"name": "quest", "description": "What the player is trying to do right now, and why",
                           "content": "Find Mara's sister."})],
        [("open_memory", {"name": "quest"}),
         ("close_memory", {"name": "npcs", "description": "Everyone Mara has met and what they think of her",
                           "content": "The ferryman: wary of Mara."}),
         ("close_memory", {"name": "inventory", "description": "What Mara is carrying", "content": "A lantern."})],
        [("close_memory", {"name": "quest", "content": "Retrieve the silver key from the drowned chapel. "
                           "Mara believes it opens her\nsister's house in Ashmere."}),
         ("close_memory", {"name": "scratch", "description": "Dice rolls", "content": "d20: 14"}),
         ("delete_memory", {"name": "scratch"}),   # closed: an error, the model opens it first
         ("open_memory", {"name": "scratch"}),
         ("delete_memory", {"name": "scratch"}),
         ("open_memory", {"name": "quest"})],
    ]
    return script[turn]


def test_it_plays_a_scripted_agent_through_the_tool_route(api: Api) -> None:
    put(api, "dm", {"systemPrompt": "You are the dungeon master.", "memory": {},
                    "compaction": {"type": "summarize", "maxTokens": 16000}})
    thread_id = str(api.create_thread(agent="dm")["threadId"])
    tools = api.get("/v1/memory/agents/dm/tools").json()["tools"]
    assert {t["name"] for t in tools} == {"open_memory", "close_memory", "delete_memory"}
    user_lines = [
        "I'm Mara. I'm looking for my sister.",
        "I paid the ferryman with my lantern oil.",
        "The chapel is flooded. I dive for the silver key.",
    ]
    answers: list[tuple[str, bool]] = []
    for turn, line in enumerate(user_lines):
        api.append(thread_id, line)
        for name, arguments in scripted_model(turn):
            resp = tool(api, thread_id, name, **arguments)
            assert resp.status_code == 200
            answers.append((name, resp.json()["isError"]))
        api.append(thread_id, f"(the DM answers turn {turn + 1})", role="assistant")
    assert [e for _, e in answers] == [False, False, False, False, False, False, True, False, False, False]

    store = api.get(f"{BASE}/threads/{thread_id}/notes").json()
    assert [(n["name"], n["isOpen"], n["content"]) for n in store["notes"]] == [
        ("quest", True, "Retrieve the silver key from the drowned chapel. Mara believes it opens her\n"
                        "sister's house in Ashmere."),
        ("npcs", False, "The ferryman: wary of Mara."),
        ("inventory", False, "A lantern."),
    ]
    history = api.get(f"{BASE}/threads/{thread_id}/messages", limit=100).json()
    assert history["total"] == 6 + 2 * 10
    # The block does not change between compactions: none yet.
    assert prepare(api, thread_id)["compacted"] is False

    assert api.post(f"{BASE}/threads/{thread_id}/compact").status_code == 200
    body = prepare(api, thread_id)
    block = body["messages"][0]
    summary = block["content"].split("## Summary of earlier conversation\n\n", 1)[1].split("\n\n## Open memories", 1)[0]
    assert block == {"role": "system", "content": notes.context_block(
        summary=summary, notes=list(MemoryNote.objects.filter(thread_id=thread_id)))}
    assert block["content"].endswith(
        "## Open memories — current as of this point\n\n"
        "### quest — What the player is trying to do right now, and why\n"
        "Retrieve the silver key from the drowned chapel. Mara believes it opens her\n"
        "sister's house in Ashmere.\n\n"
        "## Closed memories — call open_memory to read one\n\n"
        "- npcs — Everyone Mara has met and what they think of her\n"
        "- inventory — What Mara is carrying\n\n"
        "[End of context]"
    )
    assert "Mara" in summary
    assert (body["messageCount"], len(body["messages"])) == (0, 1)


def test_a_limit_that_would_split_the_newest_call_gives_the_call_with_its_result(api: Api) -> None:
    """QA report L1: messageLimit 1 with a tool result newest answered ``messages: []``
    and "leaves out the 3 oldest of the 3 messages": the result was dropped for its
    call, leaving nothing. The newest whole unit is given instead, one past the limit."""
    thread_id = agent_thread(api)
    api.append(thread_id, "Remember the quest.")
    call_id = tool(api, thread_id, "close_memory", name="quest", description="Goal", content="Key.").json()["callId"]
    window = prepare(api, thread_id, limit=1)
    assert window == {
        "threadId": thread_id,
        "dataset": "user_42",
        "messages": _quest_saved(call_id),
        "messageCount": 3,
        "truncated": True,
        "compacted": False,
        "warning": (
            "messageLimit (1) leaves out the 1 oldest of the 3 messages since this agent's checkpoint; "
            "an agent's context is its checkpoint and every message since (spec 004). Send prepare "
            "without messageLimit to get them all. The window holds 2 messages, more than messageLimit "
            "(1): the newest message is a tool result, given with its call (a call and its result are "
            "never split)."
        ),
    }


def test_a_limit_that_would_start_at_a_result_says_why_the_window_is_shorter(api: Api) -> None:
    thread_id = agent_thread(api)
    tool(api, thread_id, "open_memory", name="quest")
    api.append(thread_id, "And now?")
    window = prepare(api, thread_id, limit=2)
    assert window["messages"] == [{"role": "user", "content": "And now?"}]
    assert window["warning"] == (
        "messageLimit (2) leaves out the 2 oldest of the 3 messages since this agent's checkpoint; "
        "an agent's context is its checkpoint and every message since (spec 004). Send prepare "
        "without messageLimit to get them all. The window holds 1 message, fewer than messageLimit "
        "(2): the next older message is a tool result whose call is outside the limit, left out "
        "with it (a call and its result are never split)."
    )
    # A window the limit does not split has no such note.
    assert prepare(api, thread_id, limit=1)["warning"].endswith("to get them all.")

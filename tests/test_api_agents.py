"""/v1/memory/agents, an agent thread's tools and notes (memoryapp/api/agents.py; spec 004)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoryapp import working
from memoryapp.models import Agent, MemoryNote, Thread
from tests.conftest import BASE, Api

AGENTS = "/v1/memory/agents"


def put(api: Api, name: str, body: dict[str, Any]) -> Any:
    return api.client.put(
        f"{AGENTS}/{name}", data=json.dumps(body), content_type="application/json",
        headers={"Authorization": f"Bearer {api.key}"},
    )


def agent_thread(api: Api, **agent: Any) -> str:
    agent.setdefault("memory", {"maxOpenTokens": 1000})
    agent.setdefault("compaction", {"type": "summarize", "maxTokens": 8000})
    assert put(api, "dm", agent).status_code in (200, 201)
    return str(api.create_thread(agent="dm")["threadId"])


def tool(api: Api, thread_id: str, tool_name: str, /, **arguments: Any) -> Any:
    return api.post(f"{BASE}/threads/{thread_id}/tools", {"name": tool_name, "arguments": arguments})


def test_it_creates_an_agent_with_201_and_updates_with_200(api: Api) -> None:
    resp = put(api, "dm", {"systemPrompt": "You are the DM.", "memory": {}, "compaction": {"maxTokens": 16000}})
    assert resp.status_code == 201
    body = resp.json()
    assert {k: body[k] for k in ("name", "systemPrompt", "memory", "compaction")} == {
        "name": "dm", "systemPrompt": "You are the DM.", "memory": {"maxOpenTokens": 4000},
        "compaction": {"type": "summarize", "maxTokens": 16000},
    }
    assert body["createdAt"].endswith("Z") and body["updatedAt"].endswith("Z")
    resp = put(api, "dm", {"systemPrompt": "Changed."})
    assert resp.status_code == 200
    assert (resp.json()["systemPrompt"], resp.json()["memory"], resp.json()["compaction"]) == (
        "Changed.", None, {"type": "summarize", "maxTokens": 16000},
    )
    assert resp.json()["createdAt"] == body["createdAt"]
    assert Agent.objects.count() == 1


def test_it_refuses_default_memory_with_summarize_8000_at_definition(api: Api) -> None:
    resp = put(api, "dm", {"memory": {}, "compaction": {"type": "summarize", "maxTokens": 8000}})
    assert resp.status_code == 400
    assert resp.json() == {
        "error": "Validation error",
        "issues": [{
            "path": ["memory", "maxOpenTokens"],
            "message": "memory.maxOpenTokens (4000) must be below half of compaction.maxTokens "
            "(8000 / 2 = 4000), so open memories cannot crowd out recent history. Either give the "
            "agent more room (compaction.maxTokens above 8000) or take less of it for memories "
            "(memory.maxOpenTokens below 4000).",
            "code": "max_open_tokens_too_large",
        }],
    }
    assert not Agent.objects.exists()


def test_it_accepts_max_open_tokens_1000_with_8000(api: Api) -> None:
    resp = put(api, "dm", {"memory": {"maxOpenTokens": 1000}, "compaction": {"type": "summarize", "maxTokens": 8000}})
    assert resp.status_code == 201
    assert resp.json()["memory"] == {"maxOpenTokens": 1000}
    assert put(api, "dm", {"memory": {}, "compaction": {"maxTokens": 16000}}).status_code == 200


@pytest.mark.parametrize(
    ("name", "body", "path"),
    [
        ("two%20words", {}, ["name"]),
        ("-dash", {}, ["name"]),
        ("x" * 65, {}, ["name"]),
        ("dm", {"compaction": {"type": "fifo"}}, ["compaction", "type"]),
        ("dm", {"compaction": {"maxTokens": "8000"}}, ["compaction", "maxTokens"]),
        ("dm", {"memory": {"maxOpenTokens": 0}}, ["memory", "maxOpenTokens"]),
        ("dm", {"memory": []}, ["memory"]),
        ("dm", {"systemPrompt": 5}, ["systemPrompt"]),
    ],
)
def test_it_refuses_bad_definitions_naming_the_field(api: Api, name: str, body: dict[str, Any], path: list[str]) -> None:
    resp = put(api, name, body)
    assert resp.status_code == 400
    assert resp.json()["error"] == "Validation error"
    assert resp.json()["issues"][0]["path"] == path
    assert not Agent.objects.exists()


def test_it_gets_and_lists_agents_of_the_key_project_only(api: Api, outsider_api: Api) -> None:
    put(api, "dm", {"memory": {}})
    put(api, "bard", {})
    assert [a["name"] for a in api.get(AGENTS).json()["agents"]] == ["bard", "dm"]
    assert api.get(f"{AGENTS}/dm").json()["memory"] == {"maxOpenTokens": 4000}
    assert outsider_api.get(f"{AGENTS}/dm").status_code == 404
    assert outsider_api.get(f"{AGENTS}/dm").json() == {"error": "Agent not found"}
    assert outsider_api.get(AGENTS).json() == {"agents": []}


def test_it_lists_the_three_tools_as_function_declarations(api: Api) -> None:
    put(api, "dm", {"memory": {}})
    put(api, "bard", {})
    tools = api.get(f"{AGENTS}/dm/tools").json()["tools"]
    assert [t["name"] for t in tools] == ["open_memory", "close_memory", "delete_memory"]
    assert tools[1]["parameters"] == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The memory's short handle, e.g. quest (letters, digits, _ - .)."},
            "description": {"type": "string", "description": "One line: what the memory holds and when to open it."},
            "content": {"type": "string", "description": "The full body of the memory (replaces the old body)."},
        },
        "required": ["name"],
    }
    assert api.get(f"{AGENTS}/bard/tools").json() == {"tools": []}
    assert api.get(f"{AGENTS}/nobody/tools").status_code == 404


def test_it_creates_a_thread_with_an_agent_and_refuses_an_unknown_one(api: Api) -> None:
    put(api, "dm", {"memory": {}})
    assert api.create_thread(agent="dm")["agent"] == "dm"
    assert api.create_thread()["agent"] is None
    resp = api.post(f"{BASE}/threads", {"dataset": "u", "agent": "ghost"})
    assert resp.status_code == 400
    assert resp.json()["issues"] == [{
        "path": ["agent"],
        "message": "No agent named 'ghost' in this project; define it with PUT /v1/memory/agents/{name}",
        "code": "unknown_agent",
    }]


def test_it_runs_a_tool_and_answers_tool_errors_with_200(api: Api) -> None:
    thread_id = agent_thread(api)
    resp = tool(api, thread_id, "close_memory", name="quest", description="Goal", content="Find the key.")
    assert resp.status_code == 200
    body = resp.json()
    assert {k: body[k] for k in ("result", "isError", "name", "callSequence", "resultSequence")} == {
        "result": "Saved new memory 'quest' (closed).", "isError": False, "name": "close_memory",
        "callSequence": 1, "resultSequence": 2,
    }
    assert body["note"]["isOpen"] is False and body["note"]["content"] == "Find the key."
    resp = tool(api, thread_id, "close_memory", name="quest", content="blind")
    assert resp.status_code == 200
    assert resp.json()["isError"] is True
    assert resp.json()["note"] is None
    assert (resp.json()["callSequence"], resp.json()["resultSequence"]) == (3, 4)


@pytest.mark.parametrize(
    "body", [{}, {"name": 5}, {"name": "open_memory", "arguments": []}, {"name": "open_memory", "arguments": "x"}]
)
def test_it_answers_a_malformed_tool_request_with_400(api: Api, body: dict[str, Any]) -> None:
    thread_id = agent_thread(api)
    resp = api.post(f"{BASE}/threads/{thread_id}/tools", body)
    assert resp.status_code == 400
    assert resp.json()["error"] == "Validation error"
    assert api.get(f"{BASE}/threads/{thread_id}/messages").json()["total"] == 0


_DEEP = '{"name": "a", "k": ' + "[" * 33 + "]" * 33 + "}"


@pytest.mark.parametrize(
    ("raw", "path", "message", "code"),
    [
        ('{"name": "close_memory", "arguments": {"name": "a", "content": "x\\u0000y"}}',
         ["arguments", "content"], "text must not contain NUL characters", "nul_character"),
        ('{"name": "close_memory", "arguments": {"name": "a", "description": "d\\ud800", "content": "c"}}',
         ["arguments", "description"], "text must not contain unpaired surrogates", "invalid_unicode"),
        ('{"name": "open_memory", "arguments": {"name": "q\\u0000"}}',
         ["arguments", "name"], "text must not contain NUL characters", "nul_character"),
        ('{"name": "delete_memory", "arguments": {"name": "a", "extra": {"list": [1, NaN]}}}',
         ["arguments", "extra", "list", 1], "numbers must be finite (no NaN or Infinity)", "non_finite_number"),
        ('{"name": "delete_memory", "arguments": {"name": "a", "extra": {"k\\u0000": 1}}}',
         ["arguments", "extra"], "a key must not contain NUL characters", "nul_character"),
        ('{"name": "open_memory", "arguments": ' + _DEEP + "}",
         ["arguments", "k", *([0] * 31)], "JSON is nested more than 32 levels", "too_deep"),
        ('{"name": "no_such_tool", "arguments": {"name": "a", "content": ["ok", "x\\u0000"]}}',
         ["arguments", "content", 1], "text must not contain NUL characters", "nul_character"),
    ],
    ids=["content-nul", "description-surrogate", "name-nul", "nested-nan", "key-nul", "too-deep", "list-item"],
)
def test_it_names_the_argument_an_unstorable_value_is_in(
    api: Api, raw: str, path: list[Any], message: str, code: str
) -> None:
    thread_id = agent_thread(api)
    resp = api.post(f"{BASE}/threads/{thread_id}/tools", raw=raw)
    assert (resp.status_code, resp.json()) == (
        400, {"error": "Validation error", "issues": [{"path": path, "message": message, "code": code}]},
    )
    assert api.get(f"{BASE}/threads/{thread_id}/messages").json()["total"] == 0
    assert not MemoryNote.objects.exists()


def test_it_answers_409_on_a_thread_without_a_memory_agent(api: Api) -> None:
    plain = api.create_thread()["threadId"]
    put(api, "bard", {})
    no_memory = api.create_thread(agent="bard")["threadId"]
    details = {
        plain: "Create the thread with an agent whose memory option is set (PUT /v1/memory/agents/{name}).",
        no_memory: "The thread's agent 'bard' has its memory turned off; set its memory option again "
        '(PUT /v1/memory/agents/bard with "memory": {}) to give it the tools.',
    }
    for thread_id, detail in details.items():
        resp = tool(api, thread_id, "open_memory", name="x")
        assert resp.status_code == 409
        assert resp.json() == {"error": "Thread has no memory-enabled agent", "detail": detail}
    assert api.get(f"{BASE}/threads/{plain}/notes").status_code == 409
    assert api.get(f"{BASE}/threads/{plain}/notes").json()["error"] == "Thread has no memory-enabled agent"
    assert api.get(f"{BASE}/threads/{no_memory}/notes").json() == {
        "notes": [], "openTokens": 0, "maxOpenTokens": None, "storeBytes": 0,
        "storeCapBytes": 1_048_576, "memoryEnabled": False,
    }
    assert api.get(f"{BASE}/threads/{plain}/messages").json()["total"] == 0


def test_it_keeps_notes_readable_once_the_agent_memory_is_turned_off(api: Api) -> None:
    # Spec 004: turning memory off takes the tools away; the notes are kept, so they can
    # still be read (and exported), just no longer written.
    thread_id = agent_thread(api)
    tool(api, thread_id, "close_memory", name="quest", description="Goal", content="Find the key.")
    assert put(api, "dm", {"memory": None}).status_code == 200
    assert tool(api, thread_id, "open_memory", name="quest").status_code == 409
    body = api.get(f"{BASE}/threads/{thread_id}/notes").json()
    assert [(n["name"], n["content"], n["isOpen"]) for n in body["notes"]] == [("quest", "Find the key.", False)]
    assert {k: body[k] for k in ("openTokens", "maxOpenTokens", "storeBytes", "memoryEnabled")} == {
        "openTokens": 0, "maxOpenTokens": None, "storeBytes": 22, "memoryEnabled": False,
    }
    assert put(api, "dm", {"memory": {}}).status_code == 200
    again = api.get(f"{BASE}/threads/{thread_id}/notes").json()
    assert (again["maxOpenTokens"], again["memoryEnabled"], len(again["notes"])) == (4000, True, 1)


def test_it_refuses_a_repeated_call_id_on_a_thread_with_409(api: Api) -> None:
    thread_id = agent_thread(api)
    call = {"name": "close_memory", "arguments": {"name": "q", "description": "d", "content": "c"}, "callId": "dup"}
    first = api.post(f"{BASE}/threads/{thread_id}/tools", call)
    assert (first.status_code, first.json()["callId"]) == (200, "dup")
    again = api.post(f"{BASE}/threads/{thread_id}/tools", {**call, "name": "open_memory", "arguments": {"name": "q"}})
    assert again.status_code == 409
    assert again.json() == {
        "error": "callId already used on this thread",
        "issues": [{
            "path": ["callId"], "code": "duplicate",
            "message": "callId 'dup' was already used on this thread; send a new callId",
        }],
    }
    # The same call again (a retry) is refused too: nothing is run or recorded twice.
    assert api.post(f"{BASE}/threads/{thread_id}/tools", call).status_code == 409
    assert api.get(f"{BASE}/threads/{thread_id}/messages").json()["total"] == 2
    # The id is per thread: another thread may use it.
    other = api.create_thread(agent="dm")["threadId"]
    assert api.post(f"{BASE}/threads/{other}/tools", call).status_code == 200


def test_it_hides_another_project_thread_from_tools_and_notes(api: Api, outsider_api: Api) -> None:
    thread_id = agent_thread(api)
    assert tool(outsider_api, thread_id, "open_memory", name="x").status_code == 404
    assert outsider_api.get(f"{BASE}/threads/{thread_id}/notes").json() == {"error": "Thread not found"}
    assert tool(api, "not-a-uuid", "open_memory", name="x").status_code == 404


def test_it_lists_notes_with_sizes_and_budgets(api: Api) -> None:
    thread_id = agent_thread(api)
    tool(api, thread_id, "close_memory", name="quest", description="Goal", content="Find the key.")
    tool(api, thread_id, "close_memory", name="npcs", description="People", content="Ferryman: wary.")
    tool(api, thread_id, "open_memory", name="quest")
    body = api.get(f"{BASE}/threads/{thread_id}/notes").json()
    assert [{k: n[k] for k in ("name", "description", "content", "isOpen", "tokens", "bytes")} for n in body["notes"]] == [
        {"name": "quest", "description": "Goal", "content": "Find the key.", "isOpen": True, "tokens": 4, "bytes": 22},
        {"name": "npcs", "description": "People", "content": "Ferryman: wary.", "isOpen": False, "tokens": 4, "bytes": 25},
    ]
    assert {k: body[k] for k in ("openTokens", "maxOpenTokens", "storeBytes", "storeCapBytes")} == {
        "openTokens": 4, "maxOpenTokens": 1000, "storeBytes": 47, "storeCapBytes": 1_048_576,
    }
    assert body["memoryEnabled"] is True


def test_it_keeps_notes_and_history_when_the_agent_is_defined_again(api: Api) -> None:
    thread_id = agent_thread(api)
    tool(api, thread_id, "close_memory", name="quest", description="Goal", content="Find the key.")
    assert put(api, "dm", {"memory": {"maxOpenTokens": 2000}, "compaction": {"maxTokens": 9000}}).status_code == 200
    assert MemoryNote.objects.get().content == "Find the key."
    assert api.get(f"{BASE}/threads/{thread_id}/messages").json()["total"] == 2
    assert api.get(f"{BASE}/threads/{thread_id}/notes").json()["maxOpenTokens"] == 2000


@pytest.mark.parametrize(
    ("body", "issue"),
    [
        ({"callId": ""}, (["callId"], "String should have at least 1 character", "string_too_short")),
        ({"callId": "c" * 101}, (["callId"], "String should have at most 100 characters", "string_too_long")),
        ({"name": ""}, (["name"], "String should have at least 1 character", "string_too_short")),
        ({"name": "n" * 65}, (["name"], "String should have at most 64 characters", "string_too_long")),
    ],
    ids=["empty-callId", "long-callId", "empty-name", "long-name"],
)
def test_it_words_a_tool_call_string_of_the_wrong_length_as_a_string_naming_the_field(
    api: Api, body: dict[str, Any], issue: tuple[list[str], str, str]
) -> None:
    thread_id = agent_thread(api)
    call = {"name": "open_memory", "arguments": {"name": "q"}, **body}
    resp = api.post(f"{BASE}/threads/{thread_id}/tools", call)
    path, message, code = issue
    assert (resp.status_code, resp.json()) == (
        400,
        {"error": "Validation error", "issues": [{"path": path, "message": message, "code": code}]},
    )
    assert api.get(f"{BASE}/threads/{thread_id}/messages").json()["total"] == 0


def test_it_words_an_empty_agent_name_on_a_new_thread_as_a_string(api: Api) -> None:
    resp = api.post(f"{BASE}/threads", {"dataset": "d", "agent": ""})
    assert (resp.status_code, resp.json()["issues"]) == (
        400,
        [{"path": ["agent"], "message": "String should have at least 1 character", "code": "string_too_short"}],
    )


def test_it_deletes_an_agent_without_threads_and_refuses_while_threads_use_it(api: Api) -> None:
    thread_id = agent_thread(api)
    assert put(api, "idle", {"systemPrompt": "unused"}).status_code == 201

    resp = api.delete(f"{AGENTS}/dm")
    assert resp.status_code == 409
    assert resp.json() == {
        "error": "Agent has threads",
        "threads": 1,
        "detail": "Delete the agent's threads first (DELETE /v1/memory/working/threads/{id}).",
    }
    assert Agent.objects.filter(name="dm").exists()

    assert api.delete(f"{AGENTS}/idle").status_code == 204
    assert api.get(f"{AGENTS}/idle").status_code == 404
    assert api.delete(f"{AGENTS}/idle").json() == {"error": "Agent not found"}

    assert api.delete(f"{BASE}/threads/{thread_id}").status_code == 204
    assert api.delete(f"{AGENTS}/dm").status_code == 204
    assert list(Agent.objects.values_list("name", flat=True)) == []


def test_it_deletes_only_the_agent_of_the_keys_project(api: Api, outsider_api: Api) -> None:
    assert put(api, "dm", {"systemPrompt": "mine"}).status_code == 201
    resp = outsider_api.delete(f"{AGENTS}/dm")
    assert (resp.status_code, resp.json()) == (404, {"error": "Agent not found"})
    assert Agent.objects.filter(name="dm").count() == 1


@pytest.mark.django_db(transaction=True)  # the foreign key is checked when the insert commits
def test_a_thread_created_while_its_agent_is_deleted_is_a_400_not_a_500(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race a tester hit (6 of 15 tries): the agent is found, then deleted before the
    # thread's insert commits; the insert's foreign key fails at the commit.
    assert put(api, "racer", {"systemPrompt": "x"}).status_code == 201
    create = working.thread_create

    def deleted_first(**kwargs: Any) -> Any:
        assert api.delete(f"{AGENTS}/racer").status_code == 204
        return create(**kwargs)

    monkeypatch.setattr(working, "thread_create", deleted_first)
    resp = api.post(f"{BASE}/threads", {"dataset": "race", "agent": "racer"})
    assert resp.status_code == 400
    assert resp.json() == {
        "error": "Validation error",
        "issues": [{
            "path": ["agent"],
            "message": "No agent named 'racer' in this project; define it with PUT /v1/memory/agents/{name}",
            "code": "unknown_agent",
        }],
    }
    assert Thread.objects.filter(dataset="race").count() == 0


# --- a maxOpenTokens lowered under the notes it had (the review) -----------------------------

LONG = "x" * 3240  # 810 tokens


def dm3_thread(api: Api) -> str:
    body = {"memory": {"maxOpenTokens": 1000}, "compaction": {"type": "summarize", "maxTokens": 8000}}
    resp = put(api, "dm3", body)
    assert (resp.status_code in (200, 201), resp.json()["overBudget"]) == (True, None)
    thread_id = str(api.create_thread(agent="dm3")["threadId"])
    for name, description in (("a", "Alpha"), ("b", "Beta")):
        assert not tool(api, thread_id, "close_memory", name=name, description=description, content=LONG).json()["isError"]
    assert not tool(api, thread_id, "open_memory", name="a").json()["isError"]
    return thread_id


def lower(api: Api, max_open: int) -> Any:
    return put(api, "dm3", {"memory": {"maxOpenTokens": max_open}, "compaction": {"type": "summarize", "maxTokens": 8000}})


def result_of(api: Api, thread_id: str, tool_name: str, /, **arguments: Any) -> tuple[bool, str]:
    body = tool(api, thread_id, tool_name, **arguments).json()
    return body["isError"], body["result"]


STRANDED_B = (
    "It is kept as it is, still listed by its description; it can be opened (and then written or "
    "deleted) only once maxOpenTokens, set where the agent is defined, is raised to at least 810."
)


def test_lowering_max_open_tokens_under_the_notes_warns_and_says_what_it_strands(api: Api) -> None:
    thread_id = dm3_thread(api)
    resp = lower(api, 100)
    assert resp.status_code == 200  # saved: maxOpenTokens is a guideline (spec 004)
    assert resp.json()["memory"] == {"maxOpenTokens": 100}
    assert resp.json()["overBudget"] == {
        "maxOpenTokens": 100,
        "threadCount": 1,
        "threads": [{
            "threadId": thread_id, "openTokens": 810,
            "notes": [{"name": "a", "tokens": 810, "isOpen": True}, {"name": "b", "tokens": 810, "isOpen": False}],
        }],
        "message": "maxOpenTokens 100 is below what 1 thread of this agent holds: 1 closed note is larger "
        "than it on its own and cannot be opened (nor so written or deleted) until it is raised again; "
        "1 open note is larger than it and must be shortened before being closed. The notes were left as they are.",
    }
    # GET is the agent alone, as before.
    assert "overBudget" not in api.get(f"{AGENTS}/dm3").json()

    # b alone is over the budget: said plainly, with no empty list of notes to close.
    assert result_of(api, thread_id, "open_memory", name="b") == (True, (
        "Error: memory 'b' is 810 tokens, more than maxOpenTokens 100 on its own, so it cannot be "
        "opened: closing other memories would not make room. " + STRANDED_B
    ))
    assert result_of(api, thread_id, "delete_memory", name="b") == (True, (
        "Error: memory 'b' is closed; nothing is deleted unseen, and at 810 tokens it is over "
        "maxOpenTokens 100 on its own, so it cannot be opened. " + STRANDED_B
    ))
    assert result_of(api, thread_id, "close_memory", name="b", content="short") == (True, (
        "Error: memory 'b' is closed, and a closed memory cannot be written unseen; at 810 tokens "
        "it is over maxOpenTokens 100 on its own, so it cannot be opened either. " + STRANDED_B
    ))
    # a stays open (only the agent closes), and closing it as it is would strand it too.
    assert result_of(api, thread_id, "close_memory", name="c", description="Small", content="tiny") == (
        False, "Saved new memory 'c' (closed).",
    )
    assert result_of(api, thread_id, "open_memory", name="c") == (True, (
        "Error: opening 'c' (1 token) would bring your open memories to 811 tokens, over "
        "maxOpenTokens 100. Close one of these first with close_memory: a (810 tokens)."
    ))
    assert result_of(api, thread_id, "close_memory", name="a") == (True, (
        "Error: memory 'a' is 810 tokens, over maxOpenTokens 100, so once closed it could never be "
        "opened again. Close it with a shorter content (at most 100 tokens), or delete it with "
        "delete_memory while it is open."
    ))
    assert result_of(api, thread_id, "close_memory", name="a", description="Alpha, shortened") == (True, (
        "Error: memory 'a' is 810 tokens, over maxOpenTokens 100, so once closed it could never be "
        "opened again. Close it with a shorter content (at most 100 tokens), or delete it with "
        "delete_memory while it is open."
    ))
    assert result_of(api, thread_id, "close_memory", name="a", content="The gist.") == (
        False, "Saved memory 'a' and closed it. Its description was kept.",
    )
    assert result_of(api, thread_id, "open_memory", name="c") == (False, "tiny")
    store = api.get(f"{BASE}/threads/{thread_id}/notes").json()
    assert [(n["name"], n["tokens"], n["isOpen"]) for n in store["notes"]] == [
        ("a", 3, False), ("b", 810, False), ("c", 1, True),
    ]
    assert (store["openTokens"], store["maxOpenTokens"]) == (1, 100)
    assert lower(api, 100).json()["overBudget"] == {
        "maxOpenTokens": 100, "threadCount": 1,
        "threads": [{"threadId": thread_id, "openTokens": 1, "notes": [{"name": "b", "tokens": 810, "isOpen": False}]}],
        "message": "maxOpenTokens 100 is below what 1 thread of this agent holds: 1 closed note is larger "
        "than it on its own and cannot be opened (nor so written or deleted) until it is raised again. "
        "The notes were left as they are.",
    }

    # Raised again, b opens and can be deleted; nothing is over any more.
    assert lower(api, 1000).json()["overBudget"] is None
    assert result_of(api, thread_id, "open_memory", name="b") == (False, LONG)
    assert result_of(api, thread_id, "delete_memory", name="b") == (False, "Deleted memory 'b'.")


def test_an_over_budget_warning_counts_every_thread_and_lists_the_oldest(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from memoryapp import agents

    monkeypatch.setattr(agents, "OVER_BUDGET_LISTED", 2)
    threads = [dm3_thread(api) for _ in range(3)]
    api.create_thread(agent="dm3")  # no notes: never listed
    body = lower(api, 500).json()["overBudget"]
    assert (body["threadCount"], [t["threadId"] for t in body["threads"]]) == (3, threads[:2])
    assert body["message"] == (
        "maxOpenTokens 500 is below what 3 threads of this agent hold: 3 closed notes are larger than "
        "it on their own and cannot be opened (nor so written or deleted) until it is raised again; "
        "3 open notes are larger than it and must be shortened before being closed. The notes were left as they are."
    )
    # Memory turned off: no budget, no warning.
    assert put(api, "dm3", {"compaction": {"type": "summarize", "maxTokens": 8000}}).json()["overBudget"] is None


def test_an_over_budget_warning_names_threads_whose_open_notes_pass_it_only_together(api: Api) -> None:
    """Two open notes, each under the lowered budget, over it together: the thread is named
    once, as holding open notes that together pass it; no note is over it on its own."""
    body = {"memory": {"maxOpenTokens": 1000}, "compaction": {"type": "summarize", "maxTokens": 8000}}
    assert put(api, "dm3", body).status_code == 201
    thread_id = str(api.create_thread(agent="dm3")["threadId"])
    half = " ".join(["harbour"] * 150)
    for name in ("a", "b"):
        assert not tool(api, thread_id, "close_memory", name=name, description=name.upper(), content=half).json()["isError"]
        assert not tool(api, thread_id, "open_memory", name=name).json()["isError"]
    store = api.get(f"{BASE}/threads/{thread_id}/notes").json()
    each = store["notes"][0]["tokens"]
    assert store["openTokens"] == 2 * each and 2 * each < 1000

    warning = lower(api, each + 1).json()["overBudget"]

    assert warning == {
        "maxOpenTokens": each + 1, "threadCount": 1,
        "threads": [{"threadId": thread_id, "openTokens": 2 * each, "notes": []}],
        "message": f"maxOpenTokens {each + 1} is below what 1 thread of this agent holds: 1 thread holds "
        "open notes that together pass it (they stay open until the agent closes them). The notes were "
        "left as they are.",
    }

"""The database connection lost mid-write (issue 12 item 3).

Django's ``connection.execute_wrapper`` makes one chosen statement raise
OperationalError, as a dropped connection does. The request answers 503 JSON
``{"error": "Database unavailable"}`` with ``Retry-After`` (never a traceback), nothing
of the write is left behind (memoryapp.audit finds every invariant intact), and the retry
stores the message once. A drop during the compaction that runs *after* a write was
stored (an append crossing its threshold, a memory tool call over the agent's budget)
never turns that write's answer into an error: 201 / 200 as usual, the run rolled back
and recorded on the thread (``compaction.lastError``), and the next append compacts.

The other faults of item 3 are tested beside the code they hit: the model failing in
compaction (tests/test_compaction.py), extraction (tests/test_episodic.py), synthesis
(tests/test_recall.py), the chat turn (tests/test_chat.py), a timeout (tests/
test_llm_gemini.py); the worker killed mid-job (tests/test_jobs.py); the server killed
mid-append under load (tests/test_durability.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import OperationalError, connection

from memoryapp import audit
from memoryapp.models import CompactionRun, Message, Thread
from tests.conftest import BASE, Api


@contextmanager
def connection_drops_at(match: Callable[[str, Any], bool]) -> Iterator[list[str]]:
    """Make the first statement whose SQL and parameters ``match`` accepts raise
    OperationalError."""
    hit: list[str] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not hit and match(sql, params):
            hit.append(sql)
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield hit


def _inserts_message(sql: str, params: Any = None) -> bool:
    return sql.startswith('INSERT INTO "memoryapp_message"')


def _inserts_summary(sql: str, params: Any) -> bool:
    """The INSERT of a summary row (an append's INSERT names the same columns)."""
    if not _inserts_message(sql):
        return False
    columns = [c.strip(' "') for c in sql.split("(", 1)[1].split(")", 1)[0].split(",")]
    return bool(params[columns.index("is_summary")])


def test_it_answers_503_and_stores_nothing_when_the_connection_drops_during_an_append(
    api: Api,
) -> None:
    thread_id = api.create_thread()["threadId"]
    assert api.append(thread_id, "first").status_code == 201
    with connection_drops_at(_inserts_message) as hit:
        resp = api.append(thread_id, "second", headers={"Idempotency-Key": "k2"})
    assert hit != []
    assert (resp.status_code, resp.json(), resp["Retry-After"]) == (
        503,
        {"error": "Database unavailable"},
        "1",
    )
    assert list(Message.objects.filter(thread_id=thread_id).values_list("content", flat=True)) == [
        "first"
    ]
    assert Thread.objects.get(pk=thread_id).next_sequence == 2
    retry = api.post(
        f"{BASE}/threads/{thread_id}/messages",
        {"role": "user", "content": "second"},
        headers={"Idempotency-Key": "k2"},
    )
    assert (retry.status_code, retry.json()["sequenceNumber"]) == (201, 2)
    assert audit.thread_audit(thread_id=thread_id) == []


def test_it_answers_503_and_changes_nothing_when_the_connection_drops_at_the_compaction_commit(
    api: Api,
) -> None:
    thread_id = api.create_thread()["threadId"]
    for n in range(1, 5):
        assert api.append(thread_id, f"m{n}").status_code == 201
    with connection_drops_at(_inserts_summary) as hit:
        resp = api.post(f"{BASE}/threads/{thread_id}/compact")
    assert hit != []
    assert (resp.status_code, resp.json()) == (503, {"error": "Database unavailable"})
    rows = Message.objects.filter(thread_id=thread_id).order_by("sequence_number")
    assert [(m.sequence_number, m.is_summary, m.compacted_at) for m in rows] == [
        (n, False, None) for n in range(1, 5)
    ]
    assert audit.thread_audit(thread_id=thread_id) == []
    again = api.post(f"{BASE}/threads/{thread_id}/compact")
    assert again.status_code == 200
    assert audit.thread_audit(thread_id=thread_id) == []
    assert Message.objects.filter(thread_id=thread_id, is_summary=True).count() == 1


def test_it_acknowledges_an_append_whose_automatic_compaction_lost_the_connection(
    api: Api,
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=3)["threadId"]
    for n in (1, 2):
        assert api.append(thread_id, f"m{n}").json()["compacted"] is False
    with connection_drops_at(_inserts_summary) as hit:
        resp = api.append(thread_id, "m3")
    assert hit != []
    assert (resp.status_code, resp.json()["sequenceNumber"], resp.json()["compacted"]) == (
        201,
        3,
        False,
    )
    rows = Message.objects.filter(thread_id=thread_id).order_by("sequence_number")
    assert [(m.content, m.is_summary, m.compacted_at) for m in rows] == [
        ("m1", False, None),
        ("m2", False, None),
        ("m3", False, None),
    ]
    state = api.get(f"{BASE}/threads/{thread_id}").json()["compaction"]
    assert (state["count"], state["lastError"]) == (
        0,
        "database: server closed the connection unexpectedly",
    )
    assert audit.thread_audit(thread_id=thread_id) == []
    # The next append is still over the threshold, so it compacts: 1..3 folded, m4 kept.
    again = api.append(thread_id, "m4")
    assert (again.status_code, again.json()["compacted"]) == (201, True)
    summary = Message.objects.get(thread_id=thread_id, is_summary=True, compacted_at=None)
    assert (summary.covers_from_sequence, summary.covers_to_sequence) == (1, 3)
    state = api.get(f"{BASE}/threads/{thread_id}").json()["compaction"]
    assert (state["count"], state["lastError"]) == (1, None)
    assert audit.thread_audit(thread_id=thread_id) == []


def test_it_answers_a_tool_call_whose_agent_compaction_lost_the_connection(
    api: Api, settings: Any
) -> None:
    settings.MEMORY_AGENT_MAX_VERBATIM_MESSAGES = 4  # the call's two rows force a checkpoint
    assert api.client.put(
        "/v1/memory/agents/dm",
        data=json.dumps({"memory": {}}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {api.key}"},
    ).status_code == 201
    thread_id = api.create_thread(agent="dm")["threadId"]
    for n in (1, 2):
        assert api.append(thread_id, f"m{n}").status_code == 201
    call = {"name": "close_memory", "arguments": {"name": "quest", "description": "d", "content": "c"}}
    with connection_drops_at(_inserts_summary) as hit:
        resp = api.post(f"{BASE}/threads/{thread_id}/tools", call)
    assert hit != []
    assert (resp.status_code, resp.json()["isError"], resp.json()["resultSequence"]) == (200, False, 4)
    assert Message.objects.filter(thread_id=thread_id, is_summary=True).count() == 0
    assert Message.objects.filter(thread_id=thread_id, compacted_at__isnull=False).count() == 0
    assert Thread.objects.get(pk=thread_id).last_compaction_error.startswith("database: ")
    assert audit.thread_audit(thread_id=thread_id) == []
    assert api.append(thread_id, "m5").status_code == 201  # the next append checkpoints
    assert Message.objects.filter(thread_id=thread_id, is_summary=True).count() == 1
    assert audit.thread_audit(thread_id=thread_id) == []


def _failed_runs(thread_id: str) -> list[tuple[Any, ...]]:
    return list(
        CompactionRun.objects.filter(thread_id=thread_id)
        .order_by("created_at", "pk")
        .values_list(
            "trigger", "mode", "outcome", "error", "from_sequence", "to_sequence",
            "folded_count", "summary_id", "model_called",
        )
    )


def test_an_automatic_run_that_lost_the_connection_is_recorded_as_failed(api: Api) -> None:
    thread_id = api.create_thread(autoCompactThreshold=3)["threadId"]
    for n in (1, 2):  # long enough to be summarised (a model call), not kept word for word
        api.append(thread_id, f"m{n}: Alice drives a Honda Civic to Lisbon on March {n}. " * 3)
    with connection_drops_at(_inserts_summary) as hit:
        resp = api.append(thread_id, "m3")
    assert hit != [] and (resp.status_code, resp.json()["compacted"]) == (201, False)
    assert _failed_runs(thread_id) == [
        ("auto", "summary", "failed", "database: server closed the connection unexpectedly",
         1, 2, 0, None, True)
    ]
    run = CompactionRun.objects.get(thread_id=thread_id)
    assert run.tokens_input > 0 and run.tokens_output > 0  # the model call was paid for
    assert audit.thread_audit(thread_id=thread_id) == []
    assert api.append(thread_id, "m4").json()["compacted"] is True
    assert [r[2] for r in _failed_runs(thread_id)] == ["failed", "succeeded"]


def test_a_manual_compact_that_lost_the_connection_is_recorded_as_failed(api: Api) -> None:
    thread_id = api.create_thread()["threadId"]
    for n in range(1, 5):
        api.append(thread_id, f"m{n}")
    with connection_drops_at(_inserts_summary):
        resp = api.post(f"{BASE}/threads/{thread_id}/compact")
    assert resp.status_code == 503
    assert _failed_runs(thread_id) == [
        ("manual", "summary", "failed", "database: server closed the connection unexpectedly",
         1, 4, 0, None, True)
    ]


def test_an_agent_run_that_lost_the_connection_is_recorded_as_failed(
    api: Api, settings: Any
) -> None:
    settings.MEMORY_AGENT_MAX_VERBATIM_MESSAGES = 4
    api.client.put(
        "/v1/memory/agents/dm",
        data=json.dumps({"memory": {}}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {api.key}"},
    )
    thread_id = api.create_thread(agent="dm")["threadId"]
    for n in (1, 2):
        api.append(thread_id, f"m{n}")
    call = {"name": "close_memory", "arguments": {"name": "q", "description": "d", "content": "c"}}
    with connection_drops_at(_inserts_summary):
        assert api.post(f"{BASE}/threads/{thread_id}/tools", call).status_code == 200
    assert _failed_runs(thread_id) == [
        ("auto", "summarize", "failed", "database: server closed the connection unexpectedly",
         1, 4, 0, None, True)  # the forced checkpoint keeps no half of a call/result pair
    ]


def test_a_run_that_cannot_be_recorded_still_leaves_the_append_acknowledged(api: Api) -> None:
    thread_id = api.create_thread(autoCompactThreshold=3)["threadId"]
    for n in (1, 2):
        api.append(thread_id, f"m{n}")
    with connection_drops_at(_inserts_summary), connection.execute_wrapper(_drop_run_inserts):
        resp = api.append(thread_id, "m3")
    assert (resp.status_code, resp.json()["compacted"]) == (201, False)
    assert _failed_runs(thread_id) == []
    assert Thread.objects.get(pk=thread_id).last_compaction_error == (
        "database: server closed the connection unexpectedly"
    )
    assert audit.thread_audit(thread_id=thread_id) == []


def _drop_run_inserts(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    if sql.startswith('INSERT INTO "memoryapp_compactionrun"'):
        raise OperationalError("server closed the connection unexpectedly")
    return execute(sql, params, many, context)

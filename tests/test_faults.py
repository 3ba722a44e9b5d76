"""The database connection lost mid-write (issue 12 item 3).

Django's ``connection.execute_wrapper`` makes one chosen statement raise
OperationalError, as a dropped connection does. The request answers 503 JSON
``{"error": "Database unavailable"}`` with ``Retry-After`` (never a traceback), nothing
of the write is left behind (memoryapp.audit finds every invariant intact), and the retry
stores the message once.

The other faults of item 3 are tested beside the code they hit: the model failing in
compaction (tests/test_compaction.py), extraction (tests/test_episodic.py), synthesis
(tests/test_recall.py), the chat turn (tests/test_chat.py), a timeout (tests/
test_llm_gemini.py); the worker killed mid-job (tests/test_jobs.py); the server killed
mid-append under load (tests/test_durability.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import OperationalError, connection

from memoryapp import audit
from memoryapp.models import Message, Thread
from tests.conftest import BASE, Api


@contextmanager
def connection_drops_at(match: Callable[[str], bool]) -> Iterator[list[str]]:
    """Make the first statement whose SQL ``match`` accepts raise OperationalError."""
    hit: list[str] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not hit and match(sql):
            hit.append(sql)
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield hit


def _inserts_message(sql: str) -> bool:
    return sql.startswith('INSERT INTO "memoryapp_message"')


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
    with connection_drops_at(lambda sql: _inserts_message(sql) and "is_summary" in sql) as hit:
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

"""prepare(), the LLM-ready window (memoryapp/working.py prepare): spec 000 "prepare(), the
read" and "The messageLimit trap", spec 002 POST .../prepare.

Runs on the offline model (conftest); compaction here is real, through the API.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from memoryapp import compaction
from memoryapp.models import ApiKey, Message, Project, Thread
from tests.conftest import BASE, Api

TAIL_SQL_MARK = 'ORDER BY "memoryapp_message"."sequence_number" DESC'


def url(thread_id: str, action: str = "prepare") -> str:
    return f"{BASE}/threads/{thread_id}/{action}"


def append_all(
    api: Api, thread_id: str, contents: list[str], role: str = "user"
) -> list[dict[str, Any]]:
    out = []
    for content in contents:
        resp = api.append(thread_id, content, role=role)
        assert resp.status_code == 201, resp.content
        out.append(resp.json())
    return out


def active_summary(thread_id: str) -> Message:
    return Message.objects.get(thread_id=thread_id, is_summary=True, compacted_at__isnull=True)


def bulk_thread(
    project: Project, *, ordinary: int, folded: int, threshold: int | None = None
) -> Thread:
    """A thread as the service would leave it, written directly: ordinary messages
    1..folded compacted, the summary over them at folded + 1 (when folded > 0), then the
    live messages; the thread row's counters match."""
    thread = Thread.objects.create(
        project=project, dataset="bulk", auto_compact_threshold=threshold
    )
    now = timezone.now()
    rows: list[Message] = []
    summary: Message | None = None
    sequence = 0
    for i in range(1, ordinary + 1):
        sequence += 1
        rows.append(
            Message(
                thread=thread,
                sequence_number=sequence,
                role="user" if i % 2 else "assistant",
                content=f"m{i}",
                compacted_at=now if i <= folded else None,
                created_at=now,
            )
        )
        if i == folded:
            sequence += 1
            summary = Message(
                thread=thread,
                sequence_number=sequence,
                role="system",
                content=f"summary of m1..m{folded}",
                is_summary=True,
                covers_from_sequence=1,
                covers_to_sequence=folded,
                created_at=now,
            )
            rows.append(summary)
    Message.objects.bulk_create(rows, batch_size=2000)
    Thread.objects.filter(pk=thread.pk).update(
        next_sequence=sequence + 1,
        uncompacted_count=ordinary - folded,
        active_summary=summary,
        compaction_count=1 if summary else 0,
        first_message_at=now,
        last_message_at=now,
    )
    return Thread.objects.get(pk=thread.pk)


# --- the window ----------------------------------------------------------------------------


def test_it_puts_the_summary_first_and_keeps_it_outside_the_message_limit(api: Api) -> None:
    thread_id = api.create_thread(autoCompactThreshold=6)["threadId"]
    results = append_all(api, thread_id, [f"m{i}" for i in range(1, 7)])
    assert results[5]["compacted"] is True  # 1-5 folded, 6 kept, the summary is 7
    append_all(api, thread_id, ["m8", "m9"])

    resp = api.post(url(thread_id), {"messageLimit": 1})

    assert resp.status_code == 200
    summary = active_summary(thread_id)
    assert summary.sequence_number == 7
    body = resp.json()
    assert body["messages"] == [
        {"role": "system", "content": summary.content},
        {"role": "user", "content": "m9"},
    ]
    assert body["threadId"] == thread_id
    assert body["dataset"] == "user_42"
    assert body["messageCount"] == 3
    assert body["truncated"] is True
    assert body["compacted"] is True
    assert body["warning"].startswith("messageLimit (1) is less than autoCompactThreshold (6).")


@pytest.mark.parametrize("limit", [6, 7, 100])
def test_it_gives_no_warning_key_when_message_limit_reaches_the_threshold(
    api: Api, limit: int
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=6)["threadId"]
    append_all(api, thread_id, [f"m{i}" for i in range(1, 7)] + ["m8", "m9"])

    body = api.post(url(thread_id), {"messageLimit": limit}).json()

    assert "warning" not in body
    assert body["messages"] == [
        {"role": "system", "content": active_summary(thread_id).content},
        {"role": "user", "content": "m6"},
        {"role": "user", "content": "m8"},
        {"role": "user", "content": "m9"},
    ]
    assert (body["messageCount"], body["truncated"], body["compacted"]) == (3, False, True)


def test_it_warns_about_the_message_limit_trap_as_the_spec_shows(api: Api) -> None:
    thread_id = api.create_thread(autoCompactThreshold=30)["threadId"]

    body = api.post(url(thread_id), {"messageLimit": 10}).json()

    assert body["warning"].startswith("messageLimit (10) is less than autoCompactThreshold (30).")
    assert (body["messages"], body["messageCount"], body["truncated"], body["compacted"]) == (
        [],
        0,
        False,
        False,
    )


def test_it_never_warns_without_a_threshold(api: Api) -> None:
    thread_id = api.create_thread()["threadId"]
    append_all(api, thread_id, ["m1"])

    body = api.post(url(thread_id), {"messageLimit": 1}).json()

    assert "warning" not in body
    assert body["messages"] == [{"role": "user", "content": "m1"}]


@pytest.mark.parametrize("body", [{}, None])
def test_it_returns_the_newest_20_oldest_first_by_default(
    api: Api, body: dict[str, Any] | None
) -> None:
    thread_id = api.create_thread()["threadId"]
    for i in range(1, 26):
        append_all(api, thread_id, [f"m{i}"], role="user" if i % 2 else "assistant")

    resp = api.post(url(thread_id), body)

    assert resp.status_code == 200
    window = resp.json()
    assert window["messages"] == [
        {"role": "user" if i % 2 else "assistant", "content": f"m{i}"} for i in range(6, 26)
    ]
    assert (window["messageCount"], window["truncated"], window["compacted"]) == (25, True, False)
    assert "warning" not in window


@pytest.mark.parametrize("limit", [0, 101, "5", 2.5, None])
def test_it_rejects_a_message_limit_outside_1_to_100(api: Api, limit: Any) -> None:
    thread_id = api.create_thread()["threadId"]

    resp = api.post(url(thread_id), {"messageLimit": limit})

    assert resp.status_code == 400
    body = resp.json()
    assert body["error"] == "Validation error"
    assert [issue["path"] for issue in body["issues"]] == [["messageLimit"]]


def test_it_answers_404_for_another_projects_thread(api: Api, outsider_api: Api) -> None:
    thread_id = api.create_thread()["threadId"]

    resp = outsider_api.post(url(thread_id), {})

    assert resp.status_code == 404
    assert resp.json() == {"error": "Thread not found"}


def test_it_answers_404_for_a_malformed_thread_id(api: Api) -> None:
    resp = api.post(url("not-a-uuid"), {})

    assert resp.status_code == 404
    assert resp.json() == {"error": "Thread not found"}


# --- consistency under a concurrent compaction ----------------------------------------------


def test_it_reads_again_when_a_compaction_commits_between_its_two_reads(api: Api) -> None:
    thread_id = api.create_thread()["threadId"]
    append_all(api, thread_id, [f"m{i}" for i in range(1, 31)])
    fired: list[str] = []

    def compact_before_the_tail(
        execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
    ) -> Any:
        # Another client's insert trips auto-compaction (keeps m30, folds 1-29) right after
        # prepare read the thread row and before it reads the tail.
        if not fired and TAIL_SQL_MARK in sql:
            fired.append(sql)
            compaction.compact(thread_id=uuid.UUID(thread_id), keep_from_sequence=30)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(compact_before_the_tail):
        body = api.post(url(thread_id), {"messageLimit": 20}).json()

    assert len(fired) == 1
    summary = active_summary(thread_id)
    assert (summary.sequence_number, summary.covers_to_sequence) == (31, 29)
    # Without the second read: no summary (read before it existed) and only m30, with a
    # messageCount of 30: messages 11-29 silently missing from the context.
    assert body["messages"] == [
        {"role": "system", "content": summary.content},
        {"role": "user", "content": "m30"},
    ]
    assert (body["messageCount"], body["truncated"], body["compacted"]) == (1, False, True)


# --- cost: queries and the index range ------------------------------------------------------


@pytest.mark.parametrize(("ordinary", "folded"), [(10, 0), (10, 5), (10_000, 9_990)])
def test_it_costs_at_most_three_queries_whatever_the_length(
    api: Api,
    project: Project,
    django_assert_max_num_queries: Any,
    ordinary: int,
    folded: int,
) -> None:
    thread = bulk_thread(project, ordinary=ordinary, folded=folded, threshold=30)
    ApiKey.objects.update(last_used=timezone.now())  # the key's last_used write is not prepare's

    with django_assert_max_num_queries(3):  # API key, thread + summary, tail
        resp = api.post(url(str(thread.id)), {"messageLimit": 30})

    assert resp.status_code == 200
    body = resp.json()
    live = [
        {"role": "user" if i % 2 else "assistant", "content": f"m{i}"}
        for i in range(folded + 1, ordinary + 1)
    ]
    summary = [{"role": "system", "content": f"summary of m1..m{folded}"}] if folded else []
    assert body["messages"] == summary + live
    assert (body["messageCount"], body["truncated"], body["compacted"]) == (
        ordinary - folded,
        False,
        bool(folded),
    )


def test_it_reads_the_tail_as_a_range_above_the_summary(api: Api, project: Project) -> None:
    # Migration 0022: no index of the live rows; the tail is a range of the (thread,
    # sequence_number) unique index bounded below by the active summary's end (490), so
    # the 490 compacted rows are never read.
    thread = bulk_thread(project, ordinary=500, folded=490, threshold=30)
    captured: list[tuple[str, Any]] = []

    def capture(
        execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
    ) -> Any:
        if TAIL_SQL_MARK in sql:
            captured.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        assert api.post(url(str(thread.id)), {"messageLimit": 30}).status_code == 200

    assert len(captured) == 1
    sql, params = captured[0]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Tiny tables make a sequential scan cheapest; forbid it to ask whether the
            # index *can* serve this query as a range.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("EXPLAIN " + sql, params)
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        plan = "\n".join(str(row[-1]) for row in cursor.fetchall())
    assert params[1:3] == [490, 502]  # above the summary's end, below next_sequence
    if connection.vendor == "postgresql":
        assert "Index Scan Backward using message_thread_sequence_unique" in plan, plan
        assert "sequence_number > " in plan and "sequence_number < " in plan, plan
    else:
        assert "(thread_id=? AND sequence_number>? AND sequence_number<?)" in plan, plan


def test_message_count_is_the_un_compacted_messages_not_the_window(api: Api, project: Project) -> None:
    """Tester item 6a, as README.md and docs/api.md now define it (spec 002): 30
    un-compacted messages under messageLimit 5 give the newest 5, messageCount 30,
    truncated true; after a fold of 20, the summary (first) is not counted."""
    thread = bulk_thread(project, ordinary=30, folded=0)
    body = api.post(url(str(thread.pk)), {"messageLimit": 5}).json()
    assert [m["content"] for m in body["messages"]] == ["m26", "m27", "m28", "m29", "m30"]
    assert (body["messageCount"], body["truncated"], body["compacted"]) == (30, True, False)
    folded = bulk_thread(project, ordinary=30, folded=20)
    body = api.post(url(str(folded.pk)), {"messageLimit": 5}).json()
    assert [m["content"] for m in body["messages"]] == ["summary of m1..m20", "m26", "m27", "m28", "m29", "m30"]
    assert (body["messageCount"], body["truncated"], body["compacted"]) == (10, True, True)

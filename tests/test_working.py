"""Domain-level tests of memoryapp/working.py: threads, append, list, stats (spec 000 and 002)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memoryapp import compaction, serializers, working
from memoryapp.errors import IdempotencyConflict, InvalidInput, ThreadNotFound
from memoryapp.models import Message, Project, Thread, ThreadTag
from memoryapp.results import CompactionState, ContextCount, ThreadStats, TokenUsage
from tests.conftest import Clock, at


@pytest.fixture
def thread(project: Project) -> Thread:
    return working.thread_create(project=project, dataset="user_42")


def append(thread: Thread, content: str = "hello", role: str = "user", **extra: Any) -> Message:
    return working.message_append(thread=thread, role=role, content=content, **extra).message


def fresh(thread: Thread) -> Thread:
    return Thread.objects.get(pk=thread.pk)


# --- Threads ------------------------------------------------------------------------------


def test_it_cleans_and_indexes_tags_on_create(project: Project) -> None:
    thread = working.thread_create(
        project=project, dataset="user_1", tags=[" cars", "cars", "", "  ", "boats "]
    )

    assert thread.tags == ["cars", "boats"]
    assert sorted(ThreadTag.objects.filter(thread=thread).values_list("name", flat=True)) == [
        "boats",
        "cars",
    ]


def test_it_finds_a_thread_only_in_its_project(project: Project, thread: Thread) -> None:
    other = Project.objects.create(slug="other", name="Other")

    assert working.thread_get(project=project, thread_id=str(thread.pk)) == thread
    assert working.thread_get(project=project, thread_id=thread.pk) == thread
    for bad in ["not-a-uuid", "", str(uuid.uuid4())]:
        with pytest.raises(ThreadNotFound):
            working.thread_get(project=project, thread_id=bad)
    with pytest.raises(ThreadNotFound):
        working.thread_get(project=other, thread_id=thread.pk)


def test_it_updates_only_the_given_fields(thread: Thread) -> None:
    updated = working.thread_update(
        thread=thread, changes={"tags": ["x"], "auto_compact_threshold": 10}
    )
    untouched = working.thread_update(thread=updated, changes={})

    row = fresh(thread)
    assert (row.dataset, row.tags, row.metadata, row.auto_compact_threshold) == (
        "user_42",
        ["x"],
        {},
        10,
    )
    assert untouched.tags == ["x"]
    assert list(ThreadTag.objects.filter(thread=thread).values_list("name", flat=True)) == ["x"]


def test_it_deletes_a_thread_with_its_messages_and_summary(thread: Thread) -> None:
    for i in range(3):
        append(thread, f"m{i}")
    assert compaction.compact(thread_id=thread.pk) is not None

    working.thread_delete(thread=thread)

    assert not Thread.objects.filter(pk=thread.pk).exists()
    assert not Message.objects.filter(thread_id=thread.pk).exists()
    assert not ThreadTag.objects.filter(thread_id=thread.pk).exists()


def test_it_refuses_to_delete_a_thread_twice(thread: Thread) -> None:
    stale = Thread.objects.get(pk=thread.pk)  # looked up before the first delete, as a racing request would
    working.thread_delete(thread=thread)

    with pytest.raises(ThreadNotFound):
        working.thread_delete(thread=stale)



def test_it_pages_threads_newest_first(project: Project) -> None:
    threads = [working.thread_create(project=project, dataset="d") for _ in range(3)]
    for minutes, thread in enumerate(threads):
        Thread.objects.filter(pk=thread.pk).update(
            created=at("2026-08-16T09:00:00Z") + timedelta(minutes=minutes)
        )

    page1, cursor1 = working.thread_list(project=project, limit=2)
    page2, cursor2 = working.thread_list(project=project, limit=2, cursor=cursor1)

    assert [t.pk for t in page1] == [threads[2].pk, threads[1].pk]
    assert [t.pk for t in page2] == [threads[0].pk]
    assert cursor1 is not None
    assert cursor2 is None


@pytest.mark.parametrize("cursor", ["garbage", "Zm9v", "!!!!", "MjAyNi0wOC0xNnxub3QtYS11dWlk"])
def test_it_refuses_a_malformed_cursor(project: Project, cursor: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        working.thread_list(project=project, cursor=cursor)

    assert caught.value.issues == [
        {"path": ["cursor"], "message": "Malformed cursor", "code": "invalid_cursor"}
    ]


# --- Append -------------------------------------------------------------------------------


def test_it_numbers_messages_from_one_without_gaps(thread: Thread) -> None:
    numbers = [append(thread, f"m{i}").sequence_number for i in range(5)]

    row = fresh(thread)
    assert numbers == [1, 2, 3, 4, 5]
    assert (row.next_sequence, row.uncompacted_count, row.message_total) == (6, 5, 5)


def test_it_keeps_the_thread_counters_for_stats(thread: Thread, clock: Clock) -> None:
    clock.now = at("2026-08-16T09:00:00.000Z")
    append(thread, tokens={"input": 10, "output": 20, "total": 30})
    clock.now = at("2026-08-16T09:00:05.250Z")
    append(thread)

    row = fresh(thread)
    assert (row.tokens_input, row.tokens_output, row.tokens_total, row.messages_with_tokens) == (
        10,
        20,
        30,
        1,
    )
    assert (row.first_message_at, row.last_message_at, row.last_activity) == (
        at("2026-08-16T09:00:00.000Z"),
        at("2026-08-16T09:00:05.250Z"),
        at("2026-08-16T09:00:05.250Z"),
    )


def test_it_stores_every_field_of_a_message(thread: Thread, clock: Clock) -> None:
    clock.now = at("2026-08-16T09:14:02.114999Z")
    result = compaction.message_append_compacting(
        thread=thread,
        role="assistant",
        content="The Toyota Corolla Hybrid is a great fit.",
        tokens={"input": 512, "output": 128, "total": 640},
        model="gpt-4o",
        latency_ms=840,
        metadata={"stopReason": "stop", "agentName": "support-bot"},
    )

    assert (result.replayed, result.compaction) == (False, None)
    assert serializers.append_to_dict(result) == {
        "messageId": str(result.message.id),
        "threadId": str(thread.pk),
        "sequenceNumber": 1,
        "role": "assistant",
        "createdAt": "2026-08-16T09:14:02.114Z",
        "compacted": False,
    }
    assert serializers.message_to_dict(Message.objects.get(pk=result.message.pk)) == {
        "messageId": str(result.message.id),
        "threadId": str(thread.pk),
        "role": "assistant",
        "content": "The Toyota Corolla Hybrid is a great fit.",
        "sequenceNumber": 1,
        "tokens": {"input": 512, "output": 128, "total": 640},
        "model": "gpt-4o",
        "latencyMs": 840,
        "metadata": {"stopReason": "stop", "agentName": "support-bot"},
        "compactedAt": None,
        "createdAt": "2026-08-16T09:14:02.114Z",
    }


def test_it_replays_an_idempotent_append(thread: Thread) -> None:
    first = working.message_append(thread=thread, role="user", content="hi", idempotency_key="k")
    again = working.message_append(thread=thread, role="user", content="hi", idempotency_key="k")

    assert (first.replayed, again.replayed) == (False, True)
    assert (again.message.pk, again.compaction_due) == (first.message.pk, False)
    assert Message.objects.filter(thread=thread).count() == 1
    assert fresh(thread).next_sequence == 2


@pytest.mark.parametrize(("role", "content"), [("user", "bye"), ("assistant", "hi")])
def test_it_refuses_a_reused_idempotency_key(thread: Thread, role: str, content: str) -> None:
    working.message_append(thread=thread, role="user", content="hi", idempotency_key="k")

    with pytest.raises(IdempotencyConflict):
        working.message_append(thread=thread, role=role, content=content, idempotency_key="k")

    assert Message.objects.filter(thread=thread).count() == 1


FULL: dict[str, Any] = {
    "tokens": {"input": 5, "output": 2, "total": 7}, "model": "gpt-4o", "latency_ms": 840,
    "metadata": {"stopReason": "stop"}, "created_at": datetime(2026, 8, 16, 9, 14, 2, 114000, tzinfo=UTC),
}


def test_it_replays_a_retry_that_repeats_every_field(thread: Thread) -> None:
    first = working.message_append(thread=thread, role="assistant", content="hi", idempotency_key="k", **FULL)
    again = working.message_append(thread=thread, role="assistant", content="hi", idempotency_key="k", **FULL)
    assert (again.replayed, again.message.pk) == (True, first.message.pk)


@pytest.mark.parametrize(
    "changed",
    [
        {"tokens": {"input": 5, "output": 2, "total": 8}}, {"tokens": None}, {"model": "gpt-4o-mini"},
        {"latency_ms": 841}, {"metadata": {"stopReason": "length"}},
        {"created_at": datetime(2026, 8, 16, 9, 14, 3, tzinfo=UTC)},
    ],
)
def test_it_refuses_a_reused_key_whose_other_fields_differ(thread: Thread, changed: dict[str, Any]) -> None:
    working.message_append(thread=thread, role="assistant", content="hi", idempotency_key="k", **FULL)

    with pytest.raises(IdempotencyConflict):
        working.message_append(
            thread=thread, role="assistant", content="hi", idempotency_key="k", **{**FULL, **changed}
        )

    assert Message.objects.filter(thread=thread).count() == 1


def test_it_replays_a_retry_without_created_at_whatever_the_clock_says(thread: Thread) -> None:
    first = working.message_append(thread=thread, role="user", content="hi", idempotency_key="k")
    again = working.message_append(thread=thread, role="user", content="hi", idempotency_key="k")
    assert (again.replayed, again.message.created_at) == (True, first.message.created_at)


def test_it_raises_not_found_when_the_thread_was_deleted_meanwhile(thread: Thread) -> None:
    Thread.objects.filter(pk=thread.pk).delete()

    with pytest.raises(ThreadNotFound):
        append(thread)


def test_it_reports_a_due_compaction_without_running_it(project: Project) -> None:
    thread = working.thread_create(project=project, dataset="d", auto_compact_threshold=2)

    results = [working.message_append(thread=thread, role="user", content=f"m{i}") for i in (1, 2)]

    assert [r.compaction_due for r in results] == [False, True]
    assert fresh(thread).compaction_count == 0
    assert not Message.objects.filter(thread=thread, is_summary=True).exists()


def test_it_trips_auto_compaction_at_the_threshold(project: Project) -> None:
    thread = working.thread_create(project=project, dataset="d", auto_compact_threshold=3)

    results = [
        compaction.message_append_compacting(
            thread=thread, role="user", content=f"m{i}", idempotency_key=f"k{i}"
        )
        for i in range(1, 4)
    ]
    replay = compaction.message_append_compacting(
        thread=thread, role="user", content="m3", idempotency_key="k3"
    )

    assert [r.compacted for r in results] == [False, False, True]
    assert [r.compaction is None for r in results] == [True, True, False]
    assert (replay.replayed, replay.compacted, replay.compaction) == (True, True, None)
    rows = list(Message.objects.filter(thread=thread).order_by("sequence_number"))
    tripped = results[2].compaction
    assert tripped is not None
    assert (len(tripped.runs), tripped.error) == (1, None)
    [run] = tripped.runs
    assert (run.summary.pk, run.compacted_count, run.from_sequence, run.to_sequence) == (
        rows[3].pk,
        2,
        1,
        2,
    )
    assert [(m.sequence_number, m.is_summary, m.compacted_at is not None) for m in rows] == [
        (1, False, True),
        (2, False, True),
        (3, False, False),
        (4, True, False),
    ]
    assert (rows[3].covers_from_sequence, rows[3].covers_to_sequence) == (1, 2)


# --- List ---------------------------------------------------------------------------------


@pytest.fixture
def six(thread: Thread) -> Thread:
    for i in range(1, 7):
        append(thread, f"message {i}")
    return fresh(thread)


@pytest.mark.parametrize(
    ("kwargs", "expected", "has_more"),
    [
        ({"order": "desc", "limit": 2}, [6, 5], True),
        ({"order": "desc", "limit": 2, "before": 5}, [4, 3], True),
        ({"order": "desc", "limit": 2, "before": 3}, [2, 1], False),
        ({"order": "asc", "limit": 2, "before": 4}, [1, 2], True),
        ({"order": "asc", "limit": 20}, [1, 2, 3, 4, 5, 6], False),
        ({"order": "asc", "limit": 6}, [1, 2, 3, 4, 5, 6], False),
        ({"order": "asc", "limit": 5}, [1, 2, 3, 4, 5], True),
        ({"order": "asc", "limit": 2, "after": 4}, [5, 6], False),
        ({"order": "desc", "limit": 10, "after": 2, "before": 6}, [5, 4, 3], False),
        ({"order": "asc", "limit": 3, "before": 1}, [], False),
    ],
)
def test_it_lists_messages_by_sequence(
    six: Thread, kwargs: dict[str, Any], expected: list[int], has_more: bool
) -> None:
    page = working.message_list(thread=six, **kwargs)

    assert [m.sequence_number for m in page.messages] == expected
    assert (page.total, page.has_more) == (6, has_more)


def test_it_orders_by_sequence_not_by_timestamp(thread: Thread, clock: Clock) -> None:
    # The clock runs backwards: timestamp order is the reverse of sequence order.
    for i in range(5):
        clock.now = at("2026-08-16T10:00:00.000Z") - timedelta(milliseconds=i)
        append(thread, f"m{i}")
    clock.now = at("2026-08-16T10:00:00.000Z")
    append(thread, "same millisecond as m0")

    page = working.message_list(thread=fresh(thread), limit=20)
    window = working.prepare(
        thread=working.thread_get(project=thread.project, thread_id=thread.pk, with_summary=True)
    )

    assert [m.content for m in page.messages] == [
        "m0",
        "m1",
        "m2",
        "m3",
        "m4",
        "same millisecond as m0",
    ]
    assert [m.content for m in window.messages] == [m.content for m in page.messages]


# --- Stats --------------------------------------------------------------------------------


def test_it_reports_stats_from_the_counters(thread: Thread, clock: Clock) -> None:
    clock.now = at("2026-08-16T09:00:00.000Z")
    append(thread, tokens={"input": 3, "output": 4, "total": 7})
    clock.now = at("2026-08-16T09:01:00.999Z")
    append(thread, tokens={"input": 1, "output": 1, "total": 2})
    append(thread)

    stats = working.thread_stats(thread=fresh(thread))

    assert stats == ThreadStats(
        thread_id=thread.pk,
        message_count=3,
        context=ContextCount(messages=3, summary=False),
        # 9 tokens over the 2 messages that carried them, rounded
        token_usage=TokenUsage(total_input=4, total_output=5, total_tokens=9, average_per_message=4),
        session_duration_ms=60999,
        created_at=thread.created,
        last_activity_at=at("2026-08-16T09:01:00.999Z"),
        compaction=CompactionState(
            count=0, active_summary_id=None, last_compacted_at=None, last_error=None, last_error_at=None
        ),
    )
    body = serializers.stats_to_dict(stats)
    assert body["tokenUsage"] == {
        "totalInput": 4,
        "totalOutput": 5,
        "totalTokens": 9,
        "averagePerMessage": 4,
    }
    assert body["sessionDuration"] == {"ms": 60999, "seconds": 60}
    assert body["lastActivityAt"] == "2026-08-16T09:01:00.999Z"


def test_it_leaves_the_summary_out_of_the_session_duration(thread: Thread, clock: Clock) -> None:
    clock.now = at("2026-08-16T09:00:00.000Z")
    append(thread, "one")
    clock.now = at("2026-08-16T09:00:02.000Z")
    append(thread, "two")
    clock.now = at("2026-08-16T10:00:00.000Z")
    summary = compaction.compact(thread_id=thread.pk)

    stats = working.thread_stats(thread=fresh(thread))

    assert summary is not None
    assert stats.message_count == 1  # only the summary row is un-compacted
    assert stats.session_duration_ms == 2000
    assert stats.token_usage is None
    assert stats.last_activity_at == at("2026-08-16T10:00:00.000Z")
    assert (stats.compaction.count, stats.compaction.active_summary_id) == (1, summary.summary.pk)


def test_it_reports_no_duration_for_one_message(thread: Thread) -> None:
    append(thread)

    assert working.thread_stats(thread=fresh(thread)).session_duration_ms is None


def test_it_never_reports_a_total_below_the_rows_on_the_page(project: Project) -> None:
    thread = working.thread_create(project=project, dataset="d")
    for text in ("one", "two"):
        working.message_append(thread=thread, role="user", content=text)
    stale = Thread.objects.get(pk=thread.pk)  # read before the next append, as a racing list would
    working.message_append(thread=thread, role="user", content="three")

    page = working.message_list(thread=stale, order="desc", limit=10)

    assert [m.sequence_number for m in page.messages] == [3, 2, 1]
    assert page.total == 3

"""GET thread, the thread list and GET messages read through memoryapp.sql (issue 11 item 2).

Each is one statement whatever the project's or the thread's size (one more for an API
key not in the process's cache), and each answers exactly what the model instances
serialised to: the same serializers turn a Thread (POST, PATCH, events) and the
ThreadView these reads return into the one thread resource, so the two must agree field
by field.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryapp import compaction, serializers, working
from memoryapp.api.auth import key_cache
from memoryapp.models import ApiKey, Message, Project, Thread, ThreadTag
from tests.conftest import BASE, Api, Clock, at
from tests.test_prepare import bulk_thread


def statements(work: Any) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        work()
    return [q["sql"].split()[0].upper() for q in ctx.captured_queries]


def many_threads(project: Project, count: int) -> None:
    """``count`` threads, one a second apart, datasets d0..d4 and tags t0..t2 in turn."""
    start = timezone.now() - timedelta(seconds=count)
    threads = [
        Thread(
            id=uuid.uuid4(),
            project=project,
            dataset=f"d{i % 5}",
            tags=[f"t{i % 3}"],
            created=start + timedelta(seconds=i),
            last_activity=start + timedelta(seconds=i),
        )
        for i in range(count)
    ]
    Thread.objects.bulk_create(threads)
    ThreadTag.objects.bulk_create(
        ThreadTag(thread=t, name=t.tags[0], project=project, created=t.created) for t in threads
    )


def orm_thread(thread_id: str) -> dict[str, Any]:
    """The thread resource as the model instance serialises (what the ORM read gave)."""
    return serializers.thread_to_dict(Thread.objects.select_related("agent").get(pk=thread_id))


def orm_messages(thread_id: str) -> list[dict[str, Any]]:
    return [serializers.message_to_dict(m) for m in Message.objects.filter(thread_id=thread_id)]


def put_agent(api: Api, name: str) -> None:
    resp = api.client.put(
        f"{BASE.rsplit('/', 1)[0]}/agents/{name}",
        data=json.dumps({"memory": {}}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {api.key}"},
    )
    assert resp.status_code in (200, 201), resp.content


# --- statements -----------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [3, 300])
def test_it_reads_a_thread_and_a_list_page_in_one_statement_whatever_the_project(
    api: Api, project: Project, threads: int
) -> None:
    many_threads(project, threads)
    one = str(Thread.objects.filter(project=project).first().pk)  # type: ignore[union-attr]
    cursor = api.get(f"{BASE}/threads", limit=2).json()["nextCursor"]
    ApiKey.objects.update(last_used=timezone.now())  # the key's last_used write is not the read's
    key_cache.clear()
    queries: list[dict[str, Any]] = [{}, {"dataset": "d1"}, {"tag": "t2"}, {"cursor": cursor}]
    queries.append({"dataset": "d0", "tag": "t0", "cursor": cursor, "limit": 1})

    cold = statements(lambda: api.get(f"{BASE}/threads/{one}"))
    warm = [statements(lambda: api.get(f"{BASE}/threads/{one}"))]
    warm += [statements(lambda q=q: api.get(f"{BASE}/threads", **q)) for q in queries]

    assert cold == ["SELECT", "SELECT"]  # the key, the thread
    assert warm == [["SELECT"]] * 6


@pytest.mark.parametrize("length", [10, 2_000])
def test_it_reads_a_message_page_in_one_statement_whatever_the_length(
    api: Api, project: Project, length: int
) -> None:
    thread = bulk_thread(project, ordinary=length, folded=5)
    url = f"{BASE}/threads/{thread.pk}/messages"
    ApiKey.objects.update(last_used=timezone.now())
    key_cache.clear()
    queries: list[dict[str, Any]] = [{}, {"order": "desc"}, {"before": 4}, {"after": 3, "limit": 2}]
    queries.append({"before": length, "after": 1, "order": "desc", "limit": 100})

    cold = statements(lambda: api.get(url))
    warm = [statements(lambda q=q: api.get(url, **q)) for q in queries]
    other = statements(lambda: api.get(f"{BASE}/threads/{uuid.uuid4()}/messages"))

    assert cold == ["SELECT", "SELECT"]  # the key, the thread and the page
    assert warm == [["SELECT"]] * 5
    assert other == ["SELECT"]  # a 404 is the same one statement


# --- exact values ---------------------------------------------------------------------------


def test_it_shows_a_thread_exactly_as_its_model_instance_serialises(
    api: Api, project: Project, clock: Clock
) -> None:
    clock.set("2026-08-16T09:02:11.615789Z")
    put_agent(api, "dm")
    tid = api.create_thread(
        dataset="user_42",
        tags=["cars", "vip"],
        metadata={"title": "Car search", "n": [1, 2.5, None, True]},
        agent="dm",
    )["threadId"]
    plain = api.create_thread(dataset="user_7", autoCompactThreshold=4)["threadId"]
    clock.set("2026-08-16T09:03:00.000999Z")
    for text in ("one", "two", "three"):
        api.append(plain, text, tokens={"input": 2, "output": 3})
    compaction.compact(thread_id=uuid.UUID(plain))
    failed_at = at("2026-08-16T09:04:05.123456Z")
    Thread.objects.filter(pk=plain).update(
        last_compaction_error="timeout: model call", last_compaction_error_at=failed_at
    )

    shown = api.get(f"{BASE}/threads/{tid}").json()
    shown_plain = api.get(f"{BASE}/threads/{plain}").json()

    assert shown == orm_thread(tid)
    assert shown_plain == orm_thread(plain)
    assert shown == {
        "threadId": tid,
        "dataset": "user_42",
        "tags": ["cars", "vip"],
        "metadata": {"title": "Car search", "n": [1, 2.5, None, True]},
        "autoCompactThreshold": None,
        "agent": "dm",
        "createdAt": "2026-08-16T09:02:11.615Z",
        "lastActivityAt": "2026-08-16T09:02:11.615Z",
        "totalMessages": 0,
        "compaction": {
            "count": 0,
            "activeSummaryId": None,
            "lastCompactedAt": None,
            "lastError": None,
            "lastErrorAt": None,
        },
    }
    summary = Thread.objects.get(pk=plain).active_summary_id
    assert shown_plain["totalMessages"] == 4
    assert shown_plain["compaction"] == {
        "count": 1,
        "activeSummaryId": str(summary),
        "lastCompactedAt": "2026-08-16T09:03:00.000Z",
        "lastError": "timeout: model call",
        "lastErrorAt": "2026-08-16T09:04:05.123Z",
    }
    # Created in the same instant (the frozen clock): the higher id first.
    both = sorted([tid, plain], key=uuid.UUID, reverse=True)
    assert api.get(f"{BASE}/threads").json() == {
        "threads": [orm_thread(both[0]), orm_thread(both[1])],
        "nextCursor": None,
    }


def test_it_pages_the_list_by_created_then_id_across_equal_times(api: Api, project: Project) -> None:
    # Threads created in the same microsecond: the id breaks the tie, descending, and the
    # cursor resumes exactly after the last one shown.
    same = at("2026-08-16T09:00:00.123456Z")
    ids = sorted((uuid.uuid4() for _ in range(5)), reverse=True)
    Thread.objects.bulk_create(
        Thread(id=i, project=project, dataset="d", created=same, last_activity=same) for i in ids
    )

    pages, cursor = [], None
    while True:
        body = api.get(f"{BASE}/threads", limit=2, **({"cursor": cursor} if cursor else {})).json()
        pages.append([t["threadId"] for t in body["threads"]])
        cursor = body["nextCursor"]
        if cursor is None:
            break

    assert pages == [[str(ids[0]), str(ids[1])], [str(ids[2]), str(ids[3])], [str(ids[4])]]
    assert body["threads"][0]["createdAt"] == "2026-08-16T09:00:00.123Z"


def test_it_lists_messages_exactly_as_their_model_instances_serialise(
    api: Api, project: Project, clock: Clock
) -> None:
    tid = api.create_thread(autoCompactThreshold=3)["threadId"]
    clock.set("2026-08-16T09:02:11.708321Z")
    api.append(
        tid,
        "with everything",
        tokens={"input": 11, "output": 22},
        model="gpt-x",
        latencyMs=640,
        metadata={"stopReason": "end_turn", "agentName": "Ada"},
    )
    api.append(tid, "plain", role="assistant")
    api.append(tid, "third", tokens={"total": 5})  # trips the threshold: 1-2 folded
    api.append(tid, "after the summary")

    body = api.get(f"{BASE}/threads/{tid}/messages", limit=100).json()
    newest = api.get(f"{BASE}/threads/{tid}/messages", order="desc", limit=2).json()

    assert body == {"messages": orm_messages(tid), "total": 5, "hasMore": False}
    first, summary = body["messages"][0], body["messages"][3]
    assert first == {
        "messageId": first["messageId"],
        "threadId": tid,
        "role": "user",
        "content": "with everything",
        "sequenceNumber": 1,
        "tokens": {"input": 11, "output": 22, "total": 33},
        "model": "gpt-x",
        "latencyMs": 640,
        "metadata": {"stopReason": "end_turn", "agentName": "Ada"},
        "compactedAt": "2026-08-16T09:02:11.708Z",
        "createdAt": "2026-08-16T09:02:11.708Z",
    }
    assert body["messages"][2]["tokens"] == {"input": 0, "output": 0, "total": 5}
    assert (summary["role"], summary["compactedAt"], summary["summary"]) == (
        "system",
        None,
        {"fromSequence": 1, "toSequence": 2},
    )
    assert body["messages"][2]["compactedAt"] is None
    assert "summary" not in body["messages"][4]
    assert [m["sequenceNumber"] for m in newest["messages"]] == [5, 4]
    assert (newest["total"], newest["hasMore"]) == (5, True)


def test_it_answers_404_for_another_projects_thread_on_every_read(
    api: Api, outsider_api: Api
) -> None:
    tid = api.create_thread()["threadId"]
    api.append(tid, "secret")

    for path in (f"/threads/{tid}", f"/threads/{tid}/messages"):
        resp = outsider_api.get(BASE + path)
        assert (resp.status_code, resp.json()) == (404, {"error": "Thread not found"})
    assert outsider_api.get(f"{BASE}/threads").json() == {"threads": [], "nextCursor": None}


def test_it_pages_a_tag_newest_first_across_equal_times(api: Api, project: Project) -> None:
    same = at("2026-08-16T09:00:00.123456Z")
    tagged = sorted((uuid.uuid4() for _ in range(5)), reverse=True)
    for i, tid in enumerate([*tagged, uuid.uuid4(), uuid.uuid4()]):
        Thread.objects.create(
            id=tid, project=project, dataset=f"d{i % 2}", created=same, last_activity=same
        )
    for tid in tagged:
        working.thread_update(thread=Thread.objects.get(pk=tid), changes={"tags": ["x", "y"]})
    older = api.create_thread(dataset="d0", tags=["x"])["threadId"]  # created now: the newest

    def pages(**query: Any) -> list[list[str]]:
        found, cursor = [], None
        while True:
            body = api.get(
                f"{BASE}/threads", limit=2, **query, **({"cursor": cursor} if cursor else {})
            ).json()
            found.append([t["threadId"] for t in body["threads"]])
            cursor = body["nextCursor"]
            if cursor is None:
                return found

    ids = [older, *map(str, tagged)]
    assert pages(tag="x") == [ids[0:2], ids[2:4], ids[4:6]]
    assert pages(tag="x", dataset="d0") == [[ids[0], ids[1]], [ids[3], ids[5]]]
    assert pages(tag="y") == [ids[1:3], ids[3:5], ids[5:6]]
    assert pages(tag="z") == [[]]


def test_it_copies_the_threads_project_and_time_to_its_tag_rows(api: Api, project: Project) -> None:
    tid = api.create_thread(tags=["a", "b"])["threadId"]
    api.patch(f"{BASE}/threads/{tid}", {"tags": ["b", "c"]})
    thread = Thread.objects.get(pk=tid)

    rows = ThreadTag.objects.filter(thread=thread).order_by("name")

    assert [(r.name, r.project_id, r.created) for r in rows] == [
        ("b", project.pk, thread.created),
        ("c", project.pk, thread.created),
    ]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's EXPLAIN QUERY PLAN")
def test_it_reads_a_tags_page_as_a_range_of_its_index(project: Project) -> None:
    from memoryapp import sql

    for dataset, tag, cursor in [(False, True, False), (True, True, True)]:
        statement = sql._thread_page_sql("sqlite", dataset, tag, cursor)
        params: list[Any] = [project.pk, "x"]
        if cursor:
            params += ["d", "2026-08-16 09:00:00", "2026-08-16 09:00:00", "0" * 32]
        params.append(21)
        with connection.cursor() as c:
            c.execute("EXPLAIN QUERY PLAN " + statement, params)
            plan = " | ".join(str(row[-1]) for row in c.fetchall())

        assert plan.startswith(
            "SEARCH g USING COVERING INDEX thread_tag_page_idx (project_id=? AND name=?"
        )
        assert "TEMP B-TREE" not in plan


def test_it_reports_stats_in_one_statement_exactly_as_from_the_model_instance(
    api: Api, project: Project, outsider_api: Api, clock: Clock
) -> None:
    tid = api.create_thread(autoCompactThreshold=3)["threadId"]
    clock.set("2026-08-16T09:00:00.250Z")
    api.append(tid, "one", tokens={"input": 3, "output": 4})
    clock.set("2026-08-16T09:01:00.999Z")
    for text in ("two", "three", "four"):
        api.append(tid, text, tokens={"total": 2})
    Thread.objects.filter(pk=tid).update(last_compaction_error="timeout: model call")
    url = f"{BASE}/threads/{tid}/stats"

    warm = statements(lambda: api.get(url))
    body = api.get(url).json()

    assert warm == ["SELECT"]
    from_model = working.thread_stats(thread=Thread.objects.get(pk=tid))
    assert body == serializers.stats_to_dict(from_model)
    assert working.thread_stats(thread=tid) == from_model
    assert body == {
        "threadId": tid,
        "messageCount": 3,  # the summary of 1-2, three and four
        "tokenUsage": {
            "totalInput": 3,
            "totalOutput": 4,
            "totalTokens": 13,
            "averagePerMessage": 3,
        },
        "sessionDuration": {"ms": 60749, "seconds": 60},
        "createdAt": body["createdAt"],
        "lastActivityAt": "2026-08-16T09:01:00.999Z",
        "compaction": {
            "count": 1,
            "activeSummaryId": str(Thread.objects.get(pk=tid).active_summary_id),
            "lastCompactedAt": "2026-08-16T09:01:00.999Z",
            "lastError": "timeout: model call",
            "lastErrorAt": None,
        },
    }
    resp = outsider_api.get(url)
    assert (resp.status_code, resp.json()) == (404, {"error": "Thread not found"})

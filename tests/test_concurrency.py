"""Parallel appends: sequence numbers stay 1..N with no gaps and nothing is lost.

DESIGN.md section 6 item 1 (numbers taken under the thread row's lock; contention waits,
never errors) and section 8 (the guarantee holds across processes on PostgreSQL). Python
threads and several OS processes run on both databases (on SQLite, processes sharing one
database file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections
from django.test import Client

from memoryapp import agent_compaction, agents, sql
from memoryapp.models import ApiKey, Message, Project, Thread
from tests.conftest import BASE

PARALLEL = 20
ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.django_db(transaction=True)


def run_in_threads(count: int, work: Callable[[int], Any]) -> list[Any]:
    """Run ``work(i)`` for i in 0..count-1 on that many threads released together.

    Each thread uses its own database connection and closes it when done, so the test
    database can be flushed afterwards.
    """
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def target(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as exc:  # surfaced below, with the thread's own traceback
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a writer hung"
    if errors:
        raise errors[0]
    return results


@pytest.fixture
def setup() -> tuple[str, str]:
    """A project key and an empty thread, committed so other connections see them."""
    project = Project.objects.create(slug="acme", name="Acme")
    _, secret = ApiKey.issue(project=project, name="test")
    thread = Thread.objects.create(project=project, dataset="user_42")
    return secret, str(thread.pk)


def post_message(
    secret: str, thread_id: str, content: str, headers: dict[str, str] | None = None
) -> Any:
    client = Client(headers={"Authorization": f"Bearer {secret}", **(headers or {})})
    return client.post(
        f"{BASE}/threads/{thread_id}/messages",
        data=json.dumps({"role": "user", "content": content}),
        content_type="application/json",
    )


def assert_numbered_one_to_n(thread_id: str, contents: set[str]) -> None:
    rows = list(
        Message.objects.filter(thread_id=thread_id)
        .order_by("sequence_number")
        .values_list("sequence_number", "content")
    )
    assert [n for n, _ in rows] == list(range(1, len(contents) + 1))
    assert {c for _, c in rows} == contents
    # Each took the server's clock before waiting for the lock; the later number never
    # has the earlier time (working._dated).
    times = list(
        Message.objects.filter(thread_id=thread_id, is_summary=False)
        .order_by("sequence_number")
        .values_list("created_at", flat=True)
    )
    assert times == sorted(times)
    thread = Thread.objects.get(pk=thread_id)
    assert thread.latest_created_at == times[-1]
    assert (thread.next_sequence, thread.uncompacted_count) == (len(contents) + 1, len(contents))


def test_it_numbers_parallel_appends_from_threads_one_to_twenty(setup: tuple[str, str]) -> None:
    secret, thread_id = setup

    responses = run_in_threads(PARALLEL, lambda i: post_message(secret, thread_id, f"writer {i}"))

    assert [r.status_code for r in responses] == [201] * PARALLEL
    assert sorted(r.json()["sequenceNumber"] for r in responses) == list(range(1, PARALLEL + 1))
    assert_numbered_one_to_n(thread_id, {f"writer {i}" for i in range(PARALLEL)})


def test_it_stores_one_message_for_parallel_retries_with_one_idempotency_key(
    setup: tuple[str, str],
) -> None:
    secret, thread_id = setup

    responses = run_in_threads(
        10, lambda i: post_message(secret, thread_id, "once", {"Idempotency-Key": "turn-1"})
    )

    assert [r.status_code for r in responses] == [201] * 10
    assert len({r.json()["messageId"] for r in responses}) == 1
    assert {r.json()["sequenceNumber"] for r in responses} == {1}
    assert Message.objects.filter(thread_id=thread_id).count() == 1


def test_it_keeps_numbers_gapless_while_parallel_appends_trip_compaction(
    setup: tuple[str, str],
) -> None:
    secret, thread_id = setup
    Thread.objects.filter(pk=thread_id).update(auto_compact_threshold=5)

    responses = run_in_threads(PARALLEL, lambda i: post_message(secret, thread_id, f"writer {i}"))

    assert [r.status_code for r in responses] == [201] * PARALLEL
    rows = list(Message.objects.filter(thread_id=thread_id).order_by("sequence_number"))
    ordinary = [m for m in rows if not m.is_summary]
    summaries = [m for m in rows if m.is_summary]
    thread = Thread.objects.get(pk=thread_id)
    assert [m.sequence_number for m in rows] == list(range(1, len(rows) + 1))
    assert {m.content for m in ordinary} == {f"writer {i}" for i in range(PARALLEL)}
    assert summaries, "the threshold was crossed, so at least one run committed"
    assert [m.pk for m in summaries if m.compacted_at is None] == [thread.active_summary_id]
    live = [m for m in ordinary if m.compacted_at is None]
    assert thread.uncompacted_count == len(live)
    # Every append has answered, so no run is pending: the count must be below the
    # threshold (review item 7: 2 of 13 such bursts had left 6 un-compacted).
    assert thread.compaction_lease_until is None
    assert len(live) < 5


def test_it_leaves_an_agents_thread_within_its_budget_after_parallel_appends(
    setup: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The agent's version of the test above: 20 appends of 100 tokens each against a
    # budget of 1000. Appends that find another run holding the lease answer at once;
    # the holder looks again after letting go, so once every append has answered the
    # agent's budget no longer calls for a run (it used to stop after its own run).
    # Each run takes 200 ms between its read and its commit, as a model call would, so
    # appends do arrive during runs (a sliding window alone commits too fast for that).
    secret, thread_id = setup
    summarize = agent_compaction._summarize

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.2)
        return summarize(*args, **kwargs)

    monkeypatch.setattr(agent_compaction, "_summarize", slow)
    agent, _ = agents.agent_define(
        project=Project.objects.get(), name="dm", memory=None,
        compaction={"type": "sliding-window", "maxTokens": 1000},
    )
    Thread.objects.filter(pk=thread_id).update(agent=agent)
    contents = [f"{i:03d}" + "x" * 397 for i in range(PARALLEL)]

    responses = run_in_threads(PARALLEL, lambda i: post_message(secret, thread_id, contents[i]))

    assert [r.status_code for r in responses] == [201] * PARALLEL
    rows = list(Message.objects.filter(thread_id=thread_id).order_by("sequence_number"))
    thread = Thread.objects.get(pk=thread_id)
    assert [m.sequence_number for m in rows] == list(range(1, len(rows) + 1))
    assert {m.content for m in rows if not m.is_summary} == set(contents)
    assert [m.pk for m in rows if m.is_summary and m.compacted_at is None] == [thread.active_summary_id]
    live = [m for m in rows if not m.is_summary and m.compacted_at is None]
    assert thread.uncompacted_count == len(live)
    assert thread.compaction_lease_until is None
    assert agent_compaction.is_due(thread_id=thread.pk) is False
    assert len(live) <= 10  # 100 tokens each: more would pass the budget of 1000


PROCESS_SCRIPT = r"""
import json, os, sys
import django

os.environ["DJANGO_SETTINGS_MODULE"] = "memoryapp.settings"
django.setup()
from django.test import Client

secret, thread_id, worker, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
client = Client(headers={"Authorization": "Bearer " + secret})
print("ready", flush=True)
sys.stdin.readline()  # the parent releases every process at once
out = []
for i in range(count):
    resp = client.post(
        "/v1/memory/working/threads/%s/messages" % thread_id,
        data=json.dumps({"role": "user", "content": "process %s message %d" % (worker, i)}),
        content_type="application/json",
    )
    body = resp.json()
    out.append([resp.status_code, body.get("sequenceNumber")])
print(json.dumps(out), flush=True)
"""


def test_it_answers_one_of_two_parallel_deletes_of_a_thread_with_404(
    setup: tuple[str, str],
) -> None:
    secret, thread_id = setup
    for i in range(3):
        post_message(secret, thread_id, f"m{i}")

    def delete(_: int) -> int:
        client = Client(headers={"Authorization": f"Bearer {secret}"})
        return int(client.delete(f"{BASE}/threads/{thread_id}").status_code)

    assert sorted(run_in_threads(2, delete)) == [204, 404]
    assert not Thread.objects.filter(pk=thread_id).exists()
    assert Message.objects.filter(thread_id=thread_id).count() == 0


def run_processes(secret: str, thread_id: str, env: dict[str, str], processes: int, per_process: int) -> None:
    """``processes`` OS processes append ``per_process`` messages each over /v1, released
    together; assert every append got a distinct number and the thread holds 1..N."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PROCESS_SCRIPT, secret, thread_id, str(w), str(per_process)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**env, "PYTHONPATH": str(ROOT)},
        )
        for w in range(processes)
    ]
    try:
        for p in procs:
            assert p.stdout is not None
            assert p.stdout.readline().strip() == "ready"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()

    total = processes * per_process
    assert [p.returncode for p in procs] == [0] * processes
    flat = [pair for result in results for pair in result]
    assert [status for status, _ in flat] == [201] * total
    assert sorted(n for _, n in flat) == list(range(1, total + 1))
    assert_numbered_one_to_n(
        thread_id,
        {f"process {w} message {i}" for w in range(processes) for i in range(per_process)},
    )


@pytest.mark.postgres
@pytest.mark.skipif(connection.vendor != "postgresql", reason="the PostgreSQL one")
def test_it_numbers_parallel_appends_from_several_processes(setup: tuple[str, str]) -> None:
    secret, thread_id = setup
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"

    run_processes(secret, thread_id, {**os.environ, "DATABASE_URL": url}, 4, PARALLEL // 4)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the SQLite one")
def test_it_numbers_parallel_appends_from_several_processes_on_one_sqlite_file(
    setup: tuple[str, str],
) -> None:
    # 4 x 70 appends cross rowids 128 and 256: a WAL checkpoint and a search-index
    # catch-up run in one process after its commit while the others go on appending
    # (memoryapp.sql.WAL_CHECKPOINT_EVERY, FTS_BATCH); none may fail or take a number twice.
    secret, thread_id = setup
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["SQLITE_PATH"] = str(connection.settings_dict["NAME"])

    run_processes(secret, thread_id, env, 4, 70)
    # At most the rows above 256 wait: the catch-up at 256 runs after its commit while the
    # others go on appending, so it may index some of them too (more under load).
    assert sql.search_index_backlog() <= 280 - 256

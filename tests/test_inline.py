"""The hot routes served on the event loop (memoryapp.fastpath.inline; issue 11).

On a SQLite file, with a rate limit that needs no network, POST .../messages and
.../prepare are answered on the server's event loop itself; nothing there may wait. These
tests show which side served each request (the loop, or a pool thread: the crew's jobs
are watched), that an append finding either lock taken goes to a pool thread with
nothing written and is answered once the lock is free, that an append which trips
auto-compaction finishes on a pool thread, that its upkeep is run there, and, with a
real server, that the loop answers other requests while an append waits for the lock.
What is answered is compared byte for byte with Django's in tests/test_fastpath.py
(its catalogue runs inline on this test database).
"""

from __future__ import annotations

import asyncio
import contextvars
import fcntl
import http.client
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection

from memoryapp import asgi, sql, working
from memoryapp.fastpath import inline_allowed
from memoryapp.models import ApiKey, Message, Project, Thread
from memoryapp.wsgipool import PooledWsgi, _off_loop
from tests.servers import uvicorn_server
from tests.test_durability import _server_env
from tests.test_fastpath import BASE, call

pytestmark = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="served inline on a SQLite file only (PostgreSQL: the pool)"
)
HOLD_S = 0.5  # how long a lock is held before the test lets go of it


@pytest.fixture(autouse=True)
def _no_rate_limit(settings: Any) -> None:
    """Off, so the path is allowed whichever cache the run has (Redis too)."""
    settings.MEMORY_API_RATE_LIMIT = ""


class Watched:
    """The ASGI app's pool with its jobs counted and Django's fast path (the pool's own
    first try) recorded."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pooled: PooledWsgi = asgi._pooled_http
        self.jobs = 0
        self.fast: list[str] = []
        submit, fast = self.pooled.crew.submit, self.pooled.fast
        assert fast is not None

        def counted(job: Any) -> None:
            self.jobs += 1
            submit(job)

        def recorded(environ: dict[str, Any], body: bytes) -> Any:
            self.fast.append(environ["PATH_INFO"].rsplit("/", 1)[1])
            return fast(environ, body)

        monkeypatch.setattr(self.pooled.crew, "submit", counted)
        monkeypatch.setattr(self.pooled, "fast", recorded)


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> Watched:
    return Watched(monkeypatch)


@pytest.fixture
def key_and_thread() -> tuple[str, Thread]:
    project = Project.objects.create(slug="inline", name="inline")
    _, secret = ApiKey.issue(project=project, name="k")
    return secret, working.thread_create(project=project, dataset="d")


def _request(key: str, thread: Thread, route: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"authorization", f"Bearer {key}".encode()),
    ]
    status, _, content = call("POST", f"{BASE}/threads/{thread.pk}/{route}", json.dumps(body).encode(), headers)
    return status, json.loads(content)


def _append(key: str, thread: Thread, text: str) -> tuple[int, dict[str, Any]]:
    return _request(key, thread, "messages", {"role": "user", "content": text})


@pytest.mark.django_db(transaction=True)
def test_the_hot_routes_are_answered_on_the_loop_without_a_pool_thread(
    watched: Watched, key_and_thread: tuple[str, Thread]
) -> None:
    key, thread = key_and_thread
    assert inline_allowed()
    answers = [_append(key, thread, f"message {n}") for n in (1, 2)]
    prepared = _request(key, thread, "prepare", {"messageLimit": 1})
    assert [(s, b["sequenceNumber"], b["compacted"]) for s, b in answers] == [(201, 1, False), (201, 2, False)]
    assert prepared[0] == 200
    assert prepared[1]["messages"] == [{"role": "user", "content": "message 2"}]
    assert (watched.jobs, watched.fast) == (0, [])


@pytest.mark.django_db(transaction=True)
def test_it_is_off_where_something_could_wait(settings: Any) -> None:
    settings.MEMORY_API_RATE_LIMIT = "60/m"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert inline_allowed()  # counted in this process's memory
    settings.HTTP_FAST_PATH_INLINE = False
    assert not inline_allowed()
    settings.HTTP_FAST_PATH_INLINE = True
    settings.MEMORY_API_RATE_LIMIT = "60/m"
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://x"}}
    assert not inline_allowed()  # counting would be a Redis round trip on the loop
    settings.MEMORY_API_RATE_LIMIT = ""
    assert inline_allowed()


def _in_background(work: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    runner = threading.Thread(target=lambda: out.append(work()))
    runner.start()
    return runner, out


@contextmanager
def _sqlite_write_lock() -> Iterator[None]:
    """SQLite's write lock on the test database, held by another connection."""
    holder = sqlite3.connect(str(connection.settings_dict["NAME"]), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@contextmanager
def _turnstile() -> Iterator[None]:
    """The appenders' queue (sql.writers_queue's first flock), taken by another appender."""
    with open(f"{connection.settings_dict['NAME']}.append-turnstile", "a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held.fileno(), fcntl.LOCK_UN)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("lock", [_sqlite_write_lock, _turnstile], ids=["sqlite lock", "turnstile"])
def test_an_append_finding_the_lock_taken_waits_on_a_pool_thread_and_is_stored_once(
    watched: Watched, key_and_thread: tuple[str, Thread], lock: Callable[[], Any]
) -> None:
    key, thread = key_and_thread
    _append(key, thread, "first")
    with lock():
        runner, out = _in_background(lambda: _append(key, thread, "second"))
        time.sleep(HOLD_S)
        assert runner.is_alive() and not out  # waiting, on a pool thread
        assert watched.fast == ["messages"]  # the loop declined it: the pool tried again
        assert Message.objects.filter(thread=thread).count() == 1  # nothing written yet
    runner.join(30)
    assert [(s, b["sequenceNumber"]) for s, b in out] == [(201, 2)]
    assert list(Message.objects.filter(thread=thread).values_list("sequence_number", "content")) == [
        (1, "first"), (2, "second"),
    ]  # fmt: skip
    assert Thread.objects.get(pk=thread.pk).next_sequence == 3


@pytest.mark.django_db(transaction=True)
def test_an_append_that_trips_compaction_finishes_on_a_pool_thread(watched: Watched) -> None:
    project = Project.objects.create(slug="inline-c", name="c")
    _, key = ApiKey.issue(project=project, name="k")
    thread = working.thread_create(project=project, dataset="d", auto_compact_threshold=3)
    answers = [_append(key, thread, f"message {n}") for n in (1, 2, 3)]
    assert [b.get("compacted") for _, b in answers] == [False, False, True]
    assert watched.jobs == 1 and watched.fast == []  # the third one's compaction, and its answer
    summary = Message.objects.get(thread=thread, is_summary=True)
    assert (summary.covers_from_sequence, summary.covers_to_sequence) == (1, 2)
    assert Message.objects.get(thread=thread, sequence_number=3).triggered_compaction


@pytest.mark.django_db(transaction=True)
def test_the_upkeep_of_an_inline_append_runs_on_a_pool_thread(
    watched: Watched, key_and_thread: tuple[str, Thread], monkeypatch: pytest.MonkeyPatch
) -> None:
    key, thread = key_and_thread
    monkeypatch.setattr(sql, "FTS_BATCH", 2)
    ran: list[str] = []
    catch_up = sql.search_index_catch_up

    def watched_catch_up() -> int:
        indexed = catch_up()
        ran.append(threading.current_thread().name)  # once done: the test waits for it
        return indexed

    monkeypatch.setattr(sql, "search_index_catch_up", watched_catch_up)
    for n in range(4):
        _append(key, thread, f"message {n}")
    deadline = time.monotonic() + 30
    while len(ran) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(ran) == 2 and all(name.startswith("http_") for name in ran)
    # Both catch-ups ran on pool threads (above). An append that found a catch-up holding
    # the write lock went to the pool instead (its own upkeep then ran there, in it).
    assert set(watched.fast) <= {"messages"}
    assert watched.jobs >= 2 and (watched.fast or watched.jobs == 2)
    assert sql.search_index_backlog() == 0


def test_off_loop_runs_a_handler_as_synchronous_code_in_one_context_per_thread() -> None:
    var: contextvars.ContextVar[int] = contextvars.ContextVar("n", default=0)

    def handler(n: int) -> Any:
        running = asyncio._get_running_loop()
        var.set(var.get() + n)
        return running, var.get()

    async def twice() -> list[Any]:
        loop = asyncio.get_running_loop()
        seen = [_off_loop(handler, 1), _off_loop(handler, 2)]  # type: ignore[arg-type]
        assert asyncio.get_running_loop() is loop
        return seen

    assert asyncio.run(twice()) == [(None, 1), (None, 3)]


@pytest.mark.django_db(transaction=True)
def test_a_real_server_answers_while_an_append_waits_for_the_lock(key_and_thread: tuple[str, Thread]) -> None:
    """With the loop never waiting, a prepare is answered while an append waits on a pool
    thread for SQLite's write lock (an inline append that waited would hold both)."""
    key, thread = key_and_thread
    working.message_append(thread=thread, role="user", content="stored before")
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    path = f"{BASE}/threads/{thread.pk}"
    with uvicorn_server(_server_env()) as server:

        def post(route: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            conn.request("POST", f"{path}/{route}", body=json.dumps(body), headers=headers)
            answer = conn.getresponse()
            return answer.status, json.loads(answer.read())

        assert post("prepare", {})[0] == 200  # warm: routes found, key cached
        with _sqlite_write_lock():
            runner, out = _in_background(lambda: post("messages", {"role": "user", "content": "waits"}))
            time.sleep(HOLD_S)
            began = time.monotonic()
            status, window = post("prepare", {"messageLimit": 5})
            took = time.monotonic() - began
            assert runner.is_alive() and not out
        runner.join(30)
    assert status == 200 and [m["content"] for m in window["messages"]] == ["stored before"]
    assert took < HOLD_S  # not behind the waiting append
    assert [(s, b["sequenceNumber"]) for s, b in out] == [(201, 2)]

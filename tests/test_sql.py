"""memoryapp/sql.py: the hot paths' statements, counted, and what they store (issue 11).

Statement counts are exact and do not grow with the thread (inside a test's transaction
the append's own BEGIN and COMMIT show as SAVEPOINT and RELEASE): an append is the thread
UPDATE ... RETURNING and the INSERT (plus the key look-up with an Idempotency-Key);
prepare is the thread row joined to its summary, then the tail; over /v1 the API key
adds one statement only when it is not cached.
"""

from __future__ import annotations

import fcntl
import importlib
import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.db import IntegrityError, connection
from django.db.backends.sqlite3 import base as django_sqlite
from django.db.models.signals import post_init
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryapp import events, sql, working
from memoryapp.api.auth import key_cache
from memoryapp.errors import IdempotencyConflict, InvalidInput, ThreadNotFound
from memoryapp.models import ApiKey, Message, Project, Thread
from memoryapp.sqlite_backend import base as sqlite_backend
from tests.conftest import BASE, Api, Clock, at
from tests.test_prepare import bulk_thread


@pytest.fixture
def thread_id(api: Api) -> str:
    return str(api.create_thread()["threadId"])


def statements(work: Any) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        work()
    return [q["sql"].split()[0].upper() for q in ctx.captured_queries]


@pytest.mark.parametrize("length", [0, 10_000])
def test_it_appends_in_two_statements_whatever_the_length(project: Project, length: int) -> None:
    thread = bulk_thread(project, ordinary=length, folded=0)

    done = statements(lambda: working.message_append(thread=thread.pk, role="user", content="hi"))

    assert done == ["SAVEPOINT", "UPDATE", "INSERT", "RELEASE"]
    row = Message.objects.get(thread=thread, sequence_number=length + 1)
    assert (row.role, row.content) == ("user", "hi")


def test_it_looks_an_idempotency_key_up_under_the_lock_in_one_more_statement(
    project: Project,
) -> None:
    thread = working.thread_create(project=project, dataset="d")

    first = statements(
        lambda: working.message_append(thread=thread, role="user", content="hi", idempotency_key="k")
    )
    replay = statements(
        lambda: working.message_append(thread=thread, role="user", content="hi", idempotency_key="k")
    )

    assert first == ["SAVEPOINT", "UPDATE", "SELECT", "INSERT", "RELEASE"]
    # The replay rolls its bump back, then reads the first row.
    assert replay == ["SAVEPOINT", "UPDATE", "SELECT", "ROLLBACK", "RELEASE", "SELECT"]
    fresh = Thread.objects.get(pk=thread.pk)
    assert (fresh.next_sequence, fresh.uncompacted_count) == (2, 1)


def test_it_keeps_the_thread_counters_and_totals(project: Project) -> None:
    thread = working.thread_create(project=project, dataset="d", auto_compact_threshold=3)

    results = [
        working.message_append(
            thread=thread.pk, project=project, role="user", content=f"m{i}", tokens=tokens
        )
        for i, tokens in enumerate([None, {"input": 2, "output": 3, "total": 6}, None])
    ]

    fresh = Thread.objects.get(pk=thread.pk)
    assert [r.message.sequence_number for r in results] == [1, 2, 3]
    assert [r.compaction_due for r in results] == [False, False, True]
    assert (fresh.next_sequence, fresh.uncompacted_count, fresh.messages_with_tokens) == (4, 3, 1)
    assert (fresh.tokens_input, fresh.tokens_output, fresh.tokens_total) == (2, 3, 6)
    assert fresh.first_message_at == results[0].message.created_at
    assert fresh.last_message_at == fresh.last_activity == results[2].message.created_at


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"tokens": {"input": 2, "output": 3, "total": 6}, "model": "m", "latency_ms": 7},
        {"metadata": {"k": [1, "é"]}, "idempotency_key": "k-1"},
        {"created_at": "2026-08-16T09:00:00Z"},
        {"created_at": "2026-08-16T09:00:00.000001Z", "tokens": {"input": 0, "output": 0, "total": 0}},
    ],
)
def test_the_append_adapts_its_row_as_the_orm_does(db: None, fields: dict[str, Any]) -> None:
    """message_params' shortcuts (None as NULL, the bump's adapted time and thread id
    reused) give the parameters every field's get_db_prep_save gives, on this database."""
    now = timezone.now()
    created = at(fields.pop("created_at")) if "created_at" in fields else None
    given = {"tokens": None, "model": None, "latency_ms": None, "metadata": None, "idempotency_key": None, **fields}
    thread_id = uuid.uuid4()
    message = working._appended_message(thread_id, role="user", content="x", created_at=created or now, now=now, **given)
    bump = sql.bump_of(thread_id=thread_id, project_id=1, now=now, tokens=given["tokens"], created_at=created)

    by_column = {f.column: f for f in Message._meta.concrete_fields}
    orm = [by_column[c].get_db_prep_save(getattr(message, by_column[c].attname), connection) for c in sql.MESSAGE_COLUMNS]

    def comparable(params: list[Any]) -> list[Any]:  # psycopg's Jsonb wrapper has no __eq__
        return [getattr(p, "obj", p) for p in params]

    assert comparable(sql.message_params(message, connection, bump.adapted)) == comparable(orm)
    assert comparable(sql.message_params(message, connection)) == comparable(orm)


def test_message_ids_random_bits_are_never_shared_with_a_forked_child() -> None:
    """time_ordered_id reads os.urandom RANDOM_READ bytes at a time: a child forked with
    part of a read unused must not hand out the parent's next bits as its own."""
    sql.time_ordered_id()  # this thread now holds unread random bytes
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next bits, to the parent
        os.write(write, sql._random_10().to_bytes(10))
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = int.from_bytes(os.read(read, 10))
    os.close(read)
    assert child != sql._random_10()


def test_a_new_message_row_is_the_one_message_init_makes_with_or_without_init_receivers(db: None) -> None:
    now = timezone.now()
    values = dict(
        role="assistant", content="x", tokens={"input": 1, "output": 2, "total": 3}, model="m",
        latency_ms=4, metadata={"a": 1}, idempotency_key="k", created_at=now, now=now,
    )
    fast = working._appended_message(uuid.uuid4(), **values)  # type: ignore[arg-type]
    seen: list[Message] = []

    def heard(sender: type[Message], instance: Message, **kwargs: Any) -> None:
        seen.append(instance)

    post_init.connect(heard, sender=Message)
    try:
        slow = working._appended_message(fast.thread_id, **values)  # type: ignore[arg-type]
    finally:
        post_init.disconnect(heard, sender=Message)
    assert seen == [slow]
    slow.id = fast.id  # a new id each
    assert {k: v for k, v in vars(fast).items() if k != "_state"} == {k: v for k, v in vars(slow).items() if k != "_state"}
    assert (fast._state.adding, fast._state.db) == (slow._state.adding, slow._state.db) == (True, None)
    with pytest.raises(TypeError):
        working._new_message({"role": "user"})


def test_it_keeps_the_threads_latest_created_at_in_the_bump_with_and_without_microseconds(
    project: Project, clock: Clock
) -> None:
    """The UPDATE raises latest_created_at to the message's createdAt and returns it; a
    live append dated before it takes it. On SQLite both are text compared as text: a
    time without microseconds ("09:00:00") is below the same second's with them."""
    thread = working.thread_create(project=project, dataset="d")

    def append(created_at: str | None = None) -> str:
        done = working.message_append(
            thread=thread.pk, role="user", content="x",
            created_at=None if created_at is None else at(created_at),
        )
        stored = Message.objects.get(pk=done.message.id).created_at
        latest = Thread.objects.get(pk=thread.pk).latest_created_at
        assert stored == done.message.created_at == latest
        return stored.isoformat()

    clock.set("2026-08-16T09:00:00Z")
    imported = append("2026-08-16T09:00:00Z")
    clock.set("2026-08-16T08:59:59.999999Z")
    raised = append()
    clock.set("2026-08-16T09:00:00.5Z")
    later = append("2026-08-16T09:00:00.000001Z")
    clock.set("2026-08-16T09:00:01Z")
    live = append()

    assert [imported, raised, later, live] == [
        "2026-08-16T09:00:00+00:00",
        "2026-08-16T09:00:00+00:00",
        "2026-08-16T09:00:00.000001+00:00",
        "2026-08-16T09:00:01+00:00",
    ]


def test_migration_0025_backfills_the_latest_created_at_of_non_summary_messages(
    project: Project,
) -> None:
    out_of_order = working.thread_create(project=project, dataset="d")
    empty = working.thread_create(project=project, dataset="d")
    for seq, iso, summary in [
        (1, "2026-08-16T09:04:00.5Z", False),  # dated ahead by a client
        (2, "2026-08-16T09:00:01Z", False),  # the server's clock, before it (the defect)
        (3, "2026-08-16T09:10:00Z", True),  # a summary: dated by the run, not counted
    ]:
        Message.objects.create(
            thread=out_of_order, sequence_number=seq, role="system" if summary else "user",
            content="x", is_summary=summary, created_at=at(iso),
        )
    Thread.objects.filter(pk=out_of_order.pk).update(next_sequence=4)
    Thread.objects.update(latest_created_at=None)
    migration = importlib.import_module("memoryapp.migrations.0025_thread_latest_created_at")

    assert migration.backfill_latest_created_at(django_apps, None) == 1
    assert dict(Thread.objects.values_list("pk", "latest_created_at")) == {
        out_of_order.pk: at("2026-08-16T09:04:00.5Z"),
        empty.pk: None,
    }


def test_it_refuses_a_thread_of_another_project_without_touching_it(project: Project) -> None:
    other = Project.objects.create(slug="other", name="Other")
    thread = working.thread_create(project=other, dataset="d")

    assert sql.thread_bump(thread_id=thread.pk, project_id=project.pk, now=timezone.now(), tokens=None) is None
    assert sql.window_head(thread_id=thread.pk, project_id=project.pk) is None
    assert Thread.objects.get(pk=thread.pk).next_sequence == 1


@pytest.mark.parametrize(("ordinary", "folded"), [(10, 0), (10_000, 9_990)])
def test_it_prepares_in_two_statements_and_one_more_for_an_uncached_key(
    api: Api, project: Project, ordinary: int, folded: int
) -> None:
    thread = bulk_thread(project, ordinary=ordinary, folded=folded, threshold=30)
    ApiKey.objects.update(last_used=timezone.now())  # the key's last_used write is not prepare's
    key_cache.clear()
    url = f"{BASE}/threads/{thread.pk}/prepare"

    cold = statements(lambda: api.post(url, {"messageLimit": 30}))
    warm = statements(lambda: api.post(url, {"messageLimit": 30}))

    assert cold == ["SELECT", "SELECT", "SELECT"]  # the key, the thread + summary, the tail
    assert warm == ["SELECT", "SELECT"]


def test_it_appends_over_the_api_in_two_statements_with_a_cached_key(
    api: Api, thread_id: str
) -> None:
    api.append(thread_id, "warm the key cache")

    done = statements(lambda: api.append(thread_id, "hi"))

    assert done == ["SAVEPOINT", "UPDATE", "INSERT", "RELEASE"]


def test_it_forgets_a_revoked_key_at_once_in_this_process(api: Api, thread_id: str) -> None:
    assert api.append(thread_id, "cached").status_code == 201
    key = ApiKey.objects.get()

    key.revoke()

    assert api.append(thread_id, "refused").status_code == 401


def test_it_builds_no_event_for_a_thread_nobody_watches(
    project: Project, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an event was built or sent for nobody")

    monkeypatch.setattr(events.serializers, "message_to_dict", fail)
    monkeypatch.setattr(events, "async_to_sync", fail)
    thread = working.thread_create(project=project, dataset="d")

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        result = working.message_append(thread=thread, role="user", content="hi")

    assert result.message.sequence_number == 1
    assert len(callbacks) == 1  # the broadcast ran, and sent nothing


def test_it_lists_a_projects_distinct_datasets_sorted_and_cut_at_the_limit(
    project: Project,
) -> None:
    other = Project.objects.create(slug="other", name="Other")
    for dataset in ["zeta", "alpha", "alpha", "beta", "mu"]:
        working.thread_create(project=project, dataset=dataset)
    working.thread_create(project=other, dataset="aardvark")

    assert sql.project_datasets(project_id=project.pk, limit=200) == ["alpha", "beta", "mu", "zeta"]
    assert sql.project_datasets(project_id=project.pk, limit=2) == ["alpha", "beta"]
    assert sql.project_datasets(project_id=other.pk + 1, limit=200) == []


sqlite_only = pytest.mark.skipif(connection.vendor != "sqlite", reason="a SQLite mechanism")


def _lock_is_free(suffix: str = ".append-lock") -> bool:
    """Whether writers_queue's file lock (or its turnstile, ``.append-turnstile``) could be
    taken right now (from another open file)."""
    fd = os.open(str(connection.settings_dict["NAME"]) + suffix, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_it_holds_the_turnstile_and_the_lock_while_a_writer_works() -> None:
    # Waiters queue on the turnstile, so no waiter is woken while a holder works.
    with sql.writers_queue():
        held = (_lock_is_free(".append-turnstile"), _lock_is_free())
    assert held == (False, False)
    assert (_lock_is_free(".append-turnstile"), _lock_is_free()) == (True, True)


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_it_checkpoints_the_wal_every_batch_of_appends_after_leaving_the_writers_queue(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sql, "WAL_CHECKPOINT_EVERY", 3)
    project = Project.objects.create(slug="acme", name="Acme")
    thread = working.thread_create(project=project, dataset="d")
    checkpoints: list[tuple[int, bool, bool]] = []  # (rows so far, lock free, in a transaction)

    def watch(execute: Any, sql_text: str, params: Any, many: bool, context: Any) -> Any:
        if sql_text.startswith("PRAGMA wal_checkpoint"):
            rows = Message.objects.count()
            checkpoints.append((rows, _lock_is_free(), connection.in_atomic_block))
        return execute(sql_text, params, many, context)

    with connection.execute_wrapper(watch):
        for i in range(7):
            working.message_append(thread=thread, role="user", content=f"m{i}")

    # Rows 3 and 6 (rowids of a fresh table), each after its commit, with the lock free.
    assert checkpoints == [(3, True, False), (6, True, False)]
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        assert cursor.fetchone()[0] == 4000  # SQLite's own stays as the net (settings)


@contextmanager
def sqlite_trace() -> Iterator[list[str]]:
    """The statements SQLite itself runs inside the block on this thread's connection,
    each as its first word (``BEGIN IMMEDIATE`` whole), in the list yielded (filled in
    when the block ends, also when it raises): what the append's raw transaction sends
    past Django's cursor, and Django's own statements too. SQLite's trace reports a
    statement again at the start of each trigger it fires (the message INSERT's
    search-queue trigger), so a repeat right after itself counts once."""
    traced: list[str] = []
    out: list[str] = []
    connection.ensure_connection()
    raw = connection.connection
    raw.set_trace_callback(traced.append)
    try:
        yield out
    finally:
        raw.set_trace_callback(None)
        done = [text for i, text in enumerate(traced) if i == 0 or text != traced[i - 1]]
        out[:] = [t if t.startswith("BEGIN") else t.split()[0].upper() for t in done]


def sqlite_statements(work: Any) -> list[str]:
    with sqlite_trace() as done:
        work()
    return done


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_it_appends_on_sqlite_in_one_raw_transaction_of_four_statements_in_the_queue() -> None:
    project = Project.objects.create(slug="acme", name="Acme")
    thread = working.thread_create(project=project, dataset="d")
    lock_free: list[bool] = []
    raw = connection.connection
    raw.set_trace_callback(lambda text: lock_free.append(_lock_is_free()))
    working.message_append(thread=thread.pk, project=project, role="user", content="warm")
    raw.set_trace_callback(None)

    done = sqlite_statements(
        lambda: working.message_append(thread=thread.pk, project=project, role="user", content="hi")
    )

    # Not Django's atomic block (no SAVEPOINT, no Django cursor): BEGIN IMMEDIATE, the
    # thread UPDATE ... RETURNING, the INSERT, COMMIT, all inside writers_queue.
    assert done == ["BEGIN IMMEDIATE", "UPDATE", "INSERT", "COMMIT"]
    assert lock_free and not any(lock_free)
    assert not raw.in_transaction
    row = Message.objects.get(thread=thread, sequence_number=2)
    assert (row.role, row.content) == ("user", "hi")
    fresh = Thread.objects.get(pk=thread.pk)
    assert (fresh.next_sequence, fresh.uncompacted_count) == (3, 2)


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_it_rolls_the_raw_transaction_back_on_a_replay_a_refused_time_and_a_missing_thread() -> None:
    project = Project.objects.create(slug="acme", name="Acme")
    thread = working.thread_create(project=project, dataset="d")
    raw = connection.connection

    first = sqlite_statements(
        lambda: working.message_append(thread=thread, role="user", content="hi", idempotency_key="k")
    )
    replay = sqlite_statements(
        lambda: working.message_append(thread=thread, role="user", content="hi", idempotency_key="k")
    )
    with pytest.raises(IdempotencyConflict):
        working.message_append(thread=thread, role="user", content="other", idempotency_key="k")
    stamped = sqlite_statements(
        lambda: working.message_append(
            thread=thread, role="user", content="later", created_at=timezone.now()
        )
    )
    with sqlite_trace() as refused, pytest.raises(InvalidInput):
        working.message_append(
            thread=thread, role="user", content="early", created_at=timezone.now() - timedelta(days=1)
        )
    with pytest.raises(ThreadNotFound):
        working.message_append(thread=uuid.uuid4(), role="user", content="nobody")

    assert first == ["BEGIN IMMEDIATE", "UPDATE", "SELECT", "INSERT", "COMMIT"]
    # The replay rolls its bump back, then reads the first row (through Django).
    assert replay == ["BEGIN IMMEDIATE", "UPDATE", "SELECT", "ROLLBACK", "SELECT"]
    # createdAt is checked against the thread's latest createdAt, which the UPDATE itself
    # returns under the lock: no statement of its own.
    assert stamped == ["BEGIN IMMEDIATE", "UPDATE", "INSERT", "COMMIT"]
    assert refused == ["BEGIN IMMEDIATE", "UPDATE", "ROLLBACK"]
    assert not raw.in_transaction
    fresh = Thread.objects.get(pk=thread.pk)
    assert (fresh.next_sequence, fresh.uncompacted_count) == (3, 2)
    assert list(
        Message.objects.filter(thread=thread).order_by("sequence_number").values_list("content", flat=True)
    ) == ["hi", "later"]


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_it_raises_a_database_error_of_the_raw_transaction_as_djangos_and_rolls_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = Project.objects.create(slug="acme", name="Acme")
    thread = working.thread_create(project=project, dataset="d")
    working.message_append(thread=thread, role="user", content="one")
    # A second row numbered 1: the unique (thread, sequence_number) index refuses it.
    real_insert = sql.message_insert

    def renumbered(params: list[Any], *, sequence: int, db: sql.Writer = sql.DJANGO) -> sql.Upkeep:
        return real_insert(params, sequence=1, db=db)

    monkeypatch.setattr(sql, "message_insert", renumbered)

    with pytest.raises(IdempotencyConflict) as caught:  # the append's IntegrityError handler
        working.message_append(thread=thread, role="user", content="two")

    assert isinstance(caught.value.__cause__, IntegrityError)
    assert not connection.connection.in_transaction
    fresh = Thread.objects.get(pk=thread.pk)
    assert (fresh.next_sequence, fresh.uncompacted_count) == (2, 1)


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_it_answers_503_and_stores_nothing_when_sqlite_fails_in_the_raw_transaction(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = api
    thread_id = client.create_thread()["threadId"]
    assert client.append(thread_id, "first").status_code == 201

    def fails(self: sql.SqliteWriter, text: str, params: list[Any]) -> int | None:
        raise sqlite3.OperationalError("disk I/O error")

    with monkeypatch.context() as patch:
        patch.setattr(sql.SqliteWriter, "insert", fails)
        resp = client.append(thread_id, "second")

    assert (resp.status_code, resp.json()) == (503, {"error": "Database unavailable"})
    assert not connection.connection.in_transaction
    assert Thread.objects.get(pk=thread_id).next_sequence == 2
    assert client.append(thread_id, "second").json()["sequenceNumber"] == 2


@sqlite_only
def test_it_skips_the_checkpoint_inside_a_callers_transaction(project: Project) -> None:
    # A test runs in a transaction: a checkpoint there would fail, so it is left to later.
    done = statements(sql.wal_checkpoint)

    assert done == []


@sqlite_only
def test_it_rewrites_placeholders_as_django_does_once_per_query_text(db: None) -> None:
    query = "SELECT %s, '%%s', '100%%' FROM t WHERE a = %s AND b LIKE '%%x'"
    django_cursor = django_sqlite.SQLiteCursorWrapper(sqlite3.connect(":memory:"))

    django_converted = django_cursor.convert_query(query)  # type: ignore[attr-defined]

    assert sqlite_backend.qmark(query) == django_converted
    assert sqlite_backend.qmark(query) == "SELECT ?, '%s', '100%' FROM t WHERE a = ? AND b LIKE '%x'"
    with connection.cursor() as cursor:
        assert isinstance(cursor.cursor, sqlite_backend.SQLiteCursorWrapper)
        cursor.execute("SELECT %s || '%%', %s", ["a", 2])
        assert cursor.fetchone() == ("a%", 2)
    hits = sqlite_backend.qmark.cache_info().hits
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s || '%%', %s", ["b", 3])
        assert cursor.fetchone() == ("b%", 3)
    assert sqlite_backend.qmark.cache_info().hits == hits + 1


def test_migration_0026_backfills_the_first_created_at_of_non_summary_messages(
    project: Project,
) -> None:
    imported = working.thread_create(project=project, dataset="d")
    empty = working.thread_create(project=project, dataset="d")
    for seq, iso, summary in [
        (1, "2023-05-08T13:56:00Z", False),  # an import's real time
        (2, "2023-05-08T14:30:00Z", False),
        (3, "2026-08-16T09:10:00Z", True),  # a summary: dated by the run, not counted
    ]:
        Message.objects.create(
            thread=imported, sequence_number=seq, role="system" if summary else "user",
            content="x", is_summary=summary, created_at=at(iso),
        )
    Thread.objects.filter(pk=imported.pk).update(next_sequence=4, first_message_at=at("2026-08-16T09:00:00Z"))
    migration = importlib.import_module("memoryapp.migrations.0026_thread_first_message_created_at")

    assert migration.backfill_first_message_at(django_apps, None) == 1
    assert dict(Thread.objects.values_list("pk", "first_message_at")) == {
        imported.pk: at("2023-05-08T13:56:00Z"),
        empty.pk: None,
    }

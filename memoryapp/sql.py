"""Raw SQL for the working-memory hot paths: append and prepare (spec 002; issue 11).

Through the ORM an append cost five statements and a prepare's tail more time building
and compiling its query than SQLite spent running it (docs/performance.md). These are
the few statements those paths need, written once for SQLite (>= 3.35, for RETURNING)
and PostgreSQL alike, reading and writing only the columns the callers use. Values pass
through the model fields' own ``get_db_prep_*`` so every database stores what the ORM
would (UUIDs as hex on SQLite, JSON, datetimes). memoryapp.working owns the transactions.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from memoryapp.models import Agent, Message, Thread, ThreadTag
from memoryapp.results import MessageView, ThreadCounters, ThreadView
from memoryapp.search_words import SQLITE_FUNCTION
from memoryapp.sqlite_backend.base import qmark

# The columns an append writes, in the INSERT's order.
MESSAGE_COLUMNS = (
    "id",
    "thread_id",
    "sequence_number",
    "role",
    "content",
    "tokens_input",
    "tokens_output",
    "tokens_total",
    "model",
    "latency_ms",
    "metadata",
    "is_summary",
    "covers_from_sequence",
    "covers_to_sequence",
    "compacted_at",
    "idempotency_key",
    "triggered_compaction",
    "created_at",
)


@dataclass(frozen=True, slots=True)
class Counters:
    """The thread's counters right after an append took its number.

    ``sequence`` is the number this append got; ``uncompacted`` the un-compacted ordinary
    messages including it; ``threshold`` the autoCompactThreshold (None: disabled);
    ``has_agent`` whether the thread belongs to an agent (spec 004: it compacts by the
    agent's token budget instead); ``latest`` the thread's latest non-summary createdAt
    with this append's counted in (Thread.latest_created_at, aware UTC): the greater of
    the one the append asked for and the thread's latest before it (None only when the
    append asked for none, as tests' bare bumps do).
    """

    sequence: int
    uncompacted: int
    threshold: int | None
    has_agent: bool = False
    latest: datetime | None = None


@dataclass(frozen=True, slots=True)
class WindowHead:
    """What prepare needs of the thread row and its active summary (one read)."""

    thread_id: uuid.UUID
    dataset: str
    next_sequence: int
    uncompacted_count: int
    threshold: int | None
    agent_id: int | None
    summary_id: uuid.UUID | None
    summary_from: int | None
    summary_to: int | None
    summary_content: str | None


_lock_files = threading.local()


class WritersBusy(Exception):
    """An append inside ``no_waiting`` found the write lock taken (another appender in
    the queue, or any writer holding SQLite's lock): nothing was written, and the caller
    runs it again where it may wait (memoryapp.fastpath hands it to a pool thread)."""


_no_wait = threading.local()


@contextmanager
def no_waiting(wrapper: BaseDatabaseWrapper | None = None) -> Iterator[list[Callable[[], object]]]:
    """Within it, this thread's appends never wait for a lock, and their upkeep is left
    to the caller (SQLite file databases; issue 11's inline fast path).

    memoryapp.fastpath runs an append on the server's event loop, which must never block:
    writers_queue's flocks are tried without waiting and the IMMEDIATE transaction's
    BEGIN with SQLite's busy timeout at 0 on this thread's connection, so a taken lock
    raises WritersBusy before anything is written. The connection also never runs
    SQLite's automatic checkpoint (two fsyncs inside a COMMIT): the pool threads'
    connections keep it as the net. What message_append runs after its commit (the
    search-index catch-up, the WAL checkpoint) is appended to the list this yields
    instead of being run (working.message_append's ``_after_commit``), for the caller to
    run where waiting is fine. Not reentrant; settings stay on the connection, which
    only this thread uses. ``wrapper``: the default connection, looked up when not given.
    """
    wrapper = connections[DEFAULT_DB_ALIAS] if wrapper is None else wrapper
    wrapper.ensure_connection()
    raw = wrapper.connection
    if getattr(_no_wait, "connection", None) is not raw:
        with wrapper.wrap_database_errors:
            raw.execute("PRAGMA busy_timeout=0")
            raw.execute("PRAGMA wal_autocheckpoint=0")
        _no_wait.connection = raw
    deferred: list[Callable[[], object]] = []
    _no_wait.deferred = deferred
    try:
        yield deferred
    finally:
        _no_wait.deferred = None


def deferred_upkeep() -> list[Callable[[], object]] | None:
    """The list no_waiting collects upkeep in, when this thread is inside it; else None."""
    deferred: list[Callable[[], object]] | None = getattr(_no_wait, "deferred", None)
    return deferred


def _flock(fd: int, wait: bool) -> None:
    """Take the exclusive flock on ``fd``; WritersBusy at once if taken and not ``wait``."""
    if wait:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise WritersBusy() from None


@contextmanager
def writers_queue(wrapper: BaseDatabaseWrapper | None = None) -> Iterator[None]:
    """Queue this thread behind the other appenders of the database (SQLite only).

    SQLite makes a writer that finds the database locked sleep and retry (1, 2, 5, 10 ms
    and longer), so with several processes appending at once most of the time went to
    sleeping while the lock was already free again (213 appends/s from 4 processes).
    Exclusive flocks on files beside the database queue appenders in the kernel instead,
    each woken the moment the one before it is done; the IMMEDIATE transaction inside
    still guards correctness. Each thread has its own open files, so threads of one
    process queue as processes do. PostgreSQL queues on the thread row's lock by itself:
    nothing to do there, nor for an in-memory database.

    Two flocks, taken in this order and both held to the end: a turnstile, then the lock.
    Linux wakes every waiter of a flock when it changes hands (each retries, and all but
    one block again), so with the lock alone the other appenders woke at the start of
    every holder's transaction and took the CPU from it: on 2 cores a holder lost its
    core for milliseconds in 1 append of 10 (docs/performance.md). Waiters now queue on the
    turnstile, which changes hands only as a holder leaves: nobody wakes while one works.
    Inside no_waiting a taken flock raises WritersBusy instead of waiting. ``wrapper``:
    the default connection, looked up when not given (once: the proxy
    django.db.connection looks it up again for each use).
    """
    wrapper = connections[DEFAULT_DB_ALIAS] if wrapper is None else wrapper
    name = str(wrapper.settings_dict["NAME"])
    if wrapper.vendor != "sqlite" or name == ":memory:" or name.startswith("file:"):
        yield
        return
    files: dict[str, tuple[int, int]] = _lock_files.__dict__.setdefault("files", {})
    fds = files.get(name)
    if fds is None:
        fds = files[name] = (
            os.open(name + ".append-turnstile", os.O_RDWR | os.O_CREAT, 0o600),
            os.open(name + ".append-lock", os.O_RDWR | os.O_CREAT, 0o600),
        )
    turnstile, lock = fds
    wait = deferred_upkeep() is None
    _flock(turnstile, wait)
    try:
        _flock(lock, wait)
    except BaseException:
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        raise
    try:
        yield
    finally:
        fcntl.flock(turnstile, fcntl.LOCK_UN)  # the next one comes up to the lock ...
        fcntl.flock(lock, fcntl.LOCK_UN)  # ... and has it


class DjangoWriter:
    """Runs an append's statements through Django's cursor: on PostgreSQL, and on SQLite
    inside a caller's transaction (append_transaction)."""

    __slots__ = ()

    @property
    def vendor(self) -> str:
        return str(connection.vendor)

    def one(self, sql: str, params: list[Any]) -> tuple[Any, ...] | None:
        """The first row ``sql`` returns, or None."""
        return _fetch_one(sql, params)

    def insert(self, sql: str, params: list[Any]) -> int | None:
        """Run the INSERT ``sql``; the new row's rowid on SQLite, else None."""
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.lastrowid if connection.vendor == "sqlite" else None


class SqliteWriter:
    """Runs an append's statements on the sqlite3 connection itself, as
    append_transaction's raw SQLite transaction does (the ``%s`` -> ``?`` rewrite cached
    as in memoryapp.sqlite_backend, values adapted and converted by the same sqlite3
    connection Django's cursor uses, so every value reads and stores the same)."""

    __slots__ = ("raw",)
    vendor = "sqlite"

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw

    def one(self, sql: str, params: list[Any]) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.raw.execute(qmark(sql), params).fetchone()
        return row

    def insert(self, sql: str, params: list[Any]) -> int | None:
        return self.raw.execute(qmark(sql), params).lastrowid


Writer = DjangoWriter | SqliteWriter
DJANGO = DjangoWriter()


@contextmanager
def append_transaction(wrapper: BaseDatabaseWrapper | None = None) -> Iterator[Writer]:
    """The write transaction of an append, in writers_queue; yields the Writer its
    statements run on (thread_bump, message_id_by_key, message_insert).

    On SQLite outside any caller's transaction (every /v1 append) it is BEGIN IMMEDIATE
    ... COMMIT on the sqlite3 connection itself, the statements too: Django's atomic block
    and cursor wrappers cost ~45 us per append, about half of what the transaction takes,
    and every other appender waits in the queue meanwhile (issue 11, 4 writers). An
    exception rolls it back (ROLLBACK) and propagates, database errors as Django's (the
    connection's own wrap_database_errors). Elsewhere (PostgreSQL, or inside a caller's
    atomic block, where only a savepoint can nest) it is ``transaction.atomic()``.
    ``wrapper``: the default connection, looked up when not given.
    """
    wrapper = connections[DEFAULT_DB_ALIAS] if wrapper is None else wrapper
    if wrapper.vendor != "sqlite" or wrapper.in_atomic_block:
        with writers_queue(wrapper), transaction.atomic():
            yield DJANGO
        return
    wrapper.ensure_connection()
    raw = wrapper.connection
    with writers_queue(wrapper), wrapper.wrap_database_errors:
        _begin_immediate(raw)
        try:
            yield SqliteWriter(raw)
            raw.execute("COMMIT")
        except BaseException:
            if raw.in_transaction:
                try:
                    raw.execute("ROLLBACK")
                except sqlite3.Error:
                    wrapper.close()  # a connection that cannot roll back is not reused
            raise


def _begin_immediate(raw: sqlite3.Connection) -> None:
    """BEGIN IMMEDIATE on ``raw``; inside no_waiting, WritersBusy if SQLite's write lock
    is taken (the busy timeout is 0 there, so SQLite says so at once)."""
    try:
        raw.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if deferred_upkeep() is not None and exc.sqlite_errorcode & 0xFF in _BUSY_CODES:
            raise WritersBusy() from exc
        raise


# Primary result codes (an extended code's low byte): the lock is taken, or a
# shared-cache database's table is locked.
_BUSY_CODES = frozenset((sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED))


def time_ordered_id(at: datetime | None = None) -> uuid.UUID:
    """A new message id: a UUID version 7 (RFC 9562), the Unix time in milliseconds in
    its first 48 bits (``at``'s, else the clock's) and 74 random bits after it.

    Ids taken in time order sort in that order, so a new message's entry in the primary
    key's index lands on the index's last page, which the appends before it just wrote,
    not on a random one (a random UUID's did: one more page to read cold and write per
    append, and half-full pages from random splits). Still a UUID to every client.
    The random bits are the operating system's (os.urandom, as uuid.uuid4's), read
    RANDOM_READ bytes at a time (_random_10).
    """
    ms = time.time_ns() // 1_000_000 if at is None else int(at.timestamp() * 1000)
    value = ms << 80 | _random_10()
    return uuid.UUID(int=value & ~(0xF << 76 | 0x3 << 62) | 0x7 << 76 | 0x2 << 62)


# os.urandom is a system call: once per id it was 4-5% of an append served over HTTP
# (issue 11). Each thread reads this many bytes at a time and takes 10 per id; a forked
# child drops what its parent read (_forget_random), so no two processes share bytes.
RANDOM_READ = 4000


class _Random(threading.local):
    """This thread's unread random bytes: ``pool[at:]``."""

    pool = b""
    at = 0


_random = _Random()


def _random_10() -> int:
    """10 bytes of os.urandom's, never handed out twice (per thread; see RANDOM_READ), as
    an int."""
    mine = _random
    at = mine.at
    if at + 10 > len(mine.pool):
        mine.pool, at = os.urandom(RANDOM_READ), 0
    mine.at = at + 10
    return int.from_bytes(mine.pool[at : at + 10])


def _forget_random() -> None:
    _random.pool, _random.at = b"", 0


os.register_at_fork(after_in_child=_forget_random)


def id_time(value: uuid.UUID) -> datetime | None:
    """The time a time_ordered_id carries, to the millisecond (aware, UTC); None for an
    id of another version (rows from before ids were time-ordered)."""
    if value.version != 7:
        return None
    return datetime.fromtimestamp((value.int >> 80) / 1000, tz=UTC)


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _db_uuid(value: uuid.UUID, db: BaseDatabaseWrapper | None = None) -> Any:
    """``value`` as the thread id column stores it, on ``db`` (the default connection)."""
    return Thread._meta.pk.get_db_prep_value(value, connection if db is None else db)


# The hot reads below look the default connection up once (``connections[...]``) and use
# that object: ``django.db.connection`` looks it up in its thread-local store again for
# each attribute read of it, ~7 k instructions each (issue 11).


def _fetch_one(sql: str, params: list[Any], db: BaseDatabaseWrapper | None = None) -> tuple[Any, ...] | None:
    """The first row ``sql`` returns with ``params`` on ``db`` (the default connection), or None."""
    with (connection if db is None else db).cursor() as cursor:
        cursor.execute(sql, params)
        row: tuple[Any, ...] | None = cursor.fetchone()
    return row


def _scoped_row(
    build_sql: Callable[[str, bool], str],
    params: list[Any],
    project_id: int | None,
    db: BaseDatabaseWrapper | None = None,
) -> tuple[Any, ...] | None:
    """The first row of ``build_sql(vendor, scoped)`` on ``db`` (the default connection):
    scoped to project ``project_id`` (its last parameter) when one is given."""
    db = connections[DEFAULT_DB_ALIAS] if db is None else db
    scoped = project_id is not None
    return _fetch_one(build_sql(db.vendor, scoped), [*params, project_id] if scoped else params, db)


@cache
def _bump_sql(vendor: str, scoped: bool) -> str:
    t = _q(Thread._meta.db_table)
    scope = f" AND {_q('project_id')} = %s" if scoped else ""
    return (
        f"UPDATE {t} SET next_sequence = next_sequence + 1, "
        "uncompacted_count = uncompacted_count + 1, "
        # last_message_at is the append's time (idle detection: the thread's real
        # silence), first_message_at the first message's createdAt (sessionDuration).
        "last_activity = %s, last_message_at = %s, "
        "first_message_at = COALESCE(first_message_at, %s), "
        # max(the thread's latest createdAt, this message's), NULL the smallest; on SQLite
        # both are Django's text (YYYY-MM-DD HH:MM:SS[.ffffff], UTC), whose order as text
        # is the times' order (a value without microseconds is a prefix of the same second's).
        "latest_created_at = CASE WHEN latest_created_at IS NULL OR latest_created_at < %s "
        "THEN %s ELSE latest_created_at END, "
        "tokens_input = tokens_input + %s, tokens_output = tokens_output + %s, "
        "tokens_total = tokens_total + %s, messages_with_tokens = messages_with_tokens + %s "
        f"WHERE id = %s{scope} "
        "RETURNING next_sequence, uncompacted_count, auto_compact_threshold, agent_id, "
        "latest_created_at"
    )


@dataclass(frozen=True, slots=True)
class Bump:
    """thread_bump's statement and parameters, built before the writers queue is joined
    (bump_of), so the lock is held for the statements alone. ``adapted``: the values it
    adapted for the database, as (value, stored form) pairs, which message_params reuses
    for the same objects (the append's time, the thread id)."""

    scoped: bool
    params: list[Any]
    adapted: tuple[tuple[Any, Any], ...] = ()


def bump_of(
    *,
    thread_id: uuid.UUID,
    project_id: int | None,
    now: datetime,
    tokens: dict[str, int] | None,
    created_at: datetime | None = None,
    db: BaseDatabaseWrapper | None = None,
) -> Bump:
    """The Bump of one append to thread ``thread_id`` (see thread_bump); ``created_at``
    is the message's createdAt when it is not ``now`` (a client's). ``db``: the default
    connection, looked up here when not given."""
    db = connections[DEFAULT_DB_ALIAS] if db is None else db
    at = db.ops.adapt_datetimefield_value(now)
    created = at if created_at is None else db.ops.adapt_datetimefield_value(created_at)
    t_in, t_out, t_total, counted = (
        (tokens["input"], tokens["output"], tokens["total"], 1) if tokens else (0, 0, 0, 0)
    )
    thread = _db_uuid(thread_id, db)
    params = [at, at, created, created, created, t_in, t_out, t_total, counted, thread]
    adapted = ((now, at), (thread_id, thread)) if created_at is None else ((now, at), (created_at, created), (thread_id, thread))
    scoped = project_id is not None
    return Bump(scoped=scoped, params=[*params, project_id] if scoped else params, adapted=adapted)


def thread_bump(
    *,
    thread_id: uuid.UUID,
    project_id: int | None,
    now: datetime,
    tokens: dict[str, int] | None,
    created_at: datetime | None = None,
    db: Writer = DJANGO,
) -> Counters | None:
    """Take the thread's next sequence number and add one message to its counters.

    One ``UPDATE ... RETURNING``: on PostgreSQL it takes the row lock itself, so
    concurrent appends queue on it until this transaction ends; on SQLite the IMMEDIATE
    transaction already holds the write lock. Also sets the activity times, adds
    ``tokens`` (``{"input", "output", "total"}`` or None) to the totals and raises the
    thread's latest createdAt to the message's (``created_at``, else ``now``), returning
    the result as Counters.latest. Returns None when
    no thread ``thread_id`` exists (in project ``project_id``, when given). Must run
    inside the caller's transaction (append_transaction's, on its Writer ``db``).
    """
    bump = bump_of(
        thread_id=thread_id, project_id=project_id, now=now, tokens=tokens, created_at=created_at
    )
    return thread_bump_run(bump, db=db)


def thread_bump_run(bump: Bump, *, db: Writer = DJANGO) -> Counters | None:
    """thread_bump with its Bump built beforehand (bump_of)."""
    row = db.one(_bump_sql(db.vendor, bump.scoped), bump.params)
    if row is None:
        return None
    return Counters(
        sequence=int(row[0]) - 1,
        uncompacted=int(row[1]),
        threshold=row[2],
        has_agent=row[3] is not None,
        latest=_aware(row[4]),
    )


@cache
def _insert_sql(vendor: str) -> str:
    columns = ", ".join(_q(c) for c in MESSAGE_COLUMNS)
    marks = ", ".join(["%s"] * len(MESSAGE_COLUMNS))
    return f"INSERT INTO {_q(Message._meta.db_table)} ({columns}) VALUES ({marks})"


# Field types whose stored value is the attribute itself (validated before it gets here):
# the ORM's get_db_prep_save would only re-cast them. UUIDs, JSON and datetimes are
# adapted by their fields, as the ORM does, per database.
_PLAIN_FIELDS = (models.IntegerField, models.CharField, models.TextField, models.BooleanField)


@cache
def _fields() -> list[tuple[str, Any]]:
    by_column = {f.column: f for f in Message._meta.concrete_fields}
    fields = [by_column[c] for c in MESSAGE_COLUMNS]
    return [(f.attname, None if isinstance(f, _PLAIN_FIELDS) else f) for f in fields]


def message_params(
    message: Message,
    db: BaseDatabaseWrapper | None = None,
    adapted: tuple[tuple[Any, Any], ...] = (),
) -> list[Any]:
    """The INSERT's parameters for ``message``, as the ORM would adapt them.

    Built before the append's transaction starts, so the thread's lock is held only for
    the statements themselves; ``sequence_number`` is filled in by message_insert.
    The fields are given the default connection itself (``db``, looked up here when not
    given): ``django.db.connection`` would look it up in its thread-local store again for
    each attribute a field reads of it. Only what the ORM would change goes through the
    field (issue 11: the field's chain of calls was a tenth of an append): None is NULL
    for every field here, as the ORM stores it; a value that is one of ``adapted``'s
    (value, stored form) pairs (Bump.adapted: the same datetime or UUID object, adapted
    by the same connection) takes that stored form.
    """
    db = connections[DEFAULT_DB_ALIAS] if db is None else db
    values = message.__dict__
    params = []
    for attname, field in _fields():
        value = values[attname]
        if field is not None and value is not None:
            value = _adapted(value, field, db, adapted)
        params.append(value)
    return params


def _adapted(value: Any, field: models.Field[Any, Any], db: BaseDatabaseWrapper, known: tuple[tuple[Any, Any], ...]) -> Any:
    for given, stored in known:
        if given is value:
            return stored
    return field.get_db_prep_save(value, db)


_SEQUENCE_AT = MESSAGE_COLUMNS.index("sequence_number")
_CREATED_AT = MESSAGE_COLUMNS.index("created_at")


def message_params_created_at(params: list[Any], created_at: datetime) -> None:
    """Set the createdAt of ``params`` (message_params') to ``created_at``, adapted as
    message_params adapts it."""
    field = Message._meta.get_field("created_at")
    params[_CREATED_AT] = field.get_db_prep_save(created_at, connection)


@dataclass(frozen=True, slots=True)
class Upkeep:
    """What an append leaves for after its commit, outside the writers queue (SQLite).

    ``index``: run search_index_catch_up (every FTS_BATCH-th row); ``checkpoint``: run
    wal_checkpoint (every WAL_CHECKPOINT_EVERY-th row). Both fall on rows by rowid, so
    of all the appends of every process exactly one in that many does each.
    """

    index: bool = False
    checkpoint: bool = False


NO_UPKEEP = Upkeep()


def message_insert(params: list[Any], *, sequence: int, db: Writer = DJANGO) -> Upkeep:
    """INSERT one message row (params from message_params) numbered ``sequence``.

    Returns what the caller should run once its transaction has committed and it left
    the writers queue (Upkeep; nothing on PostgreSQL).
    """
    params[_SEQUENCE_AT] = sequence
    rowid = db.insert(_insert_sql(db.vendor), params)
    if not rowid:
        return NO_UPKEEP
    return Upkeep(index=rowid % FTS_BATCH == 0, checkpoint=rowid % WAL_CHECKPOINT_EVERY == 0)


# SQLite copies its write-ahead log into the database file (a checkpoint: two fsyncs,
# 8-15 ms on this machine) inside the COMMIT that takes the log past
# ``wal_autocheckpoint`` pages. Inside an append that COMMIT runs in the writers queue,
# so every other appender waited for the checkpoint too (at SQLite's default of 1,000
# pages, one every ~160 appends: ~90 us of everyone's time per append). An append runs a
# PASSIVE one instead after leaving the queue, every WAL_CHECKPOINT_EVERY rows: about 5
# pages per append (the row, its 3 indexes, the thread row; 6 with 0015's search queue,
# which 0022 replaced by a mark), so ~640-770 pages. SQLite's own (settings.SQLITE_WAL_AUTOCHECKPOINT, 4,000 pages) stays as the net
# for other writes and for the frames appends wrote while a passive one ran.
WAL_CHECKPOINT_EVERY = 128


def wal_checkpoint() -> None:
    """Copy the write-ahead log into the database file without blocking anyone (SQLite).

    ``PRAGMA wal_checkpoint(PASSIVE)``: writers keep appending meanwhile and readers keep
    reading; it copies what no reader still needs. Call it outside any transaction and
    outside writers_queue (message_append does, every WAL_CHECKPOINT_EVERY rows); does
    nothing on PostgreSQL or inside a transaction.
    """
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")


# SQLite's full-text index of messages (migrations 0015, 0022): a message whose rowid is
# above FTS_MARK's ``indexed_to`` is not indexed yet; search_index_catch_up indexes those.
# An append runs it every FTS_BATCH rows, so at most about that many rows wait when
# nobody recalls. Each row is indexed as memoryapp.search_words reads it (migration 0021).
FTS_TABLE = "memoryapp_message_fts"
FTS_MARK = "memoryapp_message_fts_mark"
FTS_BATCH = 256


@cache
def _unindexed_sql(what: str) -> str:
    m = _q(Message._meta.db_table)
    return f"SELECT {what} FROM {m} WHERE rowid > (SELECT indexed_to FROM {FTS_MARK})"


def search_index_backlog() -> int:
    """How many messages wait for SQLite's full-text index (0 on PostgreSQL)."""
    if connection.vendor != "sqlite":
        return 0
    row = _fetch_one(_unindexed_sql("count(*)"), [])
    return int(row[0]) if row else 0


def search_index_catch_up() -> int:
    """Index the messages above FTS_MARK's mark for full-text search (SQLite only).

    Recall calls it before searching, so every message whose append returned before the
    recall began is searchable; an append calls it after commit every FTS_BATCH rows.
    One read (a seek past the mark) when nothing waits; otherwise one write transaction
    (queued behind appenders as they are) indexing every waiting row in one statement and
    moving the mark to the largest rowid. Returns how many rows were indexed (0 on
    PostgreSQL, whose stored ``search_vector`` is computed by the insert itself).
    """
    if connection.vendor != "sqlite":
        return 0
    if _fetch_one(f"SELECT EXISTS ({_unindexed_sql('1')})", []) == (0,):
        return 0
    # Inside a caller's transaction the SQLite write lock may already be held: queueing
    # behind the appenders' file lock then could wait on a writer that waits on us.
    queue = contextlib.nullcontext() if connection.in_atomic_block else writers_queue()
    with queue, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {FTS_TABLE}(rowid, content) "
            f"{_unindexed_sql(f'rowid, {SQLITE_FUNCTION}(content)')}"
        )
        indexed = int(cursor.rowcount)
        search_index_mark_all(cursor)
    return indexed


def search_index_mark_all(cursor: Any) -> None:
    """Mark every message as indexed (run on ``cursor``, in the transaction that indexed
    them: search_index_catch_up, or a rebuild of the whole index)."""
    cursor.execute(
        f"UPDATE {FTS_MARK} SET indexed_to = "
        f"(SELECT coalesce(max(rowid), 0) FROM {_q(Message._meta.db_table)})"
    )


def message_id_by_key(
    *, thread_id: uuid.UUID, idempotency_key: str, db: Writer = DJANGO
) -> uuid.UUID | None:
    """The id of the thread's message stored with ``idempotency_key``, or None (one
    statement on the unique (thread, idempotency_key) index)."""
    sql = (
        f"SELECT id FROM {_q(Message._meta.db_table)} WHERE thread_id = %s AND idempotency_key = %s"
    )
    row = db.one(sql, [_db_uuid(thread_id), idempotency_key])
    return None if row is None else _uuid(row[0])


@cache
def _head_sql(vendor: str, scoped: bool) -> str:
    t, m = _q(Thread._meta.db_table), _q(Message._meta.db_table)
    scope = " AND t.project_id = %s" if scoped else ""
    return (
        "SELECT t.id, t.dataset, t.next_sequence, t.uncompacted_count, "
        "t.auto_compact_threshold, t.agent_id, s.id, s.covers_from_sequence, s.covers_to_sequence, "
        f"s.content FROM {t} t LEFT JOIN {m} s ON s.id = t.active_summary_id "
        f"WHERE t.id = %s{scope}"
    )


def window_head(
    *, thread_id: uuid.UUID, project_id: int | None, db: BaseDatabaseWrapper | None = None
) -> WindowHead | None:
    """Read prepare's thread fields and the active summary in one statement; None when
    no thread ``thread_id`` exists (in project ``project_id``, when given). ``db``: the
    default connection, looked up when not given."""
    db = connections[DEFAULT_DB_ALIAS] if db is None else db
    row = _scoped_row(_head_sql, [_db_uuid(thread_id, db)], project_id, db)
    if row is None:
        return None
    return WindowHead(
        thread_id=_uuid(row[0]),
        dataset=row[1],
        next_sequence=int(row[2]),
        uncompacted_count=int(row[3]),
        threshold=row[4],
        agent_id=row[5],
        summary_id=None if row[6] is None else _uuid(row[6]),
        summary_from=row[7],
        summary_to=row[8],
        summary_content=row[9],
    )


@cache
def _tail_sql(vendor: str, with_metadata: bool) -> str:
    m = _q(Message._meta.db_table)
    extra = f", {m}.{_q('metadata')}" if with_metadata else ""
    seq = f"{m}.{_q('sequence_number')}"
    # A range of the (thread, sequence_number) index, read backwards from ``before`` and
    # never below ``after``: the rows in it that are not live are the few summaries.
    return (
        f"SELECT {m}.{_q('role')}, {m}.{_q('content')}, {seq}{extra} FROM {m} "
        f"WHERE ({m}.{_q('thread_id')} = %s AND {seq} > %s AND {seq} < %s "
        f"AND {m}.{_q('compacted_at')} IS NULL AND NOT {m}.{_q('is_summary')}) "
        f"ORDER BY {seq} DESC LIMIT %s"
    )


def tail_read(
    *,
    thread_id: uuid.UUID,
    after: int,
    before: int,
    limit: int,
    with_metadata: bool = False,
    db: BaseDatabaseWrapper | None = None,
) -> list[tuple[str, str, int, dict[str, Any] | None]]:
    """The newest ``limit`` un-compacted ordinary messages numbered above ``after`` (the
    active summary's end: Thread.live_floor) and below ``before``, as ``(role, content,
    sequence_number, metadata)``, newest first (one statement, a range of the (thread,
    sequence_number) index). ``metadata`` is read only ``with_metadata`` (an agent's
    thread: its memory tool calls and results, spec 004), else None. ``db``: the default
    connection, looked up when not given."""
    db = connections[DEFAULT_DB_ALIAS] if db is None else db
    with db.cursor() as cursor:
        cursor.execute(
            _tail_sql(db.vendor, with_metadata),
            [_db_uuid(thread_id, db), after, before, limit],
        )
        rows = cursor.fetchall()
    if not with_metadata:
        return [(role, content, seq, None) for role, content, seq in rows]
    field = Message._meta.get_field("metadata")
    return [(r[0], r[1], r[2], field.from_db_value(r[3], None, db)) for r in rows]  # type: ignore[arg-type]


@cache
def _datasets_sql(vendor: str) -> str:
    t = _q(Thread._meta.db_table)
    return (
        "WITH RECURSIVE d(dataset, n) AS ("
        f"SELECT (SELECT MIN(dataset) FROM {t} WHERE project_id = %s), 1 "
        "UNION ALL "
        f"SELECT (SELECT MIN(dataset) FROM {t} WHERE project_id = %s AND dataset > d.dataset), "
        "d.n + 1 FROM d WHERE d.dataset IS NOT NULL AND d.n < %s"
        ") SELECT dataset FROM d WHERE dataset IS NOT NULL ORDER BY n"
    )


def project_datasets(*, project_id: int, limit: int) -> list[str]:
    """The distinct datasets of project ``project_id``, sorted, at most ``limit``.

    One index seek per dataset on thread_dataset_idx (project, dataset, created): each
    step asks for the smallest dataset above the previous one, so the cost grows with the
    datasets returned, not with the project's threads (a ``SELECT DISTINCT`` read every
    thread's index entry: 100k threads, issue 11 item 4).
    """
    with connection.cursor() as cursor:
        cursor.execute(_datasets_sql(connection.vendor), [project_id, project_id, limit])
        return [row[0] for row in cursor.fetchall()]


# --- Reads of the /v1 thread resource and raw message pages (spec 002) ------------------
# GET /threads/{id}, GET /threads and GET .../messages through the ORM spent most of their
# time building and compiling the query and building a model instance per row; these
# read the columns the responses show, each request in one statement.


def _aware(value: Any) -> datetime | None:
    """A DateTimeField value as the ORM returns it: aware, UTC (SQLite gives naive UTC
    datetimes, or text where it cannot see the column's declared type)."""
    if value is None or (isinstance(value, datetime) and value.tzinfo is not None):
        return value
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _json(value: Any) -> Any:
    """A JSONField value as the ORM returns it (JSONField.from_db_value)."""
    return Thread._meta.get_field("tags").from_db_value(value, None, connection)  # type: ignore[arg-type]


@cache
def _thread_view_from(by_tag: bool = False) -> str:
    """The SELECT ... FROM of a ThreadView: the thread ``t`` and its agent ``a``; by tag,
    starting from the tag rows ``g``."""
    t, a, g = _q(Thread._meta.db_table), _q(Agent._meta.db_table), _q(ThreadTag._meta.db_table)
    source = f"{g} g JOIN {t} t ON t.id = g.thread_id" if by_tag else f"{t} t"
    return (
        "SELECT t.id, t.dataset, t.tags, t.metadata, t.auto_compact_threshold, a.name, "
        "t.created, t.last_activity, t.next_sequence, t.compaction_count, t.active_summary_id, "
        "t.last_compacted_at, t.last_compaction_error, t.last_compaction_error_at "
        f"FROM {source} LEFT JOIN {a} a ON a.id = t.agent_id"
    )


def _thread_view(row: tuple[Any, ...]) -> ThreadView:
    return ThreadView(
        id=_uuid(row[0]),
        dataset=row[1],
        tags=_json(row[2]),
        metadata=_json(row[3]),
        auto_compact_threshold=row[4],
        agent_name=row[5],
        created=_aware(row[6]),  # type: ignore[arg-type]
        last_activity=_aware(row[7]),  # type: ignore[arg-type]
        next_sequence=int(row[8]),
        compaction_count=int(row[9]),
        active_summary_id=None if row[10] is None else _uuid(row[10]),
        last_compacted_at=_aware(row[11]),
        last_compaction_error=row[12],
        last_compaction_error_at=_aware(row[13]),
    )


@cache
def _thread_view_sql(vendor: str) -> str:
    return f"{_thread_view_from()} WHERE t.id = %s AND t.project_id = %s"


def thread_view(*, thread_id: uuid.UUID, project_id: int) -> ThreadView | None:
    """The thread ``thread_id`` of project ``project_id`` as GET /threads/{id} shows it,
    or None when there is none (in that project). One statement on the primary key."""
    row = _fetch_one(_thread_view_sql(connection.vendor), [_db_uuid(thread_id), project_id])
    return None if row is None else _thread_view(row)


@cache
def _counters_sql(vendor: str, scoped: bool) -> str:
    scope = " AND project_id = %s" if scoped else ""
    return (
        "SELECT id, created, last_activity, next_sequence, uncompacted_count, "
        "first_message_at, last_message_at, tokens_input, tokens_output, tokens_total, "
        "messages_with_tokens, compaction_count, active_summary_id, last_compacted_at, "
        "last_compaction_error, last_compaction_error_at, latest_created_at "
        f"FROM {_q(Thread._meta.db_table)} WHERE id = %s{scope}"
    )


def thread_counters(*, thread_id: uuid.UUID, project_id: int | None) -> ThreadCounters | None:
    """The counters of thread ``thread_id`` that GET stats reports, or None when there is
    no such thread (in project ``project_id``, when given). One statement on the primary
    key."""
    row = _scoped_row(_counters_sql, [_db_uuid(thread_id)], project_id)
    if row is None:
        return None
    return ThreadCounters(
        id=_uuid(row[0]),
        created=_aware(row[1]),  # type: ignore[arg-type]
        last_activity=_aware(row[2]),  # type: ignore[arg-type]
        next_sequence=int(row[3]),
        uncompacted_count=int(row[4]),
        first_message_at=_aware(row[5]),
        last_message_at=_aware(row[6]),
        tokens_input=int(row[7]),
        tokens_output=int(row[8]),
        tokens_total=int(row[9]),
        messages_with_tokens=int(row[10]),
        compaction_count=int(row[11]),
        active_summary_id=None if row[12] is None else _uuid(row[12]),
        last_compacted_at=_aware(row[13]),
        last_compaction_error=row[14],
        last_compaction_error_at=_aware(row[15]),
        latest_created_at=_aware(row[16]),
    )


@cache
def _thread_page_sql(vendor: str, dataset: bool, tag: bool, after: bool) -> str:
    # Without a tag: the project's threads (t) on thread_project_idx or thread_dataset_idx
    # (project[, dataset], created DESC). With one: its tag rows (g), which copy the
    # thread's project and created, on thread_tag_page_idx (project, name, created DESC,
    # thread DESC), so a tag few threads carry is a short range, not a walk of the project.
    # Parameters in this order: project, tag, dataset, cursor (created, created, id).
    k, key = ("g", "thread_id") if tag else ("t", "id")
    where = [f"{k}.project_id = %s"]
    if tag:
        where.append("g.name = %s")
    if dataset:
        where.append("t.dataset = %s")
    if after:
        where.append(f"{k}.created <= %s AND NOT ({k}.created = %s AND {k}.{key} >= %s)")
    return (
        f"{_thread_view_from(tag)} WHERE {' AND '.join(where)} "
        f"ORDER BY {k}.created DESC, {k}.{key} DESC LIMIT %s"
    )


def thread_page(
    *,
    project_id: int,
    dataset: str | None,
    tag: str | None,
    after: tuple[datetime, uuid.UUID] | None,
    limit: int,
) -> list[ThreadView]:
    """Up to ``limit`` threads of project ``project_id``, newest first (created, then id,
    both descending), in dataset ``dataset`` and with tag ``tag`` when given, and after
    ``after`` = ``(created, id)`` of the previous page's last thread when given. One
    statement, an index range on thread_project_idx or thread_dataset_idx, or with a tag
    on thread_tag_page_idx (then the dataset, when given, is checked per thread)."""
    params: list[Any] = [project_id]
    if tag is not None:
        params.append(tag)
    if dataset is not None:
        params.append(dataset)
    if after is not None:
        created = connection.ops.adapt_datetimefield_value(after[0])
        params += [created, created, _db_uuid(after[1])]
    params.append(limit)
    sql = _thread_page_sql(connection.vendor, dataset is not None, tag is not None, after is not None)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [_thread_view(row) for row in cursor.fetchall()]


_BIGINT_MAX = 2**63 - 1

# GET .../messages: the message columns serializers.message_to_dict reads, in this order.
_PAGE_COLUMNS = (
    "sequence_number",
    "id",
    "role",
    "content",
    "tokens_input",
    "tokens_output",
    "tokens_total",
    "model",
    "latency_ms",
    "metadata",
    "compacted_at",
    "created_at",
    "is_summary",
    "covers_from_sequence",
    "covers_to_sequence",
)


@cache
def _message_page_sql(vendor: str, scoped: bool, before: bool, after: bool, desc: bool) -> str:
    t, m = _q(Thread._meta.db_table), _q(Message._meta.db_table)
    scope = " AND project_id = %s" if scoped else ""
    found = f"SELECT 1 FROM {t} WHERE id = %s{scope}"
    where = ["thread_id = %s", f"EXISTS ({found})"]
    if before:
        where.append("sequence_number < %s")
    if after:
        where.append("sequence_number > %s")
    order = "DESC" if desc else "ASC"
    nulls = ", ".join(["NULL"] * (len(_PAGE_COLUMNS) - 1))
    # The thread's row (kind 0: its next_sequence) and the page (kind 1), in one
    # statement, so they are one snapshot; the page alone is an index range read on
    # (thread, sequence_number) whatever the thread's length.
    return (
        f"SELECT 0, next_sequence, {nulls} FROM {t} WHERE id = %s{scope} "
        "UNION ALL "
        f"SELECT 1, p.* FROM (SELECT {', '.join(_PAGE_COLUMNS)} FROM {m} "
        f"WHERE {' AND '.join(where)} ORDER BY sequence_number {order} LIMIT %s) p"
    )


def message_page(
    *,
    thread_id: uuid.UUID,
    project_id: int | None,
    before: int | None,
    after: int | None,
    descending: bool,
    limit: int,
) -> tuple[int, list[MessageView]] | None:
    """The thread's message total and up to ``limit`` of its rows (compacted ones and
    summaries included) numbered below ``before`` and above ``after`` when given, by
    sequence number (``descending`` or not): ``(total, rows)``, or None when no thread
    ``thread_id`` exists (in project ``project_id``, when given). One statement."""
    tid = _db_uuid(thread_id)
    scoped = project_id is not None
    head = [tid, project_id] if scoped else [tid]
    params: list[Any] = [*head, tid, *head]
    # A bound past the largest 64-bit integer (the API takes any integer) means the same
    # as the largest one: no row is numbered that high. Clamped, as neither database
    # takes a bigger parameter.
    if before is not None:
        params.append(min(before, _BIGINT_MAX))
    if after is not None:
        params.append(min(after, _BIGINT_MAX))
    params.append(limit)
    sql = _message_page_sql(connection.vendor, scoped, before is not None, after is not None, descending)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    total = next((int(r[1]) - 1 for r in rows if r[0] == 0), None)
    if total is None:
        return None
    metadata = Message._meta.get_field("metadata")
    page = [
        MessageView(
            id=_uuid(r[2]),
            thread_id=thread_id,
            role=r[3],
            content=r[4],
            sequence_number=int(r[1]),
            tokens=None
            if r[7] is None
            else {"input": r[5] or 0, "output": r[6] or 0, "total": r[7]},
            model=r[8],
            latency_ms=r[9],
            metadata=metadata.from_db_value(r[10], None, connection),  # type: ignore[arg-type]
            compacted_at=_aware(r[11]),
            created_at=_aware(r[12]),  # type: ignore[arg-type]
            is_summary=bool(r[13]),
            covers_from_sequence=r[14],
            covers_to_sequence=r[15],
        )
        for r in rows
        if r[0] == 1
    ]
    # UNION ALL promises no order across its parts: order the page here (at most 101 rows).
    page.sort(key=lambda v: v.sequence_number, reverse=descending)
    return total, page

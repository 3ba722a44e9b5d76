"""Working memory: threads, append, list, prepare, stats (spec 000 and 002).

Pure SQL: nothing here calls a model or starts compaction. An append reports whether it
brought the thread to its autoCompactThreshold (AppendResult.compaction_due); the caller
starts the run, through memoryapp.compaction.message_append_compacting.

Every write owns its transaction; callers pass keyword arguments and get model instances
or the typed values of memoryapp.results back (memoryapp.serializers makes them JSON).
Live events are sent through memoryapp.events after commit.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import cache, partial
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, IntegrityError, connections, transaction
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
from django.utils import timezone

from memoryapp import events, sql
from memoryapp.errors import DatasetLocked, IdempotencyConflict, InvalidInput, ThreadNotFound
from memoryapp.models import Agent, Episode, Message, Project, Thread, ThreadTag
from memoryapp.results import (
    AppendResult,
    CompactionState,
    ContextCount,
    ContextMessage,
    ContextWindow,
    MessagePage,
    ThreadCounters,
    ThreadStats,
    ThreadView,
    TokenUsage,
    WindowSummary,
)
from memoryapp.timefmt import iso_ms
from memoryapp.validation import CLOCK_SKEW, CURSOR_PATTERN, path_id

logger = logging.getLogger(__name__)

MESSAGE_LIMIT_DEFAULT = 20
MESSAGE_LIMIT_MAX = 100
# Reads of prepare's window before it answers with what it has (see prepare()).
PREPARE_ATTEMPTS = 3

# An agent's thread compacts by its agent's budget (spec 004), never by a threshold.
THRESHOLD_ON_AGENT_THREAD = {
    "path": ["autoCompactThreshold"],
    "message": "autoCompactThreshold does not apply to an agent's thread: it compacts by "
    "its agent's compaction.maxTokens (and after 200 verbatim messages); leave it out or null",
    "code": "not_for_agent_thread",
}


# --- Threads ------------------------------------------------------------------------------


def _clean_tags(tags: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for tag in tags:
        seen.setdefault(tag.strip(), None)
    return [t for t in seen if t]


def _tag_rows(thread: Thread, tags: list[str]) -> list[ThreadTag]:
    # The thread's project and creation time ride along, for thread_tag_page_idx.
    return [
        ThreadTag(thread=thread, name=t, project_id=thread.project_id, created=thread.created)
        for t in tags
    ]


def thread_create(
    *,
    project: Project,
    dataset: str,
    tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    auto_compact_threshold: int | None = None,
    agent: Agent | None = None,
) -> Thread:
    """Create a thread in ``project`` and return it.

    ``dataset`` is the user scope recall searches within; ``auto_compact_threshold`` None
    disables automatic compaction (spec 000 "Threads"). ``agent`` makes it that agent's
    thread (spec 004): it compacts by the agent's budget and holds the agent's notes, so
    a threshold beside it is refused (InvalidInput, ``autoCompactThreshold``).
    """
    if agent is not None and auto_compact_threshold is not None:
        raise InvalidInput([THRESHOLD_ON_AGENT_THREAD])
    clean = _clean_tags(tags or [])
    with transaction.atomic():
        now = timezone.now()
        # One clock read for both, so a new thread's lastActivityAt equals its createdAt.
        thread = Thread.objects.create(
            created=now,
            last_activity=now,
            project=project,
            dataset=dataset,
            tags=clean,
            metadata=metadata or {},
            auto_compact_threshold=auto_compact_threshold,
            agent=agent,
        )
        ThreadTag.objects.bulk_create(_tag_rows(thread, clean))
    events.thread_changed(thread)
    return thread


def thread_pk(thread_id: str | uuid.UUID) -> uuid.UUID:
    """The thread id as a UUID; ThreadNotFound (not a 400) when it is malformed or not
    in the canonical text form (validation.path_id: no braces, ``urn:uuid:``)."""
    return path_id(thread_id, ThreadNotFound)


def thread_get(*, project: Project, thread_id: str | uuid.UUID, with_summary: bool = False) -> Thread:
    """Return the thread ``thread_id`` of ``project``.

    Raises ThreadNotFound for a malformed id, a missing thread, or another project's
    thread alike, so the answer never reveals that a thread exists elsewhere.
    """
    pk = thread_pk(thread_id)
    qs = Thread.objects.select_related("agent")
    if with_summary:
        qs = qs.select_related("active_summary")
    try:
        return qs.get(pk=pk, project=project)
    except Thread.DoesNotExist as exc:
        raise ThreadNotFound() from exc


def thread_view(*, project: Project, thread_id: str | uuid.UUID) -> ThreadView:
    """The thread ``thread_id`` of ``project`` as the /v1 thread resource shows it (spec
    002, GET thread): one statement reading only those columns (memoryapp.sql).

    Raises ThreadNotFound as thread_get does: a malformed id, a missing thread and
    another project's thread alike.
    """
    view = sql.thread_view(thread_id=thread_pk(thread_id), project_id=project.pk)
    if view is None:
        raise ThreadNotFound()
    return view


def thread_update(*, thread: Thread, changes: dict[str, Any]) -> Thread:
    """Apply a partial update and return the thread.

    ``changes`` may hold ``dataset``, ``tags``, ``metadata``, ``auto_compact_threshold``
    (None disables auto-compaction); keys absent are left alone. Raises ThreadNotFound
    if the thread was deleted meanwhile, DatasetLocked for another ``dataset`` once the
    thread has an episode (its memory stays in one dataset; checked under the row lock
    the episode job writes under, so a job never writes into the old dataset after a
    move it raced with), InvalidInput (``autoCompactThreshold``) for a threshold on an
    agent's thread (its agent's budget decides, spec 004).
    """
    if thread.agent_id is not None and changes.get("auto_compact_threshold") is not None:
        raise InvalidInput([THRESHOLD_ON_AGENT_THREAD])
    fields: list[str] = []
    with transaction.atomic():
        locked = Thread.objects.select_for_update().filter(pk=thread.pk).first()
        if locked is None:  # deleted since the caller looked it up
            raise ThreadNotFound()
        if changes.get("dataset", locked.dataset) != locked.dataset and (
            Episode.objects.filter(thread=locked).exists()
        ):
            raise DatasetLocked(locked.dataset)
        for name in ("dataset", "metadata", "auto_compact_threshold"):
            if name in changes:
                setattr(locked, name, changes[name])
                fields.append(name)
        if "tags" in changes:
            clean = _clean_tags(changes["tags"] or [])
            locked.tags = clean
            fields.append("tags")
            ThreadTag.objects.filter(thread=locked).delete()
            ThreadTag.objects.bulk_create(_tag_rows(locked, clean))
        if fields:
            locked.save(update_fields=fields)
    events.thread_changed(locked)
    return locked


def thread_delete(*, thread: Thread) -> None:
    """Delete the thread and every message of it, for good.

    Raises ThreadNotFound if the thread is already gone, so of two concurrent deletes
    exactly one succeeds: the first statement writes the thread row (on PostgreSQL it
    waits for the row lock a concurrent delete holds, then finds no row; on SQLite the
    IMMEDIATE transactions run one after the other).
    """
    thread_id = thread.id
    with transaction.atomic():
        # The active summary points back at a message of this thread; clear it first so
        # the cascade never trips a foreign-key check mid-way.
        if not Thread.objects.filter(pk=thread_id).update(active_summary=None):
            raise ThreadNotFound()
        Thread.objects.filter(pk=thread_id).delete()
    events.thread_deleted(thread_id)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _encode_cursor(thread: ThreadView) -> str:
    # "<microseconds since the epoch>-<id hex>": memoryapp.validation.CURSOR_PATTERN
    # describes it exactly, so the published schema accepts only cursors that decode.
    return f"{(thread.created - _EPOCH) // _MICROSECOND}-{thread.id.hex}"


def _decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    if not re.fullmatch(CURSOR_PATTERN, cursor):
        raise InvalidInput(
            [{"path": ["cursor"], "message": "Malformed cursor", "code": "invalid_cursor"}]
        )
    micros, id_hex = cursor.split("-")
    return _EPOCH + int(micros) * _MICROSECOND, uuid.UUID(id_hex)


def thread_list(
    *,
    project: Project,
    dataset: str | None = None,
    tag: str | None = None,
    limit: int = 20,
    cursor: str | None = None,
) -> tuple[list[ThreadView], str | None]:
    """Return ``(threads, next_cursor)``: newest first, filtered by dataset and tag
    (trimmed, as a thread's tags are on create and update).

    ``cursor`` is the opaque ``nextCursor`` of the previous page; InvalidInput if it is
    malformed. ``next_cursor`` is None on the last page. One statement (memoryapp.sql
    thread_page: ``limit + 1`` rows, the columns the thread resource shows).
    """
    after = _decode_cursor(cursor) if cursor else None
    if tag is not None:
        tag = tag.strip()  # as tags are stored (_clean_tags): " t1 " finds "t1"
    rows = sql.thread_page(
        project_id=project.pk, dataset=dataset, tag=tag, after=after, limit=limit + 1
    )
    next_cursor = _encode_cursor(rows[limit - 1]) if len(rows) > limit else None
    return rows[:limit], next_cursor


# --- Messages -----------------------------------------------------------------------------


class _Replay(Exception):
    """Raised inside the append's transaction to undo its counter bump on a replay."""

    def __init__(self, message_id: uuid.UUID) -> None:
        super().__init__()
        self.message_id = message_id


@cache
def _message_attnames() -> tuple[str, ...]:
    return tuple(f.attname for f in Message._meta.concrete_fields)


def _new_message(values: dict[str, Any]) -> Message:
    """A Message of ``values`` (every concrete field's attname: a KeyError names one
    left out, a name that is not one raises TypeError). An append builds one per call:
    with no receiver of the model's pre_init or post_init signals, the row is made as
    Model.__init__ makes it from positional values (its state, then each attname in the
    instance's dict; a new instance has no related object cached for the foreign key's
    setter to drop) without its per-field loop (issue 11); otherwise by Message(*values).
    """
    names = _message_attnames()
    if len(values) != len(names):
        raise TypeError(f"a Message takes {names}, not {tuple(values)}")
    if pre_init.has_listeners(Message) or post_init.has_listeners(Message):
        args: Any = [values[name] for name in names]
        return Message(*args)
    message = Message.__new__(Message)
    message._state = ModelState()
    message.__dict__.update((name, values[name]) for name in names)
    return message


# What a replay must repeat for its Idempotency-Key to name the same message: everything
# the client sends, createdAt too when it sent one (docs/decisions.md, "Idempotency-Key").
_REPLAYED_FIELDS = (
    "role", "content", "tokens_input", "tokens_output", "tokens_total", "model", "latency_ms", "metadata",
)


def _ms_floor(value: datetime) -> datetime:
    """``value`` cut to the API's precision (milliseconds, memoryapp.timefmt.iso_ms)."""
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def _replayed(message_id: uuid.UUID, attempt: Message, *, created_at: datetime | None) -> AppendResult:
    """The first message stored under an Idempotency-Key; IdempotencyConflict when
    ``attempt`` (the unsaved row of the replay) differs from it in any field the client
    sent (_REPLAYED_FIELDS, and ``created_at`` when the client sent one: the one stored
    or one it was raised from within its millisecond, see _dated). A ``created_at`` that
    was ahead of the server's clock at the first append (its id's time,
    sql.time_ordered_id), which the append replaced with the clock, matches a stored one
    up to CLOCK_SKEW before it, however late the retry comes."""
    first = Message.objects.get(pk=message_id)
    appended = sql.id_time(first.id)
    ahead = created_at is not None and appended is not None and created_at > appended
    if any(getattr(first, name) != getattr(attempt, name) for name in _REPLAYED_FIELDS) or (
        created_at is not None and not _same_time(first.created_at, created_at, ahead=ahead)
    ):
        raise IdempotencyConflict() from None
    return AppendResult(message=first, replayed=True)


def _same_time(stored: datetime, sent: datetime, *, ahead: bool) -> bool:
    """Whether ``stored`` is what an append of ``sent`` stores (see _replayed)."""
    if ahead:
        return sent - CLOCK_SKEW <= stored <= sent
    return _ms_floor(stored) <= sent <= stored


def _compaction_due(counters: sql.Counters) -> bool:
    # An agent's thread compacts by the agent's token budget, which only
    # memoryapp.agent_compaction can judge: every append lets it look (spec 004).
    return bool(
        counters.has_agent
        or (counters.threshold is not None and counters.uncompacted >= counters.threshold)
    )


def _dated(
    message: Message, params: list[Any], latest: datetime | None, *, given: bool
) -> None:
    """Date ``message`` (and its INSERT ``params``) by the thread's latest non-summary
    createdAt after the bump, ``latest`` (sql.Counters.latest: the greater of the
    thread's before and the one asked for), so createdAt never decreases with the
    sequence number (docs/decisions.md, "createdAt never goes backwards in a thread").

    A live append (the server's clock, not ``given``) dated before the thread's latest,
    which another server process's clock may have set ahead, takes that time. A client's
    (``given``) before it at the API's precision (milliseconds, memoryapp.timefmt.iso_ms)
    raises InvalidInput (``createdAt``, code ``before_last_message``); within the same
    millisecond it takes the latest too: a client sending back the ``createdAt`` the API
    showed for the last message is not refused over the microseconds the server's clock
    stored but never showed, nor stored before it."""
    if latest is None or latest == message.created_at:
        return
    if given and message.created_at < _ms_floor(latest):
        raise InvalidInput(
            [
                {
                    "path": ["createdAt"],
                    "message": "createdAt is earlier than the createdAt of the thread's "
                    f"last message ({iso_ms(latest)})",
                    "code": "before_last_message",
                }
            ]
        )
    message.created_at = latest
    sql.message_params_created_at(params, latest)


def _appended_message(
    thread_pk: uuid.UUID,
    *,
    role: str,
    content: str,
    tokens: dict[str, int] | None,
    model: str | None,
    latency_ms: int | None,
    metadata: dict[str, Any] | None,
    idempotency_key: str | None,
    created_at: datetime,
    now: datetime,
) -> Message:
    """The unsaved Message row message_append inserts (its sequence number is taken under
    the lock), its id carrying ``now``, the append's time; ``tokens`` as message_append
    takes them."""
    return _new_message(
        {
            "id": sql.time_ordered_id(now),
            "thread_id": thread_pk,
            "sequence_number": None,  # taken under the lock
            "role": role,
            "content": content,
            "tokens_input": tokens["input"] if tokens else None,
            "tokens_output": tokens["output"] if tokens else None,
            "tokens_total": tokens["total"] if tokens else None,
            "model": model,
            "latency_ms": latency_ms,
            "metadata": metadata or None,
            "is_summary": False,
            "covers_from_sequence": None,
            "covers_to_sequence": None,
            "compacted_at": None,
            "idempotency_key": idempotency_key,
            "triggered_compaction": False,
            "created_at": created_at,
        }
    )


def message_append(
    *,
    thread: Thread | str | uuid.UUID,
    project: Project | None = None,
    role: str,
    content: str,
    tokens: dict[str, int] | None = None,
    model: str | None = None,
    latency_ms: int | None = None,
    metadata: dict[str, Any] | None = None,
    idempotency_key: str | None = None,
    created_at: datetime | None = None,
) -> AppendResult:
    """Append a message to ``thread`` and return what was stored (spec 002, POST messages).

    Two statements in one transaction, whatever the thread's length (memoryapp.sql): an
    ``UPDATE ... RETURNING`` of the thread row takes the next sequence number and adds the
    message to the counters and token totals, then the INSERT. The UPDATE holds the row
    lock (on SQLite the IMMEDIATE transaction's write lock) until commit, so concurrent
    writers queue and numbers are 1..N with no gaps (DESIGN.md section 6 item 1). On
    SQLite the transaction runs on the sqlite3 connection itself, past Django's atomic
    block and cursor, unless the caller is in a transaction (sql.append_transaction).
    With ``idempotency_key`` one more statement, under that lock, looks the key up; a
    replay rolls the bump back and returns the first row with ``replayed`` True.

    When the insert brings the un-compacted, non-summary count to the thread's
    autoCompactThreshold, the result's ``compaction_due`` is True: the caller then runs
    memoryapp.compaction.auto_compact (message_append_compacting does both; DESIGN.md
    section 6 item 2).

    ``thread`` is a Thread or a thread id. With ``project``, the thread must belong to it:
    the API passes the id and the key's project, so the scoped look-up is the UPDATE
    itself. ``tokens`` is ``{"input", "output", "total"}`` (validated non-negative ints) or
    None. createdAt is the server's clock or, when later, the thread's latest non-summary
    createdAt, which the UPDATE returns under the lock: it never decreases with the
    sequence number (_dated). ``created_at`` (an import's real time; aware) replaces the
    clock when before it, else is stored as the clock (docs/decisions.md "Imported
    messages keep their real time", "A createdAt ahead of the server's clock").
    Raises ThreadNotFound if the thread does not exist (any more), its id is malformed, or
    it is not in ``project``; IdempotencyConflict when ``idempotency_key`` was used on this
    thread for a different message (any field sent differs); InvalidInput (``createdAt``) for a
    ``created_at`` before the thread's latest non-summary createdAt at millisecond precision
    (decided by the UPDATE under the lock, no statement of its own)."""
    pk = thread.pk if isinstance(thread, Thread) else thread_pk(thread)
    now = timezone.now()
    at = now if created_at is None else min(created_at, now)  # ahead of the clock: the clock
    message = _appended_message(
        pk, role=role, content=content, tokens=tokens, model=model, latency_ms=latency_ms,
        metadata=metadata, idempotency_key=idempotency_key, created_at=at, now=now,
    )
    conn = connections[DEFAULT_DB_ALIAS]  # once for sql's calls (each look-up costs)
    bump = sql.bump_of(
        thread_id=pk, project_id=project.pk if project is not None else None, now=now,
        tokens=tokens, created_at=at if at < now else None, db=conn,
    )
    params = sql.message_params(message, conn, bump.adapted)
    try:
        with sql.append_transaction(conn) as db:
            counters = sql.thread_bump_run(bump, db=db)
            if counters is None:
                raise ThreadNotFound()
            if idempotency_key is not None:
                existing = sql.message_id_by_key(
                    thread_id=pk, idempotency_key=idempotency_key, db=db
                )
                if existing is not None:
                    raise _Replay(existing)
            _dated(message, params, counters.latest, given=at < now)
            upkeep = sql.message_insert(params, sequence=counters.sequence, db=db)
    except _Replay as replay:
        return _replayed(replay.message_id, message, created_at=created_at)
    except IntegrityError as exc:
        # Only reachable if two writers bypassed the row lock, which the lock prevents;
        # surface it as a conflict rather than a 500.
        raise IdempotencyConflict() from exc
    message.sequence_number = counters.sequence
    message._state.adding, message._state.db = False, DEFAULT_DB_ALIAS  # get_connection()'s
    events.message_appended(message)
    _after_commit(upkeep)
    return AppendResult(message=message, compaction_due=_compaction_due(counters))


def _after_commit(upkeep: sql.Upkeep) -> None:
    """Run what the append left for after its commit, outside the writers queue (SQLite:
    the search-index catch-up, then a WAL checkpoint). A failure leaves the work for the
    next time (rows stay queued for recall's or the next batch's catch-up; SQLite's own
    checkpoint) and never fails the stored append. Inside sql.no_waiting it is handed to
    that caller instead, to run where waiting is fine."""
    jobs: list[tuple[Callable[[], object], str]] = []
    if upkeep.index:
        jobs.append((sql.search_index_catch_up, "search index catch-up"))
    if upkeep.checkpoint:
        jobs.append((sql.wal_checkpoint, "WAL checkpoint"))
    if not jobs:
        return
    deferred = sql.deferred_upkeep()
    if deferred is not None:
        deferred.append(partial(_run_upkeep, jobs))
        return
    _run_upkeep(jobs)


def _run_upkeep(jobs: list[tuple[Callable[[], object], str]]) -> None:
    for job, what in jobs:
        try:
            job()
        except DatabaseError:
            logger.warning("%s failed", what, exc_info=True)


def message_list(
    *,
    thread: Thread | str | uuid.UUID,
    project: Project | None = None,
    limit: int = 20,
    before: int | None = None,
    after: int | None = None,
    order: str = "asc",
) -> MessagePage:
    """Raw rows including compacted ones and summaries (spec 002, GET messages).

    Filters ``before`` (sequenceNumber < before) and ``after`` (> after), sorts by
    ``order`` ("asc" | "desc"), then cuts at ``limit`` (DESIGN.md section 6 item 8).
    ``total`` counts every row of the thread ignoring the cursor, ``has_more`` whether rows
    beyond this page match the filter. ``thread`` is a Thread or a thread id; with
    ``project`` it must belong to that project. Raises ThreadNotFound otherwise (or for a
    malformed id, or a thread deleted meanwhile).

    One statement whatever the thread's length (memoryapp.sql.message_page): the thread
    row's counter for ``total`` and the page, an index range read on (thread,
    sequence_number), in one snapshot, so ``total`` is never below the rows on the page.
    """
    pk = thread.pk if isinstance(thread, Thread) else thread_pk(thread)
    found = sql.message_page(
        thread_id=pk,
        project_id=project.pk if project is not None else None,
        before=before,
        after=after,
        descending=order != "asc",
        limit=limit + 1,
    )
    if found is None:
        raise ThreadNotFound()
    total, rows = found
    return MessagePage(messages=rows[:limit], total=total, has_more=len(rows) > limit)


# --- prepare ------------------------------------------------------------------------------


def agent_window_limit() -> int:
    """The most messages an agent's window holds: the most it keeps verbatim before a
    forced checkpoint (MEMORY_AGENT_MAX_VERBATIM_MESSAGES, spec 004)."""
    return int(settings.MEMORY_AGENT_MAX_VERBATIM_MESSAGES)


def default_message_limit(*, agent: bool) -> int:
    """prepare's messageLimit when the client sends none: on an agent's thread
    (``agent``) the agent's whole window, agent_window_limit() (spec 004), else
    MESSAGE_LIMIT_DEFAULT (20, spec 002)."""
    return agent_window_limit() if agent else MESSAGE_LIMIT_DEFAULT


def _window_read(
    pk: uuid.UUID, project_id: int | None, message_limit: int | None
) -> tuple[sql.WindowHead, int, list[tuple[str, str, int, dict[str, Any] | None]]]:
    attempt = 1
    conn = connections[DEFAULT_DB_ALIAS]  # looked up once for both reads, not at each use
    while True:
        head = sql.window_head(thread_id=pk, project_id=project_id, db=conn)
        if head is None:
            raise ThreadNotFound()
        limit = message_limit
        if limit is None:
            limit = default_message_limit(agent=head.agent_id is not None)
        tail = sql.tail_read(
            thread_id=pk,
            after=head.summary_to or 0,
            before=head.next_sequence,
            limit=limit,
            with_metadata=head.agent_id is not None,
            db=conn,
        )
        if len(tail) >= min(head.uncompacted_count, limit) or attempt == PREPARE_ATTEMPTS:
            return head, limit, tail
        attempt += 1


def prepare(
    *,
    thread: Thread | str | uuid.UUID,
    project: Project | None = None,
    message_limit: int | None = None,
) -> ContextWindow:
    """Build the LLM-ready context window of ``thread`` (spec 002, POST prepare).

    Returns a ContextWindow: the active summary (id, covered range, text) or None, and the
    newest ``message_limit`` (1..100) un-compacted ordinary messages, oldest first. The
    summary does not count against ``message_limit``; ``warning`` is set when
    ``message_limit`` is below the thread's autoCompactThreshold (spec 000, "The
    messageLimit trap"). ``thread`` is a Thread or a thread id; with ``project`` it must
    belong to that project. Raises ThreadNotFound otherwise (or for a malformed id).

    ``message_limit`` None (the client sent none) is MESSAGE_LIMIT_DEFAULT (20) on an
    ordinary thread and, on an agent's thread, the agent's own window (spec 004: its
    checkpoint and every message since, which its compaction keeps within its budget):
    every verbatim message, up to agent_window_limit() (200). On an agent's thread
    ``warning`` says how many verbatim messages the window leaves out, if any.

    Two statements whatever the thread's length, reading only the columns the window
    needs (memoryapp.sql): the thread row joined to its active summary, then the tail,
    a range of the (thread, sequence_number) index above the summary's end. No model
    call.

    A compaction that commits between the two reads folds the oldest live rows, which
    would leave them in neither the summary read nor the tail; the tail then comes back
    shorter than the counters say, and both are read again (two more statements, only
    under that race; at most PREPARE_ATTEMPTS rounds). Rows appended after the thread row
    was read are left out by the ``next_sequence`` bound, so a full-length tail is the
    window as of that one read.

    On an agent's thread (spec 004) the summary is the checkpoint's context block, tail
    messages carry their memory tool call or result, and a call and its result are one
    unit (_whole_units): a result at the head of the window whose call was cut off is
    left out with it, unless it is the whole window (``message_limit`` 1, the newest
    message a result): then the window is the call and its result (one more statement).
    """
    pk = thread.pk if isinstance(thread, Thread) else thread_pk(thread)
    project_id = project.pk if project is not None else None
    head, limit, tail = _window_read(pk, project_id, message_limit)
    tail.reverse()
    if tail and _is_result(tail[0]):
        tail = _whole_units(pk, head, tail)
    summary = None
    if head.summary_id is not None:
        summary = WindowSummary(
            message_id=head.summary_id,
            from_sequence=head.summary_from,
            to_sequence=head.summary_to,
            content=head.summary_content or "",
        )
    return ContextWindow(
        thread_id=head.thread_id,
        dataset=head.dataset,
        summary=summary,
        tail=tuple(
            ContextMessage(
                role,
                content,
                tool_call=(meta or {}).get("toolCall"),
                tool_result=(meta or {}).get("toolResult"),
                sequence_number=seq,
            )
            for role, content, seq, meta in tail
        ),
        message_count=context_count(
            uncompacted_count=head.uncompacted_count, summary_id=head.summary_id
        ).messages,
        message_limit=limit,
        # The messageLimit trap of autoCompactThreshold does not apply to an agent's thread.
        threshold=None if head.agent_id is not None else head.threshold,
        agent=head.agent_id is not None,
        limit_given=message_limit is not None,
    )


def _is_result(row: tuple[str, str, int, dict[str, Any] | None]) -> bool:
    return bool(row[3]) and "toolResult" in row[3]  # type: ignore[operator]


def _whole_units(
    pk: uuid.UUID, head: sql.WindowHead, tail: list[tuple[str, str, int, dict[str, Any] | None]]
) -> list[tuple[str, str, int, dict[str, Any] | None]]:
    """``tail`` (oldest first, its head a tool result) as whole units (docs/decisions.md,
    "prepare keeps a tool call with its result"). A call and its result are adjacent
    rows (memoryapp.notes.tool_run), so the only split a window can make is a result at
    its head: it is left out, so the window holds the newest whole units within the
    limit. When the result is all the window holds, leaving it out would leave nothing;
    the newest unit is then given whole, the call read back with it: one message past
    the limit rather than an empty window (the warning says so)."""
    if len(tail) > 1:
        return tail[1:]
    result = tail[0]
    before = sql.tail_read(
        thread_id=pk, after=head.summary_to or 0, before=result[2], limit=1, with_metadata=True
    )
    call = (before[0][3] or {}).get("toolCall") if before else None
    if call is None or call.get("id") != (result[3] or {})["toolResult"].get("id"):
        return []  # not its call (no recorded history is written so): leave the result out
    return [before[0], result]


# --- stats --------------------------------------------------------------------------------


def context_count(*, uncompacted_count: int, summary_id: object | None) -> ContextCount:
    """The one count of what a thread's context holds (results.ContextCount), from the
    thread row's ``uncompacted_count`` (un-compacted, non-summary messages) and its active
    summary id (None: no summary). prepare's messageCount, GET stats' messageCount
    (``.rows``), the dashboard's Stats and the turn panel and X-ray all come from it, so
    they agree (issue 10 item 4)."""
    return ContextCount(messages=uncompacted_count, summary=summary_id is not None)


def thread_stats(
    *, thread: Thread | ThreadCounters | str | uuid.UUID, project: Project | None = None
) -> ThreadStats:
    """Thread statistics (spec 002, GET stats), read from the thread row's counters.

    ``thread`` is a Thread (or its ThreadCounters) or a thread id, whose counters are
    then read in one statement (memoryapp.sql.thread_counters); with ``project`` it must
    belong to that project. Raises ThreadNotFound otherwise (or for a malformed id).

    ``message_count`` counts un-compacted messages including the summary row;
    ``token_usage`` is None unless some message carried tokens (``average_per_message`` is
    total tokens over the messages that carried tokens, rounded); ``session_duration_ms``
    is the last real (non-summary) message's createdAt minus the first's in whole ms, None
    with fewer than two real messages (DESIGN.md section 6 item 9).
    """
    if not isinstance(thread, Thread | ThreadCounters):
        scope = project.pk if project is not None else None
        counters = sql.thread_counters(thread_id=thread_pk(thread), project_id=scope)
        if counters is None:
            raise ThreadNotFound()
        thread = counters
    context = context_count(
        uncompacted_count=thread.uncompacted_count, summary_id=thread.active_summary_id
    )
    real_messages = thread.message_total - thread.compaction_count
    token_usage = None
    if thread.messages_with_tokens:
        token_usage = TokenUsage(
            total_input=thread.tokens_input,
            total_output=thread.tokens_output,
            total_tokens=thread.tokens_total,
            average_per_message=round(thread.tokens_total / thread.messages_with_tokens),
        )
    duration = None
    if real_messages >= 2 and thread.first_message_at and thread.latest_created_at:
        delta = thread.latest_created_at - thread.first_message_at
        duration = int(delta.total_seconds() * 1000)
    return ThreadStats(
        thread_id=thread.id,
        message_count=context.rows,
        context=context,
        token_usage=token_usage,
        session_duration_ms=duration,
        created_at=thread.created,
        last_activity_at=thread.last_activity,
        compaction=CompactionState.of(thread),
    )

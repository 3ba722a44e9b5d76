"""Working memory: threads, append, list, prepare, stats (spec 000 and 002).

Pure SQL: nothing here calls a model. The one exception is that an append which trips
auto-compaction hands over to memoryapp.compaction *after* its own transaction commits.

Every write owns its transaction; callers pass keyword arguments and get model instances
or plain dicts back. Broadcasting live events happens here (through memoryapp.events) and
nowhere else in the request path.
"""

from __future__ import annotations

import base64
import binascii
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from memoryapp import events
from memoryapp.errors import IdempotencyConflict, InvalidInput, ThreadNotFound
from memoryapp.models import Message, Project, Thread, ThreadTag
from memoryapp.timefmt import iso_ms

logger = logging.getLogger(__name__)

MESSAGE_LIMIT_DEFAULT = 20
MESSAGE_LIMIT_MAX = 100
# Reads of prepare's window before it answers with what it has (see prepare()).
PREPARE_ATTEMPTS = 3


# --- Threads ------------------------------------------------------------------------------


def thread_to_dict(thread: Thread) -> dict[str, Any]:
    """The thread resource of the /v1 API (camelCase, DESIGN.md section 5)."""
    return {
        "threadId": str(thread.id),
        "dataset": thread.dataset,
        "tags": list(thread.tags),
        "metadata": thread.metadata,
        "autoCompactThreshold": thread.auto_compact_threshold,
        "createdAt": iso_ms(thread.created),
        "lastActivityAt": iso_ms(thread.last_activity),
        "totalMessages": thread.message_total,
        "compaction": compaction_state(thread),
    }


def compaction_state(thread: Thread) -> dict[str, Any]:
    """Compaction bookkeeping of a thread: runs so far, the active summary, the last failure.

    ``lastError`` stays set until a later run succeeds (spec 000 "Compaction"; DESIGN.md
    section 6 item 4: a failed run is recorded on the thread).
    """
    return {
        "count": thread.compaction_count,
        "activeSummaryId": str(thread.active_summary_id) if thread.active_summary_id else None,
        "lastCompactedAt": iso_ms(thread.last_compacted_at),
        "lastError": thread.last_compaction_error or None,
        "lastErrorAt": iso_ms(thread.last_compaction_error_at),
    }


def _clean_tags(tags: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for tag in tags:
        seen.setdefault(tag.strip(), None)
    return [t for t in seen if t]


def thread_create(
    *,
    project: Project,
    dataset: str,
    tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    auto_compact_threshold: int | None = None,
) -> Thread:
    """Create a thread in ``project`` and return it.

    ``dataset`` is the user scope recall searches within; ``auto_compact_threshold`` None
    disables automatic compaction (spec 000 "Threads").
    """
    clean = _clean_tags(tags or [])
    with transaction.atomic():
        thread = Thread.objects.create(
            project=project,
            dataset=dataset,
            tags=clean,
            metadata=metadata or {},
            auto_compact_threshold=auto_compact_threshold,
        )
        ThreadTag.objects.bulk_create([ThreadTag(thread=thread, name=t) for t in clean])
    events.thread_changed(thread)
    return thread


def _thread_pk(thread_id: str | uuid.UUID) -> uuid.UUID:
    """The thread id as a UUID; ThreadNotFound (not a 400) when it is malformed."""
    if isinstance(thread_id, uuid.UUID):
        return thread_id
    try:
        return uuid.UUID(str(thread_id))
    except ValueError as exc:
        raise ThreadNotFound() from exc


def thread_get(*, project: Project, thread_id: str | uuid.UUID, with_summary: bool = False) -> Thread:
    """Return the thread ``thread_id`` of ``project``.

    Raises ThreadNotFound for a malformed id, a missing thread, or another project's
    thread alike, so the answer never reveals that a thread exists elsewhere.
    """
    pk = _thread_pk(thread_id)
    qs = Thread.objects.all()
    if with_summary:
        qs = qs.select_related("active_summary")
    try:
        return qs.get(pk=pk, project=project)
    except Thread.DoesNotExist as exc:
        raise ThreadNotFound() from exc


def thread_update(*, thread: Thread, changes: dict[str, Any]) -> Thread:
    """Apply a partial update and return the thread.

    ``changes`` may hold ``dataset``, ``tags``, ``metadata``, ``auto_compact_threshold``
    (None disables auto-compaction); keys absent are left alone. Raises ThreadNotFound
    if the thread was deleted meanwhile.
    """
    fields: list[str] = []
    with transaction.atomic():
        locked = Thread.objects.select_for_update().filter(pk=thread.pk).first()
        if locked is None:  # deleted since the caller looked it up
            raise ThreadNotFound()
        for name in ("dataset", "metadata", "auto_compact_threshold"):
            if name in changes:
                setattr(locked, name, changes[name])
                fields.append(name)
        if "tags" in changes:
            clean = _clean_tags(changes["tags"] or [])
            locked.tags = clean
            fields.append("tags")
            ThreadTag.objects.filter(thread=locked).delete()
            ThreadTag.objects.bulk_create([ThreadTag(thread=locked, name=t) for t in clean])
        if fields:
            locked.save(update_fields=fields)
    events.thread_changed(locked)
    return locked


def thread_delete(*, thread: Thread) -> None:
    """Delete the thread and every message of it, for good."""
    thread_id = thread.id
    with transaction.atomic():
        # The active summary points back at a message of this thread; clear it first so
        # the cascade never trips a foreign-key check mid-way.
        Thread.objects.filter(pk=thread_id).update(active_summary=None)
        Thread.objects.filter(pk=thread_id).delete()
    events.thread_deleted(thread_id)


def _encode_cursor(thread: Thread) -> str:
    raw = f"{thread.created.isoformat()}|{thread.id}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created_raw, id_raw = base64.urlsafe_b64decode(padded.encode()).decode().split("|", 1)
        created = datetime.fromisoformat(created_raw)
        if created.tzinfo is None:
            raise ValueError("cursor time without a zone")
        # Normalise to UTC here: a forged far-past or far-future time would otherwise
        # overflow inside the database driver's conversion.
        created = created.astimezone(UTC)
        return created, uuid.UUID(id_raw)
    except (ValueError, OverflowError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidInput(
            [{"path": ["cursor"], "message": "Malformed cursor", "code": "invalid_cursor"}]
        ) from exc


def thread_list(
    *,
    project: Project,
    dataset: str | None = None,
    tag: str | None = None,
    limit: int = 20,
    cursor: str | None = None,
) -> tuple[list[Thread], str | None]:
    """Return ``(threads, next_cursor)``: newest first, filtered by dataset and tag.

    ``cursor`` is the opaque ``nextCursor`` of the previous page; InvalidInput if it is
    malformed. ``next_cursor`` is None on the last page.
    """
    qs: QuerySet[Thread] = Thread.objects.filter(project=project)
    if dataset is not None:
        qs = qs.filter(dataset=dataset)
    if tag is not None:
        qs = qs.filter(Exists(ThreadTag.objects.filter(thread=OuterRef("pk"), name=tag)))
    if cursor:
        created, last_id = _decode_cursor(cursor)
        qs = qs.filter(created__lte=created).exclude(created=created, id__gte=last_id)
    rows = list(qs.order_by("-created", "-id")[: limit + 1])
    next_cursor = _encode_cursor(rows[limit - 1]) if len(rows) > limit else None
    return rows[:limit], next_cursor


# --- Messages -----------------------------------------------------------------------------


def message_to_dict(message: Message) -> dict[str, Any]:
    """A full message row as GET .../messages returns it (spec 002)."""
    data: dict[str, Any] = {
        "messageId": str(message.id),
        "threadId": str(message.thread_id),
        "role": message.role,
        "content": message.content,
        "sequenceNumber": message.sequence_number,
        "tokens": message.tokens,
        "model": message.model,
        "latencyMs": message.latency_ms,
        "metadata": message.metadata,
        "compactedAt": iso_ms(message.compacted_at),
        "createdAt": iso_ms(message.created_at),
    }
    if message.is_summary:
        data["summary"] = {
            "fromSequence": message.covers_from_sequence,
            "toSequence": message.covers_to_sequence,
        }
    return data


@dataclass(frozen=True)
class AppendResult:
    """What message_append did: the stored message, whether it tripped a compaction run
    that succeeded (``compacted``), and whether this was an idempotent replay."""

    message: Message
    compacted: bool
    replayed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The 201 body of POST .../messages (spec 002)."""
        return {
            "messageId": str(self.message.id),
            "threadId": str(self.message.thread_id),
            "sequenceNumber": self.message.sequence_number,
            "role": self.message.role,
            "createdAt": iso_ms(self.message.created_at),
            "compacted": self.compacted,
        }


def message_append(
    *,
    thread: Thread | str | uuid.UUID,
    project: Project | None = None,
    role: str,
    content: str,
    tokens: dict[str, int] | None = None,
    model: str | None = None,
    latency_ms: int | None = None,
    metadata: dict[str, str] | None = None,
    idempotency_key: str | None = None,
) -> AppendResult:
    """Append a message to ``thread`` and return an AppendResult (spec 002, POST messages).

    The sequence number is taken from the thread row's counter under a row lock
    (select_for_update; on SQLite the IMMEDIATE transaction's write lock), so concurrent
    writers queue and numbers are 1..N with no gaps (DESIGN.md section 6 item 1).

    When the insert brings the un-compacted, non-summary count to the thread's
    autoCompactThreshold, compaction runs after the commit, keeping this message verbatim
    (keepLast 1). A failed run does not fail the append: ``compacted`` is then False and
    the error is recorded on the thread (section 6 items 2 and 4).

    ``thread`` is a Thread or a thread id. With ``project``, the thread must belong to it:
    the API passes the id and the key's project, so the scoped look-up is the locked read
    itself and an append costs one read of the thread row, not two.

    ``tokens`` is ``{"input", "output", "total"}`` (validated non-negative ints) or None.
    ``createdAt`` is taken once the lock is held, so timestamps follow sequence order
    unless the clock itself steps back (order is by sequence number either way).
    Raises ThreadNotFound if the thread does not exist (any more), its id is malformed, or
    it is not in ``project``; IdempotencyConflict when ``idempotency_key`` was used on this
    thread for a different role or content.
    """
    pk = thread.pk if isinstance(thread, Thread) else _thread_pk(thread)
    scope = Thread.objects.select_for_update()
    if project is not None:
        scope = scope.filter(project=project)
    try:
        with transaction.atomic():
            try:
                locked = scope.get(pk=pk)
            except Thread.DoesNotExist as exc:
                raise ThreadNotFound() from exc
            now = timezone.now()
            if idempotency_key is not None:
                existing = Message.objects.filter(
                    thread=locked, idempotency_key=idempotency_key
                ).first()
                if existing is not None:
                    if existing.role != role or existing.content != content:
                        raise IdempotencyConflict()
                    return AppendResult(
                        message=existing, compacted=existing.triggered_compaction, replayed=True
                    )
            sequence = locked.next_sequence
            trips = (
                locked.auto_compact_threshold is not None
                and locked.uncompacted_count + 1 >= locked.auto_compact_threshold
            )
            message = Message(
                thread=locked,
                sequence_number=sequence,
                role=role,
                content=content,
                model=model,
                latency_ms=latency_ms,
                metadata=metadata or None,
                idempotency_key=idempotency_key,
                created_at=now,
            )
            if tokens is not None:
                message.tokens_input = tokens["input"]
                message.tokens_output = tokens["output"]
                message.tokens_total = tokens["total"]
                locked.tokens_input += tokens["input"]
                locked.tokens_output += tokens["output"]
                locked.tokens_total += tokens["total"]
                locked.messages_with_tokens += 1
            message.save(force_insert=True)
            locked.next_sequence = sequence + 1
            locked.uncompacted_count += 1
            locked.last_activity = now
            locked.last_message_at = now
            if locked.first_message_at is None:
                locked.first_message_at = now
            locked.save(
                update_fields=[
                    "next_sequence",
                    "uncompacted_count",
                    "last_activity",
                    "last_message_at",
                    "first_message_at",
                    "tokens_input",
                    "tokens_output",
                    "tokens_total",
                    "messages_with_tokens",
                ]
            )
    except IntegrityError as exc:
        # Only reachable if two writers bypassed the row lock, which the lock prevents;
        # surface it as a conflict rather than a 500.
        raise IdempotencyConflict() from exc
    events.message_appended(message)

    compacted = False
    if trips:
        from memoryapp import compaction  # compaction imports this module

        compacted = compaction.auto_compact(thread_id=locked.pk, keep_from_sequence=sequence)
        if compacted:
            Message.objects.filter(pk=message.pk).update(triggered_compaction=True)
    return AppendResult(message=message, compacted=compacted)


def message_list(
    *,
    thread: Thread,
    limit: int = 20,
    before: int | None = None,
    after: int | None = None,
    order: str = "asc",
) -> dict[str, Any]:
    """Raw rows including compacted ones and summaries (spec 002, GET messages).

    Filters ``before`` (sequenceNumber < before) and ``after`` (> after), sorts by
    ``order`` ("asc" | "desc"), then cuts at ``limit`` (DESIGN.md section 6 item 8).
    Returns ``{"messages": [...], "total", "hasMore"}``; ``total`` counts every row of the
    thread ignoring the cursor, ``hasMore`` whether rows beyond this page match the filter.
    One query for the rows (the thread row was read by the caller), served by the
    (thread, sequence_number) unique index whatever the length. ``total`` comes from the
    thread row's counter; a row appended between the two reads can be on the page, and
    since numbers have no gaps ``total`` is then raised to the highest number seen, so it
    never reads less than the rows the page holds.
    """
    qs = Message.objects.filter(thread=thread)
    if before is not None:
        qs = qs.filter(sequence_number__lt=before)
    if after is not None:
        qs = qs.filter(sequence_number__gt=after)
    qs = qs.order_by("sequence_number" if order == "asc" else "-sequence_number")
    rows = list(qs[: limit + 1])
    highest = max((m.sequence_number for m in rows), default=0)
    return {
        "messages": [message_to_dict(m) for m in rows[:limit]],
        "total": max(thread.message_total, highest),
        "hasMore": len(rows) > limit,
    }


# --- prepare ------------------------------------------------------------------------------


def prepare(*, thread: Thread, message_limit: int = MESSAGE_LIMIT_DEFAULT) -> dict[str, Any]:
    """Build the LLM-ready context window of ``thread`` (spec 002, POST prepare).

    Returns ``{"threadId", "dataset", "messages", "messageCount", "truncated",
    "compacted"}`` plus ``"warning"`` only when ``message_limit`` is below the thread's
    autoCompactThreshold (spec 000, "The messageLimit trap"). ``messages`` is oldest first,
    ``{"role", "content"}`` each; the active summary, when there is one, comes first as a
    system message and does not count against ``message_limit`` (1..100).

    ``thread`` should come from thread_get(with_summary=True): then this costs one query
    (the tail, served by the partial index message_live_tail_idx) whatever the thread's
    length, and no model call.

    The thread row (summary, counters) and the tail are two reads. A compaction that
    commits between them folds the oldest live rows, which would leave them in neither
    the summary read nor the tail; the tail then comes back shorter than the counters say,
    and both are read again (two more queries, only under that race; at most
    PREPARE_ATTEMPTS reads). Rows appended after the thread row was read are left out by
    the ``next_sequence`` bound, so a full-length tail is the window as of that one read.
    """
    for attempt in range(PREPARE_ATTEMPTS):
        tail = list(
            Message.objects.filter(
                thread=thread,
                compacted_at__isnull=True,
                is_summary=False,
                sequence_number__lt=thread.next_sequence,
            )
            .order_by("-sequence_number")
            .values_list("role", "content")[:message_limit]
        )
        if len(tail) >= min(thread.uncompacted_count, message_limit):
            break
        if attempt + 1 < PREPARE_ATTEMPTS:
            try:
                thread = Thread.objects.select_related("active_summary").get(pk=thread.pk)
            except Thread.DoesNotExist as exc:
                raise ThreadNotFound() from exc
    tail.reverse()
    summary = thread.active_summary if thread.active_summary_id else None
    messages: list[dict[str, str]] = []
    if summary is not None:
        messages.append({"role": "system", "content": summary.content})
    messages.extend({"role": role, "content": content} for role, content in tail)
    count = thread.uncompacted_count
    result: dict[str, Any] = {
        "threadId": str(thread.id),
        "dataset": thread.dataset,
        "messages": messages,
        "messageCount": count,
        "truncated": count > message_limit,
        "compacted": summary is not None,
    }
    threshold = thread.auto_compact_threshold
    if threshold is not None and message_limit < threshold:
        result["warning"] = (
            f"messageLimit ({message_limit}) is less than autoCompactThreshold ({threshold}). "
            f"Messages between the summary and the last {message_limit} can be left out of "
            f"the context; set messageLimit to at least {threshold}."
        )
    return result


# --- stats --------------------------------------------------------------------------------


def thread_stats(*, thread: Thread) -> dict[str, Any]:
    """Thread statistics (spec 002, GET stats), read from the thread row's counters.

    ``messageCount`` counts un-compacted messages including the summary row;
    ``tokenUsage`` is None unless some message carried tokens (``averagePerMessage`` is
    totalTokens over the messages that carried tokens, rounded); ``sessionDuration`` is the
    last real (non-summary) message's createdAt minus the first's, None with fewer than
    two real messages (DESIGN.md section 6 item 9). Also reports ``compaction`` state.
    """
    real_messages = thread.message_total - thread.compaction_count
    token_usage = None
    if thread.messages_with_tokens:
        token_usage = {
            "totalInput": thread.tokens_input,
            "totalOutput": thread.tokens_output,
            "totalTokens": thread.tokens_total,
            "averagePerMessage": round(thread.tokens_total / thread.messages_with_tokens),
        }
    duration = None
    if real_messages >= 2 and thread.first_message_at and thread.last_message_at:
        delta = thread.last_message_at - thread.first_message_at
        ms = int(delta.total_seconds() * 1000)
        duration = {"ms": ms, "seconds": ms // 1000}
    return {
        "threadId": str(thread.id),
        "messageCount": thread.uncompacted_count + (1 if thread.active_summary_id else 0),
        "tokenUsage": token_usage,
        "sessionDuration": duration,
        "createdAt": iso_ms(thread.created),
        "lastActivityAt": iso_ms(thread.last_activity),
        "compaction": compaction_state(thread),
    }

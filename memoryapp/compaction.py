"""Compaction: fold older messages into one rolling summary (spec 000, "Compaction").

The protocol (DESIGN.md section 6 items 2-4):

1. Read, without any lock, the un-compacted ordinary messages to fold and the active
   summary.
2. Call the model outside every transaction, so appends never wait on it.
3. In one short transaction under the thread's row lock, check that no other run changed
   the active summary meanwhile, stamp the folded rows (and the old summary) with
   ``compacted_at``, insert the new summary as a ``system`` row with the next sequence
   number, and point the thread at it.

If another run won the race, the loser starts again from step 1 with what is left (at
most ``MAX_ATTEMPTS`` times), so two racing runs leave exactly one active summary and
every folded row inside the range it covers. Messages appended during the model call are
never folded by that run. A failed model call changes nothing but the thread's
``last_compaction_error``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import datetime

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from memoryapp import compaction_history, events, jobs, llm, summary_rules, working
from memoryapp.compaction_history import RunStart
from memoryapp.compaction_lease import compaction_lease
from memoryapp.errors import ModelCallFailed, ThreadNotFound
from memoryapp.llm.port import ModelError, Summary, TranscriptMessage
from memoryapp.models import CompactionRun, Message, Project, Thread
from memoryapp.results import AppendOutcome, AppendResult, AutoCompaction, CompactionResult

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
# Runs one tripping append may make to catch up with appends that arrived during its run;
# past that, a background job (this kind, memoryapp.tasks) takes the catch-up over.
MAX_CATCH_UP_RUNS = 5
AUTO_COMPACTION_JOB = "auto-compaction"
# What a dropped or refused database connection raises (memoryapp.http_errors answers 503).
CONNECTION_LOST = (OperationalError, InterfaceError)


class _LostRace(Exception):
    """Another run committed between our read and our write; start again."""


def _record_error(thread_id: uuid.UUID, text: str) -> str:
    """Record a failed run's ``text`` on the thread (``compaction.lastError``) and tell
    its subscribers; return the text as stored."""
    message = text[:2000]
    Thread.objects.filter(pk=thread_id).update(
        last_compaction_error=message, last_compaction_error_at=timezone.now()
    )
    events.compaction_failed(thread_id, message)
    return message


def _rows_to_fold(
    *, thread_id: uuid.UUID, keep_from_sequence: int | None, require_threshold: bool
) -> tuple[Thread, list[Message]] | None:
    """The thread and its un-compacted ordinary rows below ``keep_from_sequence``, or
    None when there is nothing (or, for an automatic run, not enough) to fold."""
    thread = Thread.objects.select_related("active_summary").filter(pk=thread_id).first()
    if thread is None:
        raise ThreadNotFound()
    rows = Message.objects.filter(
        thread=thread, sequence_number__gt=thread.live_floor, compacted_at__isnull=True, is_summary=False
    )
    if keep_from_sequence is not None:
        rows = rows.filter(sequence_number__lt=keep_from_sequence)
    to_fold = list(
        rows.order_by("sequence_number").only("id", "sequence_number", "role", "content")
    )
    if not to_fold:
        return None
    if require_threshold:
        # An automatic run must still be due when it starts (or restarts after losing a
        # race): a concurrent run may already have folded these rows, or the threshold may
        # have been raised or disabled. Without this, a retry would fold the message the
        # winning run kept verbatim. ``+ 1`` counts the tripping message itself.
        threshold = thread.auto_compact_threshold
        if threshold is None or len(to_fold) + 1 < threshold:
            return None
    return thread, to_fold


def _record_run(locked: Thread, summary_row: Message, *, folded: int) -> None:
    """Advance the locked thread's counters past a committed run that folded ``folded``
    rows into ``summary_row`` (which took the next sequence number)."""
    now = summary_row.created_at
    locked.next_sequence = summary_row.sequence_number + 1
    locked.uncompacted_count = max(locked.uncompacted_count - folded, 0)
    locked.active_summary = summary_row
    locked.compaction_count += 1
    locked.last_compacted_at = now
    locked.last_activity = now
    locked.last_compaction_error = ""
    locked.last_compaction_error_at = None
    locked.save(
        update_fields=[
            "next_sequence",
            "uncompacted_count",
            "active_summary",
            "compaction_count",
            "last_compacted_at",
            "last_activity",
            "last_compaction_error",
            "last_compaction_error_at",
        ]
    )


def _run_once(
    *, thread_id: uuid.UUID, keep_from_sequence: int | None, require_threshold: bool, trigger: str
) -> CompactionResult | None:
    found = _rows_to_fold(
        thread_id=thread_id,
        keep_from_sequence=keep_from_sequence,
        require_threshold=require_threshold,
    )
    if found is None:
        return None
    thread, to_fold = found
    previous = thread.active_summary
    start = RunStart(thread.pk, trigger, "summary", to_fold, previous)

    transcript = [TranscriptMessage(m.sequence_number, m.role, m.content) for m in to_fold]
    max_tokens = int(settings.MEMORY_SUMMARY_MAX_TOKENS)
    previous_text = previous.content if previous else None
    # A fold too short for any useful summary is its own summary (memoryapp.summary_rules).
    summary = summary_rules.verbatim(
        previous_summary=previous_text, messages=transcript, max_tokens=max_tokens
    )
    called = summary is None
    if summary is None:
        # The model call: outside every transaction and lock.
        try:
            summary = summary_rules.checked(
                llm.get_model().summarize(
                    previous_summary=previous_text, messages=transcript, max_tokens=max_tokens
                )
            )
        except ModelError as exc:
            compaction_history.record_failure(start, exc)
            raise
    call_usage = summary.usage if called else None
    try:
        return _commit(start, summary, called=called)
    except _LostRace:
        compaction_history.record(
            start,
            outcome=CompactionRun.Outcome.DISCARDED,
            model=summary.model,
            call_usage=call_usage,
        )
        raise
    except CONNECTION_LOST as exc:  # rolled back; the run is still history (issue 10)
        compaction_history.record_lost_database(
            start, exc, model=summary.model, call_usage=call_usage
        )
        raise


def _commit(start: RunStart, summary: Summary, *, called: bool) -> CompactionResult:
    """Step 3 of the protocol: fold ``start.fold`` into a new summary row holding
    ``summary`` and record the run, in one transaction; _LostRace if another run won.
    ``called`` False: ``summary`` is the fold word for word, no model call was made (the
    row has no model or tokens, the run no cost)."""
    thread_id, to_fold, previous = start.thread_id, start.fold, start.previous
    now = timezone.now()
    fold_ids = [m.id for m in to_fold]
    first = to_fold[0].sequence_number
    last = to_fold[-1].sequence_number
    dropped = compaction_history.dropped_terms(start, summary.text)  # before taking the lock
    with transaction.atomic():
        locked = Thread.objects.select_for_update().filter(pk=thread_id).first()
        if locked is None:
            raise ThreadNotFound()
        if locked.active_summary_id != (previous.id if previous else None):
            raise _LostRace()
        stamped = Message.objects.filter(id__in=fold_ids, compacted_at__isnull=True).update(
            compacted_at=now
        )
        if stamped != len(fold_ids):
            raise _LostRace()  # rolls back the partial stamp
        if previous is not None:
            Message.objects.filter(pk=previous.pk).update(compacted_at=now)
        sequence = locked.next_sequence
        summary_row = Message.objects.create(
            thread=locked,
            sequence_number=sequence,
            role=Message.Role.SYSTEM,
            content=summary.text,
            model=summary.model if called else None,
            is_summary=True,
            covers_from_sequence=min(first, previous.covers_from_sequence or first)
            if previous
            else first,
            covers_to_sequence=last,
            tokens_input=summary.usage.input_tokens if called else None,
            tokens_output=summary.usage.output_tokens if called else None,
            tokens_total=summary.usage.input_tokens + summary.usage.output_tokens
            if called
            else None,
            created_at=now,
        )
        _record_run(locked, summary_row, folded=len(fold_ids))
        compaction_history.record(
            start,
            outcome=CompactionRun.Outcome.SUCCEEDED,
            summary_row=summary_row,
            model=summary.model,
            call_usage=summary.usage if called else None,
            dropped=dropped,
        )
        result = CompactionResult(
            summary=summary_row,
            compacted_count=len(fold_ids),
            from_sequence=first,
            to_sequence=last,
        )
        events.message_appended(summary_row)
        events.thread_compacted(result)
    return result


def compact(
    *,
    thread_id: uuid.UUID,
    keep_from_sequence: int | None = None,
    require_threshold: bool = False,
    trigger: str = CompactionRun.Trigger.MANUAL,
) -> CompactionResult | None:
    """Run the compaction protocol on a thread; return the result, or None if nothing to fold.

    ``keep_from_sequence`` None folds every un-compacted message (manual compaction,
    keepLast 0); a number folds only messages before it (auto-compaction keeps the
    tripping message verbatim, keepLast 1). ``require_threshold`` (auto-compaction)
    returns None unless the messages up to ``keep_from_sequence`` still reach the
    thread's autoCompactThreshold when the run starts. ``trigger`` (a
    CompactionRun.Trigger) is what the run's CompactionRun records as its start.

    Raises ModelCallFailed when the model call fails (nothing is changed; the error is
    recorded on the thread), ThreadNotFound if the thread is deleted meanwhile.
    An agent's thread is compacted by memoryapp.agent_compaction instead (spec 004).
    """
    if _agent_thread(thread_id):
        from memoryapp import agent_compaction  # it builds on this module's protocol

        return agent_compaction.compact(thread_id=thread_id, trigger=trigger)
    for _ in range(MAX_ATTEMPTS):
        try:
            return _run_once(
                thread_id=thread_id,
                keep_from_sequence=keep_from_sequence,
                require_threshold=require_threshold,
                trigger=trigger,
            )
        except _LostRace:
            logger.info("compaction of thread %s lost a race; retrying", thread_id)
            continue
        except ModelError as exc:
            raise ModelCallFailed(str(exc), kind=exc.kind) from exc
    return None


def _agent_thread(thread_id: uuid.UUID) -> bool:
    return Thread.objects.filter(pk=thread_id, agent__isnull=False).exists()


def _newest_live(thread_id: uuid.UUID) -> int | None:
    """The sequence number of the thread's newest un-compacted ordinary message, or None
    (read down to the active summary's end at most: Thread.live_floor)."""
    floor = Thread.objects.filter(pk=thread_id).values("active_summary__covers_to_sequence")
    return (
        Message.objects.filter(
            thread_id=thread_id,
            sequence_number__gt=Coalesce(Subquery(floor), 0),
            compacted_at__isnull=True,
            is_summary=False,
        )
        .order_by("-sequence_number")
        .values_list("sequence_number", flat=True)
        .first()
    )


def _due_again(thread_id: uuid.UUID, seen: int) -> int | None:
    """If the thread's un-compacted count is at its threshold again, the newest un-compacted
    message's sequence number (to keep verbatim), else None. (``seen``: see
    _agent_due_again; the counters answer here without it.)"""
    thread = (
        Thread.objects.filter(pk=thread_id)
        .values_list("auto_compact_threshold", "uncompacted_count")
        .first()
    )
    if thread is None or thread[0] is None or thread[1] < thread[0]:
        return None
    return _newest_live(thread_id)


def _agent_due_again(thread_id: uuid.UUID, seen: int) -> int | None:
    """_due_again on an agent's thread: the newest un-compacted message's sequence number
    when the agent's budget or verbatim-age limit calls for a run again, else None.

    ``seen`` is a message the last run read (its tripping message, or the newest one when
    it was told to look again). With nothing appended after it the answer is None without
    reading further: that run left nothing due, and it read every message there is.
    Otherwise the agent's plan is made afresh (memoryapp.agent_compaction.is_due), which
    reads every verbatim message; only appends that raced with the run pay for it.
    """
    newest = _newest_live(thread_id)
    if newest is None or newest <= seen:
        return None
    from memoryapp import agent_compaction

    return newest if agent_compaction.is_due(thread_id=thread_id) else None


def auto_compact(*, thread_id: uuid.UUID, keep_from_sequence: int) -> AutoCompaction:
    """Compaction tripped by an append (spec 000: keepLast 1) or by a recorded memory tool
    call; the runs that committed. What follows an acknowledged write, so it never
    raises for a failure of its own: a failed model call (see _auto_compact) or a lost
    database connection mid-run comes back as ``error`` (``"database: ..."`` for the
    latter), recorded on the thread when the database answers again, and the next append
    tries again (the un-compacted count is still at the threshold). A run cut off by the
    lost connection committed nothing (its transaction rolled back), so the thread is as
    it was. Raises nothing else a run would not (a bug still surfaces).
    """
    try:
        return _auto_compact(thread_id=thread_id, keep_from_sequence=keep_from_sequence)
    except CONNECTION_LOST as exc:
        logger.warning("auto-compaction of thread %s lost the database", thread_id, exc_info=True)
        return AutoCompaction(error=_record_lost_database(thread_id, exc))


def _record_lost_database(thread_id: uuid.UUID, exc: Exception) -> str:
    message = f"database: {exc}"
    try:
        return _record_error(thread_id, message)
    except CONNECTION_LOST:  # still gone: the error is in the answer, not on the thread
        logger.warning("could not record the lost database on thread %s", thread_id)
        return message


def _auto_steps(
    thread_id: uuid.UUID,
) -> tuple[Callable[[int], CompactionResult | None], Callable[[uuid.UUID, int], int | None]]:
    """``(run, due_again)`` of thread ``thread_id``'s automatic compaction (_auto_compact):
    ``run(keep_from)`` makes one run (None: nothing was due), ``due_again(thread_id,
    keep_from)`` says where the next one starts, or None. An agent's thread is run by
    its agent's budget (memoryapp.agent_compaction, which keeps what fits verbatim
    whatever ``keep_from`` says); any other by its autoCompactThreshold."""
    if _agent_thread(thread_id):
        from memoryapp import agent_compaction

        def agent_run(keep_from: int) -> CompactionResult | None:
            return agent_compaction.auto_run(thread_id=thread_id)

        return agent_run, _agent_due_again

    def run(keep_from: int) -> CompactionResult | None:
        return compact(
            thread_id=thread_id,
            keep_from_sequence=keep_from,
            require_threshold=True,
            trigger=CompactionRun.Trigger.AUTO,
        )

    return run, _due_again


def _auto_compact(*, thread_id: uuid.UUID, keep_from_sequence: int) -> AutoCompaction:
    """The runs of auto_compact.

    Only one automatic run per thread calls the model at a time: an append that trips
    while another run holds the thread's lease returns no runs at once. The holder catches
    up for them: after each committed run (and after releasing the lease, so no append
    falls between the check and the release) it looks again, and while appends made
    during the run have brought the count back to the threshold it runs again, keeping
    the newest message verbatim (at most MAX_CATCH_UP_RUNS runs per call). The lease
    expires on its own after MEMORY_COMPACTION_LEASE_SECONDS, so a crashed worker cannot
    block compaction for good.

    On an agent's thread the agent's budget decides when a run is due, and
    memoryapp.agent_compaction makes the runs; the lease, the looking again and the
    hand-over are the same (_agent_due_again), so appends made during an agent's run are
    caught up with as well.

    Never raises for a model failure: the append already succeeded, the failure is
    recorded on the thread and returned as ``error``, and the next append tries again.
    """
    run, due_again = _auto_steps(thread_id)
    runs: list[CompactionResult] = []
    error: str | None = None
    keep_from: int | None = keep_from_sequence
    for _ in range(MAX_CATCH_UP_RUNS):
        if keep_from is None:
            break
        with compaction_lease(thread_id) as held:
            if not held:
                break  # the holder looks again once it has let go
            try:
                result = run(keep_from)
            except ModelCallFailed as exc:
                error = f"{exc.kind}: {exc}"
                # One line: an unreachable model fails every run the same way, and the
                # chained httpx/genai traceback (dozens of lines a run) says no more
                # than the error; it is kept at DEBUG (LOG_LEVEL=DEBUG) for debugging.
                logger.warning(
                    "auto-compaction of thread %s failed (%s); the thread keeps the error "
                    "and the next append tries again", thread_id, error,
                )
                logger.debug("auto-compaction of thread %s failed", thread_id, exc_info=True)
                break
            except ThreadNotFound:
                break
        if result is not None:
            runs.append(result)
        # Look again even when this run found nothing to fold (another run had folded
        # the rows before ``keep_from`` first): appends turned away while this call held
        # the lease may have brought the count back to the threshold, and nobody else
        # will look (review item 7).
        keep_from = due_again(thread_id, keep_from)
    else:
        if keep_from is not None:  # still due after MAX_CATCH_UP_RUNS: a run stays pending
            _hand_over(thread_id, keep_from)
    return AutoCompaction(runs=tuple(runs), error=error)


def _hand_over(thread_id: uuid.UUID, keep_from: int) -> None:
    """Queue the catch-up that one append's MAX_CATCH_UP_RUNS runs did not finish (appends
    kept arriving during each run), so the appends this call turned away are not left
    un-compacted with no run pending; the job runs auto_compact itself (memoryapp.tasks)."""
    thread = Thread.objects.select_related("project").filter(pk=thread_id).first()
    if thread is None:
        return
    jobs.job_enqueue(
        project=thread.project,
        kind=AUTO_COMPACTION_JOB,
        thread=thread,
        args={"keepFromSequence": keep_from},
    )


def message_append_compacting(
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
    created_at: datetime | None = None,
) -> AppendOutcome:
    """Append a message, then run the auto-compaction it tripped (spec 002 POST messages;
    DESIGN.md section 6 item 2). What /v1 and the chat turn call to append.

    Arguments, errors and guarantees are those of memoryapp.working.message_append; the
    run starts after the append committed, so a failed run never fails the append, not
    even when the database connection drops during it (its error is in
    ``compaction.error`` and on the thread; see auto_compact). When a run committed, the message
    is marked ``triggered_compaction`` so an idempotent replay answers the same
    ``compacted`` flag.
    """
    appended = working.message_append(
        thread=thread,
        project=project,
        role=role,
        content=content,
        tokens=tokens,
        model=model,
        latency_ms=latency_ms,
        metadata=metadata,
        idempotency_key=idempotency_key,
        created_at=created_at,
    )
    return compact_appended(appended)


def compact_appended(appended: AppendResult) -> AppendOutcome:
    """The second half of message_append_compacting: the auto-compaction ``appended`` (a
    committed append, or a replay) tripped, if any.

    Split out so that a caller can tell an error of the append itself (raised before
    anything was written: ThreadNotFound, IdempotencyConflict, InvalidInput) from what
    follows the commit (memoryapp.fastpath declines the former to Django, never the
    latter).
    """
    message = appended.message
    if not appended.compaction_due:
        return AppendOutcome(message=message, replayed=appended.replayed, compaction=None)
    outcome = auto_compact(thread_id=message.thread_id, keep_from_sequence=message.sequence_number)
    if outcome.committed:
        Message.objects.filter(pk=message.pk).update(triggered_compaction=True)
        message.triggered_compaction = True
    return AppendOutcome(message=message, replayed=False, compaction=outcome)

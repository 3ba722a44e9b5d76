"""Recording compaction runs (issue 10 item 2): one CompactionRun per run, written with
what the run did.

memoryapp.compaction and memoryapp.agent_compaction call these: ``record`` inside the
transaction that commits the new summary (so a run and its summary exist together or not
at all), ``record_failure`` when the model call failed (the run and the thread's
``last_compaction_error`` in one transaction; no summary, nothing folded), and
``record`` with ``outcome=DISCARDED`` when the model answered but another run committed
first (its tokens were spent; its summary was thrown away), and ``record_lost_database``
when the database connection dropped while the run committed (a failed run written
after reconnecting, in a transaction of its own; never raising).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from django.db import InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from memoryapp import events, llm, salient, usage
from memoryapp.llm.port import ModelError, Usage
from memoryapp.models import CompactionRun, Message, Thread

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunStart:
    """What a run set out to do: the thread, how it was started (a CompactionRun.Trigger
    value), its ``mode`` (see CompactionRun), the ordinary rows it folds (oldest first,
    not empty) and the summary it replaces (None on the first run)."""

    thread_id: uuid.UUID
    trigger: str
    mode: str
    fold: list[Message]
    previous: Message | None


def dropped_terms(start: RunStart, new_summary: str) -> dict[str, list[str]]:
    """``{"names", "dates", "numbers"}``: the salient terms (memoryapp.salient) of the
    folded messages and the previous summary that ``new_summary`` lacks, each sorted."""
    before = [m.content for m in start.fold]
    if start.previous is not None:
        before.append(start.previous.content)
    return salient.dropped_by_kind(before=before, after=new_summary)


def record(
    start: RunStart,
    *,
    outcome: str,
    summary_row: Message | None = None,
    model: str = "",
    call_usage: Usage | None = None,
    error: str = "",
    dropped: dict[str, list[str]] | None = None,
) -> CompactionRun:
    """Insert the CompactionRun of ``start`` (in the caller's transaction, if any).

    ``summary_row`` is the summary the run committed (succeeded runs only: ``dropped`` is
    computed against its content). ``call_usage`` None means no model call was made
    (an agent's sliding window, or nothing new to summarise): cost 0. Cost is USD at
    the chosen provider's prices (memoryapp.usage.tokens_cost). ``dropped``, when the
    caller computed it already (dropped_terms, outside its lock), is stored as given.
    """
    if dropped is None and summary_row is not None:
        dropped = dropped_terms(start, summary_row.content)
    tokens_in = call_usage.input_tokens if call_usage else 0
    tokens_out = call_usage.output_tokens if call_usage else 0
    return CompactionRun.objects.create(
        thread_id=start.thread_id,
        trigger=start.trigger,
        mode=start.mode,
        outcome=outcome,
        error=error[:2000],
        from_sequence=start.fold[0].sequence_number,
        to_sequence=start.fold[-1].sequence_number,
        folded_count=len(start.fold) if summary_row is not None else 0,
        previous_summary=start.previous,
        summary=summary_row,
        adapter=llm.adapter_name(),
        model=(model or "")[:200],
        model_called=call_usage is not None or outcome == CompactionRun.Outcome.FAILED,
        tokens_input=tokens_in,
        tokens_output=tokens_out,
        cost=usage.tokens_cost(usage.prices(), tokens_in, tokens_out),
        dropped=dropped or {},
        created_at=summary_row.created_at if summary_row is not None else timezone.now(),
    )


def record_failure(start: RunStart, exc: ModelError) -> None:
    """A failed model call: the thread's ``last_compaction_error`` and a failed run, in
    one transaction (nothing else changes), then the ``compaction.failed`` event."""
    message = f"{exc.kind}: {exc}"[:2000]
    with transaction.atomic():
        found = Thread.objects.filter(pk=start.thread_id).update(
            last_compaction_error=message, last_compaction_error_at=timezone.now()
        )
        if found:  # a thread deleted meanwhile has no history to write to
            record(start, outcome=CompactionRun.Outcome.FAILED, error=message)
    events.compaction_failed(start.thread_id, message)


def record_lost_database(
    start: RunStart, exc: Exception, *, model: str = "", call_usage: Usage | None = None
) -> None:
    """A run whose commit lost the database connection (``exc``, an OperationalError or
    InterfaceError): its commit rolled back, so write a ``failed`` run with the error
    ``"database: <exc>"`` (and ``model``/``call_usage`` when its model call answered:
    the tokens were spent) in a transaction of its own, after dropping the broken
    connection so the next statement opens a fresh one.

    Never raises for the database: when it is still unreachable the run goes unrecorded
    and a warning is logged (the caller reports ``exc`` as before). Does not touch the
    thread's ``last_compaction_error``; the caller records that (memoryapp.compaction).
    """
    try:
        if not connection.in_atomic_block:  # a broken connection is closed; next use reopens
            connection.close_if_unusable_or_obsolete()
        with transaction.atomic():
            if Thread.objects.filter(pk=start.thread_id).exists():
                record(
                    start,
                    outcome=CompactionRun.Outcome.FAILED,
                    model=model,
                    call_usage=call_usage,
                    error=f"database: {exc}",
                )
    except (OperationalError, InterfaceError):
        logger.warning("could not record the failed compaction of thread %s", start.thread_id)

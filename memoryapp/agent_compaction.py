"""Compaction of an agent's thread, budgeted by the agent's ``compaction.maxTokens`` (spec 004).

Same protocol as memoryapp.compaction (read, model call outside every transaction,
short commit under the thread's row lock with a race check), with the agent's rules:

- **When**: after an append, once the checkpoint plus the verbatim messages pass the
  agent's maxTokens (memoryapp.tokens) and the verbatim messages alone pass half of it;
  the newest messages that fit in half of it stay verbatim. Independently, once the oldest verbatim message has aged
  MEMORY_AGENT_MAX_VERBATIM_MESSAGES (200) messages, a *forced* checkpoint folds
  everything before the newest message. A manual compact folds everything.
- **summarize**: one model call writes the new summary *and* rewrites the open notes
  (only open ones; a write-back over maxOpenTokens or the store cap, or to a note the
  agent wrote meanwhile, is refused and the note kept as it was). With nothing new to
  summarize (only tool calls and results being folded) no model call is made and the
  previous summary is carried forward.
- **sliding-window**: the oldest messages are dropped with no summary and no model call.
- Either way the new checkpoint row (a summary row, role system) holds the context
  block (memoryapp.notes.context_block) rendered from the summary and the notes as they
  are at commit; it changes only here. A tool call and its result are never split: the
  boundary moves so both are folded or both kept.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from memoryapp import compaction_history, events, llm, notes, summary_rules
from memoryapp.compaction_history import RunStart
from memoryapp.errors import ModelCallFailed, ThreadNotFound
from memoryapp.llm.port import ModelError, OpenNote, Summary, TranscriptMessage
from memoryapp.models import Agent, CompactionRun, MemoryNote, Message, Thread
from memoryapp.results import CompactionResult
from memoryapp.tokens import count_tokens

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3


class _LostRace(Exception):
    pass


def is_tool_call(message: Message) -> bool:
    """Whether ``message`` is a recorded memory tool call (memoryapp.notes.tool_run)."""
    return bool(message.metadata and "toolCall" in message.metadata)


def is_tool_result(message: Message) -> bool:
    """Whether ``message`` is a recorded memory tool result."""
    return bool(message.metadata and "toolResult" in message.metadata)


def _keep_pairs(fold: list[Message], keep: list[Message]) -> tuple[list[Message], list[Message]]:
    # A call is always followed by its result (both written in one locked transaction),
    # so the only split possible is a call folded and its result kept: fold both.
    if fold and keep and is_tool_call(fold[-1]) and is_tool_result(keep[0]):
        return [*fold, keep[0]], keep[1:]
    return fold, keep


def _plan(thread: Thread, agent: Agent, live: list[Message], manual: bool) -> tuple[list[Message], bool]:
    """``(messages to fold, forced)``; nothing to fold is ``([], False)``."""
    if not live:
        return [], False
    if manual:
        return live, False
    checkpoint = thread.active_summary
    used = count_tokens(checkpoint.content) if checkpoint else 0
    sizes = [count_tokens(m.content) for m in live]
    # Only once the verbatim part itself passes half the budget: a large checkpoint (open
    # notes near maxOpenTokens plus the summary) must not make every append a model call.
    verbatim = sum(sizes)
    if used + verbatim > agent.compaction_max_tokens and verbatim > agent.compaction_max_tokens // 2:
        # Keep the newest messages that fit in half the budget (at least the newest one).
        budget, cut = agent.compaction_max_tokens // 2, len(live) - 1
        kept = sizes[cut]
        while cut > 0 and kept + sizes[cut - 1] <= budget:
            cut -= 1
            kept += sizes[cut]
        fold, _ = _keep_pairs(live[:cut], live[cut:])
        return fold, False
    if len(live) >= int(settings.MEMORY_AGENT_MAX_VERBATIM_MESSAGES):
        fold, _ = _keep_pairs(live[:-1], live[-1:])
        return fold, True
    return [], False


def _has_news(fold: list[Message]) -> bool:
    return any(not (is_tool_call(m) or is_tool_result(m)) for m in fold)


def _summary_budget(agent: Agent) -> int:
    return max(min(int(settings.MEMORY_SUMMARY_MAX_TOKENS), agent.compaction_max_tokens // 4), 64)


def _summarize(
    agent: Agent, previous: str | None, fold: list[Message], open_notes: list[MemoryNote]
) -> Summary | None:
    """The model call (outside every transaction), or None when none is due.

    A fold too short for any useful summary is its own summary (memoryapp.summary_rules):
    with no open note to keep current, no model call is made (``model`` is ``""``);
    otherwise the call still rewrites the notes and its summary text is replaced by the
    fold's own words. A summary that says nothing is a failed call (ModelError)."""
    if agent.compaction_type != Agent.CompactionType.SUMMARIZE or not _has_news(fold):
        return None
    # A recorded call goes in as a ``tool`` line too: its text says what was called,
    # and the summarizer must not take the agent's own tool traffic for conversation.
    transcript = [
        TranscriptMessage(
            m.sequence_number, "tool" if is_tool_call(m) else m.role, m.content,
            plumbing=is_tool_call(m) or is_tool_result(m),
        )
        for m in fold
    ]
    budget = _summary_budget(agent)
    verbatim = summary_rules.verbatim(previous_summary=previous, messages=transcript, max_tokens=budget)
    if verbatim is not None and not open_notes:
        return verbatim
    summary = llm.get_model().summarize(
        previous_summary=previous,
        messages=transcript,
        max_tokens=budget,
        open_notes=[OpenNote(n.name, n.description, n.content) for n in open_notes],
    )
    if verbatim is not None:
        return replace(summary, text=verbatim.text)
    return summary_rules.checked(summary)


def _previous_summary(checkpoint: Message | None) -> str | None:
    if checkpoint is None or not checkpoint.metadata:
        return None
    return (checkpoint.metadata.get("checkpoint") or {}).get("summary")


@dataclass(frozen=True)
class _Read:
    thread: Thread
    agent: Agent
    fold: list[Message]
    forced: bool
    open_notes: list[MemoryNote]
    trigger: str

    @property
    def start(self) -> RunStart:
        """The run's CompactionRun start (memoryapp.compaction_history)."""
        return RunStart(
            self.thread.pk, self.trigger, self.agent.compaction_type, self.fold, self.thread.active_summary
        )


def _read(thread_id: uuid.UUID, manual: bool, trigger: str) -> _Read | None:
    thread = (
        Thread.objects.select_related("agent", "active_summary").filter(pk=thread_id).first()
    )
    if thread is None:
        raise ThreadNotFound()
    agent = thread.agent
    if agent is None:
        return None
    live = list(
        Message.objects.filter(
            thread=thread, sequence_number__gt=thread.live_floor, compacted_at__isnull=True, is_summary=False
        )
        .order_by("sequence_number")
        .only("id", "sequence_number", "role", "content", "metadata", "thread_id")
    )
    fold, forced = _plan(thread, agent, live, manual)
    if not fold:
        return None
    open_notes = list(MemoryNote.objects.filter(thread=thread, is_open=True).order_by("pk")) if agent.has_memory else []
    return _Read(
        thread=thread, agent=agent, fold=fold, forced=forced, open_notes=open_notes, trigger=trigger
    )


def _commit(read: _Read, summary: Summary | None) -> CompactionResult:
    previous = read.thread.active_summary
    summary_text = summary.text if summary else _previous_summary(previous)
    now = timezone.now()
    fold_ids = [m.id for m in read.fold]
    first, last = read.fold[0].sequence_number, read.fold[-1].sequence_number
    with transaction.atomic():
        locked = Thread.objects.select_for_update().filter(pk=read.thread.pk).first()
        if locked is None:
            raise ThreadNotFound()
        if locked.active_summary_id != (previous.id if previous else None):
            raise _LostRace()
        stamped = Message.objects.filter(id__in=fold_ids, compacted_at__isnull=True).update(compacted_at=now)
        if stamped != len(fold_ids):
            raise _LostRace()
        if previous is not None:
            Message.objects.filter(pk=previous.pk).update(compacted_at=now)
        called = summary is not None and not summary_rules.is_verbatim(summary)
        usage = summary.usage if summary is not None and called else None
        row = Message.objects.create(
            thread=locked, sequence_number=locked.next_sequence, role=Message.Role.SYSTEM,
            content="", model=summary.model if summary is not None and called else None,
            is_summary=True,
            covers_from_sequence=min(first, previous.covers_from_sequence or first) if previous else first,
            covers_to_sequence=last,
            tokens_input=usage.input_tokens if usage else None,
            tokens_output=usage.output_tokens if usage else None,
            tokens_total=usage.input_tokens + usage.output_tokens if usage else None,
            created_at=now,
        )
        versions = {n.name: n.version for n in read.open_notes}
        refused = []
        for name, content in (summary.notes if summary else {}).items():
            if name not in versions:
                continue
            reason = notes.note_write_back(
                thread=locked, agent=read.agent, name=name, content=content,
                read_version=versions[name], checkpoint=row,
            )
            if reason:
                refused.append({"name": name, "reason": reason})
        row.content = notes.context_block(
            summary=summary_text, notes=list(MemoryNote.objects.filter(thread=locked).order_by("pk"))
        )
        row.metadata = {
            "agentName": read.agent.name,
            "checkpoint": {
                "kind": read.agent.compaction_type, "forced": read.forced, "summary": summary_text,
                "modelCalled": called, "writeBacksRefused": refused,
            },
        }
        row.save(update_fields=["content", "metadata"])
        compaction_history.record(
            read.start, outcome=CompactionRun.Outcome.SUCCEEDED, summary_row=row,
            model=summary.model if summary else "", call_usage=usage,
        )
        locked.next_sequence += 1
        locked.uncompacted_count = max(locked.uncompacted_count - len(fold_ids), 0)
        locked.active_summary = row
        locked.compaction_count += 1
        locked.last_compacted_at = locked.last_activity = now
        locked.last_compaction_error, locked.last_compaction_error_at = "", None
        locked.save(update_fields=[
            "next_sequence", "uncompacted_count", "active_summary", "compaction_count",
            "last_compacted_at", "last_activity", "last_compaction_error", "last_compaction_error_at",
        ])
        result = CompactionResult(
            summary=row, compacted_count=len(fold_ids), from_sequence=first, to_sequence=last
        )
        events.message_appended(row)
        events.thread_compacted(result)
    return result


def _run_once(thread_id: uuid.UUID, manual: bool, trigger: str) -> CompactionResult | None:
    read = _read(thread_id, manual, trigger)
    if read is None:
        return None
    try:
        summary = _summarize(read.agent, _previous_summary(read.thread.active_summary), read.fold, read.open_notes)
    except ModelError as exc:  # the registry's GuardedModel made any failure a ModelError
        compaction_history.record_failure(read.start, exc)
        raise
    try:
        return _commit(read, summary)
    except _LostRace:
        if summary is not None and not summary_rules.is_verbatim(summary):
            # a model call was paid for and its summary thrown away
            compaction_history.record(
                read.start, outcome=CompactionRun.Outcome.DISCARDED, model=summary.model,
                call_usage=summary.usage,
            )
        raise
    except (OperationalError, InterfaceError) as exc:  # rolled back; still history (issue 10)
        compaction_history.record_lost_database(
            read.start, exc, model=summary.model if summary else "",
            call_usage=summary.usage if summary and not summary_rules.is_verbatim(summary) else None,
        )
        raise


def _run(thread_id: uuid.UUID, manual: bool, trigger: str) -> CompactionResult | None:
    for _ in range(MAX_ATTEMPTS):
        try:
            return _run_once(thread_id, manual, trigger)
        except _LostRace:
            logger.info("agent compaction of thread %s lost a race; retrying", thread_id)
    return None


def _run_or_fail(thread_id: uuid.UUID, manual: bool, trigger: str) -> CompactionResult | None:
    try:
        return _run(thread_id, manual=manual, trigger=trigger)
    except ModelError as exc:
        raise ModelCallFailed(str(exc), kind=exc.kind) from exc


def compact(*, thread_id: uuid.UUID, trigger: str = CompactionRun.Trigger.MANUAL) -> CompactionResult | None:
    """Manual compaction of an agent's thread: fold every verbatim message into a new
    checkpoint (POST .../compact). None when nothing is verbatim. Whether a model call was
    made and which note write-backs were refused is in the checkpoint row's
    ``metadata.checkpoint`` (``modelCalled``, ``writeBacksRefused``). Raises ModelCallFailed
    when the summarize call fails (nothing changed; recorded on the thread),
    ThreadNotFound if the thread is gone. ``trigger``: what the run's CompactionRun
    records as its start (memoryapp.compaction.compact passes its own)."""
    return _run_or_fail(thread_id, manual=True, trigger=trigger)


def auto_run(*, thread_id: uuid.UUID) -> CompactionResult | None:
    """One automatic run on an agent's thread: the fold its budget or the verbatim-age
    limit calls for now (see the module docstring), or None when none is due.

    Called only by memoryapp.compaction's automatic compaction, which holds the thread's
    compaction lease around it and looks again after letting go (is_due), so appends
    turned away meanwhile are caught up with; the same guarantee as an ordinary thread's.
    Raises ModelCallFailed when the summarize call fails (nothing changed; recorded on
    the thread), ThreadNotFound if the thread is gone."""
    return _run_or_fail(thread_id, manual=False, trigger=CompactionRun.Trigger.AUTO)


def is_due(*, thread_id: uuid.UUID) -> bool:
    """Whether auto_run would fold anything now (the same plan, read afresh); False for
    a thread that is gone or not an agent's. Reads every verbatim message of the thread."""
    try:
        return _read(thread_id, manual=False, trigger=CompactionRun.Trigger.AUTO) is not None
    except ThreadNotFound:
        return False

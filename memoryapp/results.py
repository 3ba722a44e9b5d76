"""Typed values the working-memory domain returns (spec 002; DESIGN.md section 3).

memoryapp.working and memoryapp.compaction build these; memoryapp.serializers turns
them into the camelCase JSON of /v1, the live events and the chat route. They live in
their own module, below both, so the serializers (which memoryapp.events uses) never
import the domain modules that call memoryapp.events.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memoryapp.models import Episode, Message, Thread


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """One committed compaction run: the new summary row and the ordinary messages it folded.

    ``compacted_count``, ``from_sequence`` and ``to_sequence`` describe only the ordinary
    messages folded in this run, not the previous summary (DESIGN.md section 6 item 3).
    """

    summary: Message
    compacted_count: int
    from_sequence: int
    to_sequence: int


@dataclass(frozen=True, slots=True)
class AutoCompaction:
    """What the automatic compaction an append tripped did (DESIGN.md section 6 item 2).

    ``runs`` are the runs that committed, oldest first (more than one when the run caught
    up with appends made during it); ``error`` is ``"<kind>: <message>"`` when a model
    call failed, ``"database: <message>"`` when the database connection was lost mid-run
    (also recorded on the thread); both empty when another run held the thread's lease
    or nothing was due any more.
    """

    runs: tuple[CompactionResult, ...] = ()
    error: str | None = None

    @property
    def committed(self) -> bool:
        """True if at least one run committed a new summary."""
        return bool(self.runs)


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What memoryapp.working.message_append stored (spec 002, POST messages).

    ``message`` is the stored row (the first one on an idempotent ``replayed`` append);
    ``compaction_due`` is True when this insert brought the thread's un-compacted count to
    its autoCompactThreshold, so the caller must start auto-compaction (never True on a
    replay).
    """

    message: Message
    replayed: bool = False
    compaction_due: bool = False


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    """An append and the auto-compaction it tripped (memoryapp.compaction.message_append_compacting).

    ``compaction`` is None unless the append tripped auto-compaction. ``compacted`` is the
    201 body's flag: a run committed, or, on a ``replayed`` append, the first append's flag.
    """

    message: Message
    replayed: bool
    compaction: AutoCompaction | None

    @property
    def compacted(self) -> bool:
        """Whether this append (or, when replayed, the original one) tripped a run that committed."""
        if self.replayed:
            return bool(self.message.triggered_compaction)
        return self.compaction is not None and self.compaction.committed


@dataclass(frozen=True, slots=True)
class ContextMessage:
    """One message of a context window, as the model receives it.

    On an agent's thread a recorded memory tool call carries ``tool_call`` (``{"id",
    "name", "arguments"}``) and its result ``tool_result`` (``{"id", "name", "isError"}``),
    spec 004; both None otherwise. ``sequence_number`` is the stored message's (None
    for the summary row the window puts first)."""

    role: str
    content: str
    tool_call: dict[str, Any] | None = None
    tool_result: dict[str, Any] | None = None
    sequence_number: int | None = None


@dataclass(frozen=True, slots=True)
class WindowSummary:
    """The active summary row of a context window: its id, the sequence range it covers
    (``from_sequence``..``to_sequence``) and its text."""

    message_id: uuid.UUID
    from_sequence: int | None
    to_sequence: int | None
    content: str


@dataclass(frozen=True, slots=True)
class ContextCount:
    """What a thread's context holds, counted one way for prepare, the dashboard's Stats
    and the turn panel and X-ray (issue 10 item 4; memoryapp.working.context_count).

    ``messages``: the un-compacted ordinary messages, prepare's ``messageCount`` (spec
    002); the summary row is never one of them. ``summary``: whether the active summary
    (on an agent's thread, the checkpoint's context block) rides on top of them.
    """

    messages: int
    summary: bool

    @property
    def rows(self) -> int:
        """GET stats' ``messageCount`` (spec 002: "un-compacted messages including the
        summary row"): ``messages`` plus the summary row when there is one."""
        return self.messages + (1 if self.summary else 0)


@dataclass(frozen=True, slots=True)
class ContextWindow:
    """The LLM-ready context window of a thread (spec 002, POST prepare).

    ``tail`` holds the newest un-compacted ordinary messages, oldest first, at most
    ``message_limit`` (on an agent's thread, one more when the newest message is a tool
    result and the limit 1: a call and its result are never split); ``summary`` the active summary or None; ``message_count`` the
    un-compacted ordinary messages in the thread (may exceed the tail); ``threshold`` the
    thread's autoCompactThreshold. ``agent``: an agent's thread (spec 004), whose context
    is its checkpoint and every message since; ``limit_given``: whether the client chose
    ``message_limit`` (else it is the default window's).
    """

    thread_id: uuid.UUID
    dataset: str
    summary: WindowSummary | None
    tail: tuple[ContextMessage, ...]
    message_count: int
    message_limit: int
    threshold: int | None
    agent: bool = False
    limit_given: bool = True

    @property
    def messages(self) -> list[ContextMessage]:
        """The window as sent to a model: the summary (a system message) first, then the tail."""
        head = [ContextMessage("system", self.summary.content)] if self.summary else []
        return head + list(self.tail)

    @property
    def truncated(self) -> bool:
        """True when more un-compacted messages exist than the tail holds."""
        return self.message_count > self.message_limit

    @property
    def compacted(self) -> bool:
        """True when the window starts with a summary."""
        return self.summary is not None

    @property
    def warning(self) -> str | None:
        """The messageLimit trap warning (spec 000), when ``message_limit`` is below the
        threshold; on an agent's thread, when the window leaves verbatim messages out."""
        if self.agent:
            return self._agent_warning()
        threshold = self.threshold
        if threshold is None or self.message_limit >= threshold:
            return None
        limit = self.message_limit
        return (
            f"messageLimit ({limit}) is less than autoCompactThreshold ({threshold}). "
            f"Messages between the summary and the last {limit} can be left out of "
            f"the context; set messageLimit to at least {threshold}."
        )

    def _agent_warning(self) -> str | None:
        left = self.message_count - len(self.tail)
        if left <= 0:
            return None
        count, limit = self.message_count, self.message_limit
        if self.limit_given:
            return (
                f"messageLimit ({limit}) leaves out the {left} oldest of the {count} messages "
                "since this agent's checkpoint; an agent's context is its checkpoint and every "
                "message since (spec 004). Send prepare without messageLimit to get them all."
                + self._unit_note("messageLimit")
            )
        return (
            f"The {left} oldest of the {count} messages since this agent's checkpoint are left "
            f"out: the window holds at most {limit}, the most an agent keeps verbatim, and its "
            "compaction has not caught up (see the thread's compaction.lastError)."
            + self._unit_note("the limit")
        )

    def _unit_note(self, limit_name: str) -> str:
        """Why the tail holds another number of messages than the limit allows, when it
        does: a tool call and its result are kept together (memoryapp.working.prepare)."""
        held, limit = len(self.tail), self.message_limit
        if held > limit:
            return (
                f" The window holds {held} messages, more than {limit_name} ({limit}): the newest "
                "message is a tool result, given with its call (a call and its result are never split)."
            )
        if held < min(limit, self.message_count):
            return (
                f" The window holds {held} message{'s' if held != 1 else ''}, fewer than {limit_name} ({limit}): the next "
                "older message is a tool result whose call is outside the limit, left out with "
                "it (a call and its result are never split)."
            )
        return ""


class _ThreadRow:
    """What a thread row's read-only view shares with Thread: ``message_total`` from
    ``next_sequence`` (numbers have no gaps). No fields or slots of its own."""

    __slots__ = ()
    next_sequence: int

    @property
    def message_total(self) -> int:
        """Every row in the thread, summaries and compacted rows included (Thread.message_total)."""
        return self.next_sequence - 1


@dataclass(frozen=True, slots=True)
class ThreadView(_ThreadRow):
    """A thread as the /v1 thread resource and the dashboard's thread list show it.

    The columns serializers.thread_to_dict reads, under the model's attribute names (so
    the serializer, CompactionState.of and the templates take it or a Thread alike),
    with the agent's name in place of the Agent; memoryapp.sql.thread_view and
    thread_page read exactly these. ``message_total`` is every row of the thread.
    """

    id: uuid.UUID
    dataset: str
    tags: list[str]
    metadata: dict[str, Any]
    auto_compact_threshold: int | None
    agent_name: str | None
    created: datetime
    last_activity: datetime
    next_sequence: int
    compaction_count: int
    active_summary_id: uuid.UUID | None
    last_compacted_at: datetime | None
    last_compaction_error: str
    last_compaction_error_at: datetime | None

    @property
    def pk(self) -> uuid.UUID:
        """The thread's id, as Thread.pk."""
        return self.id


@dataclass(frozen=True, slots=True)
class ThreadCounters(_ThreadRow):
    """The thread row's counters GET stats reports (spec 002), under the model's
    attribute names, so working.thread_stats and CompactionState.of take it or a Thread
    alike; memoryapp.sql.thread_counters reads exactly these columns."""

    id: uuid.UUID
    created: datetime
    last_activity: datetime
    next_sequence: int
    uncompacted_count: int
    first_message_at: datetime | None
    last_message_at: datetime | None
    tokens_input: int
    tokens_output: int
    tokens_total: int
    messages_with_tokens: int
    compaction_count: int
    active_summary_id: uuid.UUID | None
    last_compacted_at: datetime | None
    last_compaction_error: str
    last_compaction_error_at: datetime | None
    latest_created_at: datetime | None


@dataclass(frozen=True, slots=True)
class MessageView:
    """A raw message row as GET .../messages returns it (spec 002): the columns
    serializers.message_to_dict reads, under the model's attribute names (``tokens`` as
    Message.tokens gives it: ``{"input", "output", "total"}`` or None), read by
    memoryapp.sql.message_page without building a model instance per row."""

    id: uuid.UUID
    thread_id: uuid.UUID
    role: str
    content: str
    sequence_number: int
    tokens: dict[str, int] | None
    model: str | None
    latency_ms: int | None
    metadata: dict[str, Any] | None
    compacted_at: datetime | None
    created_at: datetime
    is_summary: bool
    covers_from_sequence: int | None
    covers_to_sequence: int | None


@dataclass(frozen=True, slots=True)
class MessagePage:
    """One page of raw rows (spec 002, GET messages): ``messages`` in the requested order,
    ``total`` rows in the thread, ``has_more`` whether rows past this page match."""

    messages: Sequence[Message | MessageView]
    total: int
    has_more: bool


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token totals over the messages that reported tokens (spec 002, GET stats)."""

    total_input: int
    total_output: int
    total_tokens: int
    average_per_message: int


@dataclass(frozen=True, slots=True)
class CompactionState:
    """Compaction bookkeeping of a thread: runs so far, the active summary, the last failure.

    ``last_error`` stays set until a later run succeeds (spec 000 "Compaction"; DESIGN.md
    section 6 item 4).
    """

    count: int
    active_summary_id: uuid.UUID | None
    last_compacted_at: datetime | None
    last_error: str | None
    last_error_at: datetime | None

    @classmethod
    def of(cls, thread: Thread | ThreadView | ThreadCounters) -> CompactionState:
        """The state as the thread row records it."""
        return cls(
            count=thread.compaction_count,
            active_summary_id=thread.active_summary_id,
            last_compacted_at=thread.last_compacted_at,
            last_error=thread.last_compaction_error or None,
            last_error_at=thread.last_compaction_error_at,
        )


@dataclass(frozen=True, slots=True)
class ThreadStats:
    """Thread statistics (spec 002, GET stats; DESIGN.md section 6 item 9).

    ``message_count`` counts un-compacted messages including the summary row (spec 002;
    ``context.rows``); ``context`` is the one count of memoryapp.working.context_count;
    ``session_duration_ms`` is None with fewer than two real messages.
    """

    thread_id: uuid.UUID
    message_count: int
    context: ContextCount
    token_usage: TokenUsage | None
    session_duration_ms: int | None
    created_at: datetime
    last_activity_at: datetime
    compaction: CompactionState


# --- Long-term memory (memoryapp.episodic; issue 8) -----------------------------------------


@dataclass(frozen=True, slots=True)
class EndResult:
    """What end() queued: the job and the range of sequence numbers it covers."""

    job_id: str
    thread_id: str
    from_sequence: int
    to_sequence: int
    status: str


@dataclass(frozen=True, slots=True)
class EpisodeBuilt:
    """The episode job's outcome: the episode (None if the range had no raw rows left),
    whether this run wrote it, and what this run did to facts."""

    episode: Episode | None
    created: bool
    facts_created: int = 0
    facts_merged: int = 0
    facts_invalidated: int = 0

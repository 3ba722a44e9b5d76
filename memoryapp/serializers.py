"""The one place camelCase JSON is built from domain values (DESIGN.md section 5).

The /v1 handlers, the live events (memoryapp.events) and the playground's chat route
all serialise threads, messages, context windows, stats and compaction results here,
so a resource has one shape wherever it appears. Only models and memoryapp.results are
imported: the domain modules import memoryapp.events, which imports this module.
"""

from __future__ import annotations

from typing import Any

from memoryapp.models import Entity, Episode, Fact, Job, MemoryNoteVersion, Message, Thread, Turn
from memoryapp.results import (
    AppendOutcome,
    CompactionResult,
    CompactionState,
    ContextMessage,
    ContextWindow,
    EndResult,
    EpisodeBuilt,
    MessagePage,
    MessageView,
    ThreadStats,
    ThreadView,
)
from memoryapp.timefmt import iso_ms

# The 200 body of POST .../compact when there was nothing to fold (spec 002).
NOTHING_TO_COMPACT: dict[str, Any] = {
    "ok": True,
    "compacted": False,
    "message": "Nothing to compact",
}


def compaction_state_to_dict(state: CompactionState) -> dict[str, Any]:
    """``{"count", "activeSummaryId", "lastCompactedAt", "lastError", "lastErrorAt"}``."""
    return {
        "count": state.count,
        "activeSummaryId": str(state.active_summary_id) if state.active_summary_id else None,
        "lastCompactedAt": iso_ms(state.last_compacted_at),
        "lastError": state.last_error,
        "lastErrorAt": iso_ms(state.last_error_at),
    }


def thread_to_dict(thread: Thread | ThreadView) -> dict[str, Any]:
    """The thread resource of the /v1 API and of ``thread.changed`` events, from a Thread
    or the ThreadView GET thread and the thread list read (memoryapp.sql)."""
    if isinstance(thread, ThreadView):
        agent = thread.agent_name
    else:
        agent = thread.agent.name if thread.agent_id and thread.agent else None
    return {
        "threadId": str(thread.id),
        "dataset": thread.dataset,
        "tags": list(thread.tags),
        "metadata": thread.metadata,
        # Never applies to an agent's thread (spec 004; cleared there by migration 0020).
        "autoCompactThreshold": None if agent else thread.auto_compact_threshold,
        "agent": agent,
        "createdAt": iso_ms(thread.created),
        "lastActivityAt": iso_ms(thread.last_activity),
        "totalMessages": thread.message_total,
        "compaction": compaction_state_to_dict(CompactionState.of(thread)),
    }


def message_to_dict(message: Message | MessageView) -> dict[str, Any]:
    """A full message row as GET .../messages and ``message.appended`` events carry it;
    a summary row also has ``summary: {"fromSequence", "toSequence"}``."""
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


def append_to_dict(outcome: AppendOutcome) -> dict[str, Any]:
    """The 201 body of POST .../messages: ``{"messageId", "threadId", "sequenceNumber",
    "role", "createdAt", "compacted"}``."""
    message = outcome.message
    return {
        "messageId": str(message.id),
        "threadId": str(message.thread_id),
        "sequenceNumber": message.sequence_number,
        "role": message.role,
        "createdAt": iso_ms(message.created_at),
        "compacted": outcome.compacted,
    }


def message_page_to_dict(page: MessagePage) -> dict[str, Any]:
    """The 200 body of GET .../messages: ``{"messages", "total", "hasMore"}``."""
    return {
        "messages": [message_to_dict(m) for m in page.messages],
        "total": page.total,
        "hasMore": page.has_more,
    }


def context_message_to_dict(message: ContextMessage) -> dict[str, Any]:
    """``{"role", "content"}`` plus ``toolCall`` / ``toolResult`` on an agent's recorded
    memory tool call and its result (spec 004)."""
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_call is not None:
        data["toolCall"] = message.tool_call
    if message.tool_result is not None:
        data["toolResult"] = message.tool_result
    return data


def window_to_dict(window: ContextWindow) -> dict[str, Any]:
    """The 200 body of POST .../prepare: ``{"threadId", "dataset", "messages",
    "messageCount", "truncated", "compacted"}`` plus ``"warning"`` only when there is one."""
    body: dict[str, Any] = {
        "threadId": str(window.thread_id),
        "dataset": window.dataset,
        "messages": [context_message_to_dict(m) for m in window.messages],
        "messageCount": window.message_count,
        "truncated": window.truncated,
        "compacted": window.compacted,
    }
    warning = window.warning
    if warning is not None:
        body["warning"] = warning
    return body


def stats_to_dict(stats: ThreadStats) -> dict[str, Any]:
    """The 200 body of GET .../stats (spec 002)."""
    usage = stats.token_usage
    ms = stats.session_duration_ms
    return {
        "threadId": str(stats.thread_id),
        "messageCount": stats.message_count,
        "tokenUsage": None
        if usage is None
        else {
            "totalInput": usage.total_input,
            "totalOutput": usage.total_output,
            "totalTokens": usage.total_tokens,
            "averagePerMessage": usage.average_per_message,
        },
        "sessionDuration": None if ms is None else {"ms": ms, "seconds": ms // 1000},
        "createdAt": iso_ms(stats.created_at),
        "lastActivityAt": iso_ms(stats.last_activity_at),
        "compaction": compaction_state_to_dict(stats.compaction),
    }


def compaction_to_dict(result: CompactionResult) -> dict[str, Any]:
    """The 200 body of POST .../compact when something was folded, and of
    ``thread.compacted`` events."""
    return {
        "threadId": str(result.summary.thread_id),
        "summaryMessageId": str(result.summary.id),
        "compactedCount": result.compacted_count,
        "fromSequence": result.from_sequence,
        "toSequence": result.to_sequence,
    }


# --- Long-term memory (issue 8) -----------------------------------------------------------

# The 200 body of POST .../end when no raw message came since the last end() (issue 8).
NOTHING_TO_EXTRACT: dict[str, Any] = {"ok": True, "queued": False, "message": "Nothing to extract"}


def end_to_dict(result: EndResult) -> dict[str, Any]:
    """The 202 body of POST .../end: ``{"jobId", "threadId", "fromSequence", "toSequence",
    "status"}``."""
    return {
        "jobId": result.job_id,
        "threadId": result.thread_id,
        "fromSequence": result.from_sequence,
        "toSequence": result.to_sequence,
        "status": result.status,
    }


def episode_built_to_dict(built: EpisodeBuilt) -> dict[str, Any]:
    """The episode job's result: ``{"episodeId", "created", "factsCreated",
    "factsMerged", "factsInvalidated"}`` (``episodeId`` null when there was nothing)."""
    return {
        "episodeId": str(built.episode.pk) if built.episode is not None else None,
        "created": built.created,
        "factsCreated": built.facts_created,
        "factsMerged": built.facts_merged,
        "factsInvalidated": built.facts_invalidated,
    }


def episode_to_dict(episode: Episode) -> dict[str, Any]:
    """The episode resource: ``{"episodeId", "threadId", "dataset", "fromSequence",
    "toSequence", "title", "summary", "startedAt", "endedAt", "createdAt"}``: when the
    conversation happened (its first and last raw message's createdAt), then when the
    episode was written."""
    return {
        "episodeId": str(episode.id),
        "threadId": str(episode.thread_id),
        "dataset": episode.dataset,
        "fromSequence": episode.from_sequence,
        "toSequence": episode.to_sequence,
        "title": episode.title,
        "summary": episode.summary,
        "startedAt": iso_ms(episode.started_at or episode.created),
        "endedAt": iso_ms(episode.ended_at or episode.created),
        "createdAt": iso_ms(episode.created),
    }


def fact_to_dict(fact: Fact) -> dict[str, Any]:
    """The fact resource (recall's facts have the same shape): ``{"factId", "text",
    "subject", "attribute", "value", "entities", "episodeId", "threadId",
    "sourceMessageIds", "validFrom", "invalidatedAt", "invalidatedBy"}``. ``subject`` and
    ``entities`` are entity names (the subject first); ``attribute`` and ``value`` are
    null when the fact has none. Load with ``select_related("subject")`` and
    ``prefetch_related("entities")`` to keep it query-free."""
    subject = fact.subject.name if fact.subject is not None else None
    names = [e.name for e in sorted(fact.entities.all(), key=lambda e: e.name.casefold())]
    if subject is not None:
        names = [subject] + [n for n in names if n != subject]
    return {
        "factId": str(fact.id),
        "text": fact.text,
        "subject": subject,
        "attribute": fact.attribute or None,
        "value": fact.value or None,
        "entities": names,
        "episodeId": str(fact.episode_id),
        "threadId": str(fact.thread_id),
        "sourceMessageIds": list(fact.source_message_ids),
        "validFrom": iso_ms(fact.valid_from),
        "invalidatedAt": iso_ms(fact.invalidated_at),
        "invalidatedBy": str(fact.invalidated_by_id) if fact.invalidated_by_id else None,
    }


def entity_to_dict(entity: Entity) -> dict[str, Any]:
    """The entity resource: ``{"entityId", "name", "kind", "summary", "factCount"}``;
    ``factCount`` counts current facts about or mentioning it (the ``fact_count``
    annotation of memoryapp.semantic.entity_list, else one query)."""
    count = getattr(entity, "fact_count", None)
    if count is None:
        count = entity.facts.filter(invalidated_at__isnull=True).count()
    return {
        "entityId": str(entity.id),
        "name": entity.name,
        "kind": entity.kind,
        "summary": entity.summary,
        "factCount": int(count),
    }


def job_to_dict(job: Job) -> dict[str, Any]:
    """The wire shape of a job (GET /v1/memory/jobs/{jobId}, the ``job.changed`` event):
    ``{"jobId", "kind", "status", "error", "result", "threadId", "attempts", "createdAt",
    "startedAt", "finishedAt"}``; ``error`` is null unless the job failed."""
    return {
        "jobId": str(job.pk),
        "kind": job.kind,
        "status": job.status,
        "error": job.error or None,
        "result": job.result,
        "threadId": str(job.thread_id) if job.thread_id else None,
        "attempts": job.attempts,
        "createdAt": iso_ms(job.created_at),
        "startedAt": iso_ms(job.started_at),
        "finishedAt": iso_ms(job.finished_at),
    }


def note_version_to_dict(version: MemoryNoteVersion) -> dict[str, Any]:
    """One memory note version: ``{"name", "version", "description", "content", "author",
    "action", "messageId", "createdAt"}``."""
    return {
        "name": version.name,
        "version": version.version,
        "description": version.description,
        "content": version.content,
        "author": version.author,
        "action": version.action,
        "messageId": str(version.message_id) if version.message_id else None,
        "createdAt": iso_ms(version.created),
    }


def turn_to_dict(turn: Turn) -> dict[str, Any]:
    """One playground chat turn with its cost lines (usage.py): ids of its messages, the
    context it recorded and ``usage: [{"kind", "quantity", "cost"}]`` (cost a string, USD)."""
    return {
        "turnId": str(turn.pk),
        "userMessageId": str(turn.user_message_id),
        "assistantMessageId": str(turn.assistant_message_id) if turn.assistant_message_id else None,
        "createdAt": iso_ms(turn.created),
        "adapter": turn.adapter,
        "systemPrompt": turn.system_prompt,
        "context": turn.context,
        "error": turn.error,
        "usage": [
            {"kind": line.kind, "quantity": line.quantity, "cost": str(line.cost)}
            for line in turn.usage_lines.all()
        ],
    }

"""Agents: definitions, their tools, and the context of an agent's thread (spec 004).

``agent_define`` creates or updates an agent (defining again changes its config only;
history, checkpoint and notes stay). ``thread_tool_call`` runs one memory tool (memoryapp.notes) and then lets the
agent's compaction look at the grown history (memoryapp.agent_compaction).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError, Sum
from django.utils import timezone

from memoryapp import notes, working
from memoryapp.compaction import auto_compact
from memoryapp.errors import AgentInUse, AgentNotFound, InvalidInput, ThreadNotFound
from memoryapp.llm.port import ToolSpec
from memoryapp.models import Agent, MemoryNote, Project, Thread
from memoryapp.results import AutoCompaction
from memoryapp.timefmt import iso_ms

NAME_RULE = notes.NAME_RULE


def agent_to_dict(agent: Agent) -> dict[str, Any]:
    """The agent resource: ``{"name", "systemPrompt", "memory": {"maxOpenTokens"} | null,
    "compaction": {"type", "maxTokens"}, "createdAt", "updatedAt"}``."""
    return {
        "name": agent.name,
        "systemPrompt": agent.system_prompt,
        "memory": {"maxOpenTokens": agent.max_open_tokens} if agent.has_memory else None,
        "compaction": {"type": agent.compaction_type, "maxTokens": agent.compaction_max_tokens},
        "createdAt": iso_ms(agent.created),
        "updatedAt": iso_ms(agent.updated),
    }


def _issue(path: list[str | int], message: str, code: str) -> InvalidInput:
    return InvalidInput([{"path": path, "message": message, "code": code}])


def check_name(name: str) -> None:
    """Raise InvalidInput (path ``["name"]``) unless ``name`` is a valid agent name."""
    if not notes.NAME_PATTERN.match(name):
        raise _issue(["name"], f"An agent name is {NAME_RULE}", "invalid_name")


def check_budget(*, max_open_tokens: int | None, max_tokens: int) -> None:
    """The one hard rule of ``maxOpenTokens`` (spec 004 "Turning it on"): it must be below
    half of ``compaction.maxTokens``. Raises InvalidInput naming both numbers and the two
    ways out."""
    if max_open_tokens is None or max_open_tokens * 2 < max_tokens:
        return
    raise _issue(
        ["memory", "maxOpenTokens"],
        f"memory.maxOpenTokens ({max_open_tokens}) must be below half of compaction.maxTokens "
        f"({max_tokens} / 2 = {max_tokens / 2:g}), so open memories cannot crowd out recent "
        f"history. Either give the agent more room (compaction.maxTokens above "
        f"{max_open_tokens * 2}) or take less of it for memories (memory.maxOpenTokens "
        f"below {max_tokens / 2:g}).",
        "max_open_tokens_too_large",
    )


def agent_define(
    *,
    project: Project,
    name: str,
    system_prompt: str = "",
    memory: dict[str, Any] | None = None,
    compaction: dict[str, Any] | None = None,
) -> tuple[Agent, bool]:
    """Create or update the agent ``name`` of ``project``; return ``(agent, created)``.

    ``memory`` None: no memory tools; ``{}`` the defaults; ``{"maxOpenTokens": n}``.
    ``compaction``: ``{"type": "summarize" | "sliding-window", "maxTokens": n}``, either
    key optional (summarize, MEMORY_AGENT_DEFAULT_MAX_TOKENS). Defining again replaces
    the config only; the agent's threads keep history, checkpoint and notes.
    Raises InvalidInput for a bad name or a maxOpenTokens not below half of maxTokens.
    """
    check_name(name)
    compaction = compaction or {}
    max_tokens = int(compaction.get("maxTokens") or settings.MEMORY_AGENT_DEFAULT_MAX_TOKENS)
    max_open = None
    if memory is not None:
        max_open = int(memory.get("maxOpenTokens") or settings.MEMORY_AGENT_DEFAULT_MAX_OPEN_TOKENS)
    check_budget(max_open_tokens=max_open, max_tokens=max_tokens)
    now = timezone.now()
    values = {
        "system_prompt": system_prompt,
        "max_open_tokens": max_open,
        "compaction_type": compaction.get("type") or Agent.CompactionType.SUMMARIZE,
        "compaction_max_tokens": max_tokens,
        "updated": now,
    }
    for _ in range(2):  # a concurrent first definition of the same name: update it instead
        try:
            with transaction.atomic():
                agent, created = Agent.objects.select_for_update().update_or_create(
                    project=project, name=name, defaults=values, create_defaults={**values, "created": now}
                )
            return agent, created
        except IntegrityError:
            continue
    raise _issue(["name"], "The agent is being defined concurrently; try again", "conflict")


#: Threads an over-budget warning lists (its ``threadCount`` counts them all).
OVER_BUDGET_LISTED = 100


def over_budget(*, agent: Agent) -> dict[str, Any] | None:
    """The agent's threads whose notes are over its ``maxOpenTokens`` (as PUT answers it
    after a redefinition lowered it), or None when there are none or it has no memory:
    ``{"maxOpenTokens", "threadCount", "threads": [{"threadId", "openTokens", "notes":
    [{"name", "tokens", "isOpen"}]}], "message"}``.

    A thread is listed when its open notes together pass the budget, or when a note of it
    passes the budget on its own (``notes``; such a closed note cannot be opened, so
    neither written nor deleted, until the budget is raised again; such an open one must
    be shortened before it can be closed). Nothing is changed: the open set stays as the
    agent left it (spec 004: only the agent opens and closes). At most OVER_BUDGET_LISTED
    threads are listed, oldest first; ``threadCount`` counts all."""
    budget = agent.max_open_tokens
    if budget is None:
        return None
    mine = MemoryNote.objects.filter(thread__agent=agent)
    held = {
        row["thread_id"]: int(row["held"])
        for row in mine.filter(is_open=True).values("thread_id").annotate(held=Sum("tokens")).order_by()
    }
    large: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for thread_id, name, tokens, is_open in mine.filter(tokens__gt=budget).order_by("pk").values_list(
        "thread_id", "name", "tokens", "is_open"
    ):
        large.setdefault(thread_id, []).append({"name": name, "tokens": tokens, "isOpen": is_open})
    over = {t for t, h in held.items() if h > budget} | set(large)
    if not over:
        return None
    listed = list(
        Thread.objects.filter(pk__in=over).order_by("created", "pk").values_list("pk", flat=True)[:OVER_BUDGET_LISTED]
    )
    return {
        "maxOpenTokens": budget,
        "threadCount": len(over),
        "threads": [
            {"threadId": str(t), "openTokens": held.get(t, 0), "notes": large.get(t, [])} for t in listed
        ],
        "message": _over_budget_message(budget, over, held, large),
    }


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _over_budget_message(
    budget: int, over: set[uuid.UUID], held: dict[uuid.UUID, int], large: dict[uuid.UUID, list[dict[str, Any]]]
) -> str:
    closed = sum(1 for found in large.values() for n in found if not n["isOpen"])
    opened = sum(1 for found in large.values() for n in found if n["isOpen"])
    # Threads over it together, not already named by an open note over it on its own.
    crowded = sum(
        1 for t, h in held.items() if h > budget and not any(n["isOpen"] for n in large.get(t, []))
    )
    parts = []
    if closed:
        parts.append(
            f"{_count(closed, 'closed note is', 'closed notes are')} larger than it on "
            f"{'its' if closed == 1 else 'their'} own and cannot be opened (nor so written or "
            "deleted) until it is raised again"
        )
    if opened:
        parts.append(
            f"{_count(opened, 'open note is', 'open notes are')} larger than it and must be "
            "shortened before being closed"
        )
    if crowded:
        parts.append(
            f"{_count(crowded, 'thread holds', 'threads hold')} open notes that together pass it "
            "(they stay open until the agent closes them)"
        )
    return (
        f"maxOpenTokens {budget} is below what {_count(len(over), 'thread', 'threads')} of this "
        f"agent {'holds' if len(over) == 1 else 'hold'}: {'; '.join(parts)}. The notes were left as they are."
    )


def agent_get(*, project: Project, name: str) -> Agent:
    """The agent ``name`` of ``project``; raises AgentNotFound."""
    agent = Agent.objects.filter(project=project, name=name).first()
    if agent is None:
        raise AgentNotFound()
    return agent


def agent_delete(*, project: Project, name: str) -> None:
    """Delete the agent ``name`` of ``project`` (DELETE /v1/memory/agents/{name}).

    Raises AgentNotFound when there is none, AgentInUse (with the count) while any thread
    of the project is bound to it: the delete runs in one transaction with the agent's
    row locked (the threads' foreign key protects the agent), so nothing is half-deleted.
    """
    with transaction.atomic():
        agent = Agent.objects.select_for_update().filter(project=project, name=name).first()
        if agent is None:
            raise AgentNotFound()
        threads = agent.threads.count()
        if threads:
            raise AgentInUse(threads)
        try:
            agent.delete()
        except ProtectedError as exc:  # a thread bound to it since the count
            raise AgentInUse(len(exc.protected_objects)) from None


def agent_list(*, project: Project) -> list[Agent]:
    """The project's agents, by name."""
    return list(Agent.objects.filter(project=project))


def agent_for_thread(*, project: Project, name: str) -> Agent:
    """The agent named in POST /threads ``agent``; InvalidInput (path ``["agent"]``) when
    the project has no agent of that name."""
    agent = Agent.objects.filter(project=project, name=name).first()
    if agent is None:
        raise _issue(
            ["agent"],
            f"No agent named {name!r} in this project; define it with PUT /v1/memory/agents/{{name}}",
            "unknown_agent",
        )
    return agent


def agent_thread_create(*, project: Project, name: str, **fields: Any) -> Thread:
    """A new thread of ``project`` bound to its agent ``name`` (POST /threads ``agent``);
    ``fields`` as working.thread_create takes them.

    Raises InvalidInput (``agent``, unknown_agent) when the project has no such agent,
    also when the agent is deleted while the thread is being created: the thread's
    foreign key then fails at its commit and nothing is written (agent_delete locks the
    agent and counts its threads, so one of the two always loses cleanly)."""
    agent = agent_for_thread(project=project, name=name)
    try:
        return working.thread_create(project=project, agent=agent, **fields)
    except IntegrityError:
        if Agent.objects.filter(pk=agent.pk).exists():
            raise
        agent_for_thread(project=project, name=name)  # raises unknown_agent unless redefined
        raise


def agent_tools(*, agent: Agent) -> list[ToolSpec]:
    """The tools offered to the agent: the three memory tools when it has memory, else none."""
    return list(notes.TOOL_SPECS) if agent.has_memory else []


@dataclass(frozen=True)
class ToolCallOutcome:
    """A tool call as run and recorded (``record``) and the compaction it led to."""

    record: notes.ToolCallRecord
    compaction: AutoCompaction


def thread_tool_call(
    *,
    project: Project,
    thread_id: str | uuid.UUID,
    name: str,
    arguments: dict[str, Any],
    call_id: str | None = None,
    unique_call_id: bool = False,
) -> ToolCallOutcome:
    """Run one memory tool on the thread (POST .../threads/{threadId}/tools; spec 004 "The
    tools"), record the call and its result, then compact if the agent's budget says so.

    Raises ThreadNotFound (missing, malformed or another project's thread) and
    NoMemoryAgent (the thread has no agent with memory), and with ``unique_call_id`` (a
    client's call) DuplicateCallId when the thread already holds a call with ``call_id``.
    Tool errors are outcomes.
    """
    pk = working.thread_pk(thread_id)
    if not Thread.objects.filter(pk=pk, project=project).exists():
        raise ThreadNotFound()
    record = notes.tool_run(
        thread_id=pk, name=name, arguments=arguments, call_id=call_id, unique_call_id=unique_call_id
    )
    # The agent's budget decides (memoryapp.agent_compaction); through compaction's entry,
    # so a lost database mid-run never turns the recorded call into an error.
    after = auto_compact(thread_id=pk, keep_from_sequence=record.result_message.sequence_number)
    return ToolCallOutcome(record=record, compaction=after)

"""/v1/memory/agents and an agent thread's tools and notes (spec 004; DESIGN.md section 5).

- ``PUT /agents/{name}`` define (201) or redefine (200); ``GET /agents/{name}``;
  ``GET /agents``; ``GET /agents/{name}/tools`` (function declarations).
- ``POST /working/threads/{threadId}/tools`` ``{"name", "arguments"}`` runs one memory
  tool: 200 ``{"result", "isError", ...}`` (a tool error is an answer for the model).
- ``GET /working/threads/{threadId}/notes`` the thread's store.

Handlers are thin: parse, call one function of memoryapp.agents / memoryapp.notes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.http import HttpRequest
from ninja import Router, Status
from pydantic import Field

from memoryapp import agents, notes, working
from memoryapp.api.auth import request_project
from memoryapp.api.schemas import ERRORS, ErrorOut, _In, _Out
from memoryapp.validation import (
    INTEGRAL,
    CallId,
    Name,
    SystemPrompt,
    pydantic_json_rule,
)

router = Router(tags=["agents"])

Tokens = Annotated[int, Field(strict=True, ge=1, le=100_000_000), INTEGRAL]


class AgentMemoryIn(_In):
    """``memory``: ``{}`` takes the defaults (maxOpenTokens 4000)."""

    maxOpenTokens: Tokens | None = None


class AgentCompactionIn(_In):
    """``compaction``: the strategy and the agent's token budget."""

    type: Literal["summarize", "sliding-window"] = "summarize"
    maxTokens: Annotated[int, Field(strict=True, ge=200, le=100_000_000), INTEGRAL] | None = None


class AgentIn(_In):
    """PUT /agents/{name}: the whole config; ``memory`` absent or null means no memory."""

    systemPrompt: SystemPrompt = ""
    memory: AgentMemoryIn | None = None
    compaction: AgentCompactionIn | None = None


class AgentMemoryOut(_Out):
    maxOpenTokens: int


class AgentCompactionOut(_Out):
    type: str
    maxTokens: int


class AgentOut(_Out):
    name: str
    systemPrompt: str
    memory: AgentMemoryOut | None
    compaction: AgentCompactionOut
    createdAt: str
    updatedAt: str


class OverBudgetNoteOut(_Out):
    name: str
    tokens: int
    isOpen: bool


class OverBudgetThreadOut(_Out):
    threadId: str
    openTokens: int
    notes: list[OverBudgetNoteOut]


class OverBudgetOut(_Out):
    """The agent's threads now over its maxOpenTokens (memoryapp.agents.over_budget)."""

    maxOpenTokens: int
    threadCount: int
    threads: list[OverBudgetThreadOut]
    message: str


class AgentPutOut(AgentOut):
    """PUT's answer: the agent, and ``overBudget`` (null when nothing is over) naming the
    threads and notes its maxOpenTokens is now below, so a lowered budget is not silent."""

    overBudget: OverBudgetOut | None


class AgentListOut(_Out):
    agents: list[AgentOut]


class ToolOut(_Out):
    name: str
    description: str
    parameters: dict[str, Any]


class ToolListOut(_Out):
    tools: list[ToolOut]


class ToolCallIn(_In):
    """POST .../tools: the call the agent's model made."""

    name: Name
    # Storable and finite like thread metadata, each problem named at its own path
    # (["arguments", "content"]), but not its 16 KiB cap: a note's content rides in the
    # arguments, and the store cap (checked by the tool) bounds it.
    arguments: Annotated[dict[str, Any], pydantic_json_rule()] = {}
    callId: CallId | None = None


class NoteOut(_Out):
    name: str
    description: str
    content: str
    isOpen: bool
    tokens: int
    bytes: int
    updatedAt: str


class ToolCallOut(_Out):
    result: str
    isError: bool
    name: str
    callId: str
    callSequence: int
    resultSequence: int
    note: NoteOut | None


class NotesOut(_Out):
    notes: list[NoteOut]
    openTokens: int
    maxOpenTokens: int | None
    storeBytes: int
    storeCapBytes: int
    memoryEnabled: bool


@router.put("/agents/{agent_name}", response={200: AgentPutOut, 201: AgentPutOut, **ERRORS}, summary="Define an agent")
def put_agent(request: HttpRequest, agent_name: str, payload: AgentIn) -> Status[dict[str, Any]]:
    """Create (201) or update (200) the agent; its threads keep history and notes.
    ``overBudget`` names the threads whose notes its maxOpenTokens is now below (a
    warning: the definition is saved all the same, spec 004 "Turning it on")."""
    agent, created = agents.agent_define(
        project=request_project(request),
        name=agent_name,
        system_prompt=payload.systemPrompt,
        memory=payload.memory.model_dump(exclude_none=True) if payload.memory is not None else None,
        compaction=payload.compaction.model_dump(exclude_none=True) if payload.compaction else None,
    )
    return Status(
        201 if created else 200, {**agents.agent_to_dict(agent), "overBudget": agents.over_budget(agent=agent)}
    )


@router.get("/agents", response={200: AgentListOut, **ERRORS}, summary="List agents")
def list_agents(request: HttpRequest) -> dict[str, Any]:
    return {"agents": [agents.agent_to_dict(a) for a in agents.agent_list(project=request_project(request))]}


@router.get("/agents/{agent_name}", response={200: AgentOut, **ERRORS}, summary="Get an agent")
def get_agent(request: HttpRequest, agent_name: str) -> dict[str, Any]:
    return agents.agent_to_dict(agents.agent_get(project=request_project(request), name=agent_name))


@router.delete(
    "/agents/{agent_name}", response={204: None, 409: ErrorOut, **ERRORS}, summary="Delete an agent"
)
def delete_agent(request: HttpRequest, agent_name: str) -> Status[None]:
    """204 once deleted; 409 while threads are bound to it (they go first), 404 if none."""
    agents.agent_delete(project=request_project(request), name=agent_name)
    return Status(204, None)


@router.get("/agents/{agent_name}/tools", response={200: ToolListOut, **ERRORS}, summary="An agent's tools")
def get_tools(request: HttpRequest, agent_name: str) -> dict[str, Any]:
    """The memory tools as function declarations (empty when the agent has no memory)."""
    agent = agents.agent_get(project=request_project(request), name=agent_name)
    return {"tools": [notes.tool_to_dict(t) for t in agents.agent_tools(agent=agent)]}


@router.post(
    "/working/threads/{thread_id}/tools",
    response={200: ToolCallOut, 409: ErrorOut, **ERRORS},
    summary="Run a memory tool",
)
def run_tool(request: HttpRequest, thread_id: str, payload: ToolCallIn) -> dict[str, Any]:
    """Runs one tool call of the thread's agent and records it with its result."""
    outcome = agents.thread_tool_call(
        project=request_project(request),
        thread_id=thread_id,
        name=payload.name,
        arguments=payload.arguments,
        call_id=payload.callId,
        unique_call_id=True,
    )
    return outcome.record.to_dict()


@router.get(
    "/working/threads/{thread_id}/notes",
    response={200: NotesOut, 409: ErrorOut, **ERRORS},
    summary="A thread's memory notes",
)
def get_notes(request: HttpRequest, thread_id: str) -> dict[str, Any]:
    thread = working.thread_get(project=request_project(request), thread_id=thread_id)
    return notes.notes_view(thread=thread)

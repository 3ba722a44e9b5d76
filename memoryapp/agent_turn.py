"""The agent's part of a playground turn: tools, history with tool calls, the tool loop's
calls and their cost (spec 004 "The tools", "What it costs"; issue 9 item 6).

memoryapp.chat runs the turn; on a thread whose agent has memory it offers the three
tools as function declarations, and each call the model makes is run here through
memoryapp.agents.thread_tool_call (recorded in the thread's history with its result,
in order), answered back to the model, and priced: a flat "Memory access" fee per call
(errors included, MEMORY_PRICE_MEMORY_ACCESS USD), and a compaction line when the call's
append compacted the thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings

from memoryapp import agents, usage
from memoryapp.llm import Prices
from memoryapp.llm.port import ChatMessage, ToolCall, ToolResult, ToolSpec
from memoryapp.models import Agent, Message, Thread, UsageLine
from memoryapp.results import ContextMessage


def thread_agent(thread: Thread) -> Agent | None:
    """The thread's agent (one query, or none when it has no agent)."""
    if thread.agent_id is None:
        return None
    return Agent.objects.filter(pk=thread.agent_id).first()


def system_prompt(agent: Agent | None, prompt: str) -> str:
    """The agent's system prompt, then the turn's own (either may be empty)."""
    parts = [agent.system_prompt.strip() if agent else "", prompt.strip()]
    return "\n\n".join(p for p in parts if p)


def tools_for(agent: Agent | None) -> list[ToolSpec]:
    """The tools a turn offers: the memory tools when the agent has memory, else none."""
    return agents.agent_tools(agent=agent) if agent is not None else []


def max_rounds() -> int:
    """Model rounds a turn may spend on tool calls (MEMORY_AGENT_MAX_TOOL_ROUNDS)."""
    return int(settings.MEMORY_AGENT_MAX_TOOL_ROUNDS)


def chat_message(message: ContextMessage) -> ChatMessage:
    """A context-window message as the model port takes it: a recorded tool call becomes
    an assistant message with its ToolCall, a recorded result a tool message with its
    ToolResult (so the model sees the exchange as its own function calling)."""
    call, result = message.tool_call, message.tool_result
    if call is not None:
        return ChatMessage(
            role="assistant",
            tool_calls=(ToolCall(name=str(call.get("name", "")), arguments=dict(call.get("arguments") or {}),
                                 call_id=str(call.get("id", ""))),),
        )
    if result is not None:
        return ChatMessage(
            role="tool",
            tool_result=ToolResult(
                name=str(result.get("name", "")), content=message.content,
                is_error=bool(result.get("isError")), call_id=str(result.get("id", "")),
            ),
        )
    return ChatMessage(role=message.role, content=message.content)


@dataclass(frozen=True)
class RanCall:
    """One tool call of the turn: the two messages to hand back to the model, the view
    for the turn's context, its cost lines (memory access, compaction), and the two rows
    recorded in the thread's history as a context window holds them (for the X-ray of
    the next model call)."""

    messages: tuple[ChatMessage, ChatMessage]
    view: dict[str, Any]
    lines: list[UsageLine]
    recorded: tuple[ContextMessage, ContextMessage]


def run_call(*, thread: Thread, call: ToolCall, prices: Prices) -> RanCall:
    """Run one memory tool call the model made on ``thread`` and price it. Raises
    ThreadNotFound if the thread is gone, NoMemoryAgent if its agent lost its memory."""
    outcome = agents.thread_tool_call(
        project=thread.project, thread_id=thread.pk, name=call.name, arguments=call.arguments,
        call_id=call.call_id or None,
    )
    record = outcome.record
    fee = Decimal(str(settings.MEMORY_PRICE_MEMORY_ACCESS))
    lines = [
        UsageLine(
            kind=UsageLine.Kind.MEMORY_ACCESS, quantity=1, unit="call", cost=fee,
            detail=f"{call.name}" + (" (error)" if record.outcome.is_error else ""),
        )
    ]
    lines += [usage.compaction_line(prices, run.summary) for run in outcome.compaction.runs]
    result = ToolResult(
        name=call.name, content=record.result_message.content, is_error=record.outcome.is_error,
        call_id=record.call_id,
    )
    return RanCall(
        messages=(
            # The call as recorded: a call too large to store goes on cut, as the history has it.
            ChatMessage(role="assistant", tool_calls=(ToolCall(call.name, record.arguments, record.call_id),)),
            ChatMessage(role="tool", tool_result=result),
        ),
        view={
            "name": call.name, "arguments": record.arguments, "result": record.result_message.content,
            "isError": record.outcome.is_error, "callSequence": record.call_message.sequence_number,
        },
        lines=lines,
        recorded=(_recorded(record.call_message), _recorded(record.result_message)),
    )


def _recorded(message: Message) -> ContextMessage:
    meta = message.metadata or {}
    return ContextMessage(
        message.role, message.content, tool_call=meta.get("toolCall"), tool_result=meta.get("toolResult"),
        sequence_number=message.sequence_number,
    )

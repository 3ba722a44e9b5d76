"""The turn X-ray: the exact model input of a chat turn, each piece tagged by where it came
from, and its replay on any registered adapter (issue 10 item 1).

``input_record`` builds the JSON stored on the Turn (``context["input"]``) from what the
turn actually handed the model: the system instruction text and its parts, every
message, the tool declarations. ``replay`` runs that stored input again on an adapter of
the registry and returns the reply; nothing is stored.

Stored shape::

    {"systemInstruction": str, "contextWindow": int, "totalTokens": int,
     "layers": {"recall": int, "agentPrompt": int, "systemPrompt": int,
                "summary": int, "messages": int, "tools": int},
     "systemParts": [{"source", "text", "tokens", "items": [...]}],
     "messages": [{"role", "content", "tokens", "source": {...},
                   "toolCall"?: {...}, "toolResult"?: {...}}],
     "tools": [{"name", "description", "parameters", "tokens"}]}

A turn whose model asked for memory tools called the model more than once (the tool loop,
memoryapp.chat); ``Turn.context["calls"]`` then holds one entry per call::

    {"call": int, "totalTokens": int, "layers": {...}, "added": [message, ...],
     "ms": int, "usage": {"inputTokens", "outputTokens"} | None,
     "toolCalls": [{"name", "arguments"}], "text": str}

``added`` are the messages (the shape above) the loop appended to the input since the
call before (a tool call and its result, as the thread's history records them; none for
call 1), ``layers``/``totalTokens`` that call's whole input, ``ms`` its latency,
``usage`` what the provider reported for it, ``toolCalls`` what it asked for and
``text`` any text it wrote before asking (cut to memoryapp.chat.VIEW_CHARS; the last
call's text is the reply). ``call_input`` rebuilds any call's whole input.

A message's ``source`` is ``{"kind": "summary", "messageId", "fromSequence",
"toSequence"}`` (the active summary row and the range it covers; on an agent's thread
``"contextBlock"``: the checkpoint with the open notes) or ``{"kind": "message",
"sequenceNumber"}``. A recall part's ``items`` name each recalled fact (``factId``,
``threadId``, ``sourceMessageIds``), episode (``episodeId``, ``threadId``,
``fromSequence``, ``toSequence``) and message (``messageId``, ``threadId``,
``sequenceNumber``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memoryapp.agent_turn import chat_message
from memoryapp.llm import PROVIDERS
from memoryapp.llm.input_tokens import input_tokens, message_tokens, system_part_tokens, tool_tokens
from memoryapp.llm.port import ChatMessage, ModelError, ToolSpec
from memoryapp.llm.registry import GuardedModel
from memoryapp.results import ContextMessage, ContextWindow


def _recall_items(recalled: dict[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for fact in recalled.get("facts") or ():
        items.append({
            "kind": "fact", "factId": fact["factId"], "threadId": fact.get("threadId"),
            "sourceMessageIds": list(fact.get("sourceMessageIds") or ()),
        })
    for episode in recalled.get("episodes") or ():
        items.append({
            "kind": "episode", "episodeId": episode["episodeId"], "threadId": episode.get("threadId"),
            "fromSequence": episode.get("fromSequence"), "toSequence": episode.get("toSequence"),
        })
    for hit in recalled.get("raw") or ():
        for message in sorted([hit, *hit.get("neighbours", ())], key=lambda m: m["sequenceNumber"]):
            items.append({
                "kind": "message", "messageId": message["messageId"], "threadId": hit["threadId"],
                "sequenceNumber": message["sequenceNumber"],
            })
    return items


def _system_parts(
    *, recalled: dict[str, Any] | None, agent_prompt: str, system_prompt: str
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    recall_context = (recalled or {}).get("context", "").strip()
    if recall_context:
        parts.append({"source": "recall", "text": recall_context, "items": _recall_items(recalled or {})})
    if agent_prompt.strip():
        parts.append({"source": "agentPrompt", "text": agent_prompt.strip(), "items": []})
    if system_prompt.strip():
        parts.append({"source": "systemPrompt", "text": system_prompt.strip(), "items": []})
    # What each part adds to the joined instruction (memoryapp.chat.system_instruction
    # joins them with a blank line), so the parts sum to the instruction's count.
    for part, tokens in zip(parts, system_part_tokens([p["text"] for p in parts]), strict=True):
        part["tokens"] = tokens
    return parts


def _message_entry(message: ContextMessage, source: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "role": message.role,
        "content": message.content,
        "tokens": message_tokens(chat_message(message)),
        "source": source,
    }
    if message.tool_call is not None:
        entry["toolCall"] = message.tool_call
    if message.tool_result is not None:
        entry["toolResult"] = message.tool_result
    return entry


def _messages(window: ContextWindow, *, agent: bool) -> list[dict[str, Any]]:
    entries = []
    summary = window.summary
    if summary is not None:
        entries.append(_message_entry(ContextMessage("system", summary.content), {
            "kind": "contextBlock" if agent else "summary",
            "messageId": str(summary.message_id),
            "fromSequence": summary.from_sequence,
            "toSequence": summary.to_sequence,
        }))
    for message in window.tail:
        entries.append(_message_entry(message, {"kind": "message", "sequenceNumber": message.sequence_number}))
    return entries


def input_record(
    *,
    window: ContextWindow,
    recalled: dict[str, Any] | None,
    agent_prompt: str,
    system_prompt: str,
    instruction: str,
    tools: list[ToolSpec],
    context_window: int,
    agent: bool,
) -> dict[str, Any]:
    """The stored model input of a turn (the module docstring's shape). ``instruction``
    is the exact system instruction the model gets (memoryapp.chat.system_instruction of
    the same parts), ``window`` the prepared context, ``context_window`` the adapter's
    input limit in tokens. Tokens are memoryapp.llm.input_tokens counts: ``totalTokens``
    is the count of the whole call and the layers sum to it."""
    parts = _system_parts(recalled=recalled, agent_prompt=agent_prompt, system_prompt=system_prompt)
    messages = _messages(window, agent=agent)
    tool_views: list[dict[str, Any]] = [
        {"name": t.name, "description": t.description, "parameters": t.parameters,
         "tokens": tool_tokens(t)}
        for t in tools
    ]
    by_source = {p["source"]: p["tokens"] for p in parts}
    layers = {
        "recall": by_source.get("recall", 0),
        "agentPrompt": by_source.get("agentPrompt", 0),
        "systemPrompt": by_source.get("systemPrompt", 0),
        "summary": sum(m["tokens"] for m in messages if m["source"]["kind"] != "message"),
        "messages": sum(m["tokens"] for m in messages if m["source"]["kind"] == "message"),
        "tools": sum(t["tokens"] for t in tool_views),
    }
    return {
        "systemInstruction": instruction,
        "contextWindow": context_window,
        # The one count of the call (memoryapp.llm.input_tokens), as the offline adapter
        # reports it; the layers above sum to it.
        "totalTokens": input_tokens(
            system_instruction=instruction,
            messages=[chat_message(m) for m in window.messages],
            tools=tools,
        ),
        "layers": layers,
        "systemParts": parts,
        "messages": messages,
        "tools": tool_views,
    }


def call_entries(messages: Sequence[ContextMessage]) -> list[dict[str, Any]]:
    """The X-ray entries (the module docstring's message shape) of messages a tool loop
    added to the model input: the recorded tool call and result rows."""
    return [_message_entry(m, {"kind": "message", "sequenceNumber": m.sequence_number}) for m in messages]


def call_layers(first: dict[str, Any], *, added_tokens: int, tools: list[ToolSpec]) -> dict[str, int]:
    """The layers of a later call's input: the first call's (``first``, an input record's
    ``layers``) with ``added_tokens`` more in messages and the tools offered now."""
    return {**first, "messages": first["messages"] + added_tokens, "tools": sum(tool_tokens(t) for t in tools)}


def call_count(context: dict[str, Any]) -> int:
    """How many model calls of the turn (``Turn.context``) the X-ray can show: one per
    ``calls`` entry, or 1 for a turn stored with its input but before calls were kept."""
    return len(context.get("calls") or ()) or (1 if context.get("input") else 0)


def call_input(context: dict[str, Any], number: int) -> dict[str, Any]:
    """The whole input of model call ``number`` (1-based) of a turn, as an input record
    (the module docstring's shape): the turn's stored input (call 1's) with the messages
    calls 2..``number`` added, and that call's ``totalTokens`` and ``layers``. Each
    message added by the loop carries ``"addedInCall": n``. Raises ValueError for a
    number outside 1..call_count(context), KeyError when the turn has no stored input."""
    stored = context["input"]
    if not 1 <= number <= call_count(context):
        raise ValueError(f"call must be between 1 and {call_count(context)}")
    if number == 1:
        return stored
    calls = context["calls"]
    added = [{**entry, "addedInCall": c["call"]} for c in calls[1:number] for entry in c["added"]]
    call = calls[number - 1]
    return {**stored, "messages": [*stored["messages"], *added], "totalTokens": call["totalTokens"],
            "layers": call["layers"]}


def stored_call(stored: dict[str, Any]) -> tuple[str, list[ChatMessage], list[ToolSpec]]:
    """The stored input back as reply()'s arguments: (system instruction, messages,
    tools). Raises KeyError when ``stored`` is not an input record."""
    messages = [
        chat_message(ContextMessage(
            m["role"], m["content"], tool_call=m.get("toolCall"), tool_result=m.get("toolResult")
        ))
        for m in stored["messages"]
    ]
    tools = [ToolSpec(t["name"], t["description"], t["parameters"]) for t in stored.get("tools", ())]
    return stored["systemInstruction"], messages, tools


@dataclass(frozen=True)
class ReplayResult:
    """One replay: the adapter's name, the model it named, the reply text (tool calls it
    asked for listed by name, not run), the milliseconds it took, and any error."""

    adapter: str
    model: str
    text: str
    tool_calls: tuple[str, ...]
    ms: int
    error: str = ""


def replay(*, stored: dict[str, Any], adapter: str) -> ReplayResult:
    """Run the stored input (``Turn.context["input"]``) again on the registry's
    ``adapter`` (a key of memoryapp.llm.PROVIDERS) and return its reply; nothing is
    stored and no tool is run. A model failure comes back as ``error``. Raises KeyError
    for an unknown adapter or a turn without a stored input."""
    provider = PROVIDERS[adapter]
    instruction, messages, tools = stored_call(stored)
    start = time.perf_counter()
    pieces: list[str] = []
    calls: list[str] = []
    model = provider.display_model() or adapter
    try:
        stream = GuardedModel(provider.build()).reply(
            system_instruction=instruction, messages=messages, tools=tools or None
        )
        for chunk in stream:
            pieces.append(chunk.text)
            calls.extend(c.name for c in chunk.tool_calls)
            model = chunk.model or model
    except ModelError as error:
        return ReplayResult(adapter, model, "".join(pieces), tuple(calls),
                            round((time.perf_counter() - start) * 1000), f"{error.kind}: {error}")
    return ReplayResult(adapter, model, "".join(pieces), tuple(calls), round((time.perf_counter() - start) * 1000))

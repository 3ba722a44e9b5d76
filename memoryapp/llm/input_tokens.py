"""The one count of a model call's input (issue 10 "Counts agree everywhere").

A reply() call hands the model a system instruction, messages (text, tool calls, tool
results) and tool declarations; every place that reports the input tokens of such a call
(the turn X-ray's total and its layers, the offline adapter's usage, the estimate when a
provider reports none) counts it here, with memoryapp.tokens.count_tokens, so the figures
agree exactly. A provider's own usage metadata (Gemini's) is its tokenizer's measure,
not this one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from memoryapp.llm.port import ChatMessage, ToolCall, ToolSpec
from memoryapp.tokens import count_tokens


def tool_call_tokens(call: ToolCall) -> int:
    """Tokens of one tool call as the model sees it: its name and JSON arguments."""
    return count_tokens(json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False))


def message_tokens(message: ChatMessage) -> int:
    """Tokens of one message: its text, each tool call it made, the tool result it
    carries (the result's text). An int >= 0."""
    tokens = count_tokens(message.content) + sum(tool_call_tokens(c) for c in message.tool_calls)
    if message.tool_result is not None:
        tokens += count_tokens(message.tool_result.content)
    return tokens


def tool_tokens(tool: ToolSpec) -> int:
    """Tokens of one tool declaration: name, description and JSON-schema parameters as
    one JSON object."""
    return count_tokens(json.dumps(
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
        ensure_ascii=False,
    ))


def system_part_tokens(parts: Sequence[str], *, separator: str = "\n\n") -> list[int]:
    """The tokens each part adds to the system instruction ``separator.join(parts)``:
    part i gets count(join of parts[:i+1]) - count(join of parts[:i]), so the numbers
    (each >= 0, count_tokens never shrinks as text grows) sum exactly to the count of the
    joined instruction."""
    out: list[int] = []
    before = 0
    for i in range(len(parts)):
        upto = count_tokens(separator.join(parts[: i + 1]))
        out.append(upto - before)
        before = upto
    return out


def input_tokens(
    *, system_instruction: str, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] | None
) -> int:
    """Tokens of one reply() call's whole input: the system instruction, every message
    (message_tokens) and every tool declaration (tool_tokens). An int >= 0."""
    return (
        count_tokens(system_instruction)
        + sum(message_tokens(m) for m in messages)
        + sum(tool_tokens(t) for t in tools or ())
    )

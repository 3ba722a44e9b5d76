"""The offline adapter's use of the memory tools, on plain cues (spec 004; issue 9 item 6).

So the whole agent-memory feature can be seen and browser-tested without a key, the
offline model calls the memory tools deterministically when the user's last message
says so and the tools are offered:

- **"remember that <fact>"** (or "remember <fact>"): ``open_memory({"name": "notes"})``;
  then ``close_memory`` writing the note back with ``- <fact>`` added (creating it, with
  a description, when it did not exist); then a text reply saying it was saved.
- **"what do you know about <topic>"**: ``open_memory({"name": "notes"})``; then
  ``close_memory({"name": "notes"})`` (closing it unchanged); then a text reply with the
  note's lines that mention the topic.

Each step is decided from the messages after the user's last one (the calls and results
of this turn), so a turn is a fixed sequence for a given store.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memoryapp.llm.port import ChatMessage, ToolCall, ToolResult, ToolSpec

NOTE_NAME = "notes"
NOTE_DESCRIPTION = "Things the user asked me to remember"
_REMEMBER = re.compile(r"\bremember(?:\s+that)?\s+(?P<fact>[^\n]+)", re.IGNORECASE)
_RECALL = re.compile(r"\bwhat do you know about\s+(?P<topic>[^?!.\n]+)", re.IGNORECASE)
_ALREADY_OPEN = re.compile(r"^Memory '[^']*' is already open\. Its content:\n\n", re.DOTALL)
_WORD = re.compile(r"\w+", re.UNICODE)


def _turn(messages: Sequence[ChatMessage]) -> tuple[str, list[ToolResult]]:
    """The user's last message and the tool results after it."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            after = messages[i + 1 :]
            return messages[i].content, [m.tool_result for m in after if m.tool_result is not None]
    return "", []


def _opened_content(result: ToolResult) -> str:
    return _ALREADY_OPEN.sub("", result.content, count=1)


def _call(tool: str, /, **arguments: str) -> ToolCall:
    return ToolCall(name=tool, arguments=dict(arguments), call_id=f"offline-{tool}")


def _remember(fact: str, results: list[ToolResult]) -> ToolCall | None:
    if not results:
        return _call("open_memory", name=NOTE_NAME)
    last = results[-1]
    if last.name != "open_memory":
        return None
    line = f"- {fact.strip().rstrip('.')}"
    if not last.is_error:
        content = _opened_content(last)
        if line in content.splitlines():
            return _call("close_memory", name=NOTE_NAME)
        return _call("close_memory", name=NOTE_NAME, content=f"{content}\n{line}")
    if last.content.startswith(f"Error: there is no memory named '{NOTE_NAME}'"):
        return _call("close_memory", name=NOTE_NAME, description=NOTE_DESCRIPTION, content=line)
    return None


def next_call(messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> ToolCall | None:
    """The memory tool call the offline model makes next in this turn, or None (then it
    answers in text). Only when ``open_memory`` and ``close_memory`` are offered."""
    offered = {t.name for t in tools}
    if not {"open_memory", "close_memory"} <= offered:
        return None
    said, results = _turn(messages)
    remember = _REMEMBER.search(said)
    if remember:
        return _remember(remember["fact"], results)
    if _RECALL.search(said):
        if not results:
            return _call("open_memory", name=NOTE_NAME)
        if results[-1].name == "open_memory" and not results[-1].is_error:
            return _call("close_memory", name=NOTE_NAME)
    return None


def answer(messages: Sequence[ChatMessage]) -> str | None:
    """The offline model's text once a cued turn's calls are done, or None when the turn
    had no cue or no memory tool results."""
    said, results = _turn(messages)
    if not results:
        return None
    recall = _RECALL.search(said)
    if recall:
        opened = next((r for r in results if r.name == "open_memory"), None)
        if opened is None or opened.is_error:
            return f"[offline model] I have nothing in memory about {recall['topic'].strip()}."
        topic = {w.lower() for w in _WORD.findall(recall["topic"]) if len(w) > 2}
        lines = [
            ln for ln in _opened_content(opened).splitlines()
            if topic & {w.lower() for w in _WORD.findall(ln)}
        ]
        if not lines:
            return f"[offline model] My memory '{NOTE_NAME}' says nothing about {recall['topic'].strip()}."
        return "[offline model] From memory: " + " ".join(ln.lstrip("- ") for ln in lines)
    last = results[-1]
    if _REMEMBER.search(said) and last.name == "close_memory" and not last.is_error:
        return f"[offline model] Saved to memory '{NOTE_NAME}'."
    outcome = "refused" if last.is_error else "answered"
    return f"[offline model] {last.name} {outcome}: {last.content[:200]}"

"""A tool result as one short line of a summary, for the offline summariser
(memoryapp.llm.offline).

A ``tool`` message a client appends is what a tool returned (a forecast, a flight
search, a booking): facts the conversation goes on from, which a fold must not lose.
The summariser keeps its **key content, briefly**: a JSON result as its ``key: value``
pairs (nested keys joined with dots, list items one after the other, links and request
ids left out), a text result as written, either cut at a word to BRIEF_CHARS
characters. What is no result gets nothing: a recorded call (``name({...})``), an error
(``Error: ...``, ``{"error": ...}``), and the agent's own memory-tool traffic, whose
effect is in its notes (TranscriptMessage.plumbing).
"""

from __future__ import annotations

import json
import re
from typing import Any

#: The most a tool result's line keeps of it, in characters.
BRIEF_CHARS = 200

_CALL = re.compile(r"^\s*[A-Za-z_][\w.]*\((?:\{.*\})?\)\s*$", re.DOTALL)
_ERROR = re.compile(r"^\s*(?:error|exception|traceback|failed|failure)\b", re.IGNORECASE)
# Keys whose values are plumbing, not content: where to fetch more, how the call was traced.
_SKIP_KEY = re.compile(r"^(?:url|uri|href|links?|self|etag|request_?id|trace_?id|@\w+)$", re.I)
_ERROR_KEYS = ("error", "errors", "exception")


def is_plumbing(content: str) -> bool:
    """Whether a tool message's ``content`` is no result: a recorded call or an error."""
    if _CALL.match(content) or _ERROR.match(content):
        return True
    data = _json(content)
    return isinstance(data, dict) and (
        any(data.get(key) for key in _ERROR_KEYS) or data.get("isError") is True
    )


def brief(content: str) -> str:
    """The key content of a tool result (module docstring), at most BRIEF_CHARS
    characters, on one line."""
    data = _json(content)
    text = "; ".join(_pairs(data, "")) if isinstance(data, dict | list) else content
    text = " ".join(text.split())
    if len(text) <= BRIEF_CHARS:
        return text
    cut = text[: BRIEF_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;:")
    return f"{cut}…"


def _json(content: str) -> Any:
    text = content.strip()
    if not text.startswith(("{", "[")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _pairs(data: Any, prefix: str) -> list[str]:
    """``key: value`` for each scalar of ``data``, keys joined with dots; a list as one
    pair, its items apart by `` | `` (an item's own pairs by ``, ``); None, empty values
    and plumbing keys left out."""
    if isinstance(data, dict):
        out: list[str] = []
        for key, value in data.items():
            if _SKIP_KEY.match(str(key)):
                continue
            out += _pairs(value, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(data, list):
        items = " | ".join(text for item in data if (text := ", ".join(_pairs(item, ""))))
        return [f"{prefix}: {items}" if prefix else items] if items else []
    if data is None or data == "":
        return []
    value = json.dumps(data) if isinstance(data, bool) else str(data)
    return [f"{prefix}: {value}" if prefix else value]

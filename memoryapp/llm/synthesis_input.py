"""The text recall hands a synthesis call, written and read in one place.

memoryapp.recall writes it (``synthesis_context``), the offline adapter reads it back
(memoryapp.llm.offline_synthesis) and the Gemini prompt explains it
(memoryapp.llm.prompts.synthesis_prompt). It is a list of *entries*, each opening with a
label line ``<label> (<YYYY-MM-DD>): <text>``: ``fact``, ``episode`` (its title, then its
summary on the following lines) or a message's role. The lines up to the next label line
belong to the entry (a message's later lines, an episode's summary).

A statement a newer fact replaced is marked where it is said (docs/decisions.md "The
context never states a replaced fact as true"): ``<line> [no longer current as of
<date>; now: <current fact>]`` after the line holding it, or, when no line holds its
words, a line ``Stated here: <statement> <mark>`` in the entry. Whatever else the entry
says in the statement's own words says the replaced statement too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Opens the line that names a replaced statement an entry makes in other words.
STATED_HERE = "Stated here: "

_LABEL = re.compile(r"^(?P<label>[a-z]+) \((?P<date>\d{4}-\d{2}-\d{2})\): ", re.MULTILINE)
# A mark closes its line; the current fact may hold brackets of its own.
_MARK = re.compile(r"\s*\[no longer current as of (?P<since>[^;\]\n]+)(?:; now: (?P<now>[^\n]*))?\]\s*$")


def stale_mark(since: str, now: str | None) -> str:
    """``[no longer current as of <since>; now: <now>]`` (no "; now" part when ``now`` is
    None or empty): what follows a statement a newer fact replaced."""
    tail = f"; now: {now}" if now else ""
    return f"[no longer current as of {since}{tail}]"


def entry_line(label: str, date: str, text: str) -> str:
    """One entry's label line and text: ``<label> (<date>): <text>`` (``date``
    ``YYYY-MM-DD``; ``label`` lower-case letters, e.g. ``fact``, ``episode``, ``user``)."""
    return f"{label} ({date}): {text}"


@dataclass(frozen=True, slots=True)
class Line:
    """One line of an entry: ``text`` without its mark; ``since`` and ``now`` the mark's
    (``since`` None: the line carries no mark); ``stated_here``: a ``Stated here:`` line
    (``text`` is then the replaced statement alone)."""

    text: str
    since: str | None = None
    now: str | None = None
    stated_here: bool = False


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of the synthesis text: ``label`` and ``date`` of its label line (both ""
    for text before the first one) and its lines, the label taken off the first."""

    label: str
    date: str
    lines: tuple[Line, ...]


def _line(text: str) -> Line:
    mark = _MARK.search(text)
    if mark is None:
        return Line(text=text)
    body = text[: mark.start()]
    stated = body.startswith(STATED_HERE)
    return Line(
        text=body[len(STATED_HERE):] if stated else body,
        since=mark.group("since"),
        now=mark.group("now") or None,
        stated_here=stated,
    )


def entries(text: str) -> list[Entry]:
    """``text`` (as entry_line and stale_mark write it) read back into entries, in order.
    Text that follows no label line is an entry with label and date ""."""
    out: list[Entry] = []
    label, date, lines = "", "", list[Line]()
    for raw in text.split("\n"):
        head = _LABEL.match(raw)
        if head is not None:
            if lines:
                out.append(Entry(label=label, date=date, lines=tuple(lines)))
            label, date, lines = head.group("label"), head.group("date"), []
            raw = raw[head.end():]
        if raw.strip():
            lines.append(_line(raw))
    if lines:
        out.append(Entry(label=label, date=date, lines=tuple(lines)))
    return out

"""The offline adapter's text reply: it answers from memory (issue 10 item 3).

With no language model, the most useful answer is the memory itself: the lines of this
turn's context (the compaction summary, the recent messages, recalled facts, episodes and
messages, open memory notes, the user's system prompt) that best match the user's
message, each quoted with where it came from. So "remind me of our budget and dates"
shows memory working without an API key.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memoryapp import salient
from memoryapp.llm.port import ChatMessage
from memoryapp.llm.synthesis_input import STATED_HERE
from memoryapp.stopwords import FUNCTION_WORDS

#: Every offline text reply opens with this (memoryapp.llm.offline.REPLY_MARK matches it).
REPLY_OPENING = (
    "[offline model] No language model is set up (no GEMINI_API_KEY), so I answer from memory."
)
#: At most this many context lines are quoted.
MAX_QUOTES = 4
#: A quoted line longer than this is cut.
MAX_QUOTE_CHARS = 240
_WORD = re.compile(r"\w+", re.UNICODE)
# Function words, and the words of a request, which say what is wanted, not what about.
_STOPWORDS = FUNCTION_WORDS | frozenset(
    [
        "again", "all", "give", "know", "mine", "ours", "please", "remind", "should",
        "show", "some", "tell"
    ]
)
# Words asking for dates or for numbers: a line stating one matches them.
_ASKS_DATE = frozenset(
    ["date", "dates", "when", "day", "days", "time", "times", "schedule", "deadline"]
)
_ASKS_NUMBER = frozenset(
    [
        "number",
        "numbers",
        "budget",
        "cost",
        "costs",
        "price",
        "prices",
        "much",
        "many",
        "amount",
        "total",
    ]
)
_ITEM = re.compile(r"^<(?P<tag>fact|episode|message)\b(?P<attrs>[^>]*)>(?P<text>.*)</(?P=tag)>$")
# A recalled item whose text goes on over the next lines (an episode's summary, a
# message of several lines): they are its text, up to the line ending in its closing tag.
_OPENING = re.compile(r"^<(?P<tag>fact|episode|message)\b(?P<attrs>[^>]*)>(?P<text>.*)$")
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_SUMMARY_HEADER = re.compile(r"^Summary of earlier conversation\b.*:$")


@dataclass(frozen=True)
class ContextLine:
    """One line of the model's input and where it came from (``source``, readable)."""

    text: str
    source: str
    order: int


def _item_source(tag: str, attrs: dict[str, str]) -> str:
    if tag == "fact":
        return f"recalled fact {attrs.get('id', '')[:8]} of {attrs.get('date', '')}".strip()
    thread = attrs.get("thread", "")[:8]
    if tag == "episode":
        return f"recalled episode, thread {thread} messages {attrs.get('from')}-{attrs.get('to')}"
    return f"recalled message, thread {thread} #{attrs.get('seq')} ({attrs.get('role')})"


def _instruction_lines(instruction: str) -> list[tuple[str, str]]:
    """The system instruction's content lines with their sources: recalled items by
    their tag (every line of an item that spans lines, its tags stripped), the agent
    block's summary and open notes by their headings, the rest as the system prompt.
    Markup-only lines and recall's preamble inside ``<long_term_memory>`` are skipped."""
    out: list[tuple[str, str]] = []
    section = "system prompt"
    spanning: tuple[str, str] | None = None  # (closing tag, source) of an open item
    outside = section  # the section a <long_term_memory> block interrupts
    for raw in instruction.splitlines():
        line = raw.strip()
        if spanning is not None:
            closing, source = spanning
            if line.endswith(closing):
                line, spanning = line[: -len(closing)].strip(), None
            if line:
                out.append((html.unescape(line), source))
            continue
        item = _ITEM.match(line) or _OPENING.match(line)
        if item:
            source = _item_source(item["tag"], dict(_ATTR.findall(item["attrs"])))
            if item.re is _OPENING:
                spanning = (f"</{item['tag']}>", source)
            if item["text"].strip():
                out.append((html.unescape(item["text"].strip()), source))
            continue
        if line.startswith("<long_term_memory>"):
            # recall's preamble: what the block is, not something remembered
            outside, section = section, "memory block"
        elif line.startswith("</long_term_memory>"):
            section = outside
        elif line.startswith("## Summary of earlier"):
            section = "summary"
        elif line.startswith("## Open memories"):
            section = "open note"
        elif line.startswith("## "):
            section = "memory block"
        elif line.startswith("### ") and section.startswith("open note"):
            section = f"open note {line[4:].split(' — ')[0]}"
        elif line.startswith("<synthesis>"):
            out.append((html.unescape(re.sub(r"</?synthesis>", "", line)), "recall synthesis"))
        elif (
            line
            and not line.startswith("<")
            and not line.startswith("[")
            and section != "memory block"
        ):
            out.append((line, section))
    return out


# A replaced statement's mark (memoryapp.llm.synthesis_input.stale_mark), closing its line.
_STALE = re.compile(r"\[no longer current as of [^\n]*\]$")


def _marked_items(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``pairs`` with every line of a recalled item that says a replaced statement in
    other words (a ``Stated here: <statement> [no longer current ...]`` line of it)
    carrying that mark too, and the ``Stated here`` lines themselves left out: quoted
    alone, "I live in Boston." would state the replaced home as current (docs/decisions.md
    "The context never states a replaced fact as true")."""
    marks: dict[str, list[str]] = {}
    for text, source in pairs:
        found = _STALE.search(text)
        if text.startswith(STATED_HERE) and found and source.startswith("recalled"):
            marks.setdefault(source, []).append(found.group(0))
    if not marks:
        return pairs
    out = []
    for text, source in pairs:
        if source in marks and text.startswith(STATED_HERE):
            continue
        if source in marks and not _STALE.search(text):
            text = f"{text} {' '.join(dict.fromkeys(marks[source]))}"
        out.append((text, source))
    return out


def context_lines(system_instruction: str, messages: Sequence[ChatMessage]) -> list[ContextLine]:
    """Every quotable line of a turn's model input, in the order the model reads it: the
    system instruction's, then each message's (the summary message's lines as
    ``summary``, the others as ``recent <role> message``), the user's last message left
    out (it is the question). A recalled item's lines carry the marks of the replaced
    statements it makes in other words (``_marked_items``)."""
    pairs = _marked_items(_instruction_lines(system_instruction))
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    for i, message in enumerate(messages):
        if i == last_user or message.tool_result is not None or not message.content:
            continue
        if message.content.lstrip().startswith("[offline model"):
            continue  # its own earlier replies are quotes of memory already
        source = "summary" if message.role == "system" else f"recent {message.role} message"
        for line in message.content.splitlines():
            text = line.strip()
            if text and not _SUMMARY_HEADER.match(text):
                pairs.append((text, source))
    return [ContextLine(text, source, order) for order, (text, source) in enumerate(pairs)]


def _stem(word: str) -> str:
    word = word.casefold()
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _match(query: set[str], wants_date: bool, wants_number: bool, line: ContextLine) -> int:
    """How well ``line`` matches: shared content words, plus one when the query asks for
    a date (a number) and the line states one (memoryapp.salient)."""
    words = {_stem(w) for w in _WORD.findall(line.text)}
    score = len(query & words)
    if wants_date or wants_number:
        found = salient.terms(line.text)
        score += int(wants_date and bool(found.dates)) + int(wants_number and bool(found.numbers))
    return score


def best_lines(query: str, lines: list[ContextLine], limit: int = MAX_QUOTES) -> list[ContextLine]:
    """The ``limit`` lines matching ``query`` best (at least one point each), best first,
    earlier first on ties; a line repeated under another source is quoted once."""
    words = {_stem(w) for w in _WORD.findall(query) if len(w) > 2}
    wanted = {w for w in words if w not in _STOPWORDS}
    wants_date = bool(words & _ASKS_DATE)
    wants_number = bool(words & _ASKS_NUMBER)
    scored = [(_match(wanted, wants_date, wants_number, line), line) for line in lines]
    ranked = sorted((p for p in scored if p[0] > 0), key=lambda p: (-p[0], p[1].order))
    out: list[ContextLine] = []
    seen: set[str] = set()
    for _, line in ranked:
        key = " ".join(line.text.casefold().split()).lstrip("- ")
        if key not in seen:
            seen.add(key)
            out.append(line)
        if len(out) == limit:
            break
    return out


def _quote(text: str) -> str:
    """``text`` as quoted: no list dash, at most MAX_QUOTE_CHARS, shortened before a
    replaced statement's mark, never through it."""
    text = text.lstrip("- ").strip()
    mark = _STALE.search(text)
    body, tail = (text[: mark.start()].rstrip(), f" {mark.group(0)}") if mark else (text, "")
    room = max(MAX_QUOTE_CHARS - len(tail), 40)
    body = body if len(body) <= room else body[: room - 1] + "…"
    return body + tail


def reply_text(system_instruction: str, messages: Sequence[ChatMessage]) -> str:
    """REPLY_OPENING, then the context lines best matching the user's last message, one
    per line as ``> <line> (<source>)``; or, when none matches, a line saying how much
    memory this turn had and that none of it matches."""
    query = next((m.content for m in reversed(messages) if m.role == "user"), "")
    lines = context_lines(system_instruction, messages)
    found = best_lines(query, lines)
    if not found:
        kinds = sorted({line.source.split(",")[0] for line in lines})
        held = f" (it holds lines from: {', '.join(kinds)})" if kinds else " (it is empty)"
        return f"{REPLY_OPENING}\nNothing in this turn's memory matches your message{held}."
    quotes = [f"> {_quote(line.text)} ({line.source})" for line in found]
    return "\n".join([REPLY_OPENING, "From memory:", *quotes])

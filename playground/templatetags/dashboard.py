"""Template helpers of the dashboard pages: one-line timestamps, isolated user text and
Markdown replies.

``{% load dashboard %}`` then ``{% timestamp value %}``, ``{{ value|isolate }}``,
``{{ value|usd }}`` and ``{{ value|markdown }}``.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import nh3
from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

register = template.Library()

# Unicode FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE: the plain-text form of
# <bdi>, for places that cannot hold markup (the page title).
FSI = "\u2068"
PDI = "\u2069"
EN_DASH = "\u2013"


def short_datetime(value: datetime, *, now: datetime | None = None) -> str:
    """The short label of ``value`` in the current time zone, relative to ``now``.

    ``"11:13"`` on the same day, ``"Nov 30, 11:13"`` in the same year, ``"2025-11-30"``
    before that. ``now`` defaults to the current time (a parameter so tests can pin it).
    """
    local = timezone.localtime(value)
    today = timezone.localtime(now or timezone.now())
    if local.date() == today.date():
        return date_format(local, "H:i")
    if local.year == today.year:
        return date_format(local, "M j, H:i")
    return date_format(local, "Y-m-d")


@register.simple_tag
def timestamp(value: datetime | None, empty: str = "") -> SafeString | str:
    """``<time datetime="ISO-8601" title="Y-m-d H:i:s TZ">short label</time>`` for ``value``.

    The label is short_datetime's (it never wraps: the ``time`` rule of app.css); the full
    date and time is in the title and the machine-readable one in ``datetime``. ``None``
    renders ``empty``.
    """
    if value is None:
        return empty
    local = timezone.localtime(value)
    return format_html(
        '<time datetime="{}" title="{}">{}</time>',
        local.isoformat(),
        date_format(local, "Y-m-d H:i:s T"),
        short_datetime(value),
    )


@register.simple_tag
def in_context(messages: object, summary: object, testid: str = "") -> SafeString:
    """What a thread's context holds, worded one way on every page (the Stats panel, the
    turn panel, the X-ray): ``"4 messages in context + the summary"``, the number in a
    span with ``data-testid`` ``testid``. ``messages`` and ``summary`` are a
    memoryapp.results.ContextCount's (memoryapp.working.context_count), or the stored
    prepare view's ``messageCount`` and ``compacted`` made from it."""
    count = int(str(messages or 0))
    return format_html(
        '<span class="in-context"><span data-testid="{}">{}</span> message{} in context{}</span>',
        testid, count, "" if count == 1 else "s", " + the summary" if summary else "",
    )


@register.filter
def isolate(value: object) -> str:
    """``value`` between FSI and PDI, so right-to-left or override characters in it cannot
    reorder the text around it where no ``<bdi>`` can go (the page title, flash messages).
    The result is still escaped by the template."""
    return f"{FSI}{value}{PDI}"


# The bidirectional embedding, override and isolate controls (U+202A-U+202E,
# U+2066-U+2069): invisible, and they reorder the text after them, so the tag
# "\u202egnp.exe" reads "exe.png". <bdi> keeps them from reordering the page around the
# text, not the text itself. Marks (U+200E, U+200F, U+061C) only steer neutral
# characters and belong in right-to-left text: left alone.
BIDI_CONTROLS = {
    "\u202a": "LEFT-TO-RIGHT EMBEDDING", "\u202b": "RIGHT-TO-LEFT EMBEDDING",
    "\u202c": "POP DIRECTIONAL FORMATTING", "\u202d": "LEFT-TO-RIGHT OVERRIDE",
    "\u202e": "RIGHT-TO-LEFT OVERRIDE", "\u2066": "LEFT-TO-RIGHT ISOLATE",
    "\u2067": "RIGHT-TO-LEFT ISOLATE", "\u2068": "FIRST STRONG ISOLATE",
    "\u2069": "POP DIRECTIONAL ISOLATE",
}  # fmt: skip
_BIDI_CONTROL = re.compile("[" + "".join(BIDI_CONTROLS) + "]")


def _control_code(char: str) -> str:
    return f"U+{ord(char):04X}"


@register.filter
def show_controls(value: object) -> SafeString:
    """``value`` escaped, each bidi control (BIDI_CONTROLS) shown as its code point in a
    marked span (``<span class="bidi-control" title="RIGHT-TO-LEFT OVERRIDE">U+202E</span>``)
    instead of acting: the names in lists (tags, datasets, key names) read in the order
    they were typed. Use inside <bdi> as before."""
    text = str(value)
    parts: list[str] = []
    last = 0
    for match in _BIDI_CONTROL.finditer(text):
        char = match.group()
        parts.append(conditional_escape(text[last:match.start()]))
        parts.append(format_html(
            '<span class="bidi-control" title="{} ({}), an invisible control character">{}</span>',
            BIDI_CONTROLS[char], _control_code(char), _control_code(char),
        ))  # fmt: skip
        last = match.end()
    parts.append(conditional_escape(text[last:]))
    return mark_safe("".join(parts))


@register.filter
def controls_as_text(value: object) -> str:
    """``value`` with each bidi control written as ``[U+202E]``, for attributes (a
    tooltip) and other places that hold no markup. Escaped by the template."""
    return _BIDI_CONTROL.sub(lambda m: f"[{_control_code(m.group())}]", str(value))


def sequence_range(first: object, last: object) -> str:
    """Messages ``first`` to ``last`` by sequence number, as every page writes a range
    (an episode's, a summary's, a compaction run's): ``"#3"`` when it is one message,
    else ``"#3\u2013#5"`` (an en dash). Template filter:
    ``{{ e.from_sequence|sequence_range:e.to_sequence }}``."""
    return f"#{first}" if str(first) == str(last) else f"#{first}{EN_DASH}#{last}"


def message_range(first: object, last: object) -> str:
    """sequence_range with its noun: ``"message #3"`` or ``"messages #3\u2013#5"``. Template
    filter: ``{{ run.from_sequence|message_range:run.to_sequence }}``."""
    noun = "message" if str(first) == str(last) else "messages"
    return f"{noun} {sequence_range(first, last)}"


register.filter("sequence_range", sequence_range)
register.filter("message_range", message_range)


# Costs are stored with 8 decimal places (memoryapp.usage); pages show 4, one way.
USD_PLACES = Decimal("0.0001")


@register.filter
def usd(value: object) -> str:
    """A cost in US dollars as every dashboard page writes one: ``"$0.0012"``, always four
    decimal places (rounded half up), thousands grouped (``"$1,234.5000"``). A cost above
    zero that rounds to nothing is ``"<$0.0001"``, not a misleading ``"$0.0000"``; ``None``
    (no cost known) is an en dash. Takes a Decimal, an int, a float or a numeric string
    (a cost line's wire form). Template filter: ``{{ turn.cost|usd }}``."""
    if value is None or value == "":
        return EN_DASH
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        return EN_DASH
    if amount < 0:
        return f"-{usd(-amount)}"
    shown = amount.quantize(USD_PLACES, rounding=ROUND_HALF_UP)
    if shown == 0 and amount > 0:
        return f"<${USD_PLACES}"
    return f"${shown:,}"


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _job_field(key: str, value: int | float | str) -> str:
    """One field of a job's result in words: a count before its name (``factsCreated``
    2: "2 facts created", 1: "1 fact created"), a yes/no or text after it ("merged: no")."""
    words = _CAMEL_HUMP.sub(" ", key).lower().removesuffix(" count")
    if isinstance(value, bool):
        return f"{words}: {_yes_no(value)}"
    if isinstance(value, int | float):
        return f"{value} {_singular(words) if value == 1 else words}"
    return f"{words}: {value}"


def _singular(words: str) -> str:
    """``words`` with its first word in the singular ("facts created" -> "fact created",
    "entities" -> "entity"); a first word that is no plural is left as it is."""
    first, space, rest = words.partition(" ")
    if first.endswith("ies") and len(first) > 4:
        first = first[:-3] + "y"
    elif first.endswith("s") and not first.endswith("ss"):
        first = first[:-1]
    return first + space + rest


def _episode_outcome(result: dict[str, object]) -> str:
    """An episode job's ``created`` in words: whether this run wrote the episode or found
    it written by an earlier run (memoryapp.tasks.episode_job)."""
    return "episode written" if result["created"] else "episode already written, nothing new"


@register.filter
def job_outcome(result: object) -> str:
    """A background job's result in one line: its ``message`` when it has one, else its
    scalar fields but ids in words, by name (``3 compacted · 1 fact created``; _job_field),
    booleans as yes / no (an episode job's ``created`` as whether it wrote the episode), and ``fromSequence``/``toSequence`` as one message_range
    (``3 compacted · messages #1\u2013#3``)."""
    if not isinstance(result, dict) or not result:
        return "Done."
    if isinstance(result.get("message"), str):
        return str(result["message"])
    span = isinstance(result.get("fromSequence"), int) and isinstance(result.get("toSequence"), int)
    episode = "episodeId" in result and isinstance(result.get("created"), bool)
    pairs = [_episode_outcome(result)] if episode else []
    pairs += [  # by name: PostgreSQL's jsonb does not keep the order keys were written in
        _job_field(k, v)
        for k, v in sorted(result.items())
        if isinstance(v, int | float | str)
        and not k.endswith("Id")
        and not (span and k in ("fromSequence", "toSequence"))
        and not (episode and k == "created")
    ]
    if span:
        pairs.append(message_range(result["fromSequence"], result["toSequence"]))
    return " · ".join(pairs) or "Done."


# CommonMark with tables and strikethrough; raw HTML in the source is not passed through
# (``html`` off: it comes out as text), and nh3 cleans the result all the same. A single
# newline is a line break (``breaks``), as chat UIs show a reply: CommonMark joins the
# lines into one paragraph, so the offline reply's "From memory:" quotes, one a line,
# ran together.
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True}).enable(
    ["table", "strikethrough"]
)
_ALLOWED_TAGS = {
    "p", "br", "hr", "em", "strong", "del", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "a", "table", "thead", "tbody", "tr", "th", "td",
}
_ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}


@register.filter(is_safe=True)
def markdown(value: object) -> SafeString:
    """``value`` (a reply's text) rendered as Markdown, a single newline a line break
    (``<br>``), and sanitized with nh3: only the tags of _ALLOWED_TAGS stay, links get
    ``rel="noopener noreferrer nofollow"`` and only http(s)/mailto URLs, no attribute can
    carry script or style (the CSP forbids inline script and style anyway). The one place
    the dashboard turns text into markup; user messages stay plain text."""
    return mark_safe(_markdown_html(str(value)))  # sanitized by nh3 in _markdown_html


# A reply's text never changes once stored, and a live page re-renders the same replies
# after every turn: a third of rendering the messages panel was this (issue 10 item 5).
@functools.lru_cache(maxsize=1024)
def _markdown_html(text: str) -> str:
    html = _MARKDOWN.render(text).strip()
    return nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )

"""Template helpers of the dashboard (playground.templatetags.dashboard)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from django.template import Context, Template

from playground.templatetags.dashboard import (
    controls_as_text,
    isolate,
    job_outcome,
    message_range,
    sequence_range,
    short_datetime,
    show_controls,
    usd,
)

NOW = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)


def test_it_shows_only_the_time_on_the_same_day() -> None:
    assert short_datetime(datetime(2026, 11, 30, 0, 5, 59, tzinfo=UTC), now=NOW) == "00:05"


def test_it_shows_month_day_and_time_in_the_same_year() -> None:
    assert short_datetime(datetime(2026, 11, 29, 23, 59, tzinfo=UTC), now=NOW) == "Nov 29, 23:59"
    assert short_datetime(datetime(2026, 1, 2, 8, 5, tzinfo=UTC), now=NOW) == "Jan 2, 08:05"


def test_it_shows_the_date_of_an_earlier_year() -> None:
    assert short_datetime(datetime(2025, 12, 31, 23, 59, tzinfo=UTC), now=NOW) == "2025-12-31"


def test_it_renders_a_time_element_with_the_full_time_in_its_title() -> None:
    html = Template("{% load dashboard %}{% timestamp when %}").render(
        Context({"when": datetime(2024, 5, 6, 7, 8, 9, 120000, tzinfo=UTC)})
    )
    assert html == (
        '<time datetime="2024-05-06T07:08:09.120000+00:00" title="2024-05-06 07:08:09 UTC">'
        "2024-05-06</time>"
    )


def test_it_renders_the_empty_text_for_no_time() -> None:
    html = Template('{% load dashboard %}[{% timestamp when "never" %}]').render(Context({"when": None}))
    assert html == "[never]"


def test_it_wraps_text_in_first_strong_isolate_and_pop() -> None:
    assert isolate("\u202eabc") == "\u2068\u202eabc\u2069"
    html = Template("{% load dashboard %}{{ name|isolate }}").render(Context({"name": "<b>"}))
    assert html == "\u2068&lt;b&gt;\u2069"


def test_it_sums_up_a_job_result_in_one_line() -> None:
    assert job_outcome({"ok": True, "compacted": False, "message": "Nothing to compact"}) == "Nothing to compact"
    assert job_outcome(
        {"toSequence": 3, "threadId": "t", "summaryMessageId": "s", "compactedCount": 3, "fromSequence": 1}
    ) == "3 compacted · messages #1\u2013#3"
    assert job_outcome({"compactedCount": 1, "fromSequence": 4, "toSequence": 4}) == (
        "1 compacted · message #4"
    )
    assert job_outcome(None) == "Done."
    assert job_outcome({"nested": {"a": 1}}) == "Done."


def test_it_writes_a_job_results_booleans_as_yes_and_no() -> None:
    # An episode job's panel read "created True" (Python's repr) on the thread page.
    assert job_outcome({"episodeId": "e", "created": True, "factsCreated": 2, "merged": False}) == (
        "episode written · 2 facts created · merged: no"
    )
    assert job_outcome({"episodeId": "e", "created": False, "factsCreated": 0, "factsMerged": 0}) == (
        "episode already written, nothing new · 0 facts created · 0 facts merged"
    )
    assert job_outcome({"entitiesCreated": 1, "factsCreated": 1, "messagesCount": 2, "class": 1}) == (
        "1 class · 1 entity created · 1 fact created · 2 messages"
    )
    assert job_outcome({"ok": True, "created": True}) == "created: yes · ok: yes"


# --- markdown (issue 10 item 4) -----------------------------------------------------------------


def test_it_renders_markdown_replies() -> None:
    from playground.templatetags.dashboard import markdown

    html = markdown("**Budget:** 30000\n\n- one\n- two\n\n`code`")
    assert html == (
        "<p><strong>Budget:</strong> 30000</p>\n<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n"
        "<p><code>code</code></p>"
    )


def test_it_shows_a_replys_single_newlines_as_line_breaks() -> None:
    from playground.templatetags.dashboard import markdown

    html = markdown("Answer.\nFrom memory:\n> first line (fact)\n> second line (episode, #3)\n\nBye\n")
    assert html == (
        "<p>Answer.<br>\nFrom memory:</p>\n<blockquote>\n<p>first line (fact)<br>\n"
        "second line (episode, #3)</p>\n</blockquote>\n<p>Bye</p>"
    )
    # Code blocks keep their newlines as they are.
    assert markdown("```\na\nb\n```") == "<pre><code>a\nb\n</code></pre>"


def test_it_never_lets_html_in_a_reply_run() -> None:
    from playground.templatetags.dashboard import markdown

    html = markdown('<script>alert(1)</script>\n\n[x](javascript:alert(1)) <img src=x onerror=alert(1)>')
    # Raw HTML comes out as text, and a javascript: link is no link at all.
    assert html == (
        "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"
        "<p>[x](javascript:alert(1)) &lt;img src=x onerror=alert(1)&gt;</p>"
    )


def test_it_marks_links_in_replies_noopener() -> None:
    from playground.templatetags.dashboard import markdown

    assert markdown("[docs](https://example.com)") == (
        '<p><a href="https://example.com" rel="noopener noreferrer nofollow">docs</a></p>'
    )


def test_it_writes_a_one_message_range_as_one_number() -> None:
    # A one-message episode read "#3-#3" (an en dash).
    assert sequence_range(3, 3) == "#3"
    assert sequence_range(3, 5) == "#3\u2013#5"
    assert message_range(3, 3) == "message #3"
    assert message_range(1, 2) == "messages #1\u2013#2"
    html = Template(
        "{% load dashboard %}{{ a|sequence_range:b }} / {{ a|message_range:a }} / {{ a|sequence_range:c }}"
    ).render(Context({"a": 3, "b": 3, "c": 7}))
    assert html == "#3 / message #3 / #3\u2013#7"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("0.00120000"), "$0.0012"),
        (Decimal("0.00123456"), "$0.0012"),
        (Decimal("0.00125000"), "$0.0013"),  # half up, not to even
        (Decimal("0.00005000"), "$0.0001"),
        (Decimal("0.00000360"), "<$0.0001"),  # above zero: never written as nothing
        (Decimal("0E-8"), "$0.0000"),
        (0, "$0.0000"),
        ("0.00093750", "$0.0009"),  # a cost line's wire form (UsageLine.to_dict)
        (Decimal("1234.5"), "$1,234.5000"),
        (Decimal("-0.002"), "-$0.0020"),
        (None, "\u2013"),
        ("not a number", "\u2013"),
    ],
)
def test_it_writes_a_cost_in_dollars_with_four_decimals(value: object, text: str) -> None:
    assert usd(value) == text


def test_it_writes_a_cost_in_a_template() -> None:
    html = Template("{% load dashboard %}{{ cost|usd }} / {{ 0|usd }}").render(
        Context({"cost": Decimal("0.00123456")})
    )
    assert html == "$0.0012 / $0.0000"


TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


def test_every_template_writes_costs_through_the_usd_filter() -> None:
    # {{ something_cost... }} or {{ x.cost }}: every one is piped through usd, nothing else.
    shown = [
        (path.name, match.group(0))
        for path in sorted(TEMPLATES.rglob("*.html"))
        for match in re.finditer(r"\{\{[^}]*cost[^}]*\}\}", path.read_text())
    ]
    assert len(shown) == 7
    assert [(name, text) for name, text in shown if not re.fullmatch(r"\{\{ [\w.]+\|usd \}\}", text)] == []
    assert [
        (path.name, line)
        for path in sorted(TEMPLATES.rglob("*.html"))
        for line in path.read_text().splitlines()
        if re.search(r"\bUSD\b|floatformat:[68]", line)
    ] == []


def test_bidi_controls_are_shown_as_their_code_points_not_obeyed() -> None:
    # A tag "\u202egnp.exe" displayed as "exe.png" in the thread list.
    assert show_controls("\u202egnp.exe") == (
        '<span class="bidi-control" title="RIGHT-TO-LEFT OVERRIDE (U+202E), an invisible control '
        'character">U+202E</span>gnp.exe'
    )
    assert controls_as_text("\u202egnp.exe") == "[U+202E]gnp.exe"
    shown = str(show_controls("<b>\u2067x\u2069&"))
    assert shown.startswith("&lt;b&gt;<span") and shown.endswith("</span>&amp;")
    assert "\u2067" not in shown and "\u2069" not in shown and ">U+2067<" in shown and ">U+2069<" in shown
    # Right-to-left text and its marks are text, not tricks: left as they are.
    assert show_controls("\u05e9\u05dc\u05d5\u05dd\u200f!") == "\u05e9\u05dc\u05d5\u05dd\u200f!"
    assert controls_as_text("plain") == "plain"

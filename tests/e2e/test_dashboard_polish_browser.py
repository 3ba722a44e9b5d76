"""Dashboard pages changed by the polish pass, in a real browser at 1280 and 375 pixels
wide: a thread's Stats and Background jobs URLs opened directly are whole pages of the
site (styled, with its header), and the turn list, the X-ray and the compaction history
name turns and runs by their number on the thread and write costs one way. Screenshots
go to test-output/ (or $TEST_OUTPUT_DIR)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from memoryapp import working
from memoryapp.models import CompactionRun, Job, Thread, Turn, UsageLine
from tests.e2e.test_browser import Owner, log_in, scroll_width

pytestmark = pytest.mark.usefixtures("transactional_db")

WIDE = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 740}


def _world(owner: Owner) -> tuple[Thread, list[Turn]]:
    """A thread with two priced turns, two compaction runs and a failed job; another
    thread's turn and run in between, so ids and numbers differ."""
    thread = working.thread_create(project=owner.project, dataset="user_42", tags=["web"])
    other = working.thread_create(project=owner.project, dataset="user_7")
    turns = []
    for n, t in enumerate((other, thread, other, thread), start=1):
        user = working.message_append(thread=t, role="user", content=f"question {n}").message
        reply = working.message_append(thread=t, role="assistant", content=f"answer {n}").message
        turn = Turn.objects.create(thread=t, user_message=user, assistant_message=reply, adapter="gemini")
        UsageLine.objects.create(turn=turn, kind="model_input", quantity=2000, cost=Decimal("0.00060000"))
        UsageLine.objects.create(turn=turn, kind="model_output", quantity=12, cost=Decimal("0.00003000"))
        CompactionRun.objects.create(
            thread=t, trigger="manual", outcome="failed", error="ModelCallFailed: 503",
            from_sequence=1, to_sequence=2, tokens_input=900, tokens_output=0, cost=Decimal(0),
        )  # fmt: skip
        if t is thread:
            turns.append(turn)
    Job.objects.create(
        project=owner.project, thread=thread, kind="compaction", args={"throughSequence": 4},
        idempotency_key=f"{thread.pk}:through:4", status=Job.Status.FAILED,
        error="ModelCallFailed: 503 Service Unavailable", attempts=2,
    )  # fmt: skip
    return thread, turns


def _styled(page: Page) -> None:
    """The page has the site's layout: header, tabs, and app.css applied to its cards."""
    expect(page.locator(".site-header")).to_be_visible()
    expect(page.locator(".site-nav")).to_contain_text("Threads")
    radius = page.locator(".card").first.evaluate("el => getComputedStyle(el).borderTopLeftRadius")
    assert radius != "0px"


@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["1280", "375"])
def test_panels_opened_directly_are_pages_and_turns_and_runs_have_numbers(
    owner: Owner, live_url: str, new_page: Any, output_dir: Path, size: dict[str, int]
) -> None:
    thread, turns = _world(owner)
    base = f"{live_url}/dashboard/threads/{thread.pk}"
    query = f"?projectId={owner.project.pk}"
    width = size["width"]
    page = new_page(**size)
    log_in(page, live_url)

    page.goto(f"{base}/stats/{query}")
    _styled(page)
    expect(page.get_by_test_id("page-heading")).to_have_text(f"Stats of thread {thread.pk}")
    expect(page.get_by_test_id("stat-cost")).to_have_text("$0.0013")
    expect(page.get_by_test_id("stat-turns")).to_have_text("2")
    assert scroll_width(page) == width
    page.screenshot(path=output_dir / f"panel-stats-{width}.png", full_page=True)

    page.goto(f"{base}/jobs/{query}")
    _styled(page)
    expect(page.get_by_test_id("page-heading")).to_have_text(f"Background jobs of thread {thread.pk}")
    expect(page.get_by_test_id("job-error")).to_have_text("ModelCallFailed: 503 Service Unavailable")
    assert scroll_width(page) == width
    page.screenshot(path=output_dir / f"panel-jobs-{width}.png", full_page=True)

    page.goto(f"{base}/turns/{query}")
    expect(page.get_by_test_id("turn-link")).to_have_text(["Turn 2", "Turn 1"])
    expect(page.locator(".page-head .meta")).to_have_text("2 turns · total cost $0.0013")
    assert scroll_width(page) == width
    page.screenshot(path=output_dir / f"turns-numbered-{width}.png", full_page=True)

    page.get_by_test_id("turn-link").first.click()
    expect(page.get_by_test_id("page-heading")).to_have_text("X-ray of turn 2")
    expect(page.get_by_test_id("context-cost-total")).to_have_text("$0.0006")
    assert page.url.startswith(f"{live_url}/dashboard/chat/turns/{turns[1].pk}/")
    assert scroll_width(page) == width
    page.screenshot(path=output_dir / f"xray-numbered-{width}.png", full_page=True)

    page.goto(f"{base}/compactions/{query}")
    expect(page.get_by_test_id("run-number")).to_have_text(["Run 2", "Run 1"])
    expect(page.get_by_test_id("history-totals")).to_have_text("2 runs · 1800 tokens · $0.0000")
    assert scroll_width(page) == width
    page.screenshot(path=output_dir / f"compactions-numbered-{width}.png", full_page=True)

    # A thread id in capitals (as copied from elsewhere) lands on the same page.
    page.goto(f"{live_url}/dashboard/threads/{str(thread.pk).upper()}/{query}")
    expect(page.get_by_test_id("thread-id")).to_have_text(str(thread.pk))
    assert page.url == f"{base}/{query}"
    expect(page.get_by_test_id("message-xray")).to_have_text(["X-ray of turn 1", "X-ray of turn 2"])

"""Compaction history and the thread page in the model's order, in a real browser (issue
10 item 2, "Must show"). Screenshots at desktop (1280) and phone (390) width of the
compaction history, the thread page, the playground after eight turns with compaction
and the X-ray go to test-output/ (or $TEST_OUTPUT_DIR)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from memoryapp import compaction, llm, working
from memoryapp.llm.registry import GuardedModel
from memoryapp.models import CompactionRun, Thread, Turn
from tests.e2e.test_browser import (
    DESKTOP,
    TURN_TIMEOUT_MS,
    Owner,
    log_in,
    open_live,
    png_size,
    thread_url,
    watch,
)
from tests.e2e.test_xray_browser import finish_turn
from tests.test_compaction_history import ScriptedSummarizer

pytestmark = pytest.mark.usefixtures("transactional_db")

PHONE_390 = {"width": 390, "height": 844}


def shoot(page: Page, output_dir: Path, name: str) -> None:
    page.screenshot(path=output_dir / name, full_page=True)


def top_level(page: Page) -> list[tuple[str, int]]:
    """``(data-testid, data-seq)`` of the thread page's top-level items, top to bottom."""
    items = page.locator("#messages > ol.message-list > li")
    return [
        (
            str(items.nth(i).get_attribute("data-testid")),
            int(items.nth(i).get_attribute("data-seq") or 0),
        )
        for i in range(items.count())
    ]


def test_the_history_shows_a_diff_and_the_name_a_summary_dropped(
    owner: Owner,
    live_url: str,
    new_page: Any,
    output_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0  # these short folds go to the model
    model = ScriptedSummarizer()
    monkeypatch.setattr(llm, "get_model", lambda: GuardedModel(model))
    model.texts = [
        "- Trip to Lisbon with Marta on May 12.\n- Budget $4,000.",
        "- Trip to Lisbon on May 12.\n- Budget $4,000.\n- Paulo joins on Friday.",
    ]
    thread = working.thread_create(project=owner.project, dataset="trip")
    working.message_append(
        thread=thread, role="user", content="We fly to Lisbon with Marta on May 12."
    )
    working.message_append(thread=thread, role="assistant", content="Noted: the budget is $4,000.")
    compaction.compact(thread_id=thread.pk)  # #1-#2 into summary #3
    working.message_append(thread=thread, role="user", content="Paulo joins us on Friday.")
    compaction.compact(thread_id=thread.pk)  # #4 and summary #3 into summary #5
    assert CompactionRun.objects.filter(thread=thread).count() == 2

    page = new_page(**DESKTOP)
    seen = watch(page)
    log_in(page, live_url)
    open_live(page, thread_url(live_url, thread))
    page.get_by_test_id("open-compaction-history").click()
    expect(page).to_have_url(
        re.compile(rf"/dashboard/threads/{thread.pk}/compactions/\?projectId=")
    )
    runs = page.get_by_test_id("compaction-run")
    expect(runs).to_have_count(2)
    run = runs.first
    # Named by its number on the thread, whatever its id.
    expect(run).to_have_attribute("id", "run-2")
    expect(run.get_by_test_id("run-number")).to_have_text("Run 2")
    expect(run.get_by_test_id("dropped-term")).to_have_text(["Marta"])
    diff = run.get_by_test_id("run-diff")
    expect(diff).to_be_visible()  # the newest run's diff is open
    expect(diff.locator("[data-kind=removed]")).to_have_text(
        ["- - Trip to Lisbon with Marta on May 12."]
    )
    expect(diff.locator("[data-kind=added]")).to_have_text(
        ["+ - Trip to Lisbon on May 12.", "+ - Paulo joins on Friday."]
    )
    expect(diff.locator("[data-kind=removed] mark.dropped")).to_have_text("Marta")
    # Removed and added lines look different.
    removed_bg = diff.locator("[data-kind=removed]").evaluate(
        "e => getComputedStyle(e).backgroundColor"
    )
    added_bg = diff.locator("[data-kind=added]").first.evaluate(
        "e => getComputedStyle(e).backgroundColor"
    )
    assert removed_bg != added_bg
    shoot(page, output_dir, "compaction-history.png")

    run.get_by_test_id("run-messages").click()  # the range links to its messages
    expect(page).to_have_url(re.compile(r"before=6#msg-5$"))
    expect(page.locator("#msg-5")).to_be_visible()

    phone = new_page(**PHONE_390)
    log_in(phone, live_url)
    phone.goto(f"{thread_url(live_url, thread, 'compactions/')}")
    expect(phone.get_by_test_id("dropped-term").first).to_be_visible()
    shoot(phone, output_dir, "compaction-history-mobile.png")
    assert png_size(output_dir / "compaction-history-mobile.png")[0] == PHONE_390["width"]
    assert seen.dialogs == [] and seen.errors == []


def test_eight_turns_with_compaction_in_the_models_order_at_both_widths(
    owner: Owner, live_url: str, new_page: Any, output_dir: Path
) -> None:
    thread = working.thread_create(project=owner.project, dataset="trip", auto_compact_threshold=6)
    page = new_page(**DESKTOP)
    seen = watch(page)
    log_in(page, live_url)
    open_live(page, thread_url(live_url, thread, "playground/"))
    for text in [
        "We fly to Lisbon on 14 May with Ana and Tom.",
        "The budget is 3200 euros.",
        "Book the hotel near Alfama for 5 nights.",
        "Ana is vegetarian.",
        "Tom arrives a day later, on 15 May.",
        "We want a day trip to Sintra.",
        "Remind me of our budget and dates.",
        "What do we still need to book?",
    ]:
        finish_turn(page, text)
    stored = Thread.objects.get(pk=thread.pk)
    assert stored.active_summary is not None and stored.compaction_count >= 2
    assert (
        CompactionRun.objects.filter(thread=thread, outcome="succeeded").count()
        == stored.compaction_count
    )
    shoot(page, output_dir, "compaction-playground-8-turns.png")

    # The thread page in the model's order: the active summary first (where its range
    # ends), then the messages it kept verbatim and every later one, oldest first; the
    # superseded summaries only inside its history.
    open_live(page, thread_url(live_url, thread))
    order = top_level(page)
    active = stored.active_summary
    assert order[0] == ("summary", active.sequence_number)
    seqs = [seq for _, seq in order[1:]]
    assert seqs == sorted(seqs) and all(kind == "message" for kind, _ in order[1:])
    assert seqs[0] == (active.covers_to_sequence or 0) + 1
    first_summary = page.get_by_test_id("summary").first
    expect(first_summary).to_have_attribute("data-active", "true")
    earlier = first_summary.get_by_test_id("earlier-summaries")
    expect(earlier.locator("[data-testid=summary]")).to_have_count(stored.compaction_count - 1)
    expect(earlier).not_to_have_attribute("open", "")
    shoot(page, output_dir, "compaction-thread.png")

    page.get_by_test_id("message-xray").last.click()
    expect(page.get_by_test_id("xray")).to_be_visible(timeout=TURN_TIMEOUT_MS)
    xray_url = page.url
    shoot(page, output_dir, "compaction-xray.png")
    page.goto(thread_url(live_url, thread, "compactions/"))
    expect(page.get_by_test_id("compaction-run")).to_have_count(stored.compaction_count)
    shoot(page, output_dir, "compaction-history-8-turns.png")

    phone = new_page(**PHONE_390)
    log_in(phone, live_url)
    for url, name in [
        (thread_url(live_url, thread, "playground/"), "compaction-playground-8-turns-mobile.png"),
        (thread_url(live_url, thread), "compaction-thread-mobile.png"),
        (xray_url, "compaction-xray-mobile.png"),
        (thread_url(live_url, thread, "compactions/"), "compaction-history-8-turns-mobile.png"),
    ]:
        phone.goto(url)
        phone.wait_for_load_state("networkidle")
        shoot(phone, output_dir, name)
        assert png_size(output_dir / name)[0] == PHONE_390["width"], name
    assert Turn.objects.filter(thread=thread).count() == 8
    assert seen.dialogs == [] and seen.errors == []

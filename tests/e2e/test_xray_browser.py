"""The turn X-ray, replay, Markdown replies and the playground after many turns in a real
browser (issue 10 items 1 and 4, "Must show"). Screenshots go to test-output/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from memoryapp import working
from memoryapp.models import Thread, Turn
from tests.e2e.test_browser import (
    DESKTOP,
    PHONE,
    TURN_TIMEOUT_MS,
    Owner,
    log_in,
    open_live,
    png_size,
    send_turn,
    thread_url,
    watch,
)

pytestmark = pytest.mark.usefixtures("transactional_db")

SYSTEM_PROMPT = "Answer in one short paragraph."


def finish_turn(page: Page, text: str) -> None:
    """Send ``text`` and wait until the turn's stored messages replaced its bubbles."""
    send_turn(page, text)
    expect(page.locator("#chat-pending li")).to_have_count(0, timeout=TURN_TIMEOUT_MS)


def test_it_shows_the_xray_of_a_turn_after_reload_and_replays_it(
    owner: Owner, live_url: str, new_page: Any, output_dir: Path
) -> None:
    thread = working.thread_create(project=owner.project, dataset="user_42")
    other = working.thread_create(project=owner.project, dataset="user_42")
    working.message_append(thread=other, role="user", content="Our budget is 30000 euros for the trip.")
    page = new_page(**DESKTOP)
    seen = watch(page)
    log_in(page, live_url)
    open_live(page, thread_url(live_url, thread, "playground/"))
    page.get_by_test_id("chat-system-prompt").fill(SYSTEM_PROMPT)
    finish_turn(page, "What is our budget?")
    turn = Turn.objects.get(thread=thread)
    stored = turn.context["input"]

    page.reload()  # the X-ray is stored: it survives a reload and opens from the reply
    page.get_by_test_id("message-xray").last.click()
    expect(page).to_have_url(re.compile(rf"/dashboard/chat/turns/{turn.pk}/\?projectId="))
    instruction = page.get_by_test_id("xray-system-instruction")
    assert instruction.text_content() == stored["systemInstruction"]
    assert stored["systemInstruction"].endswith(SYSTEM_PROMPT)
    parts = page.get_by_test_id("xray-system-part")
    expect(parts).to_have_count(2)
    expect(parts.nth(0)).to_have_attribute("data-source", "recall")
    expect(parts.nth(0).get_by_test_id("xray-recall-items")).to_contain_text("#1")
    expect(parts.nth(1)).to_have_attribute("data-source", "systemPrompt")
    messages = page.get_by_test_id("xray-message")
    expect(messages).to_have_count(1)
    expect(messages.nth(0).get_by_test_id("xray-message-source")).to_have_text("message #1")
    expect(messages.nth(0).locator("pre")).to_have_text("What is our budget?")
    expect(page.get_by_test_id("xray-gauge")).to_have_attribute("max", str(stored["contextWindow"]))
    page.screenshot(path=output_dir / "xray.png", full_page=True)

    assert turn.assistant_message is not None
    page.get_by_test_id("replay-button").click()
    outputs = page.get_by_test_id("replay-outputs")
    expect(outputs.get_by_test_id("replay-original")).to_contain_text(turn.assistant_message.content[:30])
    expect(outputs.get_by_test_id("replay-new")).to_contain_text("offline")
    expect(outputs.locator("section")).to_have_count(2)
    page.screenshot(path=output_dir / "xray-replay.png", full_page=True)
    assert Turn.objects.filter(thread=thread).count() == 1

    # An error answer (JSON, in the API's shape) is said where the replay would go.
    page.select_option("select[name=adapter]", "offline")
    page.eval_on_selector("select[name=adapter] option", "o => { o.value = 'gpt-9'; }")
    page.get_by_test_id("replay-button").click()
    expect(page.get_by_test_id("replay-result").get_by_test_id("request-error")).to_have_text(
        "Validation error: adapter: Input should be 'offline' or 'gemini'."
    )

    phone = new_page(**PHONE)
    log_in(phone, live_url)
    phone.goto(page.url)
    expect(phone.get_by_test_id("xray")).to_be_visible()
    phone.screenshot(path=output_dir / "xray-mobile.png", full_page=True)
    assert png_size(output_dir / "xray-mobile.png")[0] == PHONE["width"]
    assert seen.dialogs == [] and seen.errors == []


def test_it_renders_markdown_replies_and_never_runs_script_in_them(
    owner: Owner, live_url: str, new_page: Any
) -> None:
    thread = working.thread_create(project=owner.project, dataset="d")
    working.message_append(thread=thread, role="user", content="format it")
    working.message_append(
        thread=thread,
        role="assistant",
        content="**Budget:** 30000\n\n- flights\n- hotel\n\n<script>window.__pwned = 1; alert(1)</script>"
        "\n\n<img src=x onerror=\"window.__pwned = 2\">",
    )
    page = new_page(**DESKTOP)
    seen = watch(page)
    log_in(page, live_url)
    open_live(page, thread_url(live_url, thread))
    reply = page.locator("#messages [data-role=assistant] [data-testid=message-content]")
    expect(reply.locator("strong")).to_have_text("Budget:")
    expect(reply.locator("li")).to_have_text(["flights", "hotel"])
    expect(reply).to_contain_text("<script>window.__pwned = 1; alert(1)</script>")
    assert reply.locator("script, img").count() == 0
    assert page.evaluate("window.__pwned === undefined")
    assert seen.dialogs == [] and seen.errors == []


def test_it_saves_the_playground_after_eight_turns_with_compaction(
    owner: Owner, live_url: str, new_page: Any, output_dir: Path
) -> None:
    thread = working.thread_create(project=owner.project, dataset="trip", auto_compact_threshold=6)
    page = new_page(**DESKTOP)
    log_in(page, live_url)
    open_live(page, thread_url(live_url, thread, "playground/"))
    expect(page.get_by_test_id("chat-input")).to_be_focused()
    questions = [
        "We fly to Lisbon on 14 May with Ana and Tom.", "The budget is 3200 euros.",
        "Book the hotel near Alfama for 5 nights.", "Ana is vegetarian.",
        "Tom arrives a day later, on 15 May.", "We want a day trip to Sintra.",
        "Remind me of our budget and dates.", "What do we still need to book?",
    ]
    for text in questions:
        finish_turn(page, text)
    assert Turn.objects.filter(thread=thread).count() == 8
    assert Thread.objects.get(pk=thread.pk).last_compacted_at is not None
    expect(page.get_by_test_id("turn-context")).to_be_visible()
    page.screenshot(path=output_dir / "playground-8-turns.png", full_page=True)
    page.get_by_test_id("side-panel").locator("summary").first.click()  # fold the panel away
    page.screenshot(path=output_dir / "playground-8-turns-folded.png", full_page=True)

    phone = new_page(**PHONE)
    log_in(phone, live_url)
    open_live(phone, thread_url(live_url, thread, "playground/"))
    phone.screenshot(path=output_dir / "playground-8-turns-mobile.png", full_page=True)
    open_live(phone, thread_url(live_url, thread))
    phone.screenshot(path=output_dir / "thread-8-turns-mobile.png", full_page=True)
    page.goto(thread_url(live_url, thread))
    page.screenshot(path=output_dir / "thread-8-turns.png", full_page=True)
    for name in ("playground-8-turns-mobile.png", "thread-8-turns-mobile.png"):
        assert png_size(output_dir / name)[0] == PHONE["width"], name

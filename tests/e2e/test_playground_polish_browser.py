"""The playground's rough edges, fixed, in a real browser at 1280 and 390 pixels wide:
every model call of a tool-loop turn in the X-ray (with Replay naming its call) and the
Stats' token average saying what it averages. Screenshots go to test-output/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from memoryapp import agents, working
from memoryapp.models import Thread, Turn
from tests.e2e.test_browser import (
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

WIDE = {"width": 1280, "height": 900}
NARROW = {"width": 390, "height": 844}


def _finish_turn(page: Page, text: str) -> None:
    send_turn(page, text)
    expect(page.locator("#chat-pending li")).to_have_count(0, timeout=TURN_TIMEOUT_MS)


def _agent_thread(owner: Owner) -> Thread:
    agent, _ = agents.agent_define(project=owner.project, name="dm", system_prompt="You are the dungeon master.",
                                   memory={})
    return working.thread_create(project=owner.project, dataset="user_42", agent=agent)


def test_the_xray_shows_and_replays_every_model_call_of_a_tool_loop_turn(
    owner: Owner, live_url: str, new_page: Any, output_dir: Path
) -> None:
    thread = _agent_thread(owner)
    page = new_page(**WIDE)
    seen = watch(page)
    log_in(page, live_url)
    open_live(page, thread_url(live_url, thread, "playground/"))
    _finish_turn(page, "Remember that my sister is called Ada.")
    turn = Turn.objects.get(thread=thread)
    first, second = turn.context["calls"]

    panel = page.get_by_test_id("turn-context-panel")
    calls = panel.get_by_test_id("xray-call")
    expect(calls).to_have_count(2)
    expect(calls.nth(0).get_by_test_id("xray-call-outcome")).to_have_text("asked for close_memory")
    expect(calls.nth(1).get_by_test_id("xray-call-outcome")).to_have_text("the reply")
    expect(panel.get_by_test_id("xray-input-heading")).to_contain_text(f"call 1 (exact): {first['totalTokens']} of")
    expect(panel.get_by_test_id("xray-added")).to_have_count(0)

    panel.get_by_test_id("xray-call-link").click()  # the one link: call 2
    expect(panel.get_by_test_id("xray-input-heading")).to_contain_text(f"call 2 (exact): {second['totalTokens']} of")
    expect(panel.get_by_test_id("xray-added")).to_have_count(2)
    expect(panel.get_by_test_id("xray")).to_have_attribute("data-call", "2")
    panel.get_by_test_id("replay-button").click()
    expect(panel.get_by_test_id("replay-call")).to_have_text(
        "Replayed call 2 of 2: the input of that call, beside what it gave then."
    )
    expect(panel.get_by_test_id("replay-new")).to_contain_text("Saved to memory")
    page.screenshot(path=output_dir / "xray-calls-playground-1280.png", full_page=True)
    panel.get_by_test_id("xray").screenshot(path=output_dir / "xray-calls-panel-1280.png")

    phone = new_page(**NARROW)
    log_in(phone, live_url)
    phone.goto(f"{live_url}/dashboard/chat/turns/{turn.pk}/?projectId={owner.project.pk}&call=2")
    expect(phone.get_by_test_id("xray-added")).to_have_count(2)
    phone.screenshot(path=output_dir / "xray-calls-390.png", full_page=True)
    phone.get_by_test_id("xray-calls").screenshot(path=output_dir / "xray-calls-list-390.png")
    assert png_size(output_dir / "xray-calls-390.png")[0] == NARROW["width"]
    assert phone.evaluate("document.documentElement.scrollWidth") <= NARROW["width"]
    assert seen.dialogs == [] and seen.errors == []


def test_the_stats_say_tokens_per_reply_on_a_playground_thread(
    owner: Owner, live_url: str, new_page: Any, output_dir: Path
) -> None:
    thread = working.thread_create(project=owner.project, dataset="user_42")
    page = new_page(**WIDE)
    log_in(page, live_url)
    open_live(page, thread_url(live_url, thread, "playground/"))
    _finish_turn(page, "Hello there.")
    _finish_turn(page, "And again.")
    reply_tokens = sorted(m.tokens_total or 0 for m in thread.messages.filter(role="assistant"))
    expect(page.get_by_test_id("stat-token-average")).to_have_text(f"{round(sum(reply_tokens) / 2)} per reply")
    page.screenshot(path=output_dir / "stats-per-reply-1280.png", full_page=True)

"""The playground's rough edges, fixed, in a real browser at 1280 and 390 pixels wide:
every model call of a tool-loop turn in the X-ray (with Replay naming its call), a
transient send placed where it happened and marked as not stored, and the Stats' token
average saying what it averages. Screenshots go to test-output/."""

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


@pytest.mark.parametrize("size", [WIDE, NARROW], ids=["1280", "390"])
def test_a_transient_reply_stays_where_it_was_sent_marked_not_stored(
    owner: Owner, live_url: str, new_page: Any, output_dir: Path, size: dict[str, int]
) -> None:
    thread = working.thread_create(project=owner.project, dataset="user_42")
    working.message_append(thread=thread, role="user", content="I'm looking for a family car.")
    working.message_append(thread=thread, role="assistant", content="A hybrid estate would suit a family.")
    page = new_page(**size)
    seen = watch(page)
    log_in(page, live_url)
    open_live(page, thread_url(live_url, thread, "playground/"))

    page.get_by_test_id("chat-transient").check()
    send_turn(page, "What if we wanted a van instead?")
    assistant = page.get_by_test_id("transient-assistant")
    expect(assistant.get_by_test_id("transient-badge")).to_have_text("not stored", timeout=TURN_TIMEOUT_MS)
    page.get_by_test_id("chat-transient").uncheck()
    _finish_turn(page, "Thanks, the estate it is.")
    expect(page.locator("#messages li[data-seq='4']")).to_have_count(1)

    # In the list, after #2 (the newest message when it was sent), before the turn after it.
    order = page.eval_on_selector_all(
        "#messages > ol.message-list > li",
        "items => items.map(li => li.dataset.seq || li.dataset.testid)",
    )
    assert order == ["1", "2", "transient-user", "transient-assistant", "3", "4"]
    expect(page.get_by_test_id("transient-user").get_by_test_id("transient-badge")).to_have_text("not stored")
    expect(assistant).to_contain_text("nothing was stored; it is gone when you reload")
    expect(page.locator("#chat-pending li")).to_have_count(0)
    page.screenshot(path=output_dir / f"transient-{size['width']}.png", full_page=True)
    page.get_by_test_id("transient-user").scroll_into_view_if_needed()
    page.locator(".chat").screenshot(path=output_dir / f"transient-chat-{size['width']}.png")

    page.reload()  # not stored: gone
    expect(page.get_by_test_id("live-status")).to_have_attribute("data-state", "open")
    expect(page.get_by_test_id("transient-assistant")).to_have_count(0)
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

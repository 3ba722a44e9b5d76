"""The playground while a turn is pending and after it failed or was transient, in a real
browser (QA report M6, L11, L12): the user's message shows once when its stored row
arrives before the reply, a failure says in words what its kind means, and the X-ray
panel after a transient send says, whatever came before, that there is no X-ray.

The slow, failing model is the chat route held by Playwright (page.route) while the
message is stored through /v1, as the chat route stores it before calling the model:
the served process's model is the offline one, which neither waits nor fails."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from memoryapp import working
from memoryapp.models import ApiKey, Thread
from tests.e2e.test_browser import (
    TURN_TIMEOUT_MS,
    Owner,
    log_in,
    open_live,
    send_turn,
    thread_url,
    watch,
)

pytestmark = pytest.mark.usefixtures("transactional_db")

TEXT = "What car should I buy?"
NO_XRAY = (
    "A transient send is not stored, so it has no X-ray: the line above says what prepare and recall "
    "gave it. Each stored reply keeps its X-ray (its \u201cX-ray of turn\u201d link)."
)


def _thread(owner: Owner) -> Thread:
    thread = working.thread_create(project=owner.project, dataset="user_42")
    working.message_append(thread=thread, role="user", content="Hello")
    working.message_append(thread=thread, role="assistant", content="Hi! How can I help?")
    return thread


def _store(live_url: str, secret: str, thread: Thread, content: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{live_url}/v1/memory/working/threads/{thread.pk}/messages",
        data=json.dumps({"role": "user", "content": content}).encode(),
        headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return dict(json.loads(response.read()))


def _times_shown(page: Page, text: str) -> int:
    return int(page.eval_on_selector_all(
        "#chat-scroll .message__content", f"els => els.filter(e => e.textContent === {json.dumps(text)}).length"
    ))  # fmt: skip


def test_a_pending_message_shows_once_when_its_stored_row_arrives_and_a_failure_says_what_it_means(
    owner: Owner, live_url: str, new_page: Any, output_dir: Path
) -> None:
    thread = _thread(owner)
    _, secret = ApiKey.issue(project=owner.project, name="e2e")
    page = new_page()
    seen = watch(page)
    log_in(page, live_url)
    open_live(page, thread_url(live_url, thread, "playground/"))
    held: list[Any] = []
    page.route("**/dashboard/chat/threads/**", lambda route: held.append(route))  # the model takes its time

    send_turn(page, TEXT)
    expect(page.get_by_test_id("pending-user")).to_have_count(1)
    assert _times_shown(page, TEXT) == 1
    stored = _store(live_url, secret, thread, TEXT)  # what the chat route does first
    assert stored["sequenceNumber"] == 3
    expect(page.locator("#messages li[data-seq='3']")).to_have_count(1, timeout=TURN_TIMEOUT_MS)

    # Once: the stored row replaces the pending bubble; the reply is still awaited.
    expect(page.get_by_test_id("pending-user")).to_have_count(0)
    expect(page.get_by_test_id("pending-assistant")).to_have_count(1)
    assert _times_shown(page, TEXT) == 1
    page.screenshot(path=output_dir / "pending-merged.png", full_page=True)

    assert len(held) == 1
    held[0].fulfill(status=502, content_type="application/json", body=json.dumps({
        "error": "Model call failed", "kind": "unavailable",
        "detail": "Gemini reply: connection failed after 3 attempts (ConnectError)",
        "userMessage": {"messageId": stored["messageId"], "sequenceNumber": 3, "role": "user"}, "turnId": 1,
    }))  # fmt: skip
    error = page.get_by_test_id("chat-error")
    expect(error.locator("strong")).to_have_text("The model call failed. Your message is kept as #3 above.")
    expect(error.locator("li")).to_have_text([
        "Gemini reply: connection failed after 3 attempts (ConnectError)",
        "The model could not be reached or refused the request (unavailable): Gemini is unreachable from the "
        "server, or GEMINI_API_KEY is missing or wrong. Check the network and the key.",
    ])  # fmt: skip
    expect(page.locator("#chat-pending li")).to_have_count(0)
    assert _times_shown(page, TEXT) == 1
    page.screenshot(path=output_dir / "pending-failed.png", full_page=True)
    assert seen.dialogs == [] and seen.errors == []


def test_a_transient_send_says_it_has_no_xray_whatever_the_panel_showed_before(
    owner: Owner, live_url: str, new_page: Any
) -> None:
    thread = _thread(owner)
    page = new_page()
    seen = watch(page)
    log_in(page, live_url)
    panel = page.get_by_test_id("turn-context-panel")

    # A stored turn first: its X-ray fills the panel; then a transient send.
    open_live(page, thread_url(live_url, thread, "playground/"))
    send_turn(page, "I'm looking for a family car.")
    expect(panel.get_by_test_id("turn-context")).to_have_count(1, timeout=TURN_TIMEOUT_MS)
    expect(page.locator("#chat-pending li")).to_have_count(0, timeout=TURN_TIMEOUT_MS)
    page.get_by_test_id("chat-transient").check()
    send_turn(page, "What if we wanted a van instead?")
    expect(page.get_by_test_id("transient-assistant")).to_have_count(1, timeout=TURN_TIMEOUT_MS)
    expect(page.get_by_test_id("last-turn")).to_contain_text("Transient send: nothing stored")
    expect(panel).to_have_text(NO_XRAY)

    # A transient send first, on a fresh page: the same words, not the placeholder.
    open_live(page, thread_url(live_url, thread, "playground/"))
    page.get_by_test_id("chat-transient").check()
    send_turn(page, "And a pickup?")
    expect(page.get_by_test_id("transient-assistant")).to_have_count(1, timeout=TURN_TIMEOUT_MS)
    expect(panel).to_have_text(NO_XRAY)
    assert seen.dialogs == [] and seen.errors == []

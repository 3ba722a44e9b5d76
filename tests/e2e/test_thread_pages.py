"""The thread page in a real browser: paging keeps its URL, the favicon is served
(issue 7 item 6)."""

from __future__ import annotations

import re
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import expect

from memoryapp import working
from playground import selectors
from tests.e2e.test_browser import Owner, log_in, thread_url

pytestmark = pytest.mark.usefixtures("transactional_db")


def test_it_keeps_an_older_page_in_the_url_so_a_reload_shows_it_again(
    owner: Owner, live_url: str, new_page: Any
) -> None:
    thread = working.thread_create(project=owner.project, dataset="user_e2e")
    for i in range(1, selectors.MESSAGES_PAGE_SIZE + 6):
        working.message_append(thread=thread, role="user", content=f"message {i}")
    page = new_page()
    log_in(page, live_url)
    page.goto(thread_url(live_url, thread))
    expect(page.locator("#msg-6")).to_be_visible()
    expect(page.locator("#msg-5")).to_have_count(0)

    page.get_by_test_id("load-older").click()

    expect(page).to_have_url(re.compile(r"[?&]before=6$"))
    expect(page.locator("#msg-5")).to_be_visible()
    page.reload()
    expect(page.locator("#msg-1")).to_be_visible()
    expect(page.locator(".page-note")).to_contain_text("Showing messages before #6.")
    page.get_by_test_id("newest").click()
    expect(page).to_have_url(re.compile(rf"/dashboard/threads/{thread.pk}/\?projectId=\d+$"))
    expect(page.locator("#msg-5")).to_have_count(0)


def test_it_serves_a_favicon(live_url: str) -> None:
    with urllib.request.urlopen(f"{live_url}/favicon.ico", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] in ("image/x-icon", "image/vnd.microsoft.icon")
        assert response.read(4) == b"\x00\x00\x01\x00"  # the ICO header

"""A tab whose session ends stops receiving and says "signed out" (issue 7 item 1).

Before, a tab left open after logging out in another one kept receiving every message
and streamed reply, and its live refreshes swapped the login page into the message list
and the stats panel.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from memoryapp import working
from memoryapp.models import ApiKey
from tests.e2e.test_browser import (
    LIVE_TIMEOUT_MS,
    Owner,
    api_append,
    assert_same_document,
    log_in,
    mark_document,
    open_live,
    thread_url,
    watch,
)

pytestmark = pytest.mark.usefixtures("transactional_db")


def test_it_shows_signed_out_in_a_tab_whose_session_ended_and_swaps_in_no_login_page(
    owner: Owner, live_url: str, new_page: Any
) -> None:
    thread = working.thread_create(project=owner.project, dataset="user_e2e")
    _, key = ApiKey.issue(project=owner.project, name="e2e")
    tab_a = new_page()
    log_in(tab_a, live_url)
    tab_b = tab_a.context.new_page()
    seen = watch(tab_b)
    open_live(tab_b, thread_url(live_url, thread, "playground/"))
    mark_document(tab_b)

    tab_a.get_by_test_id("logout").click()
    expect(tab_a).to_have_url(re.compile(r"/login/"))

    status = tab_b.get_by_test_id("live-status")
    expect(status).to_have_attribute("data-state", "signed-out", timeout=LIVE_TIMEOUT_MS)
    expect(status).to_have_text("signed out")
    expect(tab_b.get_by_test_id("signed-out")).to_contain_text("You are signed out.")
    api_append(live_url, key, thread, "Not for a signed-out tab")
    # A refresh of the messages and the stats (what an event starts) is answered 401 and
    # swaps nothing in.
    with tab_b.expect_response(lambda r: "/stats/" in r.url) as stats:
        tab_b.evaluate("window.memoryLive.refresh()")
    assert stats.value.status == 401
    expect(tab_b.get_by_test_id("messages-empty")).to_be_visible()
    expect(tab_b.get_by_test_id("stats")).to_be_visible()
    expect(tab_b.get_by_test_id("login-form")).to_have_count(0)
    assert "Not for a signed-out tab" not in tab_b.content()
    assert_same_document(tab_b)
    assert seen.dialogs == []

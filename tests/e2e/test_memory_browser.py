"""The Memory page of a dataset in a real browser (issue 8 item 6): end() through the /v1
API runs the episode job in a real ``manage.py db_worker``, an open dataset page shows
the new facts without reload (dataset.changed), the Civic fact struck through and
replaced by the Prius fact, and the contradictions inbox restores the older fact.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from memoryapp import working
from memoryapp.models import ApiKey, Fact, FactReview, Thread
from tests.e2e.test_browser import (
    Owner,
    api_append,
    assert_same_document,
    log_in,
    mark_document,
    open_live,
    scroll_width,
)

JOB_TIMEOUT_MS = 15_000
CIVIC = "The user drives a Honda Civic."

pytestmark = pytest.mark.usefixtures("transactional_db")


def api_end(live_url: str, key: str, thread: Thread) -> Any:
    """POST end() through the /v1 API of the live server; return the 202 body."""
    request = urllib.request.Request(
        f"{live_url}/v1/memory/working/threads/{thread.pk}/end",
        data=b"{}",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 202
        return json.loads(response.read())


def test_it_shows_a_contradiction_live_and_restores_the_older_fact(
    owner: Owner, live_url: str, new_page: Any, db_worker: Any, output_dir: Path
) -> None:
    _, key = ApiKey.issue(project=owner.project, name="e2e")
    thread = working.thread_create(project=owner.project, dataset="user_e2e")
    page = new_page()
    log_in(page, live_url)
    open_live(page, f"{live_url}/dashboard/memory/dataset/?projectId={owner.project.pk}&dataset=user_e2e")
    expect(page.get_by_test_id("inbox-empty")).to_be_visible()
    mark_document(page)

    api_append(live_url, key, thread, "I drive a Honda Civic")
    api_end(live_url, key, thread)
    first = page.locator("[data-testid=fact]", has_text=CIVIC)
    expect(first).to_have_attribute("data-state", "current", timeout=JOB_TIMEOUT_MS)
    # By id from here on: once replaced, the Prius fact names the Civic one too.
    civic = page.locator(f"[data-testid=fact][data-fact-id='{first.get_attribute('data-fact-id')}']")

    api_append(live_url, key, thread, "I sold the Civic, I drive a Prius now")
    api_end(live_url, key, thread)
    expect(civic).to_have_attribute("data-state", "invalidated", timeout=JOB_TIMEOUT_MS)
    expect(civic.locator("del")).to_have_text(CIVIC)
    expect(civic.get_by_test_id("fact-replacement")).to_contain_text("Prius")
    expect(page.get_by_test_id("episode")).to_have_count(2)
    assert_same_document(page)  # both refreshes came live, without a reload

    entry = page.get_by_test_id("contradiction")
    expect(entry.get_by_test_id("contradiction-older")).to_have_text(CIVIC)
    page.once("dialog", lambda dialog: dialog.accept())
    entry.get_by_test_id("contradiction-restore").click()
    expect(page.get_by_test_id("flash")).to_contain_text("Restored")
    expect(page.get_by_test_id("inbox-empty")).to_be_visible()
    expect(civic).to_have_attribute("data-state", "current")

    # Every entity is listed with a link, the cars too (no fact is about them).
    expect(page.get_by_test_id("entity")).to_have_count(3)
    expect(page.locator("[data-testid=entity][data-entity=Prius] [data-testid=entity-link]")).to_be_visible()
    page.screenshot(path=output_dir / "dataset.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    assert scroll_width(page) <= 390
    page.screenshot(path=output_dir / "dataset-390.png", full_page=True)

    restored = Fact.objects.get(text=CIVIC)
    prius = Fact.objects.get(invalidated_by=restored)
    assert (restored.invalidated_at, "Prius" in prius.value) == (None, True)
    assert sorted(FactReview.objects.values_list("action", flat=True)) == ["restored", "restored"]

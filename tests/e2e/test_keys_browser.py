"""The API keys page in a real browser at 1280 and 375 pixels wide: the keys tables fit
their card (at phone width each key is a small card of its own: name, prefix, last use,
Revoke), so nothing is cut off and the page never scrolls sideways."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from memoryapp.models import ApiKey
from tests.e2e.test_browser import Owner, log_in, scroll_width

pytestmark = pytest.mark.usefixtures("transactional_db")

WIDE = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 740}
# As long as a key's name may be (ApiKeyForm: 100 characters), with no place to break.
LONG_NAME = "production-eu-west-1-billing-backend-" + "x" * 63


@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["1280", "375"])
def test_the_keys_tables_fit_their_card(
    owner: Owner, live_url: str, new_page: Any, output_dir: Path, size: dict[str, int]
) -> None:
    now = timezone.now()
    for name, used in (("ci", now), (LONG_NAME, now - timedelta(days=40)), ("staging", None)):
        key, _ = ApiKey.issue(project=owner.project, name=name)
        ApiKey.objects.filter(pk=key.pk).update(last_used=used, created=now - timedelta(days=400))
    revoked, _ = ApiKey.issue(project=owner.project, name="old laptop")
    revoked.revoke()
    ApiKey.objects.filter(pk=revoked.pk).update(last_used=now - timedelta(days=500), revoked=now - timedelta(days=390))
    page = new_page(**size)
    log_in(page, live_url)
    page.goto(f"{live_url}/dashboard/keys/?projectId={owner.project.pk}")
    expect(page.get_by_test_id("key-row")).to_have_count(3)
    page.screenshot(path=output_dir / f"keys-{size['width']}.png", full_page=True)

    assert scroll_width(page) == size["width"]
    for table in ("active-keys", "revoked-keys"):
        # Nothing of the table sticks out of its card, nor scrolls inside it.
        fits = page.get_by_test_id(table).evaluate(
            """t => {
                const card = t.closest('.card').getBoundingClientRect();
                const box = t.getBoundingClientRect();
                const wrap = t.parentElement;
                return box.left >= card.left && box.right <= card.right
                    && wrap.scrollWidth <= wrap.clientWidth;
            }"""
        )
        assert fits, table
    # Every Revoke button is inside the card, whole and clickable.
    card = page.get_by_test_id("active-keys").locator("xpath=ancestor::section[1]").bounding_box()
    assert card is not None
    for button in page.get_by_test_id("key-revoke").all():
        box = button.bounding_box()
        assert box is not None and box["x"] >= card["x"] and box["x"] + box["width"] <= card["x"] + card["width"]

"""The thread list's layout in a real browser at 1280 and 390 pixels wide: a tag never
breaks inside a word, a short dataset name never wraps, and at phone width, where each
row is a small card, the rows' columns line up with each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import FloatRect, Page, expect

from memoryapp import working
from tests.e2e.test_browser import Owner, log_in, scroll_width

pytestmark = pytest.mark.usefixtures("transactional_db")

WIDE = {"width": 1280, "height": 900}
MIDDLE = {"width": 1024, "height": 800}
NARROW = {"width": 390, "height": 844}


def _boxes(page: Page, selector: str) -> list[FloatRect]:
    """The bounding box of every element ``selector`` matches, in document order."""
    return [box for box in (el.bounding_box() for el in page.locator(selector).all()) if box]


def _line_count(page: Page, selector: str) -> list[int]:
    """How many lines the text of each element ``selector`` matches is laid out on."""
    return list(
        page.eval_on_selector_all(
            selector,
            """els => els.map(el => {
                const range = document.createRange();
                range.selectNodeContents(el);
                return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
            })""",
        )
    )


LONG_TAG = "a-tag-that-is-far-too-long-for-its-chip"


@pytest.mark.parametrize("size", [WIDE, MIDDLE, NARROW], ids=["1280", "1024", "390"])
def test_it_keeps_tags_whole_and_lines_up_the_rows(
    owner: Owner, live_url: str, new_page: Any, output_dir: Path, size: dict[str, int]
) -> None:
    working.thread_create(project=owner.project, dataset="demo_user", tags=["sample"])
    working.thread_create(
        project=owner.project, dataset="user_42", tags=["cars", "family", "long-tag-name"]
    )
    working.thread_create(project=owner.project, dataset="a", tags=[LONG_TAG])
    thread = working.thread_create(project=owner.project, dataset="support_team", tags=["x"])
    working.message_append(thread=thread, role="user", content="Hi! I'm looking for a family car.")
    page = new_page(**size)
    log_in(page, live_url)
    expect(page.get_by_test_id("thread-row")).to_have_count(4)
    page.screenshot(path=output_dir / f"thread-list-{size['width']}.png", full_page=True)

    assert scroll_width(page) == size["width"]
    # The table (or the cards) fits its card: nothing is cut off at the right.
    assert page.locator(".table--threads").evaluate(
        "t => t.offsetWidth <= t.parentElement.clientWidth"
    )
    # Every tag is one line: no break at a hyphen, none inside a word. A tag too long
    # for its chip ends in an ellipsis and says itself whole in its title.
    tags = page.get_by_test_id("thread-tag")
    expect(tags).to_have_count(6)
    assert _line_count(page, "[data-testid=thread-tag]") == [1] * 6
    whole = {
        t.inner_text(): t.evaluate("el => el.scrollWidth <= el.clientWidth") for t in tags.all()
    }
    assert whole == {
        "x": True,
        LONG_TAG: size is not WIDE,
        "cars": True,
        "family": True,
        "long-tag-name": True,
        "sample": True,
    }
    expect(page.locator(f"[data-testid=thread-tag][title='{LONG_TAG}']")).to_have_count(1)
    # Short dataset names never wrap.
    assert _line_count(page, ".cell-dataset bdi") == [1] * 4
    # Beside the New thread form, below 1230px, the list is cards, as on a phone.
    cards = page.locator("tbody").evaluate("el => getComputedStyle(el).display") == "grid"
    assert cards is (size is not WIDE)
    if cards:
        # The cards' columns are shared: each cell starts where the same cell of every
        # other card starts, and the times end at one right edge.
        for selector in (
            ".cell-dataset",
            ".cell-thread > a",
            ".cell-messages",
            ".cell-compactions",
        ):
            assert len({round(b["x"]) for b in _boxes(page, selector)}) == 1, selector
        assert len({round(b["x"] + b["width"]) for b in _boxes(page, ".cell-activity")}) == 1

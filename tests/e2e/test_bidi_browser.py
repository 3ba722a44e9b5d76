"""A name with a bidi control character reads in the order it was typed, in a real browser
(QA report L9): the tag "\u202egnp.exe" (RIGHT-TO-LEFT OVERRIDE) displayed as "exe.png"
in the thread list; <bdi> isolated it from the page but not from itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from memoryapp import working
from tests.e2e.test_browser import Owner, log_in

pytestmark = pytest.mark.usefixtures("transactional_db")


def test_an_override_character_in_a_tag_is_shown_not_obeyed(
    owner: Owner, live_url: str, new_page: Any, output_dir: Path
) -> None:
    working.thread_create(project=owner.project, dataset="user_42", tags=["\u202egnp.exe", "cars"])
    page = new_page()
    log_in(page, live_url)
    tag = page.get_by_test_id("thread-tag").first
    expect(tag).to_contain_text("gnp.exe")
    # Left to right on screen: "g" (the first letter typed) left of the last "e", and the
    # visible code point before both.
    xs = tag.evaluate(
        """el => {
            const text = [...el.childNodes].find(n => n.nodeType === 3 && n.textContent.includes("gnp"));
            const at = i => { const r = document.createRange(); r.setStart(text, i); r.setEnd(text, i + 1);
                              return r.getBoundingClientRect().left; };
            const start = text.textContent.indexOf("gnp");
            const mark = el.querySelector(".bidi-control");
            return {first: at(start), last: at(start + 6), mark: mark ? mark.getBoundingClientRect().left : null,
                    shown: el.innerText};
        }"""
    )
    assert xs["first"] < xs["last"], xs
    assert xs["mark"] is not None and xs["mark"] < xs["first"], xs
    assert xs["shown"] == "U+202Egnp.exe"
    tag.screenshot(path=output_dir / "bidi-tag.png")

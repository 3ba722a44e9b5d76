"""The dashboard's thread and project administration and the playground's keyboard path in
a real browser (issue 10 item 4; issue 9 item 6's transient send)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from memoryapp import working
from memoryapp.models import Membership, Message, Project, Thread, Turn
from tests.e2e.conftest import Owner
from tests.e2e.test_browser import log_in, open_live, thread_url

pytestmark = pytest.mark.usefixtures("transactional_db")

ACTIVE_TESTID = "() => document.activeElement && document.activeElement.dataset.testid"


def test_it_creates_a_project_then_edits_and_deletes_a_thread(owner: Owner, live_url: str, new_page: Any) -> None:
    page = new_page()
    log_in(page, live_url)
    page.get_by_test_id("new-project").click()
    form = page.get_by_test_id("project-create-form")
    form.get_by_label("Name").fill("Support bot")
    form.get_by_test_id("project-create-submit").click()
    expect(page).to_have_url(re.compile(r"/dashboard/threads/\?projectId=\d+$"))
    expect(page.get_by_test_id("flash")).to_have_text("Created project “\u2068Support bot\u2069”; you are its owner.")
    project = Project.objects.get(name="Support bot")
    assert Membership.objects.get(project=project).role == "owner"
    expect(page.locator("#project-switcher")).to_have_value(str(project.pk))

    thread = working.thread_create(project=project, dataset="user_e2e", tags=["web"])
    page.goto(thread_url(live_url, thread))
    page.get_by_test_id("thread-edit").locator("summary").click()
    edit = page.get_by_test_id("thread-edit-form")
    edit.get_by_label("Tags").fill("vip, web")
    edit.get_by_label("Auto-compact threshold").fill("1")
    edit.get_by_test_id("thread-edit-submit").click()
    # The error on the form, the form still open with what was typed; nothing saved.
    errors = page.get_by_test_id("thread-edit-form").locator(".errorlist")
    expect(errors).to_have_text("Ensure this value is greater than or equal to 2.")
    expect(page.get_by_test_id("thread-edit-form").get_by_label("Tags")).to_have_value("vip, web")
    page.get_by_test_id("thread-edit-form").get_by_label("Auto-compact threshold").fill("30")
    page.get_by_test_id("thread-edit-form").get_by_test_id("thread-edit-submit").click()
    expect(page.get_by_test_id("flash")).to_have_text("Thread saved.")
    expect(page.locator(".page-head .meta")).to_contain_text("Auto-compact at 30 messages")
    expect(page.locator(".page-head .meta .chip")).to_have_text(["vip", "web"])
    thread.refresh_from_db()
    assert (thread.tags, thread.auto_compact_threshold) == (["vip", "web"], 30)

    page.get_by_test_id("delete-thread").click()
    expect(page.get_by_test_id("thread-delete-confirm")).to_contain_text("This cannot be undone.")
    page.get_by_test_id("thread-delete-submit").click()
    expect(page).to_have_url(re.compile(rf"/dashboard/threads/\?projectId={project.pk}$"))
    expect(page.get_by_test_id("flash")).to_have_text(f"Deleted thread {thread.pk} and everything derived from it.")
    assert not Thread.objects.filter(pk=thread.pk).exists()


def test_the_message_input_is_focused_on_load_and_one_tab_from_the_top(
    owner: Owner, live_url: str, new_page: Any
) -> None:
    thread = working.thread_create(project=owner.project, dataset="user_e2e")
    page = new_page()
    log_in(page, live_url)
    open_live(page, thread_url(live_url, thread, "playground/"))
    assert page.evaluate(ACTIVE_TESTID) == "chat-input"
    # From the top of the document (the body focused, as before any Tab): the first Tab
    # stop is "Skip to the message input", and Enter puts the cursor in the box.
    page.evaluate("() => { document.body.tabIndex = -1; document.body.focus(); document.body.removeAttribute('tabindex'); }")
    assert page.evaluate("() => document.activeElement === document.body")
    page.keyboard.press("Tab")
    assert page.evaluate(ACTIVE_TESTID) == "skip-to-input"
    expect(page.get_by_test_id("skip-to-input")).to_be_in_viewport()
    page.keyboard.press("Enter")
    assert page.evaluate(ACTIVE_TESTID) == "chat-input"
    page.keyboard.type("typed after one Tab")
    expect(page.get_by_test_id("chat-input")).to_have_value("typed after one Tab")


def test_a_transient_send_shows_the_reply_and_stores_nothing(owner: Owner, live_url: str, new_page: Any) -> None:
    thread = working.thread_create(project=owner.project, dataset="user_e2e")
    working.message_append(thread=thread, role="user", content="Our budget is 30000 euros.")
    page = new_page()
    log_in(page, live_url)
    open_live(page, thread_url(live_url, thread, "playground/"))
    page.get_by_test_id("chat-transient").check()
    expect(page.get_by_test_id("chat-state")).to_have_text(
        "Transient: the model gets no memory tools and nothing is stored · Enter sends"
    )
    page.get_by_test_id("chat-input").fill("remind me of our budget")
    page.keyboard.press("Enter")
    reply = page.get_by_test_id("transient-assistant")
    expect(reply.get_by_test_id("transient-badge")).to_have_text("not stored")
    expect(reply).to_contain_text("Our budget is 30000 euros.")
    expect(page.get_by_test_id("transient-user")).to_contain_text("remind me of our budget")
    expect(page.get_by_test_id("last-turn")).to_have_text("Transient send: nothing stored, no memory tools · "
                                                          "prepare: 1 message · recall: 0 episodes, 0 facts, no context")
    assert list(Message.objects.filter(thread=thread).values_list("content", flat=True)) == ["Our budget is 30000 euros."]
    assert not Turn.objects.filter(thread=thread).exists()
    page.reload()
    expect(page.get_by_test_id("transient-assistant")).to_have_count(0)

"""The Agents and Memories surfaces in a real browser (issue 9 item 7, "Must show"): an
agent is defined from the form, the playground turn runs the offline model's memory tool
calls on a plain cue, and the flow ends on the Memories surface, which follows a tool
call made through /v1 without reload."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from memoryapp import agents, notes, working
from memoryapp.models import Agent, ApiKey, Thread, Turn
from tests.e2e.test_browser import (
    LIVE_TIMEOUT_MS,
    TURN_TIMEOUT_MS,
    Owner,
    assert_same_document,
    log_in,
    mark_document,
    open_live,
    send_turn,
    thread_url,
    watch,
)

pytestmark = pytest.mark.usefixtures("transactional_db")


def api_tool(live_url: str, key: str, thread: Thread, name: str, arguments: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{live_url}/v1/memory/working/threads/{thread.pk}/tools",
        data=json.dumps({"name": name, "arguments": arguments}).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        return json.loads(response.read())


def test_it_defines_an_agent_remembers_offline_and_ends_on_the_memories_surface(
    owner: Owner, live_url: str, new_page: Any
) -> None:
    page = new_page()
    seen = watch(page)
    log_in(page, live_url)
    page.get_by_role("link", name="Agents").click()
    form = page.get_by_test_id("agent-form")
    form.get_by_label("Name").fill("dm")
    form.get_by_label("System prompt").fill("You are the dungeon master.")
    form.get_by_label("maxOpenTokens").fill("1000")
    form.get_by_label("maxTokens").fill("8000")
    # The Memory checkbox sits on its label's line, before it.
    box = form.get_by_label("Memory (the three memory tools)").bounding_box()
    label = form.locator("label[for=id_memory]").bounding_box()
    assert box and label and box["x"] < label["x"] and abs(box["y"] + box["height"] / 2 - (label["y"] + label["height"] / 2)) < 4
    form.get_by_test_id("agent-submit").click()
    expect(page.get_by_test_id("agent-memory")).to_have_text("maxOpenTokens 1000")
    agent = Agent.objects.get(project=owner.project, name="dm")
    thread = working.thread_create(project=owner.project, dataset="user_42", agent=agent)
    _, key = ApiKey.issue(project=owner.project, name="e2e")

    open_live(page, thread_url(live_url, thread, "playground/"))
    send_turn(page, "Remember that my sister is called Ada.")
    expect(page.get_by_text("[offline model] Saved to memory 'notes'.").first).to_be_visible(
        timeout=TURN_TIMEOUT_MS
    )

    page.goto(f"{live_url}/dashboard/agents/?projectId={owner.project.pk}")
    page.get_by_test_id("memories-link").first.click()
    expect(page.get_by_test_id("live-status")).to_have_attribute("data-state", "open")
    note = page.get_by_test_id("note")
    expect(note).to_have_count(1)
    expect(note).to_have_attribute("data-open", "false")
    expect(note.get_by_test_id("note-content")).to_have_text("- your sister is called Ada")
    expect(note.get_by_test_id("note-version")).to_have_count(1)
    expect(note.get_by_test_id("version-author")).to_have_text("agent (tool)")

    mark_document(page)
    api_tool(live_url, key, thread, "open_memory", {"name": "notes"})
    expect(page.get_by_test_id("note")).to_have_attribute("data-open", "true", timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_test_id("open-tokens")).not_to_have_text("0")
    assert_same_document(page)
    page.get_by_test_id("agent-thread-link").click()
    calls = page.get_by_test_id("tool-call")
    expect(calls).to_have_count(2)
    # The offline model created the note with one close_memory, no failed open first.
    expect(calls.nth(0)).to_have_attribute("data-error", "false")
    expect(calls.nth(0).get_by_test_id("tool-name")).to_have_text("close_memory")
    assert re.search(r"your sister is called Ada", calls.nth(0).get_by_test_id("tool-arguments").inner_text())
    expect(calls.nth(1).get_by_test_id("tool-name")).to_have_text("open_memory")
    assert seen.dialogs == [] and seen.errors == []


def test_an_agents_playground_turn_gets_its_whole_window_and_the_xray_shows_it(
    owner: Owner, live_url: str, new_page: Any, output_dir: Path
) -> None:
    # The playground used to send messageLimit 20 on every thread: an agent's turn with 30
    # messages since its checkpoint saw the last 20. The control is disabled there, says
    # why, and the turn's X-ray lists every message of the window.
    agent, _ = agents.agent_define(project=owner.project, name="dm", memory={})
    thread = working.thread_create(project=owner.project, dataset="user_42", agent=agent)
    for i in range(1, 31):
        working.message_append(thread=thread, role="user" if i % 2 else "assistant", content=f"turn {i}")
    page = new_page()
    seen = watch(page)
    log_in(page, live_url)
    open_live(page, thread_url(live_url, thread, "playground/"))
    expect(page.get_by_test_id("chat-message-limit")).to_be_disabled()
    expect(page.get_by_test_id("chat-message-limit-hint")).to_have_text(
        "An agent's thread: each turn gets the agent's whole window, its checkpoint and every "
        "message since (at most 200), so there is no limit to set."
    )
    # Its placeholder fits its box: it read "whole win" in a box sized for a number.
    fit = page.get_by_test_id("chat-message-limit").evaluate(
        """el => {
            const style = getComputedStyle(el);
            const ctx = document.createElement("canvas").getContext("2d");
            ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
            const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
            return {text: el.placeholder, need: ctx.measureText(el.placeholder).width, room: room};
        }"""
    )
    assert fit["text"] == "whole window" and fit["need"] <= fit["room"], fit
    page.locator("[aria-labelledby=turn-settings-heading]").screenshot(path=str(output_dir / "agent-message-limit.png"))
    send_turn(page, "Where were we?")
    expect(page.locator("#chat-pending li")).to_have_count(0, timeout=TURN_TIMEOUT_MS)
    turn = Turn.objects.get(thread=thread)
    assert (turn.message_limit, len(turn.context["input"]["messages"])) == (200, 31)

    page.get_by_test_id("message-xray").last.click()
    messages = page.get_by_test_id("xray-message")
    expect(messages).to_have_count(31)
    expect(messages.nth(0).get_by_test_id("xray-message-source")).to_have_text("message #1")
    expect(messages.nth(30).locator("pre")).to_have_text("Where were we?")
    assert seen.dialogs == [] and seen.errors == []


def test_it_folds_a_long_note_to_its_first_lines_until_show_all(
    owner: Owner, live_url: str, new_page: Any
) -> None:
    # Every note was shown whole: 69 notes of 15 KB made a page 176,000 px long.
    agent, _ = agents.agent_define(
        project=owner.project, name="dm", memory={"maxOpenTokens": 2000}, compaction={"type": "summarize", "maxTokens": 8000}
    )
    thread = working.thread_create(project=owner.project, dataset="user_42", agent=agent)
    long = "\n".join(f"line {i}: the party camps by the river" for i in range(60))
    notes.tool_run(thread_id=thread.pk, name="close_memory", arguments={"name": "quest", "description": "Quest", "content": long})
    notes.tool_run(thread_id=thread.pk, name="close_memory", arguments={"name": "npcs", "description": "People", "content": "Ferryman."})
    page = new_page()
    seen = watch(page)
    log_in(page, live_url)
    open_live(page, thread_url(live_url, thread, "memories/"))
    quest, npcs = page.get_by_test_id("note").all()
    content = quest.get_by_test_id("note-content")
    toggle = quest.get_by_test_id("clamp-toggle")
    expect(toggle).to_have_text("Show all")
    folded = content.bounding_box()
    assert folded is not None and folded["height"] < 300
    toggle.click()
    expect(toggle).to_have_text("Show less")
    whole = content.bounding_box()
    assert whole is not None and whole["height"] > 3 * folded["height"]
    # A short note has nothing to fold.
    expect(npcs.get_by_test_id("clamp-toggle")).to_have_count(0)
    expect(npcs.get_by_test_id("note-content")).to_have_text("Ferryman.")
    assert seen.dialogs == [] and seen.errors == []

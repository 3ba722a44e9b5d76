"""Script injection in a real browser (issue 12 item 5), and the Content-Security-Policy.

Hostile text goes in through every surface a client can write: message content (also as
Markdown: links and images with ``javascript:`` URLs), thread metadata and tags, key and
project names, an agent's system prompt, memory notes (open and closed), and facts,
entities and episodes that recall returns; a chat turn runs on it. Every dashboard page that shows it is opened and
interacted with; no dialog may open, no script error may happen, no element may carry a
``javascript:`` link or an inline event handler, and the page may cause no CSP violation
(the pages are written to need none; a violation would mean inline script or style).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from playwright.sync_api import Page, expect

from memoryapp import agents, episodic, notes, working
from memoryapp.models import ApiKey, Entity, Episode, Fact, Membership, Thread, Turn
from tests.e2e.conftest import make_owner
from tests.e2e.test_browser import TURN_TIMEOUT_MS, Owner, log_in, send_turn, watch
from tests.test_isolation import PARAM, _methods, http_routes

pytestmark = pytest.mark.usefixtures("transactional_db")

PAYLOADS = [
    "<script>alert('script')</script>",
    "<img src=x onerror=alert('img')>",
    '"><svg onload=alert("svg")>',
    "[click me](javascript:alert('md-link'))",
    "![x](javascript:alert('md-image'))",
    "<a href=\"javascript:alert('a')\">a link</a>",
    "**bold** <iframe src=javascript:alert('iframe')></iframe>",
]
HOSTILE = "\n".join(PAYLOADS)
RECALL_WORD = "zebracorn"
# Collects CSP violations from the first moment of each document (init scripts are the
# browser's own, not the page's, so the policy does not apply to them).
CSP_WATCH = (
    "window.__csp = [];"
    "document.addEventListener('securitypolicyviolation',"
    " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
)


@pytest.fixture
def ann() -> Owner:
    """The owner ``ann`` of a project whose name is hostile too."""
    return make_owner("<img src=x onerror=alert('project')>")


def _hostile_thread(owner: Owner) -> Thread:
    agent, _ = agents.agent_define(
        project=owner.project, name="dm", system_prompt=HOSTILE, memory={"maxOpenTokens": 4000}
    )
    thread = working.thread_create(
        project=owner.project,
        dataset="user_42",
        tags=[p[:60] for p in PAYLOADS[:3]],
        metadata={"title": PAYLOADS[0], "note": PAYLOADS[1], "link": "javascript:alert('meta')"},
        agent=agent,
    )
    # Memory notes (spec 004) written by the agent's tools: one left closed, one open.
    for name in ("closed-note", "open-note"):
        outcome = notes.tool_run(
            thread_id=thread.pk,
            name="close_memory",
            arguments={"name": name, "description": PAYLOADS[1], "content": HOSTILE},
        )
        assert not outcome.outcome.is_error, outcome.outcome
    assert not notes.tool_run(
        thread_id=thread.pk, name="open_memory", arguments={"name": "open-note"}
    ).outcome.is_error
    for n, payload in enumerate(PAYLOADS):
        working.message_append(
            thread=thread, role="user" if n % 2 == 0 else "assistant", content=payload
        )
    working.message_append(thread=thread, role="user", content=HOSTILE)
    return thread


def _hostile_long_term_memory(thread: Thread) -> None:
    """Another thread of the dataset, and an episode, facts and entities built from it, all
    hostile; recall finds them for a turn that says RECALL_WORD (the raw messages today;
    facts, entities and episodes as recall returns them)."""
    other = working.thread_create(project=thread.project, dataset=thread.dataset)
    for payload in PAYLOADS:
        working.message_append(thread=other, role="user", content=f"{RECALL_WORD} {payload}")
    built = episodic.episode_build(thread_id=other.id, from_sequence=1, to_sequence=len(PAYLOADS))
    assert built.episode is not None
    Episode.objects.filter(pk=built.episode.pk).update(summary=f"{RECALL_WORD} {HOSTILE}")
    Entity.objects.filter(project=thread.project).update(name=PAYLOADS[1], summary=PAYLOADS[0])
    for n, fact in enumerate(Fact.objects.filter(thread=other)):
        fact.text = f"{RECALL_WORD} {PAYLOADS[n % len(PAYLOADS)]}"
        fact.save(update_fields=["text"])


def _dashboard_get_urls(owner: Owner, thread: Thread) -> dict[str, str]:
    """Every dashboard page (from the URL conf) a GET can open, for the hostile thread."""
    turn = Turn.objects.filter(thread=thread).first()
    values = {
        "thread_id": str(thread.pk),
        "turn_id": str(turn.pk) if turn else "",
        "key_id": str(ApiKey.objects.filter(project=owner.project).first().pk),  # type: ignore[union-attr]
        "membership_id": str(Membership.objects.get(user=owner.user).pk),
    }
    client = Client()
    client.force_login(owner.user)
    urls = {}
    for route in http_routes():
        if route.is_api or any(not values.get(p) for p in route.params):
            continue
        url = "/" + PARAM.sub(lambda m: values[m.group(1)], route.route)
        if "GET" in _methods(client, url):
            urls[route.name] = f"{url}?projectId={owner.project.pk}"
    return urls


def _assert_inert(page: Page, seen: Any, where: str) -> None:
    assert seen.dialogs == [], f"{where}: a dialog opened: {seen.dialogs}"
    assert seen.errors == [], f"{where}: script errors: {seen.errors}"
    assert page.evaluate("window.__csp") == [], f"{where}: CSP violations"
    bad = page.evaluate(
        "[...document.querySelectorAll('*')].flatMap(el => [...el.attributes]"
        ".filter(a => /^on/i.test(a.name) || /^\\s*javascript:/i.test(a.value))"
        ".map(a => el.tagName + ' ' + a.name + '=' + a.value))"
    )
    assert bad == [], f"{where}: hostile attributes made it into the DOM: {bad}"
    assert page.locator("script:not([src])").count() == 0, f"{where}: an inline script"


def test_it_runs_no_injected_script_on_any_page(
    new_page: Any, live_url: str, ann: Owner
) -> None:
    owner = ann
    ApiKey.issue(project=owner.project, name="<script>alert('key')</script>")
    thread = _hostile_thread(owner)
    _hostile_long_term_memory(thread)
    page = new_page()
    page.add_init_script(CSP_WATCH)
    seen = watch(page)
    log_in(page, live_url)
    pid = owner.project.pk
    # The playground: a turn whose context holds the hostile messages, and whose recall
    # returns the hostile facts, entities and episode (shown in verbose mode).
    page.goto(f"{live_url}/dashboard/threads/{thread.pk}/playground/?projectId={pid}")
    page.get_by_test_id("chat-verbose").check()
    send_turn(page, f"{RECALL_WORD} {PAYLOADS[1]}")
    expect(page.get_by_test_id("context-tail")).to_contain_text(
        PAYLOADS[1], timeout=TURN_TIMEOUT_MS
    )
    expect(page.get_by_test_id("recall-payload")).to_contain_text(f"{RECALL_WORD} {PAYLOADS[0]}")
    _assert_inert(page, seen, "playground")
    expect(page.locator("#messages").get_by_text(PAYLOADS[0], exact=True).first).to_be_visible()
    # Then every page of the dashboard a GET opens, the turn's context included.
    pages = _dashboard_get_urls(owner, thread)
    assert {
        "playground:thread", "playground:turn-context", "playground:keys", "playground:memories"
    } <= set(pages)
    for where, path in pages.items():
        page.goto(live_url + path)
        if where == "playground:memories":  # the notes are there, shown as text
            expect(page.locator("main")).to_contain_text(PAYLOADS[1])
        for link in page.locator("a").all()[:60]:
            href = link.get_attribute("href") or ""
            assert not href.strip().lower().startswith("javascript:"), f"{where}: {href}"
        _assert_inert(page, seen, where)

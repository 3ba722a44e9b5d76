"""Counts agree everywhere (issue 10 item 4): prepare, the thread's Stats panel, and a
turn's panel and X-ray count what a thread's context holds with one definition
(memoryapp.working.context_count): the un-compacted ordinary messages, the summary on top
and never among them; GET stats' messageCount is that plus the summary row (spec 002)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from memoryapp import chat, compaction, working
from memoryapp.models import Project, Thread, Turn
from memoryapp.results import ContextCount
from tests.conftest import BASE, Api, World
from tests.test_chat import post_chat
from tests.test_dashboard_views import tree


@pytest.fixture
def client(world: World) -> Client:
    """The shared world's member of Acme, logged in."""
    return world.client(world.member)


def compacted_thread(project: Project) -> Thread:
    """Six messages, the first four folded into a summary; #5 and #6 live."""
    thread = working.thread_create(project=project, dataset="user_42")
    for i in range(1, 5):
        working.message_append(thread=thread, role="user" if i % 2 else "assistant", content=f"line {i}")
    assert compaction.compact(thread_id=thread.pk) is not None
    working.message_append(thread=thread, role="user", content="line 5")
    working.message_append(thread=thread, role="assistant", content="line 6")
    return thread


def number(response: Any, testid: str) -> int:
    (node,) = tree(response).by_testid(testid)
    return int(node.full_text())


def stats_fragment(client: Client, thread: Thread) -> Any:
    return client.get(reverse("playground:thread-stats", args=[thread.pk]) + f"?projectId={thread.project_id}")


def test_prepare_stats_and_the_turn_panel_agree_on_a_compacted_thread(
    client: Client, project: Project, api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread = compacted_thread(project)
    seen: dict[str, Any] = {}

    def look(record: chat.TurnRecord) -> None:
        """Right where the turn prepared its window: what prepare, GET stats and the Stats
        panel say about the same thread at the same moment."""
        prepared = api.post(f"{BASE}/threads/{thread.pk}/prepare", {"messageLimit": 100}).json()
        seen["prepare"] = (prepared["messageCount"], prepared["compacted"])
        seen["stats"] = api.get(f"{BASE}/threads/{thread.pk}/stats").json()["messageCount"]
        panel = stats_fragment(client, thread)
        seen["panel"] = number(panel, "stat-message-count")

    steps = list(chat.TURN_STEPS)
    steps.insert(steps.index((chat.step_prepare, "prepareMs")) + 1, (look, None))
    monkeypatch.setattr(chat, "TURN_STEPS", steps)

    body = post_chat(client, thread, {"content": "line 7", "messageLimit": 100}).json()

    # The turn's window: #5, #6 and the new #7, under the summary of #1-#4.
    assert body["prepare"] == {"messageCount": 3, "truncated": False, "compacted": True}
    assert seen["prepare"] == (3, True)
    assert seen["panel"] == 3
    assert seen["stats"] == 4  # spec 002: "un-compacted messages including the summary row"
    turn = Turn.objects.get()
    panel = client.get(reverse("playground:turn-context", args=[turn.pk]) + f"?projectId={project.pk}")
    assert number(panel, "turn-message-count") == 3
    assert number(panel, "xray-message-count") == 3
    kinds = [m.attrs["data-source-kind"] for m in tree(panel).by_testid("xray-message")]
    assert kinds == ["summary", "message", "message", "message"]
    # The same words around the number on every page.
    texts = [
        " ".join(node.full_text().split())
        for node in tree(panel).all(lambda n: n.attrs.get("class") == "in-context")
    ]
    assert texts == ["3 messages in context + the summary"] * 2
    after = stats_fragment(client, thread)  # the reply #8 is in context now
    assert [" ".join(n.full_text().split()) for n in tree(after).all(lambda n: n.attrs.get("class") == "in-context")] == [
        "4 messages in context + the summary"
    ]


def test_the_one_count_is_what_prepare_and_stats_answer(project: Project, api: Api) -> None:
    thread = compacted_thread(project)
    thread.refresh_from_db()
    count = working.context_count(uncompacted_count=thread.uncompacted_count, summary_id=thread.active_summary_id)
    assert count == ContextCount(messages=2, summary=True)
    assert api.post(f"{BASE}/threads/{thread.pk}/prepare", {}).json()["messageCount"] == count.messages
    assert api.get(f"{BASE}/threads/{thread.pk}/stats").json()["messageCount"] == count.rows == 3
    plain = working.thread_create(project=project, dataset="user_42")
    working.message_append(thread=plain, role="user", content="hi")
    assert working.thread_stats(thread=Thread.objects.get(pk=plain.pk)).context == ContextCount(1, False)

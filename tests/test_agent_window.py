"""prepare on an agent's thread, and autoCompactThreshold there (spec 004; review item 8).

An agent's context is its checkpoint (the context block) and every message since, which
its compaction keeps within its budget; prepare without messageLimit returns exactly
that, and warns whenever verbatim messages are left out. autoCompactThreshold does not
apply to an agent's thread (its agent's budget decides), so it is refused there.
"""

from __future__ import annotations

from typing import Any

from memoryapp import agents, working
from memoryapp.models import Thread
from tests.conftest import BASE, Api, World
from tests.test_api_agents import agent_thread
from tests.test_dashboard_views import tree, url
from tests.test_thread_admin_views import field_errors


def prepare(api: Api, thread_id: str, body: Any) -> dict[str, Any]:
    resp = api.post(f"{BASE}/threads/{thread_id}/prepare", body)
    assert resp.status_code == 200, resp.content
    return dict(resp.json())


def fill(api: Api, thread_id: str, count: int) -> None:
    for i in range(1, count + 1):
        resp = api.append(thread_id, f"turn {i}", role="user" if i % 2 else "assistant")
        assert (resp.status_code, resp.json()["compacted"]) == (201, False)


def test_it_gives_an_agent_its_whole_window_when_no_message_limit_is_sent(api: Api) -> None:
    # The review: 60 messages, no compaction yet, prepare {} gave turns 41-60, truncated,
    # with no summary and no warning: the agent silently lost two thirds of its context.
    thread_id = agent_thread(api)
    fill(api, thread_id, 60)
    assert Thread.objects.get(pk=thread_id).compaction_count == 0
    bodies: list[dict[str, Any] | None] = [{}, None]
    for body in bodies:
        window = prepare(api, thread_id, body)
        assert [m["content"] for m in window["messages"]] == [f"turn {i}" for i in range(1, 61)]
        assert {k: v for k, v in window.items() if k not in ("messages", "threadId")} == {
            "dataset": "user_42", "messageCount": 60, "truncated": False, "compacted": False,
        }


def test_it_warns_when_a_message_limit_leaves_part_of_an_agents_window_out(api: Api) -> None:
    thread_id = agent_thread(api)
    fill(api, thread_id, 60)
    window = prepare(api, thread_id, {"messageLimit": 20})
    assert [m["content"] for m in window["messages"]] == [f"turn {i}" for i in range(41, 61)]
    assert (window["messageCount"], window["truncated"], window["compacted"]) == (60, True, False)
    assert window["warning"] == (
        "messageLimit (20) leaves out the 40 oldest of the 60 messages since this agent's "
        "checkpoint; an agent's context is its checkpoint and every message since (spec 004). "
        "Send prepare without messageLimit to get them all."
    )
    window = prepare(api, thread_id, {"messageLimit": 100})
    assert (len(window["messages"]), window["truncated"], "warning" in window) == (60, False, False)


def test_it_puts_the_checkpoint_first_then_every_message_since(api: Api) -> None:
    thread_id = agent_thread(api)
    fill(api, thread_id, 30)
    assert api.post(f"{BASE}/threads/{thread_id}/compact").status_code == 200
    fill(api, thread_id, 25)
    window = prepare(api, thread_id, {})
    checkpoint = Thread.objects.select_related("active_summary").get(pk=thread_id).active_summary
    assert checkpoint is not None
    assert window["messages"][0] == {"role": "system", "content": checkpoint.content}
    assert [m["content"] for m in window["messages"][1:]] == [f"turn {i}" for i in range(1, 26)]
    assert (window["messageCount"], window["truncated"], window["compacted"], "warning" in window) == (
        25, False, True, False,
    )


def test_it_warns_when_more_is_verbatim_than_an_agent_keeps(api: Api, settings: Any) -> None:
    # Only when its compaction has not caught up (a failing model): the window holds the
    # most an agent keeps verbatim, and says what it left out.
    thread_id = agent_thread(api)
    fill(api, thread_id, 8)
    settings.MEMORY_AGENT_MAX_VERBATIM_MESSAGES = 5
    window = prepare(api, thread_id, {})
    assert [m["content"] for m in window["messages"]] == [f"turn {i}" for i in range(4, 9)]
    assert (window["messageCount"], window["truncated"]) == (8, True)
    assert window["warning"] == (
        "The 3 oldest of the 8 messages since this agent's checkpoint are left out: the window "
        "holds at most 5, the most an agent keeps verbatim, and its compaction has not caught "
        "up (see the thread's compaction.lastError)."
    )


def test_it_still_gives_an_ordinary_thread_twenty_by_default(api: Api) -> None:
    thread_id = api.create_thread()["threadId"]
    fill(api, thread_id, 25)
    window = prepare(api, thread_id, {})
    assert [m["content"] for m in window["messages"]] == [f"turn {i}" for i in range(6, 26)]
    assert (window["messageCount"], window["truncated"], "warning" in window) == (25, True, False)


THRESHOLD_ISSUE = {
    "path": ["autoCompactThreshold"],
    "message": "autoCompactThreshold does not apply to an agent's thread: it compacts by its "
    "agent's compaction.maxTokens (and after 200 verbatim messages); leave it out or null",
    "code": "not_for_agent_thread",
}


def test_it_refuses_an_auto_compact_threshold_on_an_agents_thread(api: Api) -> None:
    # The review: autoCompactThreshold 3 on an agent's thread was accepted, echoed and
    # never used.
    thread_id = agent_thread(api)
    resp = api.post(f"{BASE}/threads", {"dataset": "user_42", "agent": "dm", "autoCompactThreshold": 3})
    assert (resp.status_code, resp.json()) == (400, {"error": "Validation error", "issues": [THRESHOLD_ISSUE]})
    resp = api.patch(f"{BASE}/threads/{thread_id}", {"autoCompactThreshold": 3})
    assert (resp.status_code, resp.json()) == (400, {"error": "Validation error", "issues": [THRESHOLD_ISSUE]})
    assert Thread.objects.get(pk=thread_id).auto_compact_threshold is None
    # null (what it is) and the other fields are fine.
    resp = api.patch(f"{BASE}/threads/{thread_id}", {"autoCompactThreshold": None, "tags": ["a"]})
    assert (resp.status_code, resp.json()["autoCompactThreshold"], resp.json()["tags"]) == (200, None, ["a"])
    created = api.create_thread(agent="dm", autoCompactThreshold=None)
    assert (created["agent"], created["autoCompactThreshold"]) == ("dm", None)
    # An ordinary thread takes one as before.
    plain = api.create_thread(autoCompactThreshold=3)["threadId"]
    resp = api.patch(f"{BASE}/threads/{plain}", {"autoCompactThreshold": 4})
    assert (resp.status_code, resp.json()["autoCompactThreshold"]) == (200, 4)


def test_the_dashboard_forms_refuse_a_threshold_for_an_agents_thread_on_the_form(world: World) -> None:
    agent, _ = agents.agent_define(project=world.project, name="dm", memory={})
    client = world.client(world.member)
    response = client.post(
        url("playground:thread-create", world.project), {"dataset": "u", "agent": "dm", "auto_compact_threshold": "30"}
    )
    assert response.status_code == 400
    assert field_errors(response, "thread-create-form") == [THRESHOLD_ISSUE["message"]]
    assert not Thread.objects.filter(agent=agent).exists()

    thread = working.thread_create(project=world.project, dataset="u", agent=agent)
    edit_url = url("playground:thread-edit", world.project, thread.pk)
    # The edit form offers no threshold there; one posted anyway is refused, tags and all.
    response = client.post(edit_url, {"tags": "web", "auto_compact_threshold": "30"})
    assert response.status_code == 400
    (form,) = tree(response).by_testid("thread-edit-form")
    assert [" ".join(n.full_text().split()) for n in form.all(lambda n: n.attrs.get("class") == "errorlist nonfield")] == [
        "This thread compacts by its agent's budget (compaction.maxTokens), not by an "
        "auto-compact threshold; leave the threshold out."
    ]
    assert "open" in tree(response).by_testid("thread-edit")[0].attrs
    thread.refresh_from_db()
    assert (thread.tags, thread.auto_compact_threshold) == ([], None)
    assert client.post(edit_url, {"tags": "web", "auto_compact_threshold": ""}).status_code == 302


def test_an_agents_thread_page_edits_its_tags_and_links_the_agent_instead_of_a_threshold(world: World) -> None:
    # The review: the form offered "Edit tags and auto-compact threshold" on an agent's
    # thread, and saving a threshold always answered 400.
    agent, _ = agents.agent_define(project=world.project, name="dm", memory={})
    thread = working.thread_create(project=world.project, dataset="u", agent=agent, tags=["a"])
    client = world.client(world.member)
    page = tree(client.get(url("playground:thread", world.project, thread.pk)))
    (edit,) = page.by_testid("thread-edit")
    (summary,) = edit.all(lambda n: n.tag == "summary")
    assert summary.full_text() == "Edit tags"
    (form,) = page.by_testid("thread-edit-form")
    inputs = {n.attrs["name"]: n.attrs.get("value") for n in form.all(lambda n: n.tag == "input")}
    assert sorted(inputs) == ["csrfmiddlewaretoken", "tags"]
    assert inputs["tags"] == "a"
    (note,) = page.by_testid("thread-edit-agent-note")
    assert " ".join(note.full_text().split()) == (
        "No auto-compact threshold here: this thread compacts by the budget of its agent dm (its compaction.maxTokens)."
    )
    (link,) = page.by_testid("thread-edit-agent")
    assert link.attrs["href"] == url("playground:agents", world.project, edit="dm") + "#define-heading"
    # Saving the tags alone works.
    response = client.post(url("playground:thread-edit", world.project, thread.pk), {"tags": "web, vip"})
    assert (response.status_code, response["Location"]) == (302, url("playground:thread", world.project, thread.pk))
    assert Thread.objects.filter(pk=thread.pk).values_list("tags", "auto_compact_threshold").get() == (
        ["web", "vip"], None,
    )
    # An ordinary thread's page still offers the threshold, with no agent note.
    plain = working.thread_create(project=world.project, dataset="u")
    page = tree(client.get(url("playground:thread", world.project, plain.pk)))
    (summary,) = page.by_testid("thread-edit")[0].all(lambda n: n.tag == "summary")
    assert summary.full_text() == "Edit tags and auto-compact threshold"
    (form,) = page.by_testid("thread-edit-form")
    assert sorted(n.attrs["name"] for n in form.all(lambda n: n.tag == "input")) == [
        "auto_compact_threshold", "csrfmiddlewaretoken", "tags",
    ]
    assert page.by_testid("thread-edit-agent-note") == []


# --- a threshold left on an agent's thread from before it was refused ---------------------------


def stale_agent_thread(api: Api, threshold: int) -> str:
    """An agent's thread carrying the autoCompactThreshold it could be given before it was
    refused there (written straight to the row, as it then was)."""
    thread_id = agent_thread(api)
    Thread.objects.filter(pk=thread_id).update(auto_compact_threshold=threshold)
    return thread_id


def test_migration_0020_clears_the_threshold_of_agents_threads_only(api: Api) -> None:
    import importlib

    from django.apps import apps

    stale = stale_agent_thread(api, 3)
    clean = api.create_thread(agent="dm")["threadId"]
    plain = api.create_thread(autoCompactThreshold=30)["threadId"]
    migration = importlib.import_module("memoryapp.migrations.0020_agent_thread_threshold_cleared")
    assert migration.clear_agent_thresholds(apps, None) == 1
    thresholds = dict(Thread.objects.values_list("id", "auto_compact_threshold"))
    assert {str(k): v for k, v in thresholds.items()} == {stale: None, clean: None, plain: 30}
    assert migration.clear_agent_thresholds(apps, None) == 0


def test_nothing_reads_a_stale_threshold_on_an_agents_thread(api: Api, world: World) -> None:
    thread_id = stale_agent_thread(api, 3)
    # The thread resource says none applies (it showed 3) ...
    assert api.get(f"{BASE}/threads/{thread_id}").json()["autoCompactThreshold"] is None
    listed = api.get(f"{BASE}/threads").json()["threads"]
    assert [t["autoCompactThreshold"] for t in listed if t["threadId"] == thread_id] == [None]
    # ... appends compact by the agent's budget, not every third message ...
    fill(api, thread_id, 6)
    assert Thread.objects.get(pk=thread_id).compaction_count == 0
    # ... and prepare warns in the agent's terms, not of the messageLimit trap.
    assert prepare(api, thread_id, {"messageLimit": 2})["warning"].startswith(
        "messageLimit (2) leaves out the 4 oldest of the 6 messages since this agent's checkpoint"
    )
    # The thread page says how it compacts, and its edit form (which showed 3 and then
    # refused to save it) offers no threshold and saves.
    client = world.client(world.member)
    page = tree(client.get(url("playground:thread", world.project, thread_id)))
    assert " ".join(page.by_testid("thread-auto-compact")[0].full_text().split()) == (
        "Auto-compact by its agent's budget"
    )
    (form,) = page.by_testid("thread-edit-form")
    inputs = {n.attrs["name"]: n.attrs.get("value") for n in form.all(lambda n: n.tag == "input")}
    assert inputs == {"csrfmiddlewaretoken": inputs["csrfmiddlewaretoken"], "tags": None}  # no threshold
    edit_url = url("playground:thread-edit", world.project, thread_id)
    assert client.post(edit_url, {"tags": "web", "auto_compact_threshold": ""}).status_code == 302
    assert Thread.objects.filter(pk=thread_id).values_list("tags", "auto_compact_threshold").get() == (["web"], None)

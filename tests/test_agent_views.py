"""The Agents and Memories surfaces (playground/agent_views.py; spec 004; issue 9 item 7)."""

from __future__ import annotations

from typing import Any

import pytest

from memoryapp import agents, compaction, notes, working
from memoryapp.models import Agent, Thread
from tests.conftest import World
from tests.test_dashboard_views import tree, url

VIEWS = [
    ("playground:agents", False, ["get", "post"], "delete"),
    ("playground:agent-thread", True, ["get"], "post"),
    ("playground:memories", True, ["get"], "post"),
]


def agent_thread(world: World) -> Thread:
    agent, _ = agents.agent_define(
        project=world.project, name="dm", system_prompt="You are the DM.",
        memory={"maxOpenTokens": 1000}, compaction={"type": "summarize", "maxTokens": 8000},
    )
    return working.thread_create(project=world.project, dataset="user_42", agent=agent)


def call(thread: Thread, tool: str, /, **arguments: Any) -> notes.ToolCallRecord:
    return notes.tool_run(thread_id=thread.pk, name=tool, arguments=arguments)


@pytest.mark.parametrize(("name", "with_thread", "methods", "wrong"), VIEWS, ids=[v[0] for v in VIEWS])
def test_it_answers_outsiders_404_and_wrong_methods_405(
    world: World, name: str, with_thread: bool, methods: list[str], wrong: str
) -> None:
    thread = agent_thread(world)
    args = (thread.pk,) if with_thread else ()
    outsider = world.client(world.outsider)
    for method in methods:
        assert getattr(outsider, method)(url(name, world.project, *args)).status_code == 404
    assert getattr(world.client(world.member), wrong)(url(name, world.project, *args)).status_code == 405
    assert world.client(None).get(url(name, world.project, *args)).status_code == 302


def test_it_defines_an_agent_from_the_form(world: World) -> None:
    client = world.client(world.member)
    resp = client.post(url("playground:agents", world.project), {
        "name": "dm", "system_prompt": "Keep the story straight.", "memory": "on",
        "max_open_tokens": "1000", "compaction_type": "summarize", "max_tokens": "8000",
    })
    assert resp.status_code == 302
    agent = Agent.objects.get(project=world.project, name="dm")
    assert (agent.system_prompt, agent.max_open_tokens, agent.compaction_type, agent.compaction_max_tokens) == (
        "Keep the story straight.", 1000, "summarize", 8000,
    )
    page = tree(client.get(url("playground:agents", world.project)))
    row = page.by_testid("agent")
    assert [n.attrs["data-name"] for n in row] == ["dm"]
    assert page.by_testid("agent-memory")[0].full_text() == "maxOpenTokens 1000"


def _dm(world: World) -> Agent:
    agent, _ = agents.agent_define(
        project=world.project, name="dm", system_prompt="You are the dungeon master.",
        memory={"maxOpenTokens": 1000}, compaction={"type": "sliding-window", "maxTokens": 8000},
    )
    return agent


def _config(name: str = "dm") -> tuple[Any, ...]:
    a = Agent.objects.get(name=name)
    return (a.system_prompt, a.max_open_tokens, a.compaction_type, a.compaction_max_tokens)


def test_the_blank_form_does_not_replace_an_existing_agent_with_empty_fields(world: World) -> None:
    # The QA report: 'dm' with the other fields empty replaced its prompt with "".
    _dm(world)
    client = world.client(world.owner)
    resp = client.post(url("playground:agents", world.project), {"name": "dm", "compaction_type": "summarize"})
    assert resp.status_code == 400
    assert _config() == ("You are the dungeon master.", 1000, "sliding-window", 8000)
    assert (
        "An agent named dm already exists. Saving this form would replace its whole config with "
        "these fields: use its Edit link, which starts from its current config."
    ) in resp.content.decode()


def test_each_agent_has_an_edit_link_that_fills_the_form_with_its_current_config(world: World) -> None:
    _dm(world)
    client = world.client(world.owner)
    page = tree(client.get(url("playground:agents", world.project)))
    assert "For a new name. To change an existing agent, use its Edit link" in page.by_testid("agent-form-note")[0].full_text()
    [edit] = page.by_testid("agent-edit")
    assert edit.attrs["href"] == url("playground:agents", world.project, edit="dm") + "#define-heading"

    edit_page = tree(client.get(edit.attrs["href"].split("#")[0]))
    form = edit_page.by_testid("agent-form")[0]
    fields = {n.attrs.get("name"): n for n in form.all(lambda n: n.tag in ("input", "textarea", "select"))}
    assert fields["editing"].attrs["value"] == "dm"
    assert (fields["name"].attrs["value"], "readonly" in fields["name"].attrs) == ("dm", True)
    assert fields["system_prompt"].full_text().strip() == "You are the dungeon master."
    assert "checked" in fields["memory"].attrs
    assert fields["max_open_tokens"].attrs["value"] == "1000"
    assert fields["max_tokens"].attrs["value"] == "8000"
    selected = fields["compaction_type"].all(lambda n: n.tag == "option" and "selected" in n.attrs)
    assert [o.attrs["value"] for o in selected] == ["sliding-window"]
    assert "Saving replaces the whole config with these values" in edit_page.by_testid("agent-form-note")[0].full_text()

    # Saving the filled form changes only what was changed.
    resp = client.post(url("playground:agents", world.project), {
        "editing": "dm", "name": "dm", "system_prompt": "You are the dungeon master.", "memory": "on",
        "max_open_tokens": "1000", "compaction_type": "sliding-window", "max_tokens": "9000",
    })
    assert resp.status_code == 302
    assert _config() == ("You are the dungeon master.", 1000, "sliding-window", 9000)
    # And emptying a field there saves it empty, as the note says.
    client.post(url("playground:agents", world.project), {"editing": "dm", "name": "dm", "compaction_type": "summarize"})
    assert _config() == ("", None, "summarize", 16000)


def test_the_edit_form_shown_again_with_an_error_is_still_the_edit_form(world: World) -> None:
    _dm(world)
    resp = world.client(world.owner).post(url("playground:agents", world.project), {
        "editing": "dm", "name": "dm", "memory": "on", "compaction_type": "summarize", "max_tokens": "8000",
    })
    assert resp.status_code == 400
    page = tree(resp)
    [name] = page.by_testid("agent-form")[0].all(lambda n: n.attrs.get("name") == "name")
    assert "readonly" in name.attrs
    assert "Saving replaces the whole config" in page.by_testid("agent-form-note")[0].full_text()
    assert _config() == ("You are the dungeon master.", 1000, "sliding-window", 8000)


def test_an_edit_link_of_no_agent_shows_the_blank_form(world: World) -> None:
    page = tree(world.client(world.owner).get(url("playground:agents", world.project, edit="nobody")))
    assert "For a new name." in page.by_testid("agent-form-note")[0].full_text()


def test_it_refuses_a_budget_that_breaks_the_rule_with_the_message(world: World) -> None:
    resp = world.client(world.owner).post(url("playground:agents", world.project), {
        "name": "dm", "memory": "on", "compaction_type": "summarize", "max_tokens": "8000",
    })
    assert resp.status_code == 400
    assert "memory.maxOpenTokens (4000) must be below half of compaction.maxTokens (8000 / 2 = 4000)" in resp.content.decode()
    assert not Agent.objects.exists()


def test_the_form_takes_the_system_prompts_that_v1_takes_and_no_longer(world: World) -> None:
    """The dashboard's PUT has /v1's limit (SYSTEM_PROMPT_MAX_LENGTH characters): a longer
    prompt saved from the form would make the agent's own definition, read back from GET
    /v1/memory/agents/{name}, a 400 when PUT again."""
    client = world.client(world.owner)
    form = {"name": "dm", "compaction_type": "summarize"}
    resp = client.post(url("playground:agents", world.project), {**form, "system_prompt": "p" * 20_001})
    assert resp.status_code == 400
    assert "Ensure this value has at most 20000 characters (it has 20001)." in resp.content.decode()
    assert not Agent.objects.exists()
    resp = client.post(url("playground:agents", world.project), {**form, "system_prompt": "p" * 20_000})
    assert resp.status_code == 302
    assert len(Agent.objects.get(project=world.project, name="dm").system_prompt) == 20_000


def test_it_shows_each_tool_call_with_arguments_result_and_error(world: World) -> None:
    thread = agent_thread(world)
    working.message_append(thread=thread, role="user", content="Remember the key.")
    call(thread, "close_memory", name="quest", description="Goal", content="Find the key.")
    call(thread, "close_memory", name="quest", content="blind")
    page = tree(world.client(world.member).get(url("playground:agent-thread", world.project, thread.pk)))
    calls = page.by_testid("tool-call")
    assert [(c.attrs["data-name"], c.attrs["data-error"]) for c in calls] == [
        ("close_memory", "false"), ("close_memory", "true"),
    ]
    assert '"content": "Find the key."' in calls[0].by_testid("tool-arguments")[0].full_text()
    # A call's arguments (a whole note's content) fold like its result, each under its own id.
    arguments = [c.by_testid("tool-arguments")[0] for c in calls]
    assert len({a.attrs["id"] for a in arguments}) == 2
    assert all(a.attrs["id"].endswith("-arguments") and "data-clamp" in a.attrs for a in arguments)
    assert calls[0].by_testid("tool-result")[0].full_text() == "Saved new memory 'quest' (closed)."
    assert calls[1].by_testid("tool-result")[0].full_text().startswith("Error: memory 'quest' is closed")
    assert len(calls[1].by_testid("tool-error")) == 1
    assert "Remember the key." in page.by_testid("agent-turns")[0].full_text()


def test_it_shows_notes_gauges_and_versions_with_diff_and_author(world: World) -> None:
    thread = agent_thread(world)
    call(thread, "close_memory", name="quest", description="What the player is trying to do right now, and why",
         content="Find the key.")
    call(thread, "close_memory", name="npcs", description="People", content="Ferryman.")
    call(thread, "open_memory", name="quest")
    working.message_append(thread=thread, role="user", content="The player now wants the crown.")
    assert compaction.compact(thread_id=thread.pk) is not None
    client = world.client(world.member)
    page = tree(client.get(url("playground:memories", world.project, thread.pk)))
    notes_ = page.by_testid("note")
    assert [(n.attrs["data-name"], n.attrs["data-open"]) for n in notes_] == [("quest", "true"), ("npcs", "false")]
    assert page.by_testid("open-tokens")[0].full_text() == str(notes.MemoryNote.objects.get(name="quest").tokens)
    assert page.by_testid("max-open-tokens")[0].full_text() == "1000"
    assert page.by_testid("store-bytes")[0].full_text() == str(notes.store_bytes(thread.pk))
    assert page.by_testid("store-gauge")[0].attrs["max"] == "1048576"
    versions = notes_[0].by_testid("note-version")
    assert [(v.attrs["data-author"], v.attrs["data-action"]) for v in versions] == [
        ("compactor", "updated"), ("agent", "created"),
    ]
    assert "+- user: The player now wants the crown." in versions[0].by_testid("version-diff")[0].full_text()
    partial = client.get(url("playground:memories", world.project, thread.pk), headers={"HX-Request": "true"})
    assert partial.content.decode().lstrip().startswith('<section id="memory-store"')


def test_it_marks_every_note_for_folding_under_an_id_of_its_own(world: World) -> None:
    # app.js folds a [data-clamp] block to its first lines behind "Show all" only when it
    # has an id (kept open across live re-renders by it): the notes had none, so a thread
    # of 69 notes of 15 KB was a page 176,000 px long.
    thread = agent_thread(world)
    long = "\n".join(f"line {i}: the party camps by the river" for i in range(30))
    call(thread, "close_memory", name="quest", description="The quest", content=long)
    call(thread, "close_memory", name="npcs", description="People", content="Ferryman.")
    page = tree(world.client(world.member).get(url("playground:memories", world.project, thread.pk)))
    contents = [n.by_testid("note-content")[0] for n in page.by_testid("note")]
    ids = [notes.MemoryNote.objects.get(thread=thread, name=name).pk for name in ("quest", "npcs")]
    assert [(c.attrs["id"], "data-clamp" in c.attrs) for c in contents] == [
        (f"note-{pk}-content", True) for pk in ids
    ]
    assert contents[0].full_text() == long  # whole in the page: scripts fold it, none cut it


def test_every_folded_block_of_the_templates_has_an_id() -> None:
    # The rule app.js's clamp() follows: a [data-clamp] element without an id is never
    # folded (tool results, episode summaries and agent prompts had none either).
    import re
    from pathlib import Path

    from django.conf import settings

    templates = Path(settings.BASE_DIR, "templates")
    tags = [
        (path.name, tag)
        for path in sorted(templates.rglob("*.html"))
        for tag in re.findall(r"<[a-z]+\b[^>]*\bdata-clamp\b[^>]*>", path.read_text(), re.S)
    ]
    assert len(tags) >= 6
    assert [(name, tag) for name, tag in tags if not re.search(r'\sid="[^"]+"', tag)] == []


@pytest.mark.parametrize("memory", [None, "no-agent"])
def test_it_says_memory_is_off_instead_of_an_empty_budget(world: World, memory: str | None) -> None:
    # The page read "0 of — tokens (maxOpenTokens, 0.0%)" for an agent without memory.
    if memory is None:
        agent, _ = agents.agent_define(project=world.project, name="plain", memory=None)
        thread = working.thread_create(project=world.project, dataset="d", agent=agent)
    else:
        thread = world.thread
    page = tree(world.client(world.member).get(url("playground:memories", world.project, thread.pk)))

    assert page.by_testid("open-gauge") == []
    off = " ".join(page.by_testid("memory-off")[0].full_text().split())
    assert off == (
        "Memory is off for this thread: its agent has no memory tools, so it keeps no notes."
        if memory is None
        else "Memory is off for this thread: it has no agent, so it keeps no notes."
    )


@pytest.mark.parametrize("name", ["playground:memories", "playground:agent-thread"])
def test_it_names_a_thread_without_an_agent_and_says_how_to_give_one(world: World, name: str) -> None:
    # The Memories page was headed "Memories of no agent on thread <id>".
    thread = world.thread
    working.message_append(thread=thread, role="user", content="I drive a Honda Civic")
    page = tree(world.client(world.member).get(url(name, world.project, thread.pk)))

    heading = " ".join(page.by_testid("page-heading")[0].full_text().split())
    what = "Memories of" if name == "playground:memories" else "Turns of"
    assert heading == f"{what} thread {thread.pk}"
    assert page.by_testid("thread-label")[0].full_text() == "I drive a Honda Civic"
    assert " ".join(page.by_testid("no-agent")[0].full_text().split()) == (
        "This thread has no agent, so it has no memory tools and keeps no notes. A thread's "
        "agent is chosen when the thread is created and cannot be added later: define an agent "
        "with Memory ticked on the Agents page, then create a thread with that agent on the "
        'Threads page (or POST /v1/memory/working/threads with "agent").'
    )


def test_it_heads_an_agent_thread_with_its_agent_and_title(world: World) -> None:
    thread = agent_thread(world)
    working.thread_update(thread=thread, changes={"metadata": {"title": "The silver key"}})
    page = tree(world.client(world.member).get(url("playground:memories", world.project, thread.pk)))

    heading = " ".join(page.by_testid("page-heading")[0].full_text().split())
    assert heading == f"Memories of dm on thread {thread.pk}"
    assert page.by_testid("thread-label")[0].full_text() == "The silver key"
    assert page.by_testid("no-agent") == []


def test_lowering_max_open_tokens_from_the_form_warns_of_the_notes_left_over_it(world: World) -> None:
    thread = agent_thread(world)
    call(thread, "close_memory", name="b", description="Beta", content="x" * 3240)  # 810 tokens
    client = world.client(world.member)
    resp = client.post(url("playground:agents", world.project), {
        "editing": "dm", "name": "dm", "memory": "on", "max_open_tokens": "100",
        "compaction_type": "summarize", "max_tokens": "8000",
    }, follow=True)
    assert resp.status_code == 200
    assert Agent.objects.get(name="dm").max_open_tokens == 100  # saved all the same
    page = tree(resp)
    items = page.by_testid("flash")[0].all(lambda n: n.tag == "li")
    assert [(n.attrs["class"], " ".join(n.full_text().split())) for n in items] == [
        ("flash__item flash__item--success", "Agent dm saved."),
        ("flash__item flash__item--warning",
         "maxOpenTokens 100 is below what 1 thread of this agent holds: 1 closed note is larger than it on "
         "its own and cannot be opened (nor so written or deleted) until it is raised again. The notes were left as they are."),
    ]


def test_the_memories_gauge_warns_when_open_notes_pass_a_lowered_budget(world: World) -> None:
    thread = agent_thread(world)
    call(thread, "close_memory", name="quest", description="Quest", content="Find the key. " * 20)
    call(thread, "open_memory", name="quest")
    client = world.client(world.member)
    page = tree(client.get(url("playground:memories", world.project, thread.pk)))
    assert page.by_testid("open-over") == []
    assert (page.by_testid("open-gauge")[0].attrs["low"], page.by_testid("open-gauge")[0].attrs["high"]) == ("800", "1000")

    held = notes.MemoryNote.objects.get(name="quest").tokens
    Agent.objects.filter(name="dm").update(max_open_tokens=held - 1)
    page = tree(client.get(url("playground:memories", world.project, thread.pk)))
    [warning] = page.by_testid("open-over")
    assert warning.full_text().startswith("Over the budget: maxOpenTokens was lowered below what is open.")
    low = (held - 1) * 4 // 5
    assert (page.by_testid("open-gauge")[0].attrs["low"], page.by_testid("open-gauge")[0].attrs["high"]) == (str(low), str(low))

"""The Agents and Memories surfaces of the dashboard (spec 004; issue 9 item 7).

- Agents (``dashboard/agents/``): the project's agent definitions, a form to define one
  (memoryapp.agents.agent_define), and each agent's threads.
- An agent's turns on a thread (``dashboard/threads/<id>/agent/``): every message with
  each memory tool call, its arguments, its result and whether it was an error.
- Memories (``dashboard/threads/<id>/memories/``): the thread's notes, open or closed,
  their sizes, the maxOpenTokens gauge, the store's share of its cap, and every note's
  versions with a diff and who wrote them.

Both thread pages are live: static/js/live.js re-fetches their ``data-live-url``
fragment on every event of the thread.
"""

from __future__ import annotations

import difflib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods

from memoryapp import agents, notes
from memoryapp.errors import InvalidInput
from memoryapp.models import Agent, MemoryNote, MemoryNoteVersion, Message, Project, Thread
from playground import forms, selectors
from playground.access import default_project, get_project_for_user, get_thread_for_user
from playground.pages import page, partial, project_url, wants_partial

# Messages shown on an agent's thread page (the newest ones).
TURN_MESSAGES = 200
THREADS_PER_AGENT = 20


def _live(project: Project, thread: Thread, name: str) -> dict[str, Any]:
    return {
        "ws_path": f"/ws/threads/{thread.pk}/?{urlencode({'projectId': project.pk})}",
        "live_url": project_url(name, project, thread.pk),
        "thread_url": project_url("playground:thread", project, thread.pk),
        "agent_url": project_url("playground:agent-thread", project, thread.pk),
        "memories_url": project_url("playground:memories", project, thread.pk),
    }


@require_http_methods(["GET", "POST"])
@login_required
@default_project
def agent_list(request: HttpRequest) -> HttpResponse:
    """The project's agents and the define form (POST defines, then redirects: PRG)."""
    project = get_project_for_user(request)
    form = forms.AgentForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid() and _define(project, form):
            messages.success(request, f"Agent {form.cleaned_data['name']} saved.")
            # A lowered maxOpenTokens is saved all the same; say what it leaves over it.
            over = agents.over_budget(agent=Agent.objects.get(project=project, name=form.cleaned_data["name"]))
            if over is not None:
                messages.warning(request, over["message"])
            return redirect(project_url("playground:agents", project))
        status = 400
    else:
        editing = Agent.objects.filter(project=project, name=request.GET.get("edit", "")).first()
        if editing is not None:
            form = forms.AgentForm.for_agent(editing)
    rows = []
    for agent in agents.agent_list(project=project):
        threads = list(Thread.objects.filter(agent=agent).order_by("-created")[:THREADS_PER_AGENT])
        rows.append({"agent": agent, "threads": threads})
    editing = form["editing"].value() if form.is_bound else form.initial.get("editing")
    if form.is_bound and editing:
        form.fix_name()  # the edit form shown again with its error
    return page(
        request, "playground/agents.html",
        {"rows": rows, "form": form, "nav": "agents", "editing": editing or ""},
        project=project, status=status,
    )


def _define(project: Project, form: forms.AgentForm) -> bool:
    """PUT the form's config; False (with the form's error) when it was not saved. A name
    that exists is saved only from that agent's Edit form (``editing``): the blank form
    would replace its system prompt and budgets with empty fields."""
    data = form.cleaned_data
    if data["editing"] != data["name"] and Agent.objects.filter(project=project, name=data["name"]).exists():
        form.add_error("name", (
            f"An agent named {data['name']} already exists. Saving this form would replace its "
            "whole config with these fields: use its Edit link, which starts from its current config."
        ))
        return False
    memory = None
    if data["memory"]:
        memory = {"maxOpenTokens": data["max_open_tokens"]} if data["max_open_tokens"] else {}
    compaction: dict[str, Any] = {"type": data["compaction_type"]}
    if data["max_tokens"]:
        compaction["maxTokens"] = data["max_tokens"]
    try:
        agents.agent_define(
            project=project, name=data["name"], system_prompt=data["system_prompt"],
            memory=memory, compaction=compaction,
        )
    except InvalidInput as exc:
        form.add_error(None, str(exc))
        return False
    return True


@dataclass(frozen=True)
class ToolCallView:
    """A recorded memory tool call and its result, as the Agents surface shows them."""

    call: Message
    result: Message | None
    name: str
    arguments: str
    is_error: bool


def _turn_items(thread: Thread) -> list[tuple[str, Any]]:
    """The newest messages, oldest first, with each tool call paired to its result:
    ``("message", Message)`` or ``("tool", ToolCallView)``."""
    rows = list(Message.objects.filter(thread=thread).order_by("-sequence_number")[:TURN_MESSAGES])
    rows.reverse()
    items: list[tuple[str, Any]] = []
    results = {
        (m.metadata or {}).get("toolResult", {}).get("id"): m
        for m in rows
        if m.metadata and "toolResult" in m.metadata
    }
    for m in rows:
        meta = m.metadata or {}
        if "toolResult" in meta:
            continue
        if "toolCall" in meta:
            call = meta["toolCall"]
            result = results.get(call.get("id"))
            items.append(("tool", ToolCallView(
                call=m, result=result, name=str(call.get("name", "")),
                arguments=json.dumps(call.get("arguments", {}), ensure_ascii=False, indent=2),
                is_error=bool(result and (result.metadata or {}).get("toolResult", {}).get("isError")),
            )))
        else:
            items.append(("message", m))
    return items


@require_GET
@login_required
@default_project
def agent_thread(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """An agent's turns on one thread: messages and every memory tool call (live)."""
    return _agent_page(
        request, thread_id, "playground/agent_thread.html#turns", "playground:agent-thread",
        lambda thread, agent: {"items": _turn_items(thread)},
    )


def _agent_page(
    request: HttpRequest,
    thread_id: uuid.UUID,
    fragment: str,
    url_name: str,
    build: Callable[[Thread, Agent | None], dict[str, Any]],
) -> HttpResponse:
    """A page of an agent's thread (``fragment`` is ``page.html#partial``): the thread the
    user may see (404 otherwise), its agent, what ``build(thread, agent)`` adds and the
    live-update wiring; only the partial for an htmx refresh."""
    thread = get_thread_for_user(request, thread_id)
    project = thread.project
    agent = Agent.objects.filter(pk=thread.agent_id).first() if thread.agent_id else None
    context = {
        "project": project, "thread": thread, "agent": agent, **build(thread, agent),
        **_live(project, thread, url_name), "nav": "agents",
    }
    if wants_partial(request):
        return partial(request, fragment, context)
    # The heading names the thread by its title (or first user message) beside its id.
    context["thread_label"] = selectors.thread_openers(threads=[thread])[thread.pk]
    return page(request, fragment.split("#")[0], context, project=project)


@dataclass(frozen=True)
class VersionView:
    """One version of a note: the row, and its diff against the version before."""

    version: MemoryNoteVersion
    diff: list[tuple[str, str]]  # (kind: add | del | ctx | hunk, line)


def _diff(before: str, after: str) -> list[tuple[str, str]]:
    lines = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=2):
        if line.startswith(("---", "+++")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "ctx")
        lines.append((kind, line))
    return lines


def _versions(thread: Thread) -> dict[str, list[VersionView]]:
    by_name: dict[str, list[VersionView]] = {}
    previous: dict[str, str] = {}
    for v in notes.note_versions(thread=thread):
        before = "" if v.action == MemoryNoteVersion.Action.CREATED else previous.get(v.name, "")
        after = "" if v.action == MemoryNoteVersion.Action.DELETED else v.content
        by_name.setdefault(v.name, []).append(VersionView(version=v, diff=_diff(before, after)))
        previous[v.name] = after
    for views in by_name.values():
        views.reverse()  # newest first
    return by_name


def _percent(part: int, whole: int | None) -> float:
    return round(100 * part / whole, 1) if whole else 0.0


@require_GET
@login_required
@default_project
def memories(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """The Memories surface of a thread: notes, budgets, the cap, versions (live)."""
    return _agent_page(request, thread_id, "playground/memories.html#store", "playground:memories", _memories_context)


def _memories_context(thread: Thread, agent: Agent | None) -> dict[str, Any]:
    note_rows = list(MemoryNote.objects.filter(thread=thread).order_by("pk"))
    versions = _versions(thread)
    open_tokens = sum(n.tokens for n in note_rows if n.is_open)
    store = sum(n.bytes for n in note_rows)
    cap = notes.store_cap_bytes()
    max_open = agent.max_open_tokens if agent else None
    return {
        "notes": [{"note": n, "versions": versions.get(n.name, [])} for n in note_rows],
        "deleted": [(name, vs) for name, vs in versions.items() if name not in {n.name for n in note_rows}],
        "open_tokens": open_tokens, "max_open_tokens": max_open,
        "open_percent": _percent(open_tokens, max_open),
        # The gauge turns amber past 80% and red past the budget (a lowered maxOpenTokens).
        "open_low": max_open * 4 // 5 if max_open else None,
        "open_over": max_open is not None and open_tokens > max_open,
        "store_bytes": store, "cap_bytes": cap, "store_percent": _percent(store, cap),
    }

"""Thread pages of the dashboard (issue 4 items 1, 4 and 6): thin typed functions.

Each view looks its objects up through playground.access (membership-scoped: a
non-member gets 404), calls one domain function or selector (playground.selectors), and
renders. Pages that HTMX refreshes render one inline partial of their template
(``page.html#name``) when the request comes from htmx. Wrong methods get 405 from
require_http_methods; logged-out visitors are sent to the login page. Project
administration is in playground.project_views, the playground in playground.chat_views.
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memoryapp import datasets, episodic, jobs, tasks, working
from memoryapp.errors import InvalidInput, ThreadNotFound
from memoryapp.models import Project, Thread
from playground import forms, history_selectors, selectors
from playground.access import (
    default_project,
    get_project_for_user,
    get_thread_for_user,
    user_projects,
)
from playground.fragments import stats_context
from playground.job_views import thread_jobs_context
from playground.pages import bad_request, page, partial, project_url, thread_fragment, wants_partial
from playground.routing import thread_socket_path
from playground.templatetags.dashboard import message_range

THREADS_PAGE_SIZE = 25


def _before_param(request: HttpRequest) -> int | None:
    """``?before=`` as a positive int, None when absent; Http400 via ValueError."""
    raw = request.GET.get("before", "")
    if raw == "":
        return None
    if not raw.isdigit() or len(raw) > 18 or int(raw) < 1:
        raise ValueError("before must be a positive integer")
    return int(raw)


def thread_context(thread: Thread, before: int | None) -> dict[str, Any]:
    project = thread.project
    return {
        "project": project,
        "thread": thread,
        "timeline": selectors.thread_timeline(thread=thread, before=before),
        **stats_context(thread),
        "nav": "threads",
        "thread_url": project_url("playground:thread", project, thread.pk),
        "stats_url": project_url("playground:thread-stats", project, thread.pk),
        **thread_jobs_context(thread),
        "ws_path": thread_socket_path(thread.pk, project, fragments=True),
    }


# --- pages --------------------------------------------------------------------------------


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Send the user to the thread list of their first project (by name), or say they have none."""
    project = user_projects(request).first()
    if project is None:
        return page(request, "playground/no_project.html", {})
    return redirect(project_url("playground:threads", project))


@require_GET
@login_required
@default_project
def thread_list(request: HttpRequest) -> HttpResponse:
    """The project's threads, newest first, filtered by dataset and tag, a page at a time.

    HTMX requests get the ``thread-list`` partial only. A malformed ``cursor`` is 400.
    """
    project = get_project_for_user(request)
    filters = forms.ThreadFilterForm(request.GET)
    if not filters.is_valid():
        problems = "; ".join(f"{name}: {' '.join(map(str, errors))}" for name, errors in filters.errors.items())
        return bad_request(request, problems, project=project)
    return _threads_response(request, project, filters, forms.ThreadCreateForm(project=project))


def _threads_response(
    request: HttpRequest,
    project: Project,
    filters: forms.ThreadFilterForm,
    create_form: forms.ThreadCreateForm,
    status: int = 200,
) -> HttpResponse:
    dataset = filters.cleaned_data.get("dataset") or None
    tag = filters.cleaned_data.get("tag") or None
    cursor = filters.cleaned_data.get("cursor") or None
    try:
        threads, next_cursor = working.thread_list(
            project=project, dataset=dataset, tag=tag, limit=THREADS_PAGE_SIZE, cursor=cursor
        )
    except InvalidInput:
        return bad_request(request, "cursor: malformed cursor (use the page's Older link)", project=project)
    labels = selectors.thread_openers(threads=threads)
    context: dict[str, Any] = {
        "project": project,
        # Each thread's count is message_total, every row (the API's totalMessages and
        # the thread page's "All rows"): the list said "Messages" for a count without the
        # summaries, 200 where the API said 221.
        "rows": [{"thread": t, "label": labels[t.pk]} for t in threads],
        "nav": "threads",
        "filters": filters,
        "dataset": dataset or "",
        "tag": tag or "",
        "is_first_page": cursor is None,
        "next_url": project_url("playground:threads", project, dataset=dataset, tag=tag, cursor=next_cursor)
        if next_cursor
        else None,
        "first_url": project_url("playground:threads", project, dataset=dataset, tag=tag),
        "list_url": reverse("playground:threads"),
    }
    if wants_partial(request) and status == 200:
        return partial(request, "playground/threads.html#thread-list", context)
    context["create_form"] = create_form
    context["datasets"] = selectors.project_datasets(project=project)
    return page(request, "playground/threads.html", context, project=project, status=status)


@require_POST
@login_required
def thread_create(request: HttpRequest) -> HttpResponse:
    """Create a thread from the form and open it; an invalid form re-renders the list (400)."""
    project = get_project_for_user(request)
    form = forms.ThreadCreateForm(request.POST, project=project)
    if not form.is_valid():
        filters = forms.ThreadFilterForm({})
        filters.is_valid()
        return _threads_response(request, project, filters, form, status=400)
    try:
        thread = working.thread_create(
            project=project,
            dataset=form.cleaned_data["dataset"],
            tags=form.cleaned_data["tags"],
            auto_compact_threshold=form.cleaned_data["auto_compact_threshold"],
            agent=form.cleaned_data["agent"],
        )
    except InvalidInput as exc:  # a threshold beside an agent (spec 004)
        form.add_error("auto_compact_threshold", exc.issues[0]["message"])
        filters = forms.ThreadFilterForm({})
        filters.is_valid()
        return _threads_response(request, project, filters, form, status=400)
    messages.success(request, "Thread created.")
    return redirect(project_url("playground:thread", project, thread.pk))


@require_GET
@login_required
@default_project
def thread_detail(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """A thread: its messages (newest page, ``?before=`` for older), folding, stats, actions.

    HTMX requests get the ``messages`` partial only (live refresh, "load older"). Paging
    links push their URL into the history on this page (a reload keeps the page), not on
    the playground, which shows the same list but is another page.
    """
    thread = get_thread_for_user(request, thread_id)
    try:
        before = _before_param(request)
    except ValueError:
        return bad_request(request, "before: must be a positive integer", project=thread.project)
    return _thread_page(request, thread, before, forms.ThreadEditForm.for_thread(thread))


def _thread_page(
    request: HttpRequest,
    thread: Thread,
    before: int | None,
    edit_form: forms.ThreadEditForm,
    status: int = 200,
) -> HttpResponse:
    context = thread_context(thread, before)
    playground_path = reverse("playground:playground", args=[thread.pk])
    current_url = getattr(request, "htmx", None) and request.htmx.current_url  # type: ignore[attr-defined]
    context["push_url"] = urlsplit(current_url or "").path != playground_path
    if wants_partial(request) and status == 200:
        return partial(request, "playground/thread.html#messages", context)
    context["edit_form"] = edit_form
    return page(request, "playground/thread.html", context, project=thread.project, status=status)


@require_POST
@login_required
def thread_edit(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """Change a thread's tags and autoCompactThreshold from its page: what PATCH
    /v1/.../threads/{id} does (memoryapp.working.thread_update), both fields sent; an
    agent's thread has tags only (it compacts by its agent's budget, spec 004). An
    invalid form (a threshold posted for an agent's thread among its errors) re-renders
    the thread page with its errors (400)."""
    thread = get_thread_for_user(request, thread_id)
    form = forms.ThreadEditForm.for_thread(thread, request.POST)
    if not form.is_valid():
        return _thread_page(request, thread, None, form, status=400)
    working.thread_update(thread=thread, changes=form.changes())
    messages.success(request, "Thread saved.")
    return redirect(project_url("playground:thread", thread.project, thread.pk))


@require_http_methods(["GET", "POST"])
@login_required
@default_project
def thread_delete(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """Confirm (GET) and delete (POST) a thread: what DELETE /v1/.../threads/{id} does
    (memoryapp.datasets.thread_forget: its messages, summaries, notes, turns, jobs and
    what was derived from it), then the thread list. A thread already gone is 404."""
    thread = get_thread_for_user(request, thread_id)
    if request.method == "POST":
        try:
            datasets.thread_forget(thread=thread)
        except ThreadNotFound as exc:  # deleted meanwhile (another tab, /v1)
            raise Http404("No such thread") from exc
        messages.success(request, f"Deleted thread {thread.pk} and everything derived from it.")
        return redirect(project_url("playground:threads", thread.project))
    context = {"thread": thread, "rows": thread.message_total - thread.compaction_count, "nav": "threads"}
    return page(request, "playground/thread_delete.html", context, project=thread.project)


@require_GET
@login_required
@default_project
def thread_compactions(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """The thread's compaction history (issue 10 item 2): each run newest first with its
    range (linking to the messages), trigger, outcome, tokens and cost, the line diff of
    the summary before and after, and the names, dates and numbers the new summary
    dropped; ``?before=<run number>`` pages back. 400 for a malformed ``before``."""
    thread = get_thread_for_user(request, thread_id)
    try:
        before = _before_param(request)
    except ValueError:
        return bad_request(request, "before: must be a positive integer", project=thread.project)
    context = {
        "thread": thread,
        "history": history_selectors.compaction_history(thread=thread, before=before),
        "before": before,
        "thread_url": project_url("playground:thread", thread.project, thread.pk),
        "history_url": project_url("playground:thread-compactions", thread.project, thread.pk),
        "nav": "threads",
    }
    return page(request, "playground/compactions.html", context, project=thread.project)


@require_GET
@login_required
@default_project
def thread_stats(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """The stats panel of a thread (spec 002, GET stats), as an HTML fragment."""
    return thread_fragment(request, thread_id, "stats", stats_context)


@require_POST
@login_required
def thread_end(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """"Write long-term memory": what ``POST /v1/.../threads/{id}/end`` does (issue 8
    item 1), queue one episode job for the raw messages since the last end(); the jobs
    panel shows it. Nothing new since then: a note, no job. The thread stays writable
    (spec 000: threads never end; end() triggers extraction), so neither the button nor
    its note says the thread ended."""
    thread = get_thread_for_user(request, thread_id)
    result = episodic.thread_end(project=thread.project, thread_id=thread.pk)
    if result is None:
        messages.info(request, "Nothing new to write to long-term memory since it was last written.")
    else:
        one = result.from_sequence == result.to_sequence
        messages.info(
            request,
            f"Writing long-term memory: {message_range(result.from_sequence, result.to_sequence)} "
            f"become{'s' if one else ''} an episode, facts and entities in the background. "
            "The thread stays open for new messages.",
        )
    return redirect(project_url("playground:thread", thread.project, thread.pk))


@require_POST
@login_required
def thread_compact(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """Queue "Compact now" as a background job (issue 7): fold every message so far into
    the rolling summary (spec 002, POST compact) without holding the request.

    The page's jobs panel and timeline update live when the worker is done; a failed
    model call shows there with its error and a Retry button.
    """
    thread = get_thread_for_user(request, thread_id)
    if thread.uncompacted_count == 0:
        messages.info(request, "Nothing to compact.")
    else:
        jobs.job_enqueue(
            project=thread.project,
            thread=thread,
            kind=tasks.COMPACTION,
            args={"throughSequence": thread.next_sequence - 1},
        )
        messages.info(request, "Compaction queued: this page updates when it is done.")
    return redirect(project_url("playground:thread", thread.project, thread.pk))



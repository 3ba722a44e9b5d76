"""Dashboard views (issue 4 items 1, 2, 4 and 6): thin typed functions.

Each view looks its objects up through playground.access (membership-scoped: a
non-member gets 404), calls one domain function, and renders. Pages that HTMX refreshes
render one inline partial of their template (``page.html#name``) when the request comes
from htmx. Wrong methods get 405 from require_http_methods; logged-out visitors are sent
to the login page.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers, patch_vary_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memoryapp import jobs, llm, serializers, tasks, working
from memoryapp.errors import InvalidInput
from memoryapp.models import ApiKey, Membership, Message, Project, Thread
from playground import forms
from playground.access import (
    default_project,
    get_project_for_user,
    get_thread_for_user,
    is_owner,
    require_owner,
    user_projects,
)
from playground.job_views import thread_jobs_context
from playground.templatetags.dashboard import isolate

# The thread page shows the newest rows of a thread and pages back with ``before=``, so
# a thread of 100,000 messages costs the same to show as one of 50.
MESSAGES_PAGE_SIZE = 50
THREADS_PAGE_SIZE = 25
DATASET_CHOICES_MAX = 200
# Later summaries looked at to find which one folded a row shown on an older page.
LATER_SUMMARIES_MAX = 3
# Stands for the turn id in the turn-context URL handed to playground.js.
TURN_ID_PLACEHOLDER = 2147483647
# Session entry carrying a new API key's secret from the POST that made it to the one GET
# that shows it (POST-redirect-GET: reloading the page must not make another key).
NEW_KEY_SESSION = "playground:new-api-key"


# --- helpers ------------------------------------------------------------------------------


def _url(name: str, project: Project, *args: Any, **query: Any) -> str:
    """``reverse(name, args)`` plus ``?projectId=`` and any non-empty ``query`` values."""
    params = {"projectId": project.pk, **{k: v for k, v in query.items() if v not in (None, "")}}
    return f"{reverse(name, args=args)}?{urlencode(params)}"


def _adapter() -> dict[str, Any]:
    """The model adapter in use, as the header and the playground show it (issue 4 item 5)."""
    name = llm.adapter_name()
    return {"name": name, "model": settings.GEMINI_CHAT_MODEL if name == "gemini" else None}


def _page(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    project: Project | None = None,
    status: int = 200,
) -> HttpResponse:
    """Render a full page: adds the header's project switcher, role and adapter."""
    full = {
        "project": project,
        "projects": user_projects(request),
        "is_owner": project is not None and is_owner(request, project),
        "adapter": _adapter(),
        **context,
    }
    response = render(request, template, full, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response


def _partial(request: HttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    response = render(request, template, context)
    patch_vary_headers(response, ["HX-Request"])
    return response


def _wants_partial(request: HttpRequest) -> bool:
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.history_restore_request  # type: ignore[union-attr]


# --- the thread timeline: messages folded under the summary that folded them ---------------


@dataclass
class SummaryBlock:
    """A summary row shown where it sits in the thread, with the rows its run folded.

    ``folded`` holds the rows on this page; ``fold_from``..``summary.covers_to_sequence``
    is the range its run folded (the previous summary's end + 1 onwards), so
    ``folded_before_page`` says some of them are on older pages. ``on_page`` is False
    for a summary from a newer page that folded rows shown here.
    """

    summary: Message
    fold_from: int
    folded: list[Message] = field(default_factory=list)
    folded_before_page: bool = False
    on_page: bool = True

    @property
    def active(self) -> bool:
        return self.summary.compacted_at is None


@dataclass
class Timeline:
    """One page of a thread for the dashboard, oldest first.

    ``items`` are ``("message", Message)`` for rows in the context window or left
    verbatim, and ``("summary", SummaryBlock)``; ``older_before`` is the ``before=``
    value of the previous page (None on the first one).
    """

    items: list[tuple[str, Any]]
    older_before: int | None
    before: int | None
    first_sequence: int | None


def _timeline(*, thread: Thread, before: int | None) -> Timeline:
    """Build one page of ``thread`` (the newest MESSAGES_PAGE_SIZE rows below ``before``).

    A compacted ordinary row belongs to the first summary whose range reaches it: runs
    fold every un-compacted row up to their ``covers_to_sequence`` and ranges only grow
    (docs/decisions.md, "The summary row"). Costs at most three queries whatever the
    thread's length.
    """
    qs = Message.objects.filter(thread=thread)
    if before is not None:
        qs = qs.filter(sequence_number__lt=before)
    rows = list(qs.order_by("-sequence_number")[: MESSAGES_PAGE_SIZE + 1])
    has_older = len(rows) > MESSAGES_PAGE_SIZE
    rows = rows[:MESSAGES_PAGE_SIZE]
    rows.reverse()
    if not rows:
        return Timeline(items=[], older_before=None, before=before, first_sequence=None)
    page_min, page_max = rows[0].sequence_number, rows[-1].sequence_number

    summaries = [r for r in rows if r.is_summary]
    # Every committed run adds one summary row, so compaction_count says how many exist
    # off this page; when none (or only the active one) can be off it, skip the scans
    # below, which walk the thread's rows because no index covers is_summary.
    off_page = thread.compaction_count - len(summaries)
    previous_end = 0
    if summaries and has_older and off_page > 0:
        previous = (
            Message.objects.filter(thread=thread, is_summary=True, sequence_number__lt=page_min)
            .order_by("-sequence_number")
            .values_list("covers_to_sequence", flat=True)
            .first()
        )
        previous_end = int(previous or 0)
    blocks: dict[int, SummaryBlock] = {}
    for summary in summaries:
        fold_from = previous_end + 1
        blocks[summary.sequence_number] = SummaryBlock(
            summary=summary, fold_from=fold_from, folded_before_page=has_older and fold_from < page_min
        )
        previous_end = int(summary.covers_to_sequence or previous_end)

    folded = [r for r in rows if r.compacted_at is not None and not r.is_summary]
    candidates = list(blocks.values())
    reach = max((c.summary.covers_to_sequence or 0 for c in candidates), default=0)
    if folded and folded[-1].sequence_number > reach:
        active = thread.active_summary if thread.active_summary_id else None
        later: Iterable[Message]
        if off_page == 1 and active is not None and active.sequence_number > page_max:
            later = [active]
        else:
            later = Message.objects.filter(
                thread=thread, is_summary=True, sequence_number__gt=page_max
            ).order_by("sequence_number")[:LATER_SUMMARIES_MAX]
        for summary in later:
            candidates.append(
                SummaryBlock(summary=summary, fold_from=previous_end + 1, on_page=False)
            )
            previous_end = int(summary.covers_to_sequence or previous_end)
    unplaced: list[Message] = []
    for row in folded:
        block = next(
            (c for c in candidates if (c.summary.covers_to_sequence or 0) >= row.sequence_number),
            None,
        )
        if block is None:
            unplaced.append(row)
        else:
            block.folded.append(row)

    items: list[tuple[str, Any]] = []
    for row in rows:
        if row.is_summary:
            items.append(("summary", blocks[row.sequence_number]))
        elif row.compacted_at is None:
            items.append(("message", row))
    # Rows folded by a summary on a newer page sit after everything on this page.
    items.extend(("summary", c) for c in candidates if not c.on_page and c.folded)
    items.extend(("message", r) for r in unplaced)
    return Timeline(
        items=items,
        older_before=page_min if has_older else None,
        before=before,
        first_sequence=page_min,
    )


def _before_param(request: HttpRequest) -> int | None:
    """``?before=`` as a positive int, None when absent; Http400 via ValueError."""
    raw = request.GET.get("before", "")
    if raw == "":
        return None
    if not raw.isdigit() or len(raw) > 18 or int(raw) < 1:
        raise ValueError("before must be a positive integer")
    return int(raw)


def _duration_text(stats: dict[str, Any]) -> str:
    """``sessionDuration`` as people read it: ``"2 h 5 min"``, ``"3 min 20 s"``, ``"12 s"``."""
    duration = stats.get("sessionDuration")
    if not duration:
        return ""
    seconds = int(duration["seconds"])
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def _stats_context(thread: Thread) -> dict[str, Any]:
    stats = serializers.stats_to_dict(working.thread_stats(thread=thread))
    return {"stats": stats, "duration_text": _duration_text(stats)}


def _thread_context(request: HttpRequest, thread: Thread, before: int | None) -> dict[str, Any]:
    project = thread.project
    return {
        "project": project,
        "thread": thread,
        "timeline": _timeline(thread=thread, before=before),
        **_stats_context(thread),
        "nav": "threads",
        "thread_url": _url("playground:thread", project, thread.pk),
        "stats_url": _url("playground:thread-stats", project, thread.pk),
        **thread_jobs_context(thread),
        "ws_path": f"/ws/threads/{thread.pk}/?{urlencode({'projectId': project.pk})}",
    }


# --- pages --------------------------------------------------------------------------------


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Send the user to the thread list of their first project (by name), or say they have none."""
    project = user_projects(request).first()
    if project is None:
        return _page(request, "playground/no_project.html", {})
    return redirect(_url("playground:threads", project))


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
        return HttpResponseBadRequest("Invalid filter")
    return _threads_response(request, project, filters, forms.ThreadCreateForm())


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
        return HttpResponseBadRequest("Invalid cursor")
    context: dict[str, Any] = {
        "project": project,
        # Real messages: every row but the summaries, one per compaction run.
        "rows": [{"thread": t, "messages": t.message_total - t.compaction_count} for t in threads],
        "nav": "threads",
        "filters": filters,
        "dataset": dataset or "",
        "tag": tag or "",
        "is_first_page": cursor is None,
        "next_url": _url("playground:threads", project, dataset=dataset, tag=tag, cursor=next_cursor)
        if next_cursor
        else None,
        "first_url": _url("playground:threads", project, dataset=dataset, tag=tag),
        "list_url": reverse("playground:threads"),
    }
    if _wants_partial(request) and status == 200:
        return _partial(request, "playground/threads.html#thread-list", context)
    context["create_form"] = create_form
    context["datasets"] = (
        Thread.objects.filter(project=project)
        .order_by("dataset")
        .values_list("dataset", flat=True)
        .distinct()[:DATASET_CHOICES_MAX]
    )
    return _page(request, "playground/threads.html", context, project=project, status=status)


@require_POST
@login_required
def thread_create(request: HttpRequest) -> HttpResponse:
    """Create a thread from the form and open it; an invalid form re-renders the list (400)."""
    project = get_project_for_user(request)
    form = forms.ThreadCreateForm(request.POST)
    if not form.is_valid():
        filters = forms.ThreadFilterForm({})
        filters.is_valid()
        return _threads_response(request, project, filters, form, status=400)
    thread = working.thread_create(
        project=project,
        dataset=form.cleaned_data["dataset"],
        tags=form.cleaned_data["tags"],
        auto_compact_threshold=form.cleaned_data["auto_compact_threshold"],
    )
    messages.success(request, "Thread created.")
    return redirect(_url("playground:thread", project, thread.pk))


@require_GET
@login_required
@default_project
def thread_detail(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """A thread: its messages (newest page, ``?before=`` for older), folding, stats, actions.

    HTMX requests get the ``messages`` partial only (live refresh, "load older").
    """
    thread = get_thread_for_user(request, thread_id)
    try:
        before = _before_param(request)
    except ValueError:
        return HttpResponseBadRequest("before must be a positive integer")
    context = _thread_context(request, thread, before)
    if _wants_partial(request):
        return _partial(request, "playground/thread.html#messages", context)
    return _page(request, "playground/thread.html", context, project=thread.project)


@require_GET
@login_required
@default_project
def thread_stats(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """The stats panel of a thread (spec 002, GET stats), as an HTML fragment."""
    thread = get_thread_for_user(request, thread_id)
    context = {"project": thread.project, "thread": thread, **_stats_context(thread)}
    return _partial(request, "playground/thread.html#stats", context)


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
    return redirect(_url("playground:thread", thread.project, thread.pk))


@require_GET
@login_required
@default_project
def playground(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """The playground: a chat pane on a thread, its stats and the per-turn context panel.

    The messageLimit control starts at the thread's autoCompactThreshold when that is
    above the spec's default of 20 (capped at 100), so a first turn does not walk into the
    messageLimit trap (spec 000) that prepare would warn about.
    """
    thread = get_thread_for_user(request, thread_id)
    context = _thread_context(request, thread, None)
    project = thread.project
    context["chat_url"] = _url("playground:chat", project, thread.pk)
    context["turn_url_template"] = _url("playground:turn-context", project, TURN_ID_PLACEHOLDER)
    context["turn_id_placeholder"] = TURN_ID_PLACEHOLDER
    context["message_limit"] = min(
        max(working.MESSAGE_LIMIT_DEFAULT, thread.auto_compact_threshold or 0),
        working.MESSAGE_LIMIT_MAX,
    )
    context["message_limit_max"] = working.MESSAGE_LIMIT_MAX
    return _page(request, "playground/playground.html", context, project=project)


# --- project pages ------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@login_required
@default_project
def members(request: HttpRequest) -> HttpResponse:
    """The project's members; owners add an existing user by username (POST)."""
    project = get_project_for_user(request)
    form = forms.MemberAddForm(project=project)
    status = 200
    if request.method == "POST":
        require_owner(request, project)
        form = forms.MemberAddForm(request.POST, project=project)
        if form.is_valid():
            membership = form.save()
            messages.success(
                request, f"Added {isolate(membership.user.get_username())} as {membership.role}."
            )
            return redirect(_url("playground:members", project))
        status = 400
    rows = Membership.objects.filter(project=project).select_related("user").order_by(
        "user__username"
    )
    return _page(
        request,
        "playground/members.html",
        {"memberships": rows, "form": form, "current_user_id": request.user.pk, "nav": "members"},
        project=project,
        status=status,
    )


@require_http_methods(["GET", "POST"])
@login_required
@default_project
def member_remove(request: HttpRequest, membership_id: int) -> HttpResponse:
    """Confirm (GET) and remove (POST) a member; owners only. The last owner stays."""
    project = get_project_for_user(request)
    require_owner(request, project)
    membership = get_object_or_404(
        Membership.objects.select_related("user"), pk=membership_id, project=project
    )
    last_owner = (
        membership.role == Membership.Role.OWNER
        and not Membership.objects.filter(project=project, role=Membership.Role.OWNER)
        .exclude(pk=membership.pk)
        .exists()
    )
    if request.method == "POST":
        if last_owner:
            messages.error(request, "A project keeps at least one owner.")
            return redirect(_url("playground:members", project))
        name = membership.user.get_username()
        membership.delete()
        messages.success(request, f"Removed {isolate(name)} from {isolate(project.name)}.")
        if membership.user_id == request.user.pk:
            return redirect("playground:home")
        return redirect(_url("playground:members", project))
    return _page(
        request,
        "playground/member_remove.html",
        {"membership": membership, "last_owner": last_owner, "nav": "members"},
        project=project,
    )


@require_http_methods(["GET", "POST"])
@login_required
@default_project
def api_keys(request: HttpRequest) -> HttpResponse:
    """The project's API keys; owners create one (POST), then see its secret once.

    Only the SHA-256 of the secret is stored (ApiKey.issue). A valid POST answers 303 to
    ``key-created``, carrying the secret in the session (never in the URL), so reloading
    the page that shows it cannot create another key.
    """
    project = get_project_for_user(request)
    form = forms.ApiKeyCreateForm()
    status = 200
    if request.method == "POST":
        require_owner(request, project)
        form = forms.ApiKeyCreateForm(request.POST)
        if form.is_valid():
            key, secret = ApiKey.issue(project=project, name=form.cleaned_data["name"])
            request.session[NEW_KEY_SESSION] = {
                "project": project.pk,
                "key": key.pk,
                "secret": secret,
            }
            return HttpResponseRedirect(_url("playground:key-created", project), status=303)
        status = 400
    keys = ApiKey.objects.filter(project=project).order_by("-created", "-pk")
    context = {
        "active_keys": keys.filter(revoked__isnull=True),
        "revoked_keys": keys.filter(revoked__isnull=False),
        "form": form,
        "nav": "keys",
    }
    return _page(request, "playground/keys.html", context, project=project, status=status)


@require_GET
@login_required
@default_project
def api_key_created(request: HttpRequest) -> HttpResponse:
    """Show the secret of the key this session just created, once (never cached).

    The secret is taken out of the session as it is shown; a reload, or a visit without a
    new key of this project waiting, is sent to the key list with a note instead.
    """
    project = get_project_for_user(request)
    pending: dict[str, Any] = request.session.get(NEW_KEY_SESSION) or {}
    key = None
    if pending.get("project") == project.pk:
        del request.session[NEW_KEY_SESSION]
        key = ApiKey.objects.filter(pk=int(pending["key"]), project=project).first()
    if key is None:
        messages.info(
            request,
            "A key's secret is shown only once, right after it is created. "
            "If it was lost, revoke that key and create a new one.",
        )
        return redirect(_url("playground:keys", project))
    response = _page(
        request,
        "playground/key_created.html",
        {"key": key, "secret": pending["secret"], "nav": "keys"},
        project=project,
    )
    add_never_cache_headers(response)
    return response


@require_http_methods(["GET", "POST"])
@login_required
@default_project
def api_key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    """Confirm (GET) and revoke (POST) an API key; owners only. Revoking twice is harmless."""
    project = get_project_for_user(request)
    require_owner(request, project)
    key = get_object_or_404(ApiKey, pk=key_id, project=project)
    if request.method == "POST":
        key.revoke()
        messages.success(
            request, f"Revoked key “{isolate(key.name)}”. Requests with it now get 401."
        )
        return redirect(_url("playground:keys", project))
    return _page(
        request, "playground/key_revoke.html", {"key": key, "nav": "keys"}, project=project
    )


@require_http_methods(["GET", "POST"])
@login_required
@default_project
def project_settings(request: HttpRequest) -> HttpResponse:
    """Project settings: rename (POST, owners only); members see them read-only."""
    project = get_project_for_user(request)
    form = forms.ProjectSettingsForm(instance=project)
    status = 200
    if request.method == "POST":
        require_owner(request, project)
        form = forms.ProjectSettingsForm(request.POST, instance=project)
        if form.is_valid():
            form.save()
            messages.success(request, "Project renamed.")
            return redirect(_url("playground:settings", project))
        status = 400
    return _page(
        request,
        "playground/settings.html",
        {"form": form, "nav": "settings"},
        project=project,
        status=status,
    )

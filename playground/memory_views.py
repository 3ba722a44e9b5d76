"""The Memory surface of the dashboard, per dataset, and the project's Jobs page
(issue 8 item 6; issue 7, background jobs).

- Memory (``dashboard/memory/``): the project's datasets with their counts.
- A dataset (``dashboard/memory/dataset/?dataset=``): the episodes' timeline (each links
  to its messages on the thread page), the facts grouped by entity with invalidated ones
  struck through beside what replaced them and when (both a page at a time, "Older"
  links carrying keyset cursors), and the contradictions inbox
  (memoryapp.fact_review). Live: static/js/live.js re-fetches its ``data-live-url``
  fragments on every event of the dataset's group (memoryapp.events.dataset_changed).
- An entity (``dashboard/memory/entities/<id>/``): its kind, summary and facts.
- POST actions: delete a fact (memoryapp.semantic.fact_delete), confirm an invalidation
  or restore the older fact. Members and owners alike may use them.
- Jobs (``dashboard/jobs/?status=``): every job of the project, its error and Retry.

Anyone who is not a member of the project gets 404 (playground.access).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TypeVar

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_POST

from memoryapp import datasets, fact_review, semantic
from memoryapp.errors import FactNotFound, InvalidInput
from memoryapp.models import Entity, Fact, Job, Project
from memoryapp.validation import canonical_uuid
from playground import memory_selectors as selectors
from playground.access import default_project, get_project_for_user
from playground.pages import bad_request, page, partial, project_url, wants_partial
from playground.routing import dataset_socket_path

JOB_STATUSES = [s.value for s in Job.Status]
# Entities per page of a dataset's entity list (by name; "More entities" pages on).
ENTITIES_PAGE_SIZE = 100
T = TypeVar("T")


@require_GET
@login_required
@default_project
def memory_home(request: HttpRequest) -> HttpResponse:
    """The Memory tab: the project's datasets with thread, episode, fact and entity counts."""
    project = get_project_for_user(request)
    rows = selectors.dataset_rows(project=project)
    return page(request, "playground/memory.html", {"rows": rows, "nav": "memory"}, project=project)


class _BadCursor(Exception):
    """A paging parameter that no "Older" link made; the view answers 400 naming it."""

    def __init__(self, field: str) -> None:
        super().__init__(field)
        self.field = field


def _paged(field: str, read: Callable[[], T]) -> T:
    try:
        return read()
    except InvalidInput as exc:
        raise _BadCursor(field) from exc


def _bad_cursor(request: HttpRequest, project: Project, exc: _BadCursor) -> HttpResponse:
    message = f"{exc.field}: malformed cursor (use the page's Older link)"
    return bad_request(request, message, project=project)


def _dataset_context(project: Project, dataset: str, request: HttpRequest) -> dict[str, object]:
    """The dataset page's lists, each on the page its ``?facts=`` / ``?episodes=`` cursor
    names (the newest without one). Raises _BadCursor."""
    cursors = {name: request.GET.get(name) or None for name in ("facts", "episodes", "entities")}
    groups, facts_next = _paged(
        "facts",
        lambda: selectors.facts_by_entity(project=project, dataset=dataset, cursor=cursors["facts"]),
    )
    episodes, episodes_next = _paged(
        "episodes",
        lambda: selectors.episodes_timeline(project=project, dataset=dataset, cursor=cursors["episodes"]),
    )
    entities, entities_next = _paged(
        "entities",
        lambda: semantic.entity_list(
            project=project, dataset=dataset, limit=ENTITIES_PAGE_SIZE, cursor=cursors["entities"]
        ),
    )
    inbox = fact_review.contradiction_list(project=project, dataset=dataset)
    facts = [f for g in groups for f in (*g.current, *g.invalidated)]
    selectors.sources_attach(facts + [f for c in inbox for f in (c.older, c.newer)])

    def here(**changed: str | None) -> str:
        return project_url("playground:dataset", project, dataset=dataset, **{**cursors, **changed})

    return {
        "dataset": dataset,
        "episodes": episodes,
        "groups": groups,
        "entities": entities,
        "entities_more_url": entities_next and here(entities=entities_next),
        "entities_first_url": cursors["entities"] and here(entities=None),
        "inbox": inbox,
        "facts_older_url": facts_next and here(facts=facts_next),
        "facts_newest_url": cursors["facts"] and here(facts=None),
        "episodes_older_url": episodes_next and here(episodes=episodes_next),
        "episodes_newest_url": cursors["episodes"] and here(episodes=None),
        # A live refresh re-renders the pages this one shows.
        "live_url": here(),
        "ws_path": dataset_socket_path(project, dataset),
        "nav": "memory",
    }


@require_GET
@login_required
@default_project
def dataset_detail(request: HttpRequest) -> HttpResponse:
    """One dataset's entities, episodes, facts by entity and contradictions inbox
    (``?dataset=``), each list a page at a time (``?entities=`` / ``?facts=`` /
    ``?episodes=`` cursors, 400 naming a malformed one); without a dataset, the Memory tab;
    404 for a dataset the project holds nothing in. An htmx request gets the live
    fragment only."""
    project = get_project_for_user(request)
    dataset = request.GET.get("dataset", "")
    if not dataset:
        return redirect(project_url("playground:memory", project))
    if not datasets.dataset_exists(project=project, dataset=dataset):
        raise Http404("Dataset not found")  # nothing in it, or a name mistyped in the URL
    try:
        context = _dataset_context(project, dataset, request)
    except _BadCursor as exc:
        return _bad_cursor(request, project, exc)
    if wants_partial(request):
        return partial(request, "playground/dataset.html#memory-lists", {"project": project, **context})
    return page(request, "playground/dataset.html", context, project=project)


@require_GET
@login_required
@default_project
def entity_detail(request: HttpRequest, entity_id: uuid.UUID) -> HttpResponse:
    """One entity: its kind, summary and facts, current and invalidated, a page at a time
    (``?cursor=``, 400 naming a malformed one)."""
    project = get_project_for_user(request)
    entity = get_object_or_404(Entity, pk=entity_id, project=project)
    cursor = request.GET.get("cursor") or None
    try:
        group, next_cursor = _paged("cursor", lambda: selectors.entity_facts(entity=entity, cursor=cursor))
    except _BadCursor as exc:
        return _bad_cursor(request, project, exc)
    selectors.sources_attach([*group.current, *group.invalidated])
    context = {
        "entity": entity,
        "group": group,
        "dataset": entity.dataset,
        "older_url": next_cursor and project_url("playground:entity", project, entity.pk, cursor=next_cursor),
        "newest_url": cursor and project_url("playground:entity", project, entity.pk),
        "nav": "memory",
    }
    return page(request, "playground/entity.html", context, project=project)


def _back(request: HttpRequest, project: Project, dataset: str) -> HttpResponse:
    # Back to the page the form was on (an entity page) when it said so, else the dataset.
    entity = request.POST.get("entity", "")
    try:
        return redirect(project_url("playground:entity", project, canonical_uuid(entity)))
    except ValueError:
        return redirect(project_url("playground:dataset", project, dataset=dataset))


def _reviewer(request: HttpRequest) -> User | None:
    return request.user if isinstance(request.user, User) else None


def _fact(project: Project, fact_id: uuid.UUID) -> Fact:
    try:
        return semantic.fact_get(project=project, fact_id=fact_id)
    except FactNotFound as exc:
        raise Http404("No such fact") from exc


@require_POST
@login_required
def fact_delete(request: HttpRequest, fact_id: uuid.UUID) -> HttpResponse:
    """Forget one fact for good (gone from recall at once), then back to its dataset."""
    project = get_project_for_user(request)
    fact = _fact(project, fact_id)
    semantic.fact_delete(project=project, fact_id=fact.pk)
    messages.success(request, "Fact deleted: recall no longer returns it.")
    return _back(request, project, fact.dataset)


#: The review actions of the contradictions inbox: the memoryapp.fact_review function
#: each runs, the note when the invalidation was already reviewed, the note when done.
REVIEWS: dict[str, tuple[Callable[..., Fact], str, str]] = {
    "confirm": (
        fact_review.contradiction_confirm,
        "Nothing to confirm: that invalidation was already reviewed.",
        "Confirmed: the newer fact stands.",
    ),
    "restore": (
        fact_review.contradiction_restore,
        "Nothing to restore: that invalidation was already reviewed.",
        "Restored: the older fact is current again.",
    ),
}


@require_POST
@login_required
def contradiction_review(request: HttpRequest, fact_id: uuid.UUID, action: str) -> HttpResponse:
    """Review the invalidation of the older fact ``fact_id``: ``action`` "confirm" marks it
    right (the newer fact stands), "restore" makes the older fact current again and
    invalidates its replacement (REVIEWS; the URL names the action)."""
    review, nothing, done = REVIEWS[action]
    project = get_project_for_user(request)
    fact = _fact(project, fact_id)
    try:
        review(project=project, fact_id=fact.pk, reviewer=_reviewer(request))
    except FactNotFound:
        messages.info(request, nothing)
    else:
        messages.success(request, done)
    return _back(request, project, fact.dataset)


@require_GET
@login_required
@default_project
def job_list(request: HttpRequest) -> HttpResponse:
    """Every job of the project, newest first (``?status=`` filters; 400 naming an
    unknown status rather than showing every job as if filtered), errors and Retry."""
    project = get_project_for_user(request)
    status = request.GET.get("status", "")
    if status and status not in JOB_STATUSES:
        message = f"status: must be one of {', '.join(JOB_STATUSES)} (or left out)"
        return bad_request(request, message, project=project)
    context = {
        "jobs": selectors.project_jobs(project=project, status=status),
        "status": status,
        "statuses": JOB_STATUSES,
        "nav": "jobs",
    }
    return page(request, "playground/jobs.html", context, project=project)

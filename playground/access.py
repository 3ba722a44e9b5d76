"""Membership-scoped look-ups for every dashboard view (issue 4 item 1).

Every dashboard route takes ``?projectId=<Project.pk>``. These helpers are the one place
that turns a request into the project (and thread) it may see: a malformed ``projectId``,
a project the logged-in user is not a member of, or a thread of another project all raise
Http404 alike, so the dashboard never reveals what exists elsewhere (DESIGN.md section 5:
"never reveal it exists"). A page opened without ``projectId`` (a bookmark, a typed URL)
is sent to one of the user's projects by ``default_project``.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.shortcuts import redirect

from memoryapp.models import Membership, Project, Thread
from memoryapp.validation import canonical_uuid, path_id

ViewFunction = Callable[..., HttpResponseBase]


def user_projects(request: HttpRequest) -> QuerySet[Project]:
    """The projects the logged-in user is a member of, by name (the switcher's order)."""
    if not request.user.is_authenticated:
        return Project.objects.none()
    return Project.objects.filter(membership__user_id=request.user.pk).order_by("name", "pk")


def _project_of_object(request: HttpRequest, kwargs: dict[str, Any]) -> Project | None:
    """The project of the thread, key, membership or chat turn a URL names, if the user is
    a member."""
    projects = user_projects(request)
    if "thread_id" in kwargs:
        return projects.filter(threads__pk=kwargs["thread_id"]).first()
    if "key_id" in kwargs:
        return projects.filter(api_keys__pk=kwargs["key_id"]).first()
    if "membership_id" in kwargs:
        return projects.filter(membership__pk=kwargs["membership_id"]).first()
    if "turn_id" in kwargs:
        return projects.filter(threads__turns__pk=kwargs["turn_id"]).first()
    return None


def default_project(view: ViewFunction) -> ViewFunction:
    """Send a GET without ``?projectId=`` to the same URL with a project of the user's.

    The project is the one of the thread, key or membership the URL names when the user
    is a member of it, else the user's first project by name; a user with no project is
    sent home, which says so. The rest of the query string is kept. Only an absent or
    empty ``projectId`` is filled in: a malformed one, or one of a project the user is not
    a member of, still gets 404, and so does any other method. Goes below
    ``login_required`` (a logged-out visitor logs in first and comes back here).
    """

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.method != "GET" or request.GET.get("projectId", "") != "":
            return view(request, *args, **kwargs)
        project = _project_of_object(request, kwargs) or user_projects(request).first()
        if project is None:
            return redirect("playground:home")
        query = request.GET.copy()
        query["projectId"] = str(project.pk)
        return HttpResponseRedirect(f"{request.path}?{query.urlencode()}")

    return wrapper


# A project id as the dashboard writes it: ASCII digits, no sign, no leading zero, at
# most 18 of them (so it fits a 64-bit key). str.isdigit() also takes "²" (int() then
# raises: a 500) and "\u0661" (Arabic-Indic one: int() reads 1, a silent match of project 1).
PROJECT_ID_PATTERN = re.compile(r"[1-9][0-9]{0,17}")


def parse_project_id(raw: str | None) -> int | None:
    """``raw`` (a ``projectId`` from a query string) as a project id, or None when it is
    not one written as the dashboard writes them (PROJECT_ID_PATTERN): anything else names
    no project, whatever int() would make of it."""
    if raw is None or not PROJECT_ID_PATTERN.fullmatch(raw):
        return None
    return int(raw)


def parse_thread_id(raw: str | uuid.UUID | None) -> uuid.UUID | None:
    """``raw`` (a thread id from a URL) as a UUID, or None: the API's rule for ids in a path
    (memoryapp.validation.path_id: the canonical 8-4-4-4-12 form, any case; no braces,
    ``urn:uuid:`` or missing hyphens)."""
    try:
        return canonical_uuid(raw) if raw is not None else None
    except ValueError:
        return None


def _project_id(request: HttpRequest) -> int:
    project_id = parse_project_id(request.GET.get("projectId", ""))
    if project_id is None:
        raise Http404("No such project")
    return project_id


def get_membership_for_user(request: HttpRequest) -> Membership:
    """Return the logged-in user's Membership of the ``?projectId=`` project (project loaded).

    Raises Http404 when the user is anonymous, ``projectId`` is missing or not written as
    the dashboard writes one (parse_project_id), or the user has no membership in it.
    """
    if not request.user.is_authenticated:
        raise Http404("No such project")
    membership = (
        Membership.objects.select_related("project")
        .filter(project_id=_project_id(request), user_id=request.user.pk)
        .first()
    )
    if membership is None:
        raise Http404("No such project")
    return membership


def get_project_for_user(request: HttpRequest) -> Project:
    """Return the ``?projectId=`` Project if the logged-in user is a member of it.

    Raises Http404 otherwise (see get_membership_for_user). The membership is kept on
    ``request.membership`` so templates and require_owner need no second query.
    """
    membership = get_membership_for_user(request)
    request.membership = membership  # type: ignore[attr-defined]
    return membership.project


def get_thread_for_user(request: HttpRequest, thread_id: uuid.UUID | str) -> Thread:
    """Return thread ``thread_id`` of the ``?projectId=`` project the user is a member of.

    Raises Http404 for a non-member, an id not in the canonical form (path_id, as on /v1),
    a missing thread, or a thread of another project, alike. The active summary is loaded with the thread.
    """
    project = get_project_for_user(request)
    pk = path_id(thread_id, lambda: Http404("No such thread"))
    thread = (
        Thread.objects.select_related("active_summary", "project")
        .filter(pk=pk, project=project)
        .first()
    )
    if thread is None:
        raise Http404("No such thread")
    return thread


def is_owner(request: HttpRequest, project: Project) -> bool:
    """Whether the logged-in user owns ``project`` (manages its members and API keys)."""
    membership: Membership | None = getattr(request, "membership", None)
    if membership is not None and membership.project_id == project.pk:
        return membership.role == Membership.Role.OWNER
    if not request.user.is_authenticated:
        return False
    return Membership.objects.filter(
        project=project, user=request.user, role=Membership.Role.OWNER
    ).exists()


def require_owner(request: HttpRequest, project: Project) -> None:
    """Raise PermissionDenied (403) unless the logged-in user owns ``project``.

    Members already know the project exists, so 403 (not 404) is the honest answer.
    """
    if not is_owner(request, project):
        raise PermissionDenied("Only the project's owners can do this")

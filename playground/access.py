"""Membership-scoped look-ups for every dashboard view (issue 4 item 1).

Every dashboard route takes ``?projectId=<Project.pk>``. These helpers are the one place
that turns a request into the project (and thread) it may see: a missing or malformed
``projectId``, a project the logged-in user is not a member of, or a thread of another
project all raise Http404 alike, so the dashboard never reveals what exists elsewhere
(DESIGN.md section 5: "never reveal it exists").
"""

from __future__ import annotations

import uuid

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from memoryapp.models import Membership, Project, Thread


def _project_id(request: HttpRequest) -> int:
    raw = request.GET.get("projectId", "")
    if not raw.isdigit() or len(raw) > 18:
        raise Http404("No such project")
    return int(raw)


def get_membership_for_user(request: HttpRequest) -> Membership:
    """Return the logged-in user's Membership of the ``?projectId=`` project (project loaded).

    Raises Http404 when the user is anonymous, ``projectId`` is missing or not a positive
    integer, or the user has no membership in that project.
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

    Raises Http404 for a non-member, a malformed id, a missing thread, or a thread of
    another project, alike. The active summary is loaded with the thread.
    """
    project = get_project_for_user(request)
    try:
        pk = thread_id if isinstance(thread_id, uuid.UUID) else uuid.UUID(str(thread_id))
    except ValueError as exc:
        raise Http404("No such thread") from exc
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

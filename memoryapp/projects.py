"""Membership changes of a project, under a lock on its memberships.

The rule they keep: a project always has at least one owner (docs/decisions.md, "Owners
manage, members look"). Checking the other owners and deleting in two unlocked steps let
two owners remove each other at once and leave a project no one can manage; here the
project's membership rows are locked first (``SELECT ... FOR UPDATE`` on PostgreSQL; on
SQLite every transaction is IMMEDIATE, so the write lock is held from the start).
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils.text import slugify

from memoryapp.models import Membership, Project

# Tries at a free slug when another project took the same one meanwhile.
SLUG_ATTEMPTS = 5


class LastOwner(Exception):
    """The membership is its project's only owner: removing it would leave none."""


def _locked_memberships(project: Project) -> list[Membership]:
    # In primary-key order, so two transactions locking the same project never deadlock.
    return list(
        Membership.objects.select_for_update()
        .filter(project=project)
        .select_related("user")
        .order_by("pk")
    )


def membership_is_last_owner(*, membership: Membership) -> bool:
    """Whether ``membership`` is the only owner of its project (a read, for the confirm page;
    membership_remove decides again under the lock)."""
    return (
        membership.role == Membership.Role.OWNER
        and not Membership.objects.filter(project_id=membership.project_id, role=Membership.Role.OWNER)
        .exclude(pk=membership.pk)
        .exists()
    )


def membership_remove(*, project: Project, membership_id: int) -> Membership:
    """Remove membership ``membership_id`` of ``project``; return the removed row (user loaded).

    Raises Membership.DoesNotExist when the project has no such membership (another
    project's, or already removed) and LastOwner when it is the project's only owner; in
    both cases nothing changes.
    """
    with transaction.atomic():
        memberships = _locked_memberships(project)
        target = next((m for m in memberships if m.pk == membership_id), None)
        if target is None:
            raise Membership.DoesNotExist(f"No membership {membership_id} in project {project.pk}")
        owners = [m for m in memberships if m.role == Membership.Role.OWNER]
        if target.role == Membership.Role.OWNER and len(owners) == 1:
            raise LastOwner(f"{target.user} is the only owner of project {project.pk}")
        target.delete()  # the user's live sockets on it close (playground.signals)
    return target


def _free_slug(name: str) -> str:
    base = (slugify(name, allow_unicode=True) or "project")[:90].strip("-") or "project"
    taken = set(Project.objects.filter(slug__startswith=base).values_list("slug", flat=True))
    slug, n = base, 1
    while slug in taken:
        n += 1
        slug = f"{base}-{n}"
    return slug


def project_create(*, name: str, owner: Any) -> Project:
    """Create a project named ``name`` (1-200 visible characters, checked by the caller's
    form) with ``owner`` (a User) as its owner, and return it. The slug is ``name``
    slugified (``project`` when nothing is left), made unique with ``-2``, ``-3``...;
    a slug taken by a concurrent create is tried again, at most SLUG_ATTEMPTS times
    (then the IntegrityError is raised)."""
    for attempt in range(SLUG_ATTEMPTS):
        try:
            with transaction.atomic():
                project = Project.objects.create(name=name, slug=_free_slug(name))
                Membership.objects.create(project=project, user=owner, role=Membership.Role.OWNER)
            return project
        except IntegrityError:
            if attempt == SLUG_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")

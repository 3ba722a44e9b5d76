"""Membership changes of a project, under a lock on its memberships.

The rule they keep: a project always has at least one owner (docs/decisions.md, "Owners
manage, members look"). Checking the other owners and deleting in two unlocked steps let
two owners remove each other at once and leave a project no one can manage; here the
project's membership rows are locked first (``SELECT ... FOR UPDATE`` on PostgreSQL; on
SQLite every transaction is IMMEDIATE, so the write lock is held from the start).
"""

from __future__ import annotations

from django.db import transaction

from memoryapp.models import Membership, Project


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

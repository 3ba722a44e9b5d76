"""memoryapp.projects: membership changes keep a project's last owner (issue 7 item 4)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from memoryapp import projects
from memoryapp.models import Membership, Project
from tests.test_concurrency import run_in_threads

ROUNDS = 5  # projects raced at once; each is one chance for a lost check


def _project_with(slug: str, *roles: str) -> tuple[Project, list[Membership]]:
    project = Project.objects.create(slug=slug, name=slug)
    memberships = [
        Membership.objects.create(
            user=User.objects.create_user(username=f"{slug}-{i}"), project=project, role=role
        )
        for i, role in enumerate(roles)
    ]
    return project, memberships


@pytest.mark.django_db
def test_it_refuses_to_remove_the_last_owner() -> None:
    project, (owner, member) = _project_with("p", Membership.Role.OWNER, Membership.Role.MEMBER)

    with pytest.raises(projects.LastOwner):
        projects.membership_remove(project=project, membership_id=owner.pk)

    assert list(Membership.objects.filter(project=project).values_list("pk", flat=True).order_by("pk")) == [
        owner.pk,
        member.pk,
    ]


@pytest.mark.django_db
def test_it_removes_a_member_or_one_of_two_owners() -> None:
    project, (first, second, member) = _project_with(
        "p", Membership.Role.OWNER, Membership.Role.OWNER, Membership.Role.MEMBER
    )

    removed = projects.membership_remove(project=project, membership_id=member.pk)
    projects.membership_remove(project=project, membership_id=first.pk)

    assert removed.user.username == "p-2"
    assert list(Membership.objects.filter(project=project).values_list("pk", flat=True)) == [second.pk]
    assert projects.membership_is_last_owner(membership=second) is True


@pytest.mark.django_db
def test_it_does_not_remove_a_membership_of_another_project() -> None:
    project, _ = _project_with("p", Membership.Role.OWNER)
    _, (foreign,) = _project_with("q", Membership.Role.MEMBER)

    with pytest.raises(Membership.DoesNotExist):
        projects.membership_remove(project=project, membership_id=foreign.pk)

    assert Membership.objects.filter(pk=foreign.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_it_keeps_one_owner_when_two_owners_remove_each_other_at_once() -> None:
    races = [_project_with(f"p{i}", Membership.Role.OWNER, Membership.Role.OWNER) for i in range(ROUNDS)]
    work = [(project, membership) for project, pair in races for membership in pair]

    def remove(i: int) -> str:
        project, membership = work[i]
        try:
            projects.membership_remove(project=project, membership_id=membership.pk)
        except projects.LastOwner:
            return "refused"
        return "removed"

    outcomes = run_in_threads(len(work), remove)

    assert [sorted(outcomes[2 * i : 2 * i + 2]) for i in range(ROUNDS)] == [["refused", "removed"]] * ROUNDS
    for project, _ in races:
        assert Membership.objects.filter(project=project, role=Membership.Role.OWNER).count() == 1

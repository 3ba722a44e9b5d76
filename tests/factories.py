"""factory-boy factories for the domain's models."""

from __future__ import annotations

from typing import cast

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User

from memoryapp.models import Membership, Project, Thread


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("correct-horse-battery")


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    name = factory.Sequence(lambda n: f"Project {n}")
    slug = factory.Sequence(lambda n: f"project-{n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    project = factory.SubFactory(ProjectFactory)
    role = Membership.Role.OWNER


class ThreadFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Thread

    project = factory.SubFactory(ProjectFactory)
    dataset = "user_42"


def make_user(username: str) -> User:
    """A user named ``username`` (password ``correct-horse-battery``)."""
    user = cast(User, UserFactory(username=username))
    return user


def make_project(name: str) -> Project:
    """A project named ``name``."""
    project = cast(Project, ProjectFactory(name=name))
    return project


def make_membership(user: User, project: Project, role: str) -> Membership:
    """``user`` in ``project`` with ``role`` (owner | member)."""
    membership = cast(Membership, MembershipFactory(user=user, project=project, role=role))
    return membership

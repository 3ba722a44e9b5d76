"""factory-boy factories for the domain's models."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

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

"""Ids in dashboard URLs follow the API's rule (memoryapp.validation.path_id): the canonical
UUID form in either case (playground.converters.PathIdConverter). A GET written in
capitals is sent to the lower-case URL, its query kept (playground.middleware); a POST is
served as it is; braces, ``urn:uuid:`` or missing hyphens stay 404 as on /v1."""

from __future__ import annotations

import uuid

import pytest
from django.urls import reverse

from memoryapp.models import Thread
from tests.conftest import World

# Every dashboard page with a thread id in its path.
THREAD_PAGES = [
    "playground:thread",
    "playground:thread-stats",
    "playground:thread-compactions",
    "playground:thread-delete",
    "playground:playground",
    "playground:thread-turns",
    "playground:thread-jobs",
    "playground:agent-thread",
    "playground:memories",
]


@pytest.mark.parametrize("name", THREAD_PAGES)
def test_it_sends_a_thread_id_in_capitals_to_the_lower_case_url(world: World, name: str) -> None:
    client = world.client(world.owner)
    lower = reverse(name, args=[world.thread.pk])
    upper = lower.replace(str(world.thread.pk), str(world.thread.pk).upper())
    assert upper != lower

    response = client.get(f"{upper}?projectId={world.project.pk}&before=3")

    assert response.status_code == 301
    assert response["Location"] == f"{lower}?projectId={world.project.pk}&before=3"
    assert client.get(response["Location"]).status_code == client.get(f"{lower}?projectId={world.project.pk}").status_code


def test_it_answers_the_page_once_redirected_and_without_a_query(world: World) -> None:
    client = world.client(world.owner)
    lower = reverse("playground:thread", args=[world.thread.pk])
    upper = lower.replace(str(world.thread.pk), str(world.thread.pk).upper())

    bare = client.get(upper)
    assert (bare.status_code, bare["Location"]) == (301, lower)
    page = client.get(upper, {"projectId": world.project.pk}, follow=True)
    assert page.status_code == 200
    assert page.context["thread"].pk == world.thread.pk


def test_it_serves_a_post_with_a_thread_id_in_capitals(world: World) -> None:
    client = world.client(world.owner)
    path = reverse("playground:thread-edit", args=[world.thread.pk]).replace(
        str(world.thread.pk), str(world.thread.pk).upper()
    )

    response = client.post(f"{path}?projectId={world.project.pk}", {"tags": "upper, case", "auto_compact_threshold": "12"})

    assert response.status_code == 302
    thread = Thread.objects.get(pk=world.thread.pk)
    assert (thread.tags, thread.auto_compact_threshold) == (["upper", "case"], 12)


@pytest.mark.parametrize(
    "write",
    [
        lambda u: "{" + u + "}",
        lambda u: f"urn:uuid:{u}",
        lambda u: uuid.UUID(u).hex,
        lambda u: uuid.UUID(u).hex.upper(),
    ],
    ids=["braces", "urn", "hex", "hex-upper"],
)
def test_an_id_not_in_the_canonical_form_is_404_as_on_the_api(world: World, write: object) -> None:
    client = world.client(world.owner)
    assert callable(write)
    path = f"/dashboard/threads/{write(str(world.thread.pk))}/?projectId={world.project.pk}"

    assert client.get(path).status_code == 404


def test_an_outsider_still_gets_404_for_a_thread_id_in_capitals(world: World) -> None:
    client = world.client(world.outsider)
    path = f"/dashboard/threads/{str(world.thread.pk).upper()}/?projectId={world.project.pk}"

    response = client.get(path, follow=True)

    assert response.status_code == 404

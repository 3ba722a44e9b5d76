"""memoryapp.middleware: htmx requests of a signed-out page get 401, not the login page."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from memoryapp import working
from memoryapp.models import Membership, Project

HTMX = {"HX-Request": "true"}


def _stats_path(db: None) -> tuple[str, Project]:
    project = Project.objects.create(slug="acme", name="Acme")
    thread = working.thread_create(project=project, dataset="d")
    return f"{reverse('playground:thread-stats', args=[thread.pk])}?projectId={project.pk}", project


def test_it_answers_an_htmx_request_that_needs_a_login_with_401(db: None) -> None:
    path, _ = _stats_path(db)

    response = Client().get(path, headers=HTMX)

    assert response.status_code == 401
    assert response["HX-Trigger"] == "memory:signed-out"
    assert b"<form" not in response.content


def test_it_still_redirects_a_plain_request_to_the_login_page(db: None) -> None:
    path, _ = _stats_path(db)

    response = Client().get(path)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("playground:login"))


def test_it_keeps_other_redirects_of_htmx_requests(db: None) -> None:
    path, project = _stats_path(db)
    user = User.objects.create_user("ann")
    Membership.objects.create(user=user, project=project)
    client = Client()
    client.force_login(user)

    response = client.get(path.split("?")[0], headers=HTMX)  # no projectId: sent to one

    assert response.status_code == 302
    assert response["Location"] == path

"""memoryapp.middleware: htmx requests of a signed-out page get 401, not the login page;
/v1 takes the lean API chain, with the headers a JSON answer needs."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.http import HttpResponse
from django.test import Client
from django.urls import reverse

from memoryapp import working
from memoryapp.middleware import ApiChainMiddleware
from memoryapp.models import Membership, Project
from tests.conftest import BASE, Api

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


# --- /v1 takes settings.API_MIDDLEWARE (memoryapp.middleware.ApiChainMiddleware) -------------

API_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
}


def _security_headers(response: Any) -> dict[str, str]:
    return {name: response[name] for name in API_HEADERS if name in response}


def test_it_sends_the_json_security_headers_on_every_v1_answer(api: Api, anon_api: Api) -> None:
    thread = api.create_thread()
    answers = [
        api.post(f"{BASE}/threads/{thread['threadId']}/prepare", {"messageLimit": 20}),
        anon_api.get(f"{BASE}/threads"),
        api.get("/v1/nope"),
        api.client.put(f"{BASE}/threads", headers={"Authorization": f"Bearer {api.key}"}),
        api.get("/v1/openapi.json"),
    ]

    assert [a.status_code for a in answers] == [200, 401, 404, 405, 200]
    for answer in answers:
        assert _security_headers(answer) == API_HEADERS
        assert answer["Content-Type"].startswith("application/json")
        assert answer["Content-Length"] == str(len(answer.content))
        assert "Set-Cookie" not in answer and "Vary" not in answer
    assert answers[2].json() == {"error": "Not found"}
    assert answers[3].json()["error"] == "Method not allowed"


def test_it_sets_no_session_or_csrf_cookie_on_v1_even_for_a_signed_in_browser(
    api: Api, project: Project
) -> None:
    user = User.objects.create_user("ann")
    Membership.objects.create(user=user, project=project)
    api.client.force_login(user)
    thread = api.create_thread()

    response = api.append(thread["threadId"], "hello")

    assert response.status_code == 201
    assert response.cookies == {}
    assert "Vary" not in response


def test_it_keeps_the_sites_policy_sessions_and_csrf_on_the_dashboard(db: None) -> None:
    response = Client().get(reverse("playground:login"))

    assert response.status_code == 200
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "csrftoken" in response.cookies
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_it_keeps_the_sites_policy_on_the_api_docs_page(db: None) -> None:
    response = Client().get("/v1/docs")

    assert response.status_code == 200
    assert "script-src 'self'" in response["Content-Security-Policy"]


@pytest.mark.parametrize(
    ("path", "api_chain"),
    [
        ("/v1", True),
        ("/v1/", True),
        ("/v1/memory/working/threads", True),
        ("/v1/openapi.json", True),
        ("/v1/docs", False),
        ("/v10/x", False),
        ("/v1docs", False),
        ("/login/", False),
        ("/dashboard/threads/", False),
    ],
)
def test_it_sends_only_v1_but_its_docs_through_the_api_chain(path: str, api_chain: bool) -> None:
    chain = ApiChainMiddleware(lambda request: HttpResponse())

    assert chain.is_api(path) is api_chain

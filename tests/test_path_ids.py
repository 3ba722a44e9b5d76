"""Ids in a /v1 path: one rule for every route (memoryapp.validation.path_id).

The canonical UUID text form (``xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx``, either case) finds
the object; braces, ``urn:uuid:``, no hyphens or hyphens in other places (all of which
Python's UUID parser takes) are the route's 404, the same answer as an id never issued,
and change nothing. Every route of the OpenAPI document with an id in its path is here:
a new one fails test_every_route_with_an_id_in_its_path_is_covered until it is added.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memoryapp import paging
from memoryapp.api import api as ninja_api
from memoryapp.errors import InvalidInput
from memoryapp.models import Fact, Job, Message, Thread
from tests.conftest import BASE, Api

MEMORY = "/v1/memory"
TOOL_CALL = {"name": "open_memory", "arguments": {"name": "x"}}

# (method, path template, body, the 404 body). Ids are filled from the world below.
ROUTES: list[tuple[str, str, Any, str]] = [
    ("get", "/working/threads/{thread_id}", None, "Thread not found"),
    ("patch", "/working/threads/{thread_id}", {"tags": ["x"]}, "Thread not found"),
    ("delete", "/working/threads/{thread_id}", None, "Thread not found"),
    ("post", "/working/threads/{thread_id}/messages", {"role": "user", "content": "x"}, "Thread not found"),
    ("get", "/working/threads/{thread_id}/messages", None, "Thread not found"),
    ("post", "/working/threads/{thread_id}/prepare", {}, "Thread not found"),
    ("post", "/working/threads/{thread_id}/compact", None, "Thread not found"),
    ("get", "/working/threads/{thread_id}/stats", None, "Thread not found"),
    ("post", "/working/threads/{thread_id}/end", None, "Thread not found"),
    ("post", "/working/threads/{thread_id}/tools", TOOL_CALL, "Thread not found"),
    ("get", "/working/threads/{thread_id}/notes", None, "Thread not found"),
    ("get", "/episodic/episodes/{episode_id}", None, "Episode not found"),
    ("delete", "/semantic/facts/{fact_id}", None, "Fact not found"),
    ("get", "/jobs/{job_id}", None, "Job not found"),
]

LOOSE_FORMS = {
    "braces": lambda u: "{" + u + "}",
    "urn": lambda u: f"urn:uuid:{u}",
    "hex": lambda u: uuid.UUID(u).hex,
    "moved-hyphens": lambda u: uuid.UUID(u).hex[:4] + "-" + uuid.UUID(u).hex[4:],
    "braces-hex": lambda u: "{" + uuid.UUID(u).hex + "}",
}


@pytest.fixture
def world(api: Api, django_capture_on_commit_callbacks: Any) -> dict[str, str]:
    """A thread that ended once: its job ran and wrote an episode and a fact."""
    thread_id = api.create_thread()["threadId"]
    for line in ("I drive a Honda Civic", "my sister is Mara"):
        assert api.append(thread_id, line).status_code == 201
    with django_capture_on_commit_callbacks(execute=True):
        job_id = api.post(f"{BASE}/threads/{thread_id}/end").json()["jobId"]
    episode_id = api.get(f"{MEMORY}/episodic/episodes", dataset="user_42").json()["episodes"][0]["episodeId"]
    fact_id = api.get(f"{MEMORY}/semantic/facts", dataset="user_42").json()["facts"][0]["factId"]
    return {"thread_id": thread_id, "job_id": job_id, "episode_id": episode_id, "fact_id": fact_id}


def _call(api: Api, method: str, template: str, body: Any, ids: dict[str, str]) -> Any:
    path = MEMORY + template.format(**ids)
    if method == "get":
        return api.get(path)
    if method == "delete":
        return api.delete(path)
    return getattr(api, method)(path, body)


def _state() -> tuple[int, int, int, list[str]]:
    tags = [t for tags in Thread.objects.values_list("tags", flat=True) for t in tags]
    return Message.objects.count(), Fact.objects.count(), Job.objects.count(), tags


@pytest.mark.parametrize(
    ("method", "template", "body", "missing"),
    ROUTES,
    ids=[f"{method.upper()} {template}" for method, template, _, _ in ROUTES],
)
def test_an_id_not_in_the_canonical_form_is_404_and_the_canonical_one_is_found(
    api: Api, world: dict[str, str], method: str, template: str, body: Any, missing: str
) -> None:
    before = _state()
    for form, write in LOOSE_FORMS.items():
        loose = {name: write(value) for name, value in world.items()}
        resp = _call(api, method, template, body, loose)
        assert (form, resp.status_code, resp.json()) == (form, 404, {"error": missing})
    assert _state() == before  # nothing was written through a loose id
    upper = {name: value.upper() for name, value in world.items()}
    assert _call(api, method, template, body, upper).status_code != 404


def test_every_route_with_an_id_in_its_path_is_covered() -> None:
    schema = ninja_api.get_openapi_schema()
    with_ids = {
        (method, path.removeprefix(MEMORY))
        for path, ops in schema["paths"].items()
        if "_id}" in path
        for method in ops
    }
    assert with_ids == {(method, template) for method, template, _, _ in ROUTES}


@pytest.mark.parametrize("form", sorted(LOOSE_FORMS))
def test_a_cursor_carrying_an_id_not_in_the_canonical_form_is_malformed(form: str) -> None:
    row_id = "0b9e3c3e-6a0c-4b5e-9a53-2f1d3c4b5a69"
    assert paging.cursor_uuid(row_id.upper()) == uuid.UUID(row_id)
    with pytest.raises(InvalidInput) as caught:
        paging.cursor_uuid(LOOSE_FORMS[form](row_id))
    assert caught.value.issues == [
        {"path": ["cursor"], "message": "Malformed cursor", "code": "invalid_cursor"}
    ]

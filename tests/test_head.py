"""HEAD on every /v1 GET route answers as GET (memoryapp.middleware.ApiHeadMiddleware).

The routes are read from the OpenAPI document (every django-ninja operation) plus the
document itself, so a new GET route is covered without touching this file; a new path
parameter needs a value in ``world`` below.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.test import RequestFactory
from django.urls import reverse

from memoryapp.api import api as ninja_api
from memoryapp.middleware import ApiHeadMiddleware
from tests.conftest import BASE, Api
from tests.test_path_ids import world  # noqa: F401  (the fixture: a thread, job, episode, fact)


def get_routes() -> list[str]:
    """Every /v1 path template GET answers on."""
    paths = ninja_api.get_openapi_schema()["paths"]
    return [reverse("v1:openapi-json"), *(p for p, ops in paths.items() if "get" in ops)]


def _fill(template: str, values: dict[str, str]) -> str:
    names = [part[1:-1] for part in template.split("/") if part.startswith("{")]
    missing = [n for n in names if n not in values]
    assert not missing, f"give test_head.py a value for {missing} ({template})"
    return template.format(**{n: values[n] for n in names})


@pytest.fixture
def values(api: Api, world: dict[str, str]) -> dict[str, str]:  # noqa: F811
    assert api.client.put(
        "/v1/memory/agents/dm",
        data={"systemPrompt": "You are the dungeon master."},
        content_type="application/json",
        headers={"Authorization": f"Bearer {api.key}"},
    ).status_code in (200, 201)
    return {**world, "agent_name": "dm", "dataset": "user_42"}


def _head(api: Api, path: str) -> Any:
    return api.client.head(path, headers={"Authorization": f"Bearer {api.key}"})


def test_the_route_list_is_read_from_the_api() -> None:
    routes = get_routes()
    assert "/v1/openapi.json" in routes
    assert "/v1/memory/working/threads/{thread_id}/stats" in routes
    assert "/v1/memory/working/threads/{thread_id}/prepare" not in routes  # POST only
    assert len(routes) >= 15


@pytest.mark.parametrize("template", get_routes())
def test_head_answers_as_get_without_the_body(
    api: Api, values: dict[str, str], template: str
) -> None:
    path = _fill(template, values)
    got = api.get(path)
    head = _head(api, path)

    # 200, or the notes route's 409 on a thread without a memory agent: an answer either way.
    assert got.status_code in (200, 409)
    assert head.status_code == got.status_code
    assert dict(head.headers) == dict(got.headers)
    if got.streaming:  # the dataset export: no length to give, as GET gives none
        assert (b"".join(head.streaming_content), head.has_header("Content-Length")) == (b"", False)
    else:
        assert head.content == b""
        assert head["Content-Length"] == str(len(got.content))


@pytest.mark.parametrize("template", [t for t in get_routes() if "{" in t])
def test_head_answers_a_missing_object_as_get_does(api: Api, template: str) -> None:
    missing = str(uuid.UUID(int=1))
    path = _fill(template, {k: missing for k in ("thread_id", "episode_id", "job_id")}
                 | {"agent_name": "nobody", "dataset": "nobody"})
    got = api.get(path)
    head = _head(api, path)

    assert (head.status_code, dict(head.headers)) == (got.status_code, dict(got.headers))
    assert head["Content-Length"] == str(len(got.content))


def test_head_without_a_key_is_401_as_get_is(anon_api: Api) -> None:
    path = f"{BASE}/threads"
    got = anon_api.client.get(path)
    head = anon_api.client.head(path)
    assert (got.status_code, head.status_code) == (401, 401)
    assert head["Content-Length"] == str(len(got.content)) == str(len(b'{"error": "Unauthorized"}'))


def test_head_on_a_post_only_route_is_405_and_a_get_route_offers_head(api: Api) -> None:
    thread_id = api.create_thread()["threadId"]
    prepare = _head(api, f"{BASE}/threads/{thread_id}/prepare")
    assert (prepare.status_code, prepare["Allow"]) == (405, "POST")
    stats = api.client.put(
        f"{BASE}/threads/{thread_id}/stats", headers={"Authorization": f"Bearer {api.key}"}
    )
    assert (stats.status_code, stats["Allow"]) == (405, "GET, HEAD")


def _through(response: HttpResponseBase) -> Any:
    def view(request: HttpRequest) -> HttpResponseBase:
        assert request.method == "GET"
        return response

    request = RequestFactory().head("/v1/x")
    out = ApiHeadMiddleware(view)(request)
    assert request.method == "HEAD"
    return out


def test_the_middleware_drops_the_body_and_keeps_its_length() -> None:
    response = JsonResponse({"a": 1})
    response["Content-Length"] = "8"
    out = _through(response)
    assert (out.content, out["Content-Length"]) == (b"", "8")
    unset = _through(JsonResponse({"ab": 12}))
    assert (unset.content, unset["Content-Length"]) == (b"", "10")
    streamed = _through(StreamingHttpResponse(iter([b"[1,", b"2]"])))
    assert (b"".join(streamed.streaming_content), streamed.has_header("Content-Length")) == (b"", False)

"""A route that takes no body (compact, end, the DELETE routes) holds a body sent anyway
to the rule of the routes that take one (docs/api.md, "Errors"; memoryapp.api.params):
an empty body is fine; any other must be JSON sent as JSON (415, 400 ``invalid_json``)
and a JSON object or null, whose fields are dropped unread. Before, such a body was
never read: ``compact`` with a text/plain body compacted, ``end`` with ``{bad`` queued a
job."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memoryapp.api import api as ninja_api
from memoryapp.models import Job, Message, Thread
from tests.conftest import BASE, Api

UNSUPPORTED = {
    "error": "Unsupported media type",
    "issues": [
        {
            "path": ["Content-Type"],
            "message": "Content-Type text/plain is not supported: send the body as application/json",
            "code": "unsupported_media_type",
        }
    ],
}
INVALID_JSON = {
    "error": "Validation error",
    "issues": [{"path": [], "message": "Request body is not valid JSON", "code": "invalid_json"}],
}
NOT_AN_OBJECT = {
    "error": "Validation error",
    "issues": [{"path": [], "message": "Request body must be a JSON object", "code": "model_type"}],
}


def _send(api: Api, method: str, path: str, body: str, content_type: str, key: bool = True) -> Any:
    headers = {"Authorization": f"Bearer {api.key}"} if key else {}
    return api.client.generic(method, path, body.encode(), content_type=content_type, headers=headers)


def bodyless_operations() -> list[tuple[str, str]]:
    """``(METHOD, path template)`` of every /v1 write (POST, PUT, PATCH, DELETE) that
    takes no body, read from the OpenAPI document."""
    paths = ninja_api.get_openapi_schema()["paths"]
    return [
        (method.upper(), path)
        for path, operations in paths.items()
        for method, operation in operations.items()
        if method in ("post", "put", "patch", "delete") and "requestBody" not in operation
    ]


def _filled(template: str) -> str:
    # A fresh id or name: the body is refused before the route looks anything up.
    values = {"thread_id": str(uuid.uuid4()), "fact_id": str(uuid.uuid4()), "agent_name": "nobody", "dataset": "nobody"}
    return template.format(**values)


def test_the_bodyless_writes_are_read_from_the_api() -> None:
    operations = bodyless_operations()
    assert ("POST", "/v1/memory/working/threads/{thread_id}/compact") in operations
    assert ("POST", "/v1/memory/working/threads/{thread_id}/end") in operations
    assert ("DELETE", "/v1/memory/working/threads/{thread_id}") in operations
    assert ("DELETE", "/v1/memory/datasets/{dataset}") in operations
    assert ("POST", "/v1/memory/working/threads/{thread_id}/prepare") not in operations  # optional body
    assert len(operations) == 6


@pytest.mark.parametrize(("method", "template"), bodyless_operations())
@pytest.mark.parametrize(
    ("body", "content_type", "status", "answer"),
    [
        ("hello", "text/plain", 415, UNSUPPORTED),
        ('{"a": 1}', "text/plain; charset=utf-8", 415, UNSUPPORTED),
        ("{bad", "application/json", 400, INVALID_JSON),
        ("  ", "application/json", 400, INVALID_JSON),
        ("[1]", "application/json", 400, NOT_AN_OBJECT),
        ('"x"', "application/json", 400, NOT_AN_OBJECT),
    ],
    ids=["text", "text-json", "bad-json", "blank", "array", "string"],
)
def test_every_bodyless_write_refuses_a_body_as_a_body_route_does(
    api: Api, method: str, template: str, body: str, content_type: str, status: int, answer: dict[str, Any]
) -> None:
    resp = _send(api, method, _filled(template), body, content_type)
    assert (resp.status_code, resp.json()) == (status, answer)


@pytest.mark.parametrize(("method", "template"), bodyless_operations())
def test_the_key_is_checked_before_the_body(api: Api, method: str, template: str) -> None:
    resp = _send(api, method, _filled(template), "hello", "text/plain", key=False)
    assert (resp.status_code, resp.json()) == (401, {"error": "Unauthorized"})


def _thread_with_messages(api: Api) -> str:
    thread_id = api.create_thread()["threadId"]
    for text in ("I moved to Lisbon.", "I drive a Honda Civic.", "Nice."):
        assert api.append(thread_id, text).status_code == 201
    return thread_id


@pytest.mark.parametrize(
    ("body", "content_type", "status", "answer"),
    [("hello", "text/plain", 415, UNSUPPORTED), ("{bad", "application/json", 400, INVALID_JSON)],
    ids=["text", "bad-json"],
)
def test_compact_and_end_with_a_refused_body_change_nothing(
    api: Api, settings: Any, body: str, content_type: str, status: int, answer: dict[str, Any]
) -> None:
    """The QA report: compact with text/plain compacted (200), end with ``{bad`` queued
    a job (202)."""
    thread_id = _thread_with_messages(api)
    for route in ("compact", "end"):
        resp = _send(api, "POST", f"{BASE}/threads/{thread_id}/{route}", body, content_type)
        assert (resp.status_code, resp.json()) == (status, answer)
    assert Message.objects.filter(thread_id=thread_id, compacted_at__isnull=False).count() == 0
    assert Message.objects.filter(thread_id=thread_id).count() == 3
    assert Job.objects.count() == 0
    assert Thread.objects.get(pk=thread_id).active_summary_id is None


@pytest.mark.parametrize(
    ("body", "content_type"),
    [("", "text/plain"), ("", "application/json"), ("null", "application/json"), ('{"force": true}', "application/json")],
    ids=["empty-text", "empty-json", "null", "object"],
)
def test_compact_and_end_take_an_empty_body_null_or_an_object_whose_fields_are_dropped(
    api: Api, body: str, content_type: str
) -> None:
    thread_id = _thread_with_messages(api)
    compacted = _send(api, "POST", f"{BASE}/threads/{thread_id}/compact", body, content_type)
    assert (compacted.status_code, compacted.json()["compactedCount"]) == (200, 3)
    ended = _send(api, "POST", f"{BASE}/threads/{thread_id}/end", body, content_type)
    assert (ended.status_code, ended.json()["status"], ended.json()["toSequence"]) == (202, "queued", 3)


def test_delete_with_a_refused_body_deletes_nothing(api: Api) -> None:
    thread_id = _thread_with_messages(api)
    resp = _send(api, "DELETE", f"{BASE}/threads/{thread_id}", "hello", "text/plain")
    assert (resp.status_code, resp.json()) == (415, UNSUPPORTED)
    resp = _send(api, "DELETE", "/v1/memory/datasets/user_42", "{bad", "application/json")
    assert (resp.status_code, resp.json()) == (400, INVALID_JSON)
    assert Thread.objects.filter(pk=thread_id).exists()
    assert _send(api, "DELETE", f"{BASE}/threads/{thread_id}", "", "application/json").status_code == 204

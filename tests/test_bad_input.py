"""Bad input found by feeding every /v1 endpoint odd bodies (wrong types, nulls, huge and
non-finite numbers, unicode edge cases, missing bodies): each answer is a 400 whose
issue says plainly what is wrong and where, never pydantic's or Python's internals."""

from __future__ import annotations

from typing import Any

import pytest

from memoryapp.models import Message, Thread
from tests.conftest import BASE, Api

SURROGATE = "\\ud800"  # a JSON escape for an unpaired surrogate, which has no UTF-8 form
UNPAIRED = {"message": "text must not contain unpaired surrogates", "code": "invalid_unicode"}


def _raw_post(api: Api, path: str, raw: str) -> Any:
    return api.post(path, raw=raw)


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("threads", '{"dataset": "d' + SURROGATE + '"}', ["dataset"]),
        ("threads", '{"dataset": "d", "tags": ["t' + SURROGATE + '"]}', ["tags", 0]),
        ("threads", '{"dataset": "d", "agent": "a' + SURROGATE + '"}', ["agent"]),
        ("messages", '{"role": "user", "content": "x", "model": "m' + SURROGATE + '"}', ["model"]),
        (
            "messages",
            '{"role": "user", "content": "x", "metadata": {"stopReason": "s' + SURROGATE + '"}}',
            ["metadata", "stopReason"],
        ),
        ("tools", '{"name": "n' + SURROGATE + '", "arguments": {}}', ["name"]),
        ("tools", '{"name": "open_memory", "arguments": {}, "callId": "c' + SURROGATE + '"}', ["callId"]),
    ],
    ids=["dataset", "tag", "agent", "model", "stopReason", "tool-name", "callId"],
)
def test_an_unpaired_surrogate_in_a_length_checked_string_is_named_plainly(
    api: Api, route: str, body: str, field: list[Any]
) -> None:
    """Pydantic said "Input should be a valid string, unable to parse raw data as a
    unicode string" (string_unicode) for these, and the content rule's words elsewhere."""
    thread_id = api.create_thread()["threadId"]
    path = f"{BASE}/threads" if route == "threads" else f"{BASE}/threads/{thread_id}/{route}"
    resp = _raw_post(api, path, body)
    assert (resp.status_code, resp.json()) == (
        400,
        {"error": "Validation error", "issues": [{"path": field, **UNPAIRED}]},
    )
    assert Thread.objects.count() == 1 and Message.objects.count() == 0


@pytest.mark.parametrize(
    "body",
    [
        '{"dataset": "d", "autoCompactThreshold": 1' + "0" * 5000 + "}",
        '{"dataset": "d", "metadata": {"n": -' + "9" * 4301 + "}}",
    ],
    ids=["threshold", "metadata"],
)
def test_an_integer_too_long_for_python_is_not_called_invalid_json(api: Api, body: str) -> None:
    """The body is valid JSON; Python refuses integers of more than 4300 digits."""
    resp = _raw_post(api, f"{BASE}/threads", body)
    assert (resp.status_code, resp.json()) == (
        400,
        {
            "error": "Validation error",
            "issues": [
                {
                    "path": [],
                    "message": "A number in the request body has more than 4300 digits",
                    "code": "number_too_long",
                }
            ],
        },
    )
    assert Thread.objects.count() == 0


@pytest.mark.parametrize("route", ["threads", "messages", "prepare", "tools"])
def test_a_missing_body_says_a_body_is_required(api: Api, route: str) -> None:
    """Was ``{"path": [], "message": "Field required"}``: no field to name."""
    thread_id = api.create_thread()["threadId"]
    path = f"{BASE}/threads" if route == "threads" else f"{BASE}/threads/{thread_id}/{route}"
    resp = _raw_post(api, path, "")
    if route == "prepare":  # every field has a default: an empty body is an empty object
        assert resp.status_code == 200
        return
    assert (resp.status_code, resp.json()) == (
        400,
        {
            "error": "Validation error",
            "issues": [{"path": [], "message": "Request body is required: a JSON object", "code": "missing"}],
        },
    )


@pytest.mark.parametrize(
    ("created_at", "message", "code"),
    [
        (
            "2026-01-02",
            "must be an ISO 8601 date-time with a timezone, e.g. 2026-01-02T10:00:00Z; "
            "a date alone has no time or timezone",
            "timezone_aware",
        ),
        (
            "2026-01-02T10:00:00",
            "must be an ISO 8601 date-time with a timezone, e.g. 2026-01-02T10:00:00Z",
            "timezone_aware",
        ),
        (
            "yesterday",
            "must be an ISO 8601 date-time with a timezone, e.g. 2026-01-02T10:00:00Z",
            "datetime_from_date_parsing",
        ),
        (
            12,
            "must be an ISO 8601 date-time with a timezone, e.g. 2026-01-02T10:00:00Z",
            "datetime_type",
        ),
    ],
)
def test_a_created_at_without_a_timezone_says_what_form_it_takes(
    api: Api, created_at: Any, message: str, code: str
) -> None:
    """Was "Input should have timezone info" for a date alone."""
    thread_id = api.create_thread()["threadId"]
    resp = api.append(thread_id, "hi", createdAt=created_at)
    assert (resp.status_code, resp.json()) == (
        400,
        {
            "error": "Validation error",
            "issues": [{"path": ["createdAt"], "message": message, "code": code}],
        },
    )
    assert Message.objects.count() == 0


TOO_DEEP = {
    "error": "Validation error",
    "issues": [
        {
            "path": [],
            "message": "Request body is nested too deeply: at most 100 levels of arrays and objects",
            "code": "too_deep",
        }
    ],
}


@pytest.mark.parametrize("route", ["threads", "messages", "prepare", "tools"])
def test_a_body_nested_1000_deep_says_it_is_too_deep(api: Api, route: str) -> None:
    """Was 400 "Request body is not valid JSON" (json.loads hit Python's recursion limit)."""
    thread_id = api.create_thread()["threadId"]
    path = f"{BASE}/threads" if route == "threads" else f"{BASE}/threads/{thread_id}/{route}"
    resp = _raw_post(api, path, "[" * 1000 + "]" * 1000)
    assert (resp.status_code, resp.json()) == (400, TOO_DEEP)


def test_the_depth_limit_is_100_levels_and_brackets_in_strings_do_not_count(
    api: Api,
) -> None:
    thread_id = api.create_thread()["threadId"]
    path = f"{BASE}/threads/{thread_id}/messages"
    # The body is level 1; an unknown field nested to level 100 is read (and dropped).
    deepest = '{"role": "user", "content": "x", "extra": ' + "[" * 99 + "]" * 99 + "}"
    deeper = '{"role": "user", "content": "x", "extra": ' + "[" * 100 + "]" * 100 + "}"
    brackets = '{"role": "user", "content": "' + "[{" * 1000 + '\\"[[[" }'
    assert _raw_post(api, path, deepest).status_code == 201
    assert (_raw_post(api, path, deeper).status_code, _raw_post(api, path, deeper).json()) == (
        400,
        TOO_DEEP,
    )
    stored = _raw_post(api, path, brackets)
    assert stored.status_code == 201
    assert Message.objects.get(pk=stored.json()["messageId"]).content == "[{" * 1000 + '"[[['


def _post_as(api: Api, path: str, body: str, content_type: str | None) -> Any:
    headers = {"Authorization": f"Bearer {api.key}"}
    # The test client always sends a Content-Type; "" stands for none (an empty header).
    return api.client.generic("POST", path, body.encode(), content_type=content_type or "", headers=headers)


@pytest.mark.parametrize(
    ("content_type", "named"),
    [
        ("text/plain", "text/plain"),
        ("text/plain; charset=utf-8", "text/plain"),
        ("application/x-www-form-urlencoded", "application/x-www-form-urlencoded"),
        ("Text/JSON", "text/json"),
        ("application/" + "x" * 200, "application/" + "x" * 88 + "..."),
    ],
)
def test_a_body_sent_as_another_media_type_is_415_naming_it(api: Api, content_type: str, named: str) -> None:
    """It was read as JSON whatever its Content-Type said (a 201 for text/plain)."""
    thread_id = api.create_thread()["threadId"]
    resp = _post_as(api, f"{BASE}/threads/{thread_id}/messages", '{"role": "user", "content": "hi"}', content_type)
    assert (resp.status_code, resp.json()) == (
        415,
        {
            "error": "Unsupported media type",
            "issues": [
                {
                    "path": ["Content-Type"],
                    "message": f"Content-Type {named} is not supported: send the body as application/json",
                    "code": "unsupported_media_type",
                }
            ],
        },
    )
    assert Message.objects.count() == 0


@pytest.mark.parametrize("route", ["threads", "prepare", "recall", "tools"])
def test_every_json_route_refuses_a_body_of_another_media_type(api: Api, route: str) -> None:
    thread_id = api.create_thread()["threadId"]
    path = {
        "threads": f"{BASE}/threads",
        "prepare": f"{BASE}/threads/{thread_id}/prepare",
        "recall": "/v1/memory/recall",
        "tools": f"{BASE}/threads/{thread_id}/tools",
    }[route]
    resp = _post_as(api, path, "{}", "text/plain")
    assert (resp.status_code, resp.json()["error"]) == (415, "Unsupported media type")
    assert Thread.objects.count() == 1


@pytest.mark.parametrize("content_type", [None, "application/json", "application/json; charset=utf-8", "Application/JSON"])
def test_a_json_body_without_a_content_type_or_with_parameters_is_read(api: Api, content_type: str | None) -> None:
    thread_id = api.create_thread()["threadId"]
    resp = _post_as(api, f"{BASE}/threads/{thread_id}/messages", '{"role": "user", "content": "hi"}', content_type)
    assert resp.status_code == 201, resp.content
    # No body at all needs no Content-Type, whatever one is sent.
    assert _post_as(api, f"{BASE}/threads/{thread_id}/prepare", "", "text/plain").status_code == 200

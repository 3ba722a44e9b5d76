"""Lenient parsing refused (QA report L8; docs/api.md "Errors", docs/decisions.md "The
query string is read strictly").

An ``Idempotency-Key`` sent twice reached the app joined by a comma and was stored as one
key ("a,b") that neither retry matched; a comma in the key is now 400 naming it. Integer
query parameters took pydantic's lax forms (``+5``, ``05``, ``5.0``, `` 5``, ``5_0``) and
``includeInvalidated`` ``1``, ``yes``, ``on``: an integer is plain decimal digits now,
a boolean ``true`` or ``false`` (any case).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoryapp.models import Message
from tests.conftest import BASE, Api
from tests.test_fastpath import call

REPEATED_KEY = {
    "error": "Validation error",
    "issues": [
        {
            "path": ["Idempotency-Key"],
            "message": (
                "Idempotency-Key must be sent once, as one key without commas "
                "(a header sent twice arrives joined by a comma)"
            ),
            "code": "repeated_header",
        }
    ],
}
INT_EXPECTED = "must be a whole number in decimal digits, without sign, leading zeros, spaces or fraction (e.g. 20)"


@pytest.mark.parametrize("key", ["a, b", "a,b", "k-1,k-1", ","])
def test_an_idempotency_key_with_a_comma_is_refused(api: Api, key: str) -> None:
    thread_id = api.create_thread()["threadId"]
    resp = api.post(f"{BASE}/threads/{thread_id}/messages", {"role": "user", "content": "hi"}, headers={"Idempotency-Key": key})
    assert (resp.status_code, resp.json()) == (400, REPEATED_KEY)
    assert Message.objects.count() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("fast_path", [True, False], ids=["fast-path", "django"])
def test_an_idempotency_key_sent_twice_is_refused_by_the_server(api: Api, settings: Any, fast_path: bool) -> None:
    """Two header lines through the real ASGI application (memoryapp.wsgipool joins
    them), with the fast path on and off."""
    settings.HTTP_FAST_PATH = fast_path
    thread_id = api.create_thread()["threadId"]
    headers = [
        (b"host", b"testserver"),
        (b"authorization", f"Bearer {api.key}".encode()),
        (b"content-type", b"application/json"),
        (b"idempotency-key", b"retry-1"),
        (b"idempotency-key", b"retry-2"),
    ]
    body = json.dumps({"role": "user", "content": "hi"}).encode()
    status, _, content = call("POST", f"{BASE}/threads/{thread_id}/messages", body, headers)
    assert (status, json.loads(content)) == (400, REPEATED_KEY)
    assert Message.objects.count() == 0
    once = [h for h in headers if h != (b"idempotency-key", b"retry-2")]
    assert call("POST", f"{BASE}/threads/{thread_id}/messages", body, once)[0] == 201


def _get(api: Api, path: str) -> Any:
    return api.client.get(path, headers={"Authorization": f"Bearer {api.key}"})


@pytest.mark.parametrize("value", ["%2B5", "05", "5.0", "%205", "5%20", "5_0", "-0", "1e1", ""])
@pytest.mark.parametrize(
    ("route", "name"),
    [
        ("/v1/memory/working/threads?limit=", "limit"),
        ("/v1/memory/working/threads/{thread}/messages?limit=", "limit"),
        ("/v1/memory/working/threads/{thread}/messages?before=", "before"),
        ("/v1/memory/working/threads/{thread}/messages?after=", "after"),
        ("/v1/memory/episodic/episodes?limit=", "limit"),
        ("/v1/memory/semantic/facts?limit=", "limit"),
        ("/v1/memory/semantic/entities?limit=", "limit"),
    ],
)
def test_an_integer_query_parameter_is_plain_decimal_digits(api: Api, route: str, name: str, value: str) -> None:
    thread_id = api.create_thread()["threadId"]
    resp = _get(api, route.format(thread=thread_id) + value)
    assert (resp.status_code, resp.json()) == (
        400,
        {"error": "Validation error", "issues": [{"path": [name], "message": INT_EXPECTED, "code": "int_parsing"}]},
    )


def test_plain_digits_are_read(api: Api) -> None:
    thread_id = api.create_thread()["threadId"]
    for text in ("one", "two", "three"):
        api.append(thread_id, text)
    page = _get(api, f"{BASE}/threads/{thread_id}/messages?limit=2&after=0&order=asc").json()
    assert [m["content"] for m in page["messages"]] == ["one", "two"]
    assert _get(api, f"{BASE}/threads/{thread_id}/messages?before=3&after=1").json()["messages"][0]["content"] == "two"
    assert _get(api, f"{BASE}/threads?limit=100").status_code == 200


@pytest.mark.parametrize("value", ["1", "0", "yes", "no", "on", "off", "t", "y", "", "true%20"])
def test_include_invalidated_is_true_or_false(api: Api, value: str) -> None:
    resp = _get(api, f"/v1/memory/semantic/facts?includeInvalidated={value}")
    assert (resp.status_code, resp.json()) == (
        400,
        {
            "error": "Validation error",
            "issues": [{"path": ["includeInvalidated"], "message": "must be true or false", "code": "bool_parsing"}],
        },
    )


@pytest.mark.parametrize("value", ["true", "True", "TRUE", "false", "False"])
def test_include_invalidated_takes_true_and_false_in_any_case(api: Api, value: str) -> None:
    """Python's requests sends True as "True"."""
    assert _get(api, f"/v1/memory/semantic/facts?includeInvalidated={value}").status_code == 200

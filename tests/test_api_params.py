"""memoryapp.api.params: a /v1 route reads only the query parameters it declares, each
once; anything else in the query string is 400 naming it, never silently ignored."""

from __future__ import annotations

from typing import Any

import pytest

from memoryapp.models import Message, Thread
from tests.conftest import BASE, Api


def _issue(path: str, message: str, code: str) -> dict[str, Any]:
    return {"error": "Validation error", "issues": [{"path": [path], "message": message, "code": code}]}


def _get(api: Api, path: str, query: str) -> Any:
    return api.client.get(f"{path}?{query}", headers=api._headers(None))


IN_THE_BODY = "messageLimit is not a query parameter of this route: send it in the JSON body"


@pytest.mark.parametrize("body", [None, {}, {"messageLimit": 30}], ids=["no body", "{}", "messageLimit 30"])
def test_prepare_refuses_message_limit_in_the_query(api: Api, body: Any) -> None:
    """?messageLimit=5 was ignored: the window held the default 20 (or the body's)."""
    thread_id = api.create_thread()["threadId"]
    resp = api.post(f"{BASE}/threads/{thread_id}/prepare?messageLimit=5", body)
    assert (resp.status_code, resp.json()) == (400, _issue("messageLimit", IN_THE_BODY, "unknown_parameter"))


def test_an_append_with_a_query_parameter_writes_nothing(api: Api) -> None:
    thread_id = api.create_thread()["threadId"]
    resp = api.post(f"{BASE}/threads/{thread_id}/messages?role=assistant", {"role": "user", "content": "hi"})
    message = "role is not a query parameter of this route: send it in the JSON body"
    assert (resp.status_code, resp.json()) == (400, _issue("role", message, "unknown_parameter"))
    assert Message.objects.count() == 0


def test_a_route_without_query_parameters_says_it_takes_none(api: Api) -> None:
    thread_id = api.create_thread()["threadId"]
    resp = _get(api, f"{BASE}/threads/{thread_id}/stats", "verbose")
    message = "verbose is not a query parameter: this route takes none"
    assert (resp.status_code, resp.json()) == (400, _issue("verbose", message, "unknown_parameter"))


def test_a_list_route_names_the_parameters_it_takes(api: Api) -> None:
    """Entities belong to a dataset, not a thread: no thread filter to honour."""
    thread_id = api.create_thread()["threadId"]
    resp = api.get("/v1/memory/semantic/entities", threadId=thread_id)
    message = "threadId is not a query parameter of this route (it takes cursor, dataset, limit)"
    assert (resp.status_code, resp.json()) == (400, _issue("threadId", message, "unknown_parameter"))


@pytest.mark.parametrize(
    ("route", "query", "name"),
    [
        ("messages", "limit=5&limit=6", "limit"),
        ("messages", "order=asc&order=desc&limit=2", "order"),
        ("threads", "dataset=a&dataset=b", "dataset"),
        ("facts", "includeInvalidated=true&includeInvalidated=false", "includeInvalidated"),
    ],
)
def test_a_repeated_parameter_is_refused_not_read_once(api: Api, route: str, query: str, name: str) -> None:
    """?limit=5&limit=6 was read as limit=6."""
    thread_id = api.create_thread()["threadId"]
    path = {
        "messages": f"{BASE}/threads/{thread_id}/messages",
        "threads": f"{BASE}/threads",
        "facts": "/v1/memory/semantic/facts",
    }[route]
    resp = _get(api, path, query)
    message = f"{name} is given 2 times; give it once"
    assert (resp.status_code, resp.json()) == (400, _issue(name, message, "repeated_parameter"))


def test_every_problem_of_the_query_is_named_in_its_order(api: Api) -> None:
    thread_id = api.create_thread()["threadId"]
    resp = _get(api, f"{BASE}/threads/{thread_id}/messages", "sort=desc&limit=1&limit=2&page=3")
    assert resp.status_code == 400
    assert [(i["path"], i["code"]) for i in resp.json()["issues"]] == [
        (["sort"], "unknown_parameter"),
        (["limit"], "repeated_parameter"),
        (["page"], "unknown_parameter"),
    ]


def test_declared_parameters_and_no_query_still_work(api: Api) -> None:
    thread_id = api.create_thread()["threadId"]
    api.append(thread_id, "hi")
    assert _get(api, f"{BASE}/threads/{thread_id}/messages", "limit=5&order=desc&after=0").status_code == 200
    assert api.post(f"{BASE}/threads/{thread_id}/prepare", {"messageLimit": 5}).status_code == 200
    # An empty query string ("...?") has no parameter in it.
    assert _get(api, f"{BASE}/threads/{thread_id}/stats", "").status_code == 200


def test_the_key_is_checked_before_the_query(anon_api: Api, api: Api) -> None:
    thread_id = api.create_thread()["threadId"]
    resp = anon_api.post(f"{BASE}/threads/{thread_id}/prepare?messageLimit=5")
    assert (resp.status_code, resp.json()) == (401, {"error": "Unauthorized"})


def test_more_query_parameters_than_django_reads_is_400_not_500(api: Api) -> None:
    thread_id = api.create_thread()["threadId"]
    query = "&".join(f"p{i}=1" for i in range(1001))
    resp = _get(api, f"{BASE}/threads/{thread_id}/messages", query)
    assert (resp.status_code, resp.json()) == (
        400,
        {
            "error": "Validation error",
            "issues": [{"path": [], "message": "More than 1000 query parameters", "code": "too_many_parameters"}],
        },
    )
    assert Thread.objects.count() == 1


@pytest.mark.parametrize(
    ("query", "name"),
    [("dataset=%FF", "dataset"), ("dataset=%ED%A0%80", "dataset"), ("tag=ok&dataset=caf%C3", "dataset")],
    ids=["a lone byte", "an encoded surrogate", "a cut sequence"],
)
def test_a_parameter_that_is_not_utf8_is_refused(api: Api, query: str, name: str) -> None:
    """?dataset=%FF was read as the dataset "\\ufffd" (200, an empty list); the same text
    in a JSON body is a 400 invalid_unicode, and so is it here."""
    resp = _get(api, f"{BASE}/threads", query)
    assert (resp.status_code, resp.json()) == (400, _issue(name, f"{name} is not valid UTF-8", "invalid_unicode"))


def test_utf8_parameters_still_read(api: Api) -> None:
    api.create_thread(dataset="café")
    resp = _get(api, f"{BASE}/threads", "dataset=caf%C3%A9")
    assert resp.status_code == 200 and [t["dataset"] for t in resp.json()["threads"]] == ["café"]

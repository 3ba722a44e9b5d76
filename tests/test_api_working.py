"""HTTP-level tests of /v1/memory/working: threads, messages, list, stats, auth.

Every example of spec 002 for these endpoints is checked field by field; bad input must be
a 400 (413 for size) with the error body and must never use up a sequence number
(DESIGN.md sections 5 and 6).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client

from memoryapp.api.auth import key_cache
from memoryapp.models import ApiKey, Message, Project, Thread
from tests.conftest import BASE, Api, Clock, at

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ISO_MS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")




def messages_url(thread_id: str) -> str:
    return f"{BASE}/threads/{thread_id}/messages"


def numbers(resp: Any) -> list[int]:
    assert resp.status_code == 200, resp.content
    return [m["sequenceNumber"] for m in resp.json()["messages"]]


def append_ok(api: Api, thread_id: str, content: str = "hello", **extra: Any) -> dict[str, Any]:
    resp = api.append(thread_id, content, **extra)
    assert resp.status_code == 201, resp.content
    body: dict[str, Any] = resp.json()
    return body


def issue_paths(resp: Any) -> list[list[str | int]]:
    return [issue["path"] for issue in resp.json()["issues"]]


@pytest.fixture
def thread_id(api: Api) -> str:
    tid: str = api.create_thread()["threadId"]
    return tid


# --- Threads ------------------------------------------------------------------------------


def test_it_creates_a_thread_with_every_field(api: Api) -> None:
    resp = api.post(
        f"{BASE}/threads",
        {
            "dataset": "user_42",
            "tags": ["cars", " support ", "cars"],
            "metadata": {"channel": "web", "nested": {"n": [1, 2.5, None, True]}},
            "autoCompactThreshold": 30,
            "threadId": "client-chosen-id-is-ignored",
        },
    )

    assert resp.status_code == 201
    body = resp.json()
    assert UUID_RE.match(body["threadId"])
    assert ISO_MS_RE.match(body["createdAt"])
    assert body == {
        "threadId": body["threadId"],
        "dataset": "user_42",
        "tags": ["cars", "support"],
        "metadata": {"channel": "web", "nested": {"n": [1, 2.5, None, True]}},
        "autoCompactThreshold": 30,
        "agent": None,
        "createdAt": body["createdAt"],
        "lastActivityAt": body["createdAt"],
        "totalMessages": 0,
        "compaction": {
            "count": 0,
            "activeSummaryId": None,
            "lastCompactedAt": None,
            "lastError": None,
            "lastErrorAt": None,
        },
    }
    assert Thread.objects.get(pk=body["threadId"]).project.slug == "acme"


def test_it_creates_a_thread_with_defaults(api: Api) -> None:
    body = api.create_thread(dataset="user_7")

    assert (body["dataset"], body["tags"], body["metadata"], body["autoCompactThreshold"]) == (
        "user_7",
        [],
        {},
        None,
    )


@pytest.mark.parametrize(
    ("body", "path", "code"),
    [
        ({}, ["dataset"], "missing"),
        ({"dataset": ""}, ["dataset"], "string_too_short"),
        ({"dataset": "   "}, ["dataset"], "blank"),
        ({"dataset": "d" * 201}, ["dataset"], "string_too_long"),
        ({"dataset": 42}, ["dataset"], "string_type"),
        ({"dataset": "a\x00b"}, ["dataset"], "nul_character"),
        ({"dataset": "u", "tags": "cars"}, ["tags"], "list_type"),
        ({"dataset": "u", "tags": [""]}, ["tags", 0], "string_too_short"),
        ({"dataset": "u", "tags": ["ok", "a\x00"]}, ["tags", 1], "nul_character"),
        ({"dataset": "u", "metadata": "web"}, ["metadata"], "dict_type"),
        ({"dataset": "u", "metadata": {"k": "v\x00"}}, ["metadata"], "nul_character"),
        ({"dataset": "u", "metadata": {"k\x00": "v"}}, ["metadata"], "nul_character"),
        (
            {"dataset": "u", "autoCompactThreshold": 1},
            ["autoCompactThreshold"],
            "greater_than_equal",
        ),
        ({"dataset": "u", "autoCompactThreshold": "30"}, ["autoCompactThreshold"], "int_type"),
        ({"dataset": "u", "autoCompactThreshold": 30.5}, ["autoCompactThreshold"], "int_type"),
    ],
)
def test_it_refuses_a_bad_thread_body(
    api: Api, body: dict[str, Any], path: list[Any], code: str
) -> None:
    resp = api.post(f"{BASE}/threads", body)

    assert resp.status_code == 400
    assert resp.json()["error"] == "Validation error"
    assert {"path": path, "code": code} in [
        {"path": i["path"], "code": i["code"]} for i in resp.json()["issues"]
    ]
    assert Thread.objects.count() == 0


@pytest.mark.parametrize(
    "raw",
    [
        '{"dataset": "u", "metadata": {"x": NaN}}',
        '{"dataset": "u", "metadata": {"x": Infinity}}',
        '{"dataset": "u", "metadata": {"x": "\\ud800"}}',
        '{"dataset": "u", "metadata": ' + '{"a": ' * 40 + "1" + "}" * 40 + "}",
        '{"dataset": "u", "metadata": ' + "[" * 5000 + "]" * 5000 + "}",
    ],
    ids=["nan", "infinity", "lone-surrogate", "deep-object", "very-deep-list"],
)
def test_it_refuses_thread_metadata_no_database_can_store(api: Api, raw: str) -> None:
    resp = api.post(f"{BASE}/threads", raw=raw)

    assert resp.status_code == 400
    assert resp.json()["error"] == "Validation error"
    assert Thread.objects.count() == 0


def test_it_gets_a_thread_with_its_message_count(api: Api, thread_id: str) -> None:
    append_ok(api, thread_id, "one")
    last = append_ok(api, thread_id, "two")

    body = api.get(f"{BASE}/threads/{thread_id}").json()

    assert body["threadId"] == thread_id
    assert body["totalMessages"] == 2
    assert body["lastActivityAt"] == last["createdAt"]


def test_it_lists_threads_newest_first_in_cursor_pages(api: Api, clock: Clock) -> None:
    ids = []
    for minute in range(5):
        clock.set(f"2026-08-16T09:0{minute}:00.000Z")
        ids.append(api.create_thread()["threadId"])
        # Thread.created's default is bound at import time; give each row its own time.
        Thread.objects.filter(pk=ids[-1]).update(created=clock.now)

    first = api.get(f"{BASE}/threads", limit=2).json()
    second = api.get(f"{BASE}/threads", limit=2, cursor=first["nextCursor"]).json()
    third = api.get(f"{BASE}/threads", limit=2, cursor=second["nextCursor"]).json()

    assert [t["threadId"] for t in first["threads"]] == [ids[4], ids[3]]
    assert [t["threadId"] for t in second["threads"]] == [ids[2], ids[1]]
    assert [t["threadId"] for t in third["threads"]] == [ids[0]]
    assert third["nextCursor"] is None


def test_it_lists_threads_of_the_same_instant_without_skipping_any(api: Api) -> None:
    ids = {api.create_thread()["threadId"] for _ in range(5)}
    Thread.objects.update(created=at("2026-08-16T09:00:00.000Z"))

    seen: list[str] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = api.get(f"{BASE}/threads", **params).json()
        seen += [t["threadId"] for t in page["threads"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break

    assert sorted(seen) == sorted(ids)
    assert len(seen) == 5


def test_it_filters_threads_by_dataset_and_tag(api: Api) -> None:
    a = api.create_thread(dataset="user_1", tags=["cars"])["threadId"]
    b = api.create_thread(dataset="user_1", tags=["boats"])["threadId"]
    c = api.create_thread(dataset="user_2", tags=["cars"])["threadId"]

    def listed(**params: Any) -> set[str]:
        resp = api.get(f"{BASE}/threads", **params)
        assert resp.status_code == 200
        return {t["threadId"] for t in resp.json()["threads"]}

    assert listed() == {a, b, c}
    assert listed(dataset="user_1") == {a, b}
    assert listed(tag="cars") == {a, c}
    assert listed(dataset="user_1", tag="cars") == {a}
    assert listed(dataset="nobody") == set()


def test_the_tag_filter_is_trimmed_as_tags_are_stored(api: Api) -> None:
    stored = api.create_thread(dataset="user_1", tags=[" t1 "])
    assert stored["tags"] == ["t1"]
    resp = api.get(f"{BASE}/threads", tag=" t1 ")  # ?tag=%20t1%20
    assert resp.status_code == 200
    assert [t["threadId"] for t in resp.json()["threads"]] == [stored["threadId"]]
    assert api.get(f"{BASE}/threads", tag="\tt1\n").json()["threads"][0]["threadId"] == stored["threadId"]
    assert api.get(f"{BASE}/threads", tag="t").json()["threads"] == []


@pytest.mark.parametrize("name", ["dataset", "tag"])
@pytest.mark.parametrize("value", ["", "  ", "\u200b"])
def test_it_refuses_a_blank_thread_filter_naming_it(api: Api, name: str, value: str) -> None:
    api.create_thread(dataset="user_1", tags=["cars"])

    resp = api.get(f"{BASE}/threads", None, **{name: value})

    assert resp.status_code == 400
    issue = {"path": [name], "message": "must not be blank", "code": "blank"}
    if value == "":
        issue = {"path": [name], "message": "String should have at least 1 character", "code": "string_too_short"}
    assert resp.json() == {"error": "Validation error", "issues": [issue]}


@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({"cursor": "not-a-cursor"}, ["cursor"]),
        ({"limit": 0}, ["limit"]),
        ({"limit": 101}, ["limit"]),
        ({"dataset": "a\x00"}, ["dataset"]),
        ({"tag": "a\x00"}, ["tag"]),
    ],
)
def test_it_refuses_bad_thread_list_queries(
    api: Api, params: dict[str, Any], path: list[str]
) -> None:
    resp = api.get(f"{BASE}/threads", **params)

    assert resp.status_code == 400
    assert resp.json()["error"] == "Validation error"
    assert issue_paths(resp) == [path]


def test_it_patches_only_the_fields_given(api: Api) -> None:
    tid = api.create_thread(
        dataset="user_1", tags=["a"], metadata={"k": 1}, autoCompactThreshold=30
    )["threadId"]

    resp = api.patch(f"{BASE}/threads/{tid}", {"tags": ["b", "c"], "unknown": 1})

    assert resp.status_code == 200
    body = resp.json()
    assert (body["dataset"], body["tags"], body["metadata"], body["autoCompactThreshold"]) == (
        "user_1",
        ["b", "c"],
        {"k": 1},
        30,
    )
    assert api.get(f"{BASE}/threads", tag="a").json()["threads"] == []
    assert [t["threadId"] for t in api.get(f"{BASE}/threads", tag="c").json()["threads"]] == [tid]


def test_it_disables_auto_compaction_with_a_null_threshold(api: Api) -> None:
    tid = api.create_thread(autoCompactThreshold=30)["threadId"]

    body = api.patch(f"{BASE}/threads/{tid}", {"autoCompactThreshold": None}).json()

    assert body["autoCompactThreshold"] is None
    assert Thread.objects.get(pk=tid).auto_compact_threshold is None


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"dataset": None}, ["dataset"]),
        ({"tags": None}, ["tags"]),
        ({"metadata": None}, ["metadata"]),
        ({"dataset": " "}, ["dataset"]),
        ({"autoCompactThreshold": 0}, ["autoCompactThreshold"]),
    ],
)
def test_it_refuses_a_bad_patch(api: Api, body: dict[str, Any], path: list[str]) -> None:
    tid = api.create_thread(dataset="user_1")["threadId"]

    resp = api.patch(f"{BASE}/threads/{tid}", body)

    assert resp.status_code == 400
    assert resp.json()["error"] == "Validation error"
    assert path in issue_paths(resp)
    assert Thread.objects.get(pk=tid).dataset == "user_1"


@pytest.mark.parametrize("agent", ["dm", None, ""])
def test_it_refuses_to_change_a_thread_agent_naming_agent(api: Api, agent: str | None) -> None:
    tid = api.create_thread(dataset="user_1")["threadId"]

    resp = api.patch(f"{BASE}/threads/{tid}", {"agent": agent, "dataset": "user_2"})

    assert resp.status_code == 400
    assert resp.json() == {
        "error": "Validation error",
        "issues": [{
            "path": ["agent"], "code": "immutable",
            "message": "agent cannot be changed; create a new thread with that agent",
        }],
    }
    thread = Thread.objects.get(pk=tid)
    assert (thread.dataset, thread.agent_id) == ("user_1", None)
    # Other unknown fields are still dropped.
    assert api.patch(f"{BASE}/threads/{tid}", {"tokenCount": 3}).status_code == 200


def test_it_deletes_a_thread_and_its_messages(api: Api, thread_id: str) -> None:
    append_ok(api, thread_id)

    resp = api.delete(f"{BASE}/threads/{thread_id}")

    assert resp.status_code == 204
    assert resp.content == b""
    assert api.get(f"{BASE}/threads/{thread_id}").status_code == 404
    assert api.delete(f"{BASE}/threads/{thread_id}").status_code == 404
    assert Message.objects.filter(thread_id=thread_id).count() == 0


def test_it_deletes_a_compacted_thread(api: Api, thread_id: str) -> None:
    for i in range(3):
        append_ok(api, thread_id, f"message {i}")
    assert api.post(f"{BASE}/threads/{thread_id}/compact").status_code == 200

    assert api.delete(f"{BASE}/threads/{thread_id}").status_code == 204
    assert Message.objects.filter(thread_id=thread_id).count() == 0


# Fixed values: a random id would name the test differently in each pytest-xdist worker,
# and workers that collect different tests refuse to run.
@pytest.mark.parametrize("bad_id", ["5b0e4c1a-9d3f-4e2b-8a6c-7f1d2e3c4b5a", "not-a-uuid", "1", "%00"])
def test_it_answers_404_for_a_thread_that_does_not_exist(api: Api, bad_id: str) -> None:
    resp = api.get(f"{BASE}/threads/{bad_id}/messages")

    assert resp.status_code == 404
    assert resp.json() == {"error": "Thread not found"}


@pytest.mark.parametrize("form", ["{%s}", "urn:uuid:%s", "%s-hex"])
def test_it_answers_404_for_a_thread_id_not_in_the_canonical_form(api: Api, thread_id: str, form: str) -> None:
    written = form % thread_id if form != "%s-hex" else uuid.UUID(thread_id).hex

    for resp in (
        api.get(f"{BASE}/threads/{written}"),
        api.patch(f"{BASE}/threads/{written}", {"tags": ["x"]}),
        api.post(f"{BASE}/threads/{written}/tools", {"name": "open_memory", "arguments": {"name": "x"}}),
    ):
        assert (resp.status_code, resp.json()) == (404, {"error": "Thread not found"})
    assert api.get(f"{BASE}/threads/{thread_id.upper()}").status_code == 200


def test_it_answers_405_for_a_wrong_method(api: Api, thread_id: str) -> None:
    headers = {"Authorization": f"Bearer {api.key}"}

    assert api.client.put(f"{BASE}/threads/{thread_id}", headers=headers).status_code == 405
    assert api.client.delete(messages_url(thread_id), headers=headers).status_code == 405
    assert api.client.post(f"{BASE}/threads/{thread_id}/stats", headers=headers).status_code == 405


# --- POST messages ------------------------------------------------------------------------


SPEC_APPEND_BODY = {
    "role": "assistant",
    "content": "The Toyota Corolla Hybrid is a great fit.",
    "tokens": {"input": 512, "output": 128, "total": 640},
    "model": "gpt-4o",
    "latencyMs": 840,
    "metadata": {"stopReason": "stop", "agentName": "support-bot"},
}


def test_it_appends_the_spec_example_field_by_field(api: Api, thread_id: str, clock: Clock) -> None:
    for i in range(6):
        append_ok(api, thread_id, f"earlier {i}")
    clock.set("2026-08-16T09:14:02.114Z")

    resp = api.post(messages_url(thread_id), SPEC_APPEND_BODY)

    assert resp.status_code == 201
    body = resp.json()
    assert UUID_RE.match(body["messageId"])
    assert body == {
        "messageId": body["messageId"],
        "threadId": thread_id,
        "sequenceNumber": 7,
        "role": "assistant",
        "createdAt": "2026-08-16T09:14:02.114Z",
        "compacted": False,
    }
    listed = api.get(messages_url(thread_id), order="desc", limit=1).json()["messages"]
    assert listed == [
        {
            "messageId": body["messageId"],
            "threadId": thread_id,
            "role": "assistant",
            "content": "The Toyota Corolla Hybrid is a great fit.",
            "sequenceNumber": 7,
            "tokens": {"input": 512, "output": 128, "total": 640},
            "model": "gpt-4o",
            "latencyMs": 840,
            "metadata": {"stopReason": "stop", "agentName": "support-bot"},
            "compactedAt": None,
            "createdAt": "2026-08-16T09:14:02.114Z",
        }
    ]


def test_it_lists_the_spec_example_row_field_by_field(
    api: Api, thread_id: str, clock: Clock
) -> None:
    clock.set("2026-08-16T09:02:11.708Z")
    first = append_ok(
        api,
        thread_id,
        "I'm looking for a family car.",
        tokens={"input": 11, "output": 22, "total": 33},
    )
    for i in range(41):
        append_ok(api, thread_id, f"later {i}")

    resp = api.get(messages_url(thread_id), limit=1)

    assert resp.status_code == 200
    assert resp.json() == {
        "messages": [
            {
                "messageId": first["messageId"],
                "threadId": thread_id,
                "role": "user",
                "content": "I'm looking for a family car.",
                "sequenceNumber": 1,
                "tokens": {"input": 11, "output": 22, "total": 33},
                "model": None,
                "latencyMs": None,
                "metadata": None,
                "compactedAt": None,
                "createdAt": "2026-08-16T09:02:11.708Z",
            }
        ],
        "total": 42,
        "hasMore": True,
    }


def test_it_defaults_total_tokens_to_input_plus_output(api: Api, thread_id: str) -> None:
    append_ok(api, thread_id, tokens={"input": 5, "output": 7})
    append_ok(api, thread_id, tokens={"output": 3})

    rows = api.get(messages_url(thread_id)).json()["messages"]

    assert [r["tokens"] for r in rows] == [
        {"input": 5, "output": 7, "total": 12},
        {"input": 0, "output": 3, "total": 3},
    ]


def test_it_ignores_tokenCount_silently(api: Api, thread_id: str) -> None:
    resp = api.post(messages_url(thread_id), {"role": "user", "content": "hi", "tokenCount": 12})

    assert resp.status_code == 201
    assert "tokenCount" not in resp.json()
    row = api.get(messages_url(thread_id)).json()["messages"][0]
    assert row["tokens"] is None
    assert "tokenCount" not in row
    assert api.get(f"{BASE}/threads/{thread_id}/stats").json()["tokenUsage"] is None


def test_it_ignores_a_client_sent_sequence_number_and_ids(api: Api, thread_id: str) -> None:
    other = str(uuid.uuid4())
    resp = api.post(
        messages_url(thread_id),
        {
            "role": "user",
            "content": "hi",
            "sequenceNumber": 99,
            "messageId": other,
            "threadId": other,
            "compactedAt": "2001-01-01T00:00:00.000Z",
        },
    )

    assert resp.status_code == 201
    body = resp.json()
    assert (body["sequenceNumber"], body["threadId"]) == (1, thread_id)
    assert body["messageId"] != other
    assert append_ok(api, thread_id)["sequenceNumber"] == 2
    assert api.get(messages_url(thread_id)).json()["messages"][0]["compactedAt"] is None


def test_it_keeps_an_imported_messages_real_time(
    api: Api, thread_id: str, clock: Clock
) -> None:
    first = append_ok(api, thread_id, "hi", createdAt="2023-05-08T13:56:00Z")
    second = append_ok(api, thread_id, "later", createdAt="2023-05-08T15:56:00.25+02:00")
    same = append_ok(api, thread_id, "same minute", createdAt="2023-05-08T13:56:00.250Z")

    assert [first["createdAt"], second["createdAt"], same["createdAt"]] == [
        "2023-05-08T13:56:00.000Z",
        "2023-05-08T13:56:00.250Z",
        "2023-05-08T13:56:00.250Z",
    ]
    stored = api.get(messages_url(thread_id)).json()["messages"]
    assert [m["createdAt"] for m in stored] == [
        "2023-05-08T13:56:00.000Z",
        "2023-05-08T13:56:00.250Z",
        "2023-05-08T13:56:00.250Z",
    ]
    # The thread's activity is the append itself, not the imported time.
    assert api.get(f"{BASE}/threads/{thread_id}").json()["lastActivityAt"] == (
        "2026-08-16T09:00:00.000Z"
    )
    # Within the clock skew the server allows, stored as the server's clock.
    assert append_ok(api, thread_id, "now", createdAt="2026-08-16T09:04:59Z")["createdAt"] == (
        "2026-08-16T09:00:00.000Z"
    )


@pytest.mark.parametrize(
    ("created_at", "code"),
    [
        ("2023-05-08T13:56:00", "timezone_aware"),
        ("8 May 2023", "datetime_from_date_parsing"),
        (1683554160, "datetime_type"),
        ("2026-08-16T09:05:01Z", "time_in_future"),
        ("1969-12-31T23:59:59Z", "time_too_early"),
    ],
)
def test_it_refuses_a_bad_created_at(
    api: Api, thread_id: str, clock: Clock, created_at: Any, code: str
) -> None:
    resp = api.append(thread_id, "hi", createdAt=created_at)

    assert resp.status_code == 400
    assert [{"path": i["path"], "code": i["code"]} for i in resp.json()["issues"]] == [
        {"path": ["createdAt"], "code": code}
    ]
    assert Message.objects.count() == 0


def test_it_refuses_a_created_at_before_the_last_message(
    api: Api, thread_id: str, clock: Clock
) -> None:
    append_ok(api, thread_id, "first", createdAt="2023-05-08T13:56:00Z")

    resp = api.append(thread_id, "second", createdAt="2023-05-08T13:55:59.999Z")

    assert resp.status_code == 400
    assert resp.json()["issues"] == [
        {
            "path": ["createdAt"],
            "message": "createdAt is earlier than the createdAt of the thread's last message "
            "(2023-05-08T13:56:00.000Z)",
            "code": "before_last_message",
        }
    ]
    # Nothing stored, no sequence number used.
    assert numbers(api.get(messages_url(thread_id))) == [1]
    assert append_ok(api, thread_id, "second")["sequenceNumber"] == 2
    # A live message (the clock's now) closes the import: the past is refused after it.
    assert api.append(thread_id, "x", createdAt="2024-01-01T00:00:00Z").status_code == 400


def test_it_takes_back_the_created_at_it_showed_for_the_last_message(
    api: Api, thread_id: str, clock: Clock
) -> None:
    """The server's clock stores microseconds, the API shows milliseconds: sending the
    last message's createdAt as shown is not 'earlier' than it; a millisecond before is."""
    clock.set("2026-08-16T09:00:00.818301Z")
    shown = append_ok(api, thread_id, "live")["createdAt"]
    assert shown == "2026-08-16T09:00:00.818Z"
    clock.set("2026-08-16T09:00:02Z")

    early = api.append(thread_id, "import", createdAt="2026-08-16T09:00:00.817Z")
    assert early.status_code == 400
    assert early.json()["issues"][0]["message"] == (
        "createdAt is earlier than the createdAt of the thread's last message "
        "(2026-08-16T09:00:00.818Z)"
    )
    assert append_ok(api, thread_id, "import", createdAt=shown)["createdAt"] == shown
    assert numbers(api.get(messages_url(thread_id))) == [1, 2]
    # Stored at the last message's own time, not 301 us before it: createdAt never
    # decreases with the sequence number.
    assert [m.created_at.isoformat() for m in Message.objects.order_by("sequence_number")] == [
        "2026-08-16T09:00:00.818301+00:00", "2026-08-16T09:00:00.818301+00:00",
    ]


def test_it_replays_a_created_at_it_raised_within_its_millisecond(
    api: Api, thread_id: str, clock: Clock
) -> None:
    clock.set("2026-08-16T09:00:00.818301Z")
    append_ok(api, thread_id, "live")
    body = {"role": "user", "content": "import", "createdAt": "2026-08-16T09:00:00.818Z"}
    headers = {"Idempotency-Key": "import-1"}

    first = api.post(messages_url(thread_id), body, headers=headers)
    again = api.post(messages_url(thread_id), body, headers=headers)
    other = api.post(
        messages_url(thread_id), {**body, "createdAt": "2026-08-16T09:00:00.817Z"}, headers=headers
    )

    assert (first.status_code, again.status_code, other.status_code) == (201, 201, 409)
    assert again.json() == first.json()
    assert first.json()["createdAt"] == "2026-08-16T09:00:00.818Z"
    assert again.headers["Idempotent-Replayed"] == "true"
    assert numbers(api.get(messages_url(thread_id))) == [1, 2]


def _keyed(api: Api, thread_id: str, content: str, created_at: str, *, key: str) -> Any:
    """POST a user message with ``createdAt`` under Idempotency-Key ``key``."""
    return api.post(
        messages_url(thread_id), {"role": "user", "content": content, "createdAt": created_at},
        headers={"Idempotency-Key": key},
    )


def test_it_stores_a_created_at_ahead_of_the_clock_as_the_clock(
    api: Api, thread_id: str, clock: Clock
) -> None:
    """The 5 minutes of skew a client may date ahead by are clock drift, not a time to
    keep: the message is stored at the server's clock, so a live message in another
    thread a minute later is later, not earlier (docs/decisions.md, "Imported messages
    keep their real time"). A retry of it with its Idempotency-Key is the same message
    while the time it sent is ahead of the clock."""
    clock.set("2026-08-16T09:00:00.250Z")
    ahead = _keyed(api, thread_id, "ahead", "2026-08-16T09:04:59.5Z", key="a")
    clock.set("2026-08-16T09:01:00Z")
    other = api.create_thread()["threadId"]
    live = append_ok(api, other, "live elsewhere")
    replay = _keyed(api, thread_id, "ahead", "2026-08-16T09:04:59.5Z", key="a")
    changed = _keyed(api, thread_id, "ahead", "2026-08-16T08:59:00Z", key="a")

    assert (ahead.status_code, ahead.json()["createdAt"]) == (201, "2026-08-16T09:00:00.250Z")
    assert live["createdAt"] == "2026-08-16T09:01:00.000Z"
    assert (replay.status_code, replay.headers["Idempotent-Replayed"], replay.json()) == (
        201, "true", ahead.json()
    )
    assert changed.status_code == 409
    # An import after it may date at or after the stored time, not before it.
    early = api.append(thread_id, "import", createdAt="2026-08-16T09:00:00.249Z")
    assert (early.status_code, early.json()["issues"][0]["code"]) == (400, "before_last_message")
    assert append_ok(api, thread_id, "import", createdAt="2026-08-16T09:00:00.250Z")["sequenceNumber"] == 2
    assert numbers(api.get(messages_url(thread_id))) == [1, 2]


def test_a_retry_of_a_created_at_ahead_replays_after_the_clock_has_passed_it(
    api: Api, thread_id: str, clock: Clock
) -> None:
    """A client 15 s fast retried after 20 s: its createdAt was no longer ahead of the
    clock at the retry, so the exact retry was compared strictly and refused (409). What
    was ahead is judged at the first append (the message id's time)."""
    clock.set("2026-08-16T09:00:00.250Z")
    first = _keyed(api, thread_id, "retry me", "2026-08-16T09:00:15Z", key="r")
    clock.set("2026-08-16T09:00:20Z")
    again = _keyed(api, thread_id, "retry me", "2026-08-16T09:00:15Z", key="r")

    assert (first.status_code, first.json()["createdAt"]) == (201, "2026-08-16T09:00:00.250Z")
    assert (again.status_code, again.headers["Idempotent-Replayed"], again.json()) == (201, "true", first.json())
    assert numbers(api.get(messages_url(thread_id))) == [1]


def test_a_replay_of_an_import_is_not_loosened_by_the_skew(
    api: Api, thread_id: str, clock: Clock
) -> None:
    """Only a time ahead of the clock matches an earlier stored one; an import's replay
    with a later past time is another message."""
    first = _keyed(api, thread_id, "x", "2026-08-16T08:00:00Z", key="i")
    later = _keyed(api, thread_id, "x", "2026-08-16T08:01:00Z", key="i")

    assert (first.status_code, later.status_code) == (201, 409)


def test_it_drops_unknown_metadata_keys(api: Api, thread_id: str) -> None:
    append_ok(
        api,
        thread_id,
        metadata={"stopReason": "stop", "agentName": "bot", "userId": "u1", "extra": {"a": 1}},
    )
    append_ok(api, thread_id, metadata={"userId": "u1"})
    append_ok(api, thread_id, metadata={})

    rows = api.get(messages_url(thread_id)).json()["messages"]

    assert [r["metadata"] for r in rows] == [{"stopReason": "stop", "agentName": "bot"}, None, None]


@pytest.mark.parametrize(
    ("raw", "issue"),
    [
        ({"role": "user", "content": "x", "tokens": [1]}, {"path": ["tokens"], "message": "Input should be a JSON object", "code": "model_type"}),
        ({"role": "user", "content": "x", "metadata": "stop"}, {"path": ["metadata"], "message": "Input should be a JSON object", "code": "model_type"}),
        ("[]", {"path": [], "message": "Request body must be a JSON object", "code": "model_type"}),
    ],
)
def test_it_says_json_object_not_a_schema_class(api: Api, thread_id: str, raw: Any, issue: dict[str, Any]) -> None:
    resp = api.post(messages_url(thread_id), raw) if isinstance(raw, dict) else api.post(messages_url(thread_id), raw=raw)
    assert (resp.status_code, resp.json()) == (400, {"error": "Validation error", "issues": [issue]})


@pytest.mark.parametrize(
    ("raw", "path", "code"),
    [
        ({"role": "robot", "content": "x"}, ["role"], "literal_error"),
        ({"role": "User", "content": "x"}, ["role"], "literal_error"),
        ({"role": "", "content": "x"}, ["role"], "literal_error"),
        ({"content": "x"}, ["role"], "missing"),
        ({"role": "user"}, ["content"], "missing"),
        ({"role": "user", "content": ""}, ["content"], "blank"),
        ({"role": "user", "content": "   "}, ["content"], "blank"),
        ({"role": "user", "content": " \n\t\r\u3000 "}, ["content"], "blank"),
        ({"role": "user", "content": None}, ["content"], "string_type"),
        ({"role": "user", "content": 5}, ["content"], "string_type"),
        ({"role": "user", "content": ["x"]}, ["content"], "string_type"),
        ({"role": "user", "content": "a\x00b"}, ["content"], "nul_character"),
        ('{"role": "user", "content": "\\ud800 lone surrogate"}', ["content"], "invalid_unicode"),
        (
            {"role": "user", "content": "x", "tokens": {"input": -1}},
            ["tokens", "input"],
            "greater_than_equal",
        ),
        (
            {"role": "user", "content": "x", "tokens": {"output": 1.5}},
            ["tokens", "output"],
            "int_type",
        ),
        (
            {"role": "user", "content": "x", "tokens": {"total": 12.5}},
            ["tokens", "total"],
            "int_type",
        ),
        (
            {"role": "user", "content": "x", "tokens": {"input": "12"}},
            ["tokens", "input"],
            "int_type",
        ),
        (
            {"role": "user", "content": "x", "tokens": {"input": True}},
            ["tokens", "input"],
            "int_type",
        ),
        (
            {"role": "user", "content": "x", "tokens": {"input": 2**31}},
            ["tokens", "input"],
            "less_than_equal",
        ),
        (
            {"role": "user", "content": "x", "tokens": {"input": 10**30}},
            ["tokens", "input"],
            "less_than_equal",
        ),
        ({"role": "user", "content": "x", "tokens": [1, 2, 3]}, ["tokens"], "model_type"),
        ({"role": "user", "content": "x", "tokens": 12}, ["tokens"], "model_type"),
        ({"role": "user", "content": "x", "latencyMs": -1}, ["latencyMs"], "greater_than_equal"),
        ({"role": "user", "content": "x", "latencyMs": 1.5}, ["latencyMs"], "int_type"),
        ({"role": "user", "content": "x", "latencyMs": 2**40}, ["latencyMs"], "less_than_equal"),
        ({"role": "user", "content": "x", "model": "m" * 201}, ["model"], "string_too_long"),
        ({"role": "user", "content": "x", "model": "gpt\x00"}, ["model"], "nul_character"),
        ({"role": "user", "content": "x", "metadata": "stop"}, ["metadata"], "model_type"),
        (
            {"role": "user", "content": "x", "metadata": {"stopReason": "\x00"}},
            ["metadata", "stopReason"],
            "nul_character",
        ),
        (
            {"role": "user", "content": "x", "metadata": {"agentName": 7}},
            ["metadata", "agentName"],
            "string_type",
        ),
        ("{", [], "invalid_json"),
        ('{"role": "user", "content": "x"', [], "invalid_json"),
        ('{"role": "user", "content": "x",}', [], "invalid_json"),
        (b'{"role": "user", "content": "\xff\xfe"}', [], "invalid_json"),
        ("[" * 100_000, [], "too_deep"),  # refused before json.loads reads it
        ("[]", [], "model_type"),
        ('"hello"', [], "model_type"),
        ("null", [], "model_type"),
        ("", [], "missing"),
    ],
)
def test_it_refuses_a_bad_message_and_keeps_the_numbering(
    api: Api, thread_id: str, raw: Any, path: list[Any], code: str
) -> None:
    append_ok(api, thread_id, "first")

    if isinstance(raw, dict):
        resp = api.post(messages_url(thread_id), raw)
    else:
        resp = api.post(messages_url(thread_id), raw=raw)

    assert resp.status_code == 400
    body = resp.json()
    assert body["error"] == "Validation error"
    assert {"path": path, "code": code} in [
        {"path": i["path"], "code": i["code"]} for i in body["issues"]
    ]
    assert all(set(i) == {"path", "message", "code"} and i["message"] for i in body["issues"])
    assert append_ok(api, thread_id, "next")["sequenceNumber"] == 2
    assert Message.objects.filter(thread_id=thread_id).count() == 2


def test_it_refuses_content_over_the_limit_with_413(
    api: Api, thread_id: str, settings: Any
) -> None:
    settings.MEMORY_MAX_CONTENT_BYTES = 16
    append_ok(api, thread_id, "é" * 8)  # 16 UTF-8 bytes: exactly the limit

    resp = api.append(thread_id, "é" * 8 + "a")

    assert resp.status_code == 413
    assert resp.json() == {
        "error": "Payload too large",
        "issues": [
            {
                "path": ["content"],
                "message": "content is 17 bytes; the limit is 16 bytes (UTF-8)",
                "code": "content_too_large",
            }
        ],
    }
    assert append_ok(api, thread_id, "next")["sequenceNumber"] == 2


def test_it_counts_the_default_limit_of_one_mebibyte_in_bytes(api: Api, thread_id: str) -> None:
    mib = 1024 * 1024

    assert append_ok(api, thread_id, "a" * mib)["sequenceNumber"] == 1
    assert api.append(thread_id, "a" * (mib + 1)).status_code == 413
    assert api.append(thread_id, "€" * (mib // 3 + 1)).status_code == 413
    assert append_ok(api, thread_id, "next")["sequenceNumber"] == 2


def test_it_refuses_a_body_over_the_upload_limit_with_413(
    api: Api, thread_id: str, settings: Any
) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000

    resp = api.append(thread_id, "x" * 2000)

    assert resp.status_code == 413
    assert resp.json()["error"] == "Payload too large"
    assert append_ok(api, thread_id)["sequenceNumber"] == 1


UNICODE_SAMPLES = {
    "emoji-zwj": "family 👩\u200d👩\u200d👧\u200d👦 and 🏳️\u200d🌈, skin 👍🏽, flag 🇯🇵",
    "arabic": "مرحبا، أريد سيارة عائلية \u200fمع مساحة",
    "cjk": "我在找一辆家用车。日本語のテキスト、한국어 텍스트",
    "bom": "\ufeffstarts with a byte order mark",
    "combining": "e\u0301 (decomposed) vs \u00e9 (composed), Å vs A\u030a, \U0001d518\U0001d52b\U0001d526\U0001d520\U0001d52c\U0001d521\U0001d522",
    "html": "<script>alert('x')</script> &amp; &lt;b&gt; \"quoted\" \\ backslash",
    "whitespace": "  padded\r\n\ttext with\u2028line separator\u00a0and nbsp  ",
    "astral": "\U0001f600\U0001f9d1\u200d\U0001f4bb \U00010348 gothic",
}


@pytest.mark.parametrize("name", list(UNICODE_SAMPLES))
@pytest.mark.parametrize("ensure_ascii", [True, False], ids=["escaped", "raw-utf8"])
def test_it_round_trips_unicode_byte_exact(
    api: Api, thread_id: str, name: str, ensure_ascii: bool
) -> None:
    text = UNICODE_SAMPLES[name]
    raw = json.dumps({"role": "user", "content": text}, ensure_ascii=ensure_ascii).encode("utf-8")

    assert api.post(messages_url(thread_id), raw=raw).status_code == 201

    listed = api.get(messages_url(thread_id)).json()["messages"][0]["content"]
    prepared = api.post(f"{BASE}/threads/{thread_id}/prepare", {}).json()["messages"][0]["content"]
    assert listed.encode("utf-8") == text.encode("utf-8")
    assert prepared.encode("utf-8") == text.encode("utf-8")
    assert Message.objects.get(thread_id=thread_id).content == text


# --- GET messages -------------------------------------------------------------------------


@pytest.fixture
def six(api: Api, thread_id: str) -> str:
    for i in range(1, 7):
        append_ok(api, thread_id, f"message {i}")
    return thread_id


def test_it_pages_back_through_six_messages(api: Api, six: str) -> None:
    pages = [
        api.get(messages_url(six), order="desc", limit=2).json(),
        api.get(messages_url(six), order="desc", limit=2, before=5).json(),
        api.get(messages_url(six), order="desc", limit=2, before=3).json(),
    ]

    assert [[m["sequenceNumber"] for m in p["messages"]] for p in pages] == [[6, 5], [4, 3], [2, 1]]
    assert [p["hasMore"] for p in pages] == [True, True, False]
    assert [p["total"] for p in pages] == [6, 6, 6]
    assert [m["content"] for m in pages[1]["messages"]] == ["message 4", "message 3"]


def test_it_cuts_ascending_pages_after_the_before_filter(api: Api, six: str) -> None:
    page = api.get(messages_url(six), order="asc", limit=2, before=4).json()

    assert [m["sequenceNumber"] for m in page["messages"]] == [1, 2]
    assert (page["hasMore"], page["total"]) == (True, 6)


def test_it_lists_ascending_with_defaults(api: Api, six: str) -> None:
    page = api.get(messages_url(six)).json()

    assert [m["sequenceNumber"] for m in page["messages"]] == [1, 2, 3, 4, 5, 6]
    assert (page["hasMore"], page["total"]) == (False, 6)


def test_it_pages_forward_with_after(api: Api, six: str) -> None:
    page = api.get(messages_url(six), after=2, limit=3).json()

    assert [m["sequenceNumber"] for m in page["messages"]] == [3, 4, 5]
    assert (page["hasMore"], page["total"]) == (True, 6)
    assert numbers(api.get(messages_url(six), after=4, before=6)) == [5]


def test_it_returns_an_empty_page_beyond_the_ends(api: Api, six: str) -> None:
    assert api.get(messages_url(six), before=1).json() == {
        "messages": [],
        "total": 6,
        "hasMore": False,
    }
    assert numbers(api.get(messages_url(six), after=6)) == []
    assert numbers(api.get(messages_url(six), before=2**63 - 1, order="desc", limit=1)) == [6]
    assert numbers(api.get(messages_url(six), after=2**63 - 1)) == []


@pytest.mark.parametrize("name", ["before", "after"])
@pytest.mark.parametrize("value", [str(2**63), "99999999999999999999", "1" + "0" * 40])
def test_it_refuses_a_sequence_number_past_bigint_naming_it(
    api: Api, six: str, name: str, value: str
) -> None:
    """No sequence number is that large (the column is a bigint); it was read as "no
    bound" (200), now 400 naming the parameter, on SQLite and PostgreSQL alike."""
    query: dict[str, Any] = {name: value}
    resp = api.get(messages_url(six), **query)

    assert (resp.status_code, resp.json()) == (
        400,
        {
            "error": "Validation error",
            "issues": [
                {
                    "path": [name],
                    "message": "Input should be less than or equal to 9223372036854775807",
                    "code": "less_than_equal",
                }
            ],
        },
    )


def test_it_lists_compacted_rows_and_the_summary(api: Api, six: str) -> None:
    compact = api.post(f"{BASE}/threads/{six}/compact").json()

    rows = api.get(messages_url(six)).json()

    assert rows["total"] == 7
    assert [m["sequenceNumber"] for m in rows["messages"]] == [1, 2, 3, 4, 5, 6, 7]
    assert all(ISO_MS_RE.match(m["compactedAt"]) for m in rows["messages"][:6])
    summary = rows["messages"][6]
    assert (summary["messageId"], summary["role"], summary["compactedAt"]) == (
        compact["summaryMessageId"],
        "system",
        None,
    )
    assert summary["summary"] == {"fromSequence": 1, "toSequence": 6}
    assert "summary" not in rows["messages"][0]


@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({"limit": 0}, ["limit"]),
        ({"limit": 101}, ["limit"]),
        ({"limit": -5}, ["limit"]),
        ({"limit": "ten"}, ["limit"]),
        ({"order": "ASC"}, ["order"]),
        ({"order": "newest"}, ["order"]),
        ({"order": ""}, ["order"]),
        ({"before": "abc"}, ["before"]),
        ({"before": "1.5"}, ["before"]),
        ({"before": "3x"}, ["before"]),
        ({"before": 0}, ["before"]),
        ({"after": -1}, ["after"]),
    ],
)
def test_it_refuses_bad_list_queries(
    api: Api, six: str, params: dict[str, Any], path: list[str]
) -> None:
    resp = api.get(messages_url(six), **params)

    assert resp.status_code == 400
    assert resp.json()["error"] == "Validation error"
    assert issue_paths(resp) == [path]
    assert append_ok(api, six)["sequenceNumber"] == 7


def test_it_accepts_the_limit_bounds(api: Api, six: str) -> None:
    assert numbers(api.get(messages_url(six), limit=1)) == [1]
    assert numbers(api.get(messages_url(six), limit=100)) == [1, 2, 3, 4, 5, 6]


def test_it_orders_messages_of_the_same_millisecond_by_sequence(
    api: Api, thread_id: str, clock: Clock
) -> None:
    clock.set("2026-08-16T09:00:00.500Z")
    for i in range(1, 4):
        append_ok(api, thread_id, f"same ms {i}")
    # A clock stepping backwards (NTP) must not reorder the thread either.
    for i, iso in enumerate(["2026-08-16T08:59:59.000Z", "2026-08-16T08:00:00.000Z"], start=4):
        clock.set(iso)
        append_ok(api, thread_id, f"earlier clock {i}")

    asc = api.get(messages_url(thread_id)).json()["messages"]
    desc = api.get(messages_url(thread_id), order="desc").json()["messages"]
    prepared = api.post(f"{BASE}/threads/{thread_id}/prepare", {}).json()["messages"]

    assert [m["sequenceNumber"] for m in asc] == [1, 2, 3, 4, 5]
    assert [m["createdAt"] for m in asc[:3]] == ["2026-08-16T09:00:00.500Z"] * 3
    assert [m["sequenceNumber"] for m in desc] == [5, 4, 3, 2, 1]
    assert [m["content"] for m in prepared] == [m["content"] for m in asc]


# --- Stats --------------------------------------------------------------------------------


def test_it_reports_stats_like_the_spec_example(api: Api, thread_id: str, clock: Clock) -> None:
    Thread.objects.filter(pk=thread_id).update(created=at("2026-08-16T08:58:44.615Z"))
    start = at("2026-08-16T08:58:44.814Z")
    # 42 messages whose tokens add up to the spec's totals: 8120 in, 3310 out.
    for i in range(42):
        clock.now = start + timedelta(milliseconds=round(918_000 * i / 41))
        tokens_in, tokens_out = (193, 79) if i < 41 else (207, 71)
        append_ok(
            api,
            thread_id,
            f"turn {i}",
            tokens={"input": tokens_in, "output": tokens_out, "total": tokens_in + tokens_out},
        )

    resp = api.get(f"{BASE}/threads/{thread_id}/stats")

    assert resp.status_code == 200
    assert resp.json() == {
        "threadId": thread_id,
        "messageCount": 42,
        "tokenUsage": {
            "totalInput": 8120,
            "totalOutput": 3310,
            "totalTokens": 11430,
            "averagePerMessage": 272,
        },
        "sessionDuration": {"ms": 918000, "seconds": 918},
        "createdAt": "2026-08-16T08:58:44.615Z",
        "lastActivityAt": "2026-08-16T09:14:02.814Z",
        "compaction": {
            "count": 0,
            "activeSummaryId": None,
            "lastCompactedAt": None,
            "lastError": None,
            "lastErrorAt": None,
        },
    }


def test_it_reports_null_usage_and_duration_until_there_is_data(
    api: Api, thread_id: str, clock: Clock
) -> None:
    def stats() -> dict[str, Any]:
        resp = api.get(f"{BASE}/threads/{thread_id}/stats")
        assert resp.status_code == 200
        body: dict[str, Any] = resp.json()
        return body

    empty = stats()
    clock.set("2026-08-16T09:00:00.000Z")
    append_ok(api, thread_id, "one")
    one = stats()
    clock.set("2026-08-16T09:00:01.500Z")
    append_ok(api, thread_id, "two")
    two = stats()

    assert (empty["messageCount"], empty["tokenUsage"], empty["sessionDuration"]) == (0, None, None)
    assert (one["messageCount"], one["tokenUsage"], one["sessionDuration"]) == (1, None, None)
    assert (two["messageCount"], two["tokenUsage"], two["sessionDuration"]) == (
        2,
        None,
        {"ms": 1500, "seconds": 1},
    )


def test_the_session_duration_of_an_import_is_the_conversations_own_span(
    api: Api, thread_id: str, clock: Clock
) -> None:
    """sessionDuration is the last real message's createdAt minus the first's (DESIGN.md
    section 6 item 9), not how long the import took; the thread's activity stays the
    appends' own time."""
    clock.set("2026-08-16T09:00:00.000Z")
    append_ok(api, thread_id, "first", createdAt="2023-05-08T13:56:00Z")
    clock.set("2026-08-16T09:00:00.020Z")
    append_ok(api, thread_id, "last", createdAt="2023-05-08T15:26:30.5Z")

    body = api.get(f"{BASE}/threads/{thread_id}/stats").json()

    assert (body["sessionDuration"], body["lastActivityAt"]) == (
        {"ms": 5430500, "seconds": 5430},
        "2026-08-16T09:00:00.020Z",
    )


def test_it_averages_tokens_over_the_messages_that_carried_them(api: Api, thread_id: str) -> None:
    append_ok(api, thread_id, tokens={"input": 10, "output": 0, "total": 10})
    append_ok(api, thread_id)
    append_ok(api, thread_id, tokens={"input": 0, "output": 5, "total": 5})

    usage = api.get(f"{BASE}/threads/{thread_id}/stats").json()["tokenUsage"]

    assert usage == {"totalInput": 10, "totalOutput": 5, "totalTokens": 15, "averagePerMessage": 8}


def test_it_counts_the_summary_row_in_the_stats_message_count(
    api: Api, six: str, clock: Clock
) -> None:
    clock.set("2026-08-16T09:00:00.000Z")
    summary_id = api.post(f"{BASE}/threads/{six}/compact").json()["summaryMessageId"]

    after_compact = api.get(f"{BASE}/threads/{six}/stats").json()
    append_ok(api, six, "after the summary")
    after_append = api.get(f"{BASE}/threads/{six}/stats").json()

    assert after_compact["messageCount"] == 1
    assert after_append["messageCount"] == 2
    assert after_append["compaction"] == {
        "count": 1,
        "activeSummaryId": summary_id,
        "lastCompactedAt": "2026-08-16T09:00:00.000Z",
        "lastError": None,
        "lastErrorAt": None,
    }


# --- Idempotency --------------------------------------------------------------------------


def test_it_stores_one_message_for_a_repeated_idempotency_key(api: Api, thread_id: str) -> None:
    headers = {"Idempotency-Key": "turn-1-user"}

    first = api.post(messages_url(thread_id), {"role": "user", "content": "hi"}, headers=headers)
    second = api.post(messages_url(thread_id), {"role": "user", "content": "hi"}, headers=headers)

    assert (first.status_code, second.status_code) == (201, 201)
    assert second.json() == first.json()
    assert second.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert Message.objects.filter(thread_id=thread_id).count() == 1
    assert append_ok(api, thread_id)["sequenceNumber"] == 2


def test_it_refuses_an_idempotency_key_reused_for_another_message(api: Api, thread_id: str) -> None:
    headers = {"Idempotency-Key": "k1"}
    api.post(messages_url(thread_id), {"role": "user", "content": "hi"}, headers=headers)

    resp = api.post(messages_url(thread_id), {"role": "user", "content": "bye"}, headers=headers)

    assert resp.status_code == 409
    assert resp.json() == {
        "error": "Idempotency-Key already used for a different message on this thread"
    }
    assert Message.objects.filter(thread_id=thread_id).count() == 1


def test_it_refuses_a_reused_key_whose_tokens_differ_and_keeps_the_first(api: Api, thread_id: str) -> None:
    headers = {"Idempotency-Key": "k1"}
    first = api.post(messages_url(thread_id), {"role": "user", "content": "hi"}, headers=headers)

    resp = api.post(
        messages_url(thread_id), {"role": "user", "content": "hi", "tokens": {"input": 1}}, headers=headers
    )

    assert resp.status_code == 409
    assert resp.json() == {
        "error": "Idempotency-Key already used for a different message on this thread"
    }
    stored = Message.objects.get(thread_id=thread_id)
    assert (str(stored.pk), stored.tokens_input) == (first.json()["messageId"], None)


def test_it_scopes_idempotency_keys_to_their_thread(api: Api, thread_id: str) -> None:
    other = api.create_thread()["threadId"]
    headers = {"Idempotency-Key": "k1"}

    a = api.post(messages_url(thread_id), {"role": "user", "content": "hi"}, headers=headers).json()
    b = api.post(messages_url(other), {"role": "user", "content": "hi"}, headers=headers).json()

    assert a["messageId"] != b["messageId"]
    assert (a["sequenceNumber"], b["sequenceNumber"]) == (1, 1)


@pytest.mark.parametrize("key", ["", "   ", "k" * 256, "a\x00b", "tab\there"])
def test_it_refuses_a_malformed_idempotency_key(api: Api, thread_id: str, key: str) -> None:
    resp = api.post(
        messages_url(thread_id), {"role": "user", "content": "hi"}, headers={"Idempotency-Key": key}
    )

    assert resp.status_code == 400
    assert issue_paths(resp) == [["Idempotency-Key"]]
    assert Message.objects.filter(thread_id=thread_id).count() == 0


# --- Auth ---------------------------------------------------------------------------------


def endpoints(thread_id: str) -> list[tuple[str, str, Any]]:
    """Every working-memory route that names a thread: (method, path, JSON body)."""
    base = f"{BASE}/threads/{thread_id}"
    return [
        ("get", base, None),
        ("patch", base, {"dataset": "stolen"}),
        ("delete", base, None),
        ("post", f"{base}/messages", {"role": "user", "content": "injected"}),
        ("get", f"{base}/messages", None),
        ("post", f"{base}/prepare", {}),
        ("post", f"{base}/compact", None),
        ("get", f"{base}/stats", None),
    ]


def call(api: Api, method: str, path: str, body: Any) -> Any:
    if method == "get":
        return api.get(path)
    if method == "delete":
        return api.delete(path)
    if method == "patch":
        return api.patch(path, body)
    return api.post(path, body)


def test_it_hides_every_endpoint_of_another_projects_thread(
    api: Api, outsider_api: Api, six: str
) -> None:
    before = api.get(f"{BASE}/threads/{six}").json()
    missing = str(uuid.uuid4())

    for (method, path, body), (_, missing_path, _) in zip(
        endpoints(six), endpoints(missing), strict=True
    ):
        resp = call(outsider_api, method, path, body)
        control = call(outsider_api, method, missing_path, body)
        assert (resp.status_code, resp.json()) == (404, {"error": "Thread not found"}), (
            method,
            path,
        )
        # Byte for byte what a thread that never existed gets: nothing leaks.
        assert resp.content == control.content
        assert sorted(resp.headers) == sorted(control.headers)

    assert api.get(f"{BASE}/threads/{six}").json() == before
    assert Message.objects.filter(thread_id=six).count() == 6
    assert outsider_api.get(f"{BASE}/threads").json() == {"threads": [], "nextCursor": None}


def test_it_keeps_a_thread_of_another_project_out_of_its_lists(
    api: Api, outsider_api: Api, thread_id: str
) -> None:
    mine = outsider_api.create_thread(dataset="user_42")["threadId"]

    listed = outsider_api.get(f"{BASE}/threads", dataset="user_42").json()["threads"]

    assert [t["threadId"] for t in listed] == [mine]


def unauthorized(api: Api, thread_id: str) -> list[Any]:
    responses = [call(api, m, p, b) for m, p, b in endpoints(thread_id)]
    responses.append(api.get(f"{BASE}/threads"))
    responses.append(api.post(f"{BASE}/threads", {"dataset": "u"}))
    return responses


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Bearer mk_00000000_wrongwrongwrongwrongwrongwrongwr",
        "Bearer not-even-a-key",
        "Bearer " + "mk_" + "x" * 5000,
    ],
    ids=["none", "empty", "no-token", "blank-token", "basic", "wrong-key", "not-a-key", "huge"],
)
def test_it_answers_401_without_a_valid_key(
    api: Api, thread_id: str, project: Project, header: str | None
) -> None:
    client = Api(Client(), None)
    if header is not None:
        client = Api(Client(headers={"Authorization": header}), None)

    responses = unauthorized(client, thread_id)

    assert [(r.status_code, r.json()) for r in responses] == [
        (401, {"error": "Unauthorized"})
    ] * len(responses)
    assert Thread.objects.get(pk=thread_id).dataset == "user_42"
    assert Thread.objects.filter(project=project).count() == 1
    assert Message.objects.count() == 0


def test_it_answers_401_for_a_revoked_key(api: Api, thread_id: str) -> None:
    assert api.key is not None
    ApiKey.objects.get(hash=hashlib.sha256(api.key.encode()).hexdigest()).revoke()

    responses = unauthorized(api, thread_id)

    assert {(r.status_code, r.content) for r in responses} == {(401, b'{"error": "Unauthorized"}')}


def test_it_checks_the_key_before_the_body(anon_api: Api, api: Api, thread_id: str) -> None:
    resp = anon_api.post(messages_url(thread_id), raw="{not json")

    assert (resp.status_code, resp.json()) == (401, {"error": "Unauthorized"})


def test_it_accepts_a_lowercase_bearer_scheme(api: Api, thread_id: str) -> None:
    client = Api(Client(headers={"Authorization": f"bearer {api.key}"}), None)

    assert client.get(messages_url(thread_id)).status_code == 200


def test_it_records_when_a_key_was_last_used(api: Api, thread_id: str) -> None:
    assert api.key is not None
    key = ApiKey.objects.get(hash=hashlib.sha256(api.key.encode()).hexdigest())
    ApiKey.objects.filter(pk=key.pk).update(last_used=None)
    key_cache.clear()  # a key resolved in the last KEY_CACHE_SECONDS is not read again

    api.get(messages_url(thread_id))

    key.refresh_from_db()
    assert key.last_used is not None


# --- Review findings: each was a 500 or silently accepted -------------------------------


def test_it_answers_json_for_unknown_paths_and_wrong_methods(api: Api, thread_id: str) -> None:
    headers = {"Authorization": f"Bearer {api.key}"}

    unknown = api.client.get("/v1/memory/working/nope", headers=headers)
    trailing = api.client.get(f"{BASE}/threads/{thread_id}/", headers=headers)
    wrong = api.client.put(f"{BASE}/threads/{thread_id}", headers=headers)

    assert (unknown.status_code, unknown.json()) == (404, {"error": "Not found"})
    assert (trailing.status_code, trailing.json()) == (404, {"error": "Not found"})
    assert (wrong.status_code, wrong.json()) == (405, {"error": "Method not allowed"})
    assert "GET" in wrong["Allow"]


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete"])
@pytest.mark.parametrize("path", ["/v1", "/v1/"])
def test_it_answers_json_404_at_the_api_root_for_every_method(
    api: Api, settings: Any, method: str, path: str
) -> None:
    # /v1 was a 500 for unsafe methods with DEBUG on (APPEND_SLASH cannot redirect a
    # POST) and /v1/ an HTML 403 (ninja's root view is not CSRF-exempt).
    settings.DEBUG = True
    client = Client(enforce_csrf_checks=True)
    api.client.raise_request_exception = False
    client.raise_request_exception = False

    resp = getattr(client, method)(path, HTTP_AUTHORIZATION=f"Bearer {api.key}")

    assert (resp.status_code, resp.json()) == (404, {"error": "Not found"})


def test_it_answers_json_500_without_a_traceback(
    api: Api, thread_id: str, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    from memoryapp import working

    def boom(**kwargs: Any) -> None:
        raise RuntimeError("secret internals")

    settings.DEBUG = True
    monkeypatch.setattr(working, "thread_stats", boom)
    api.client.raise_request_exception = False

    resp = api.get(f"{BASE}/threads/{thread_id}/stats")

    assert (resp.status_code, resp.json()) == (500, {"error": "Internal server error"})
    assert b"secret internals" not in resp.content


@pytest.mark.parametrize(
    "created",
    ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "2026-01-01T00:00:00"],
)
def test_it_refuses_a_forged_thread_cursor(api: Api, created: str) -> None:
    raw = f"{created}|{uuid.uuid4()}".encode()
    cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")

    resp = api.get(f"{BASE}/threads", cursor=cursor)

    assert resp.status_code == 400
    assert resp.json()["issues"][0]["code"] == "invalid_cursor"


def test_it_answers_404_to_a_patch_of_a_thread_deleted_meanwhile(api: Api, thread_id: str) -> None:
    from memoryapp import working
    from memoryapp.errors import ThreadNotFound
    from memoryapp.models import Thread

    thread = Thread.objects.get(pk=thread_id)
    Thread.objects.filter(pk=thread_id).delete()

    with pytest.raises(ThreadNotFound):
        working.thread_update(thread=thread, changes={"dataset": "x"})


def test_it_refuses_a_total_below_input_plus_output_naming_tokens_total(
    api: Api, thread_id: str
) -> None:
    resp = api.append(thread_id, "hi", tokens={"input": 10, "output": 5, "total": 14})

    assert resp.status_code == 400
    assert resp.json() == {
        "error": "Validation error",
        "issues": [
            {
                "path": ["tokens", "total"],
                "message": "tokens.total (14) is less than input + output (15)",
                "code": "inconsistent_tokens",
            }
        ],
    }


def test_it_keeps_a_providers_total_above_input_plus_output(api: Api, thread_id: str) -> None:
    # Gemini's totalTokenCount adds thinking and tool-use tokens to prompt + candidates.
    append_ok(api, thread_id, "hi", tokens={"input": 10, "output": 5, "total": 40})

    row = api.get(messages_url(thread_id)).json()["messages"][0]

    assert row["tokens"] == {"input": 10, "output": 5, "total": 40}


@pytest.mark.parametrize(
    ("tokens", "code"),
    [
        ({}, "empty_tokens"),
        # Each part fits the column but the total they make (4294967294) would not.
        ({"input": 2**31 - 1, "output": 2**31 - 1}, "tokens_too_large"),
        ({"input": 2**31 - 1, "output": 1, "total": 2**31 - 1}, "tokens_too_large"),
    ],
)
def test_it_refuses_inconsistent_tokens(
    api: Api, thread_id: str, tokens: dict[str, int], code: str
) -> None:
    resp = api.append(thread_id, "hi", tokens=tokens)

    assert resp.status_code == 400
    assert [(i["path"], i["code"]) for i in resp.json()["issues"]] == [(["tokens"], code)]
    assert append_ok(api, thread_id, "next")["sequenceNumber"] == 1


def test_it_accepts_partial_tokens_and_fills_in_the_rest(api: Api, thread_id: str) -> None:
    append_ok(api, thread_id, "hi", tokens={"output": 7})

    row = api.get(messages_url(thread_id)).json()["messages"][0]

    assert row["tokens"] == {"input": 0, "output": 7, "total": 7}


@pytest.mark.parametrize("content", ["\u200b", " \u200d\ufeff ", "\u2066\u2069", "\u0301\u0301", "\u20dd\x01"])
def test_it_refuses_content_with_nothing_visible(api: Api, thread_id: str, content: str) -> None:
    resp = api.append(thread_id, content)

    assert resp.status_code == 400
    assert resp.json() == {
        "error": "Validation error",
        "issues": [{"path": ["content"], "message": "must not be blank", "code": "blank"}],
    }


def test_it_refuses_blank_tags_and_oversized_metadata(api: Api) -> None:
    blank_tag = api.post(f"{BASE}/threads", {"dataset": "d", "tags": ["ok", "  "]})
    big = api.post(f"{BASE}/threads", {"dataset": "d", "metadata": {"x": "a" * 20_000}})

    assert blank_tag.status_code == 400
    assert [(i["path"], i["code"]) for i in blank_tag.json()["issues"]] == [(["tags", 1], "blank")]
    assert big.status_code == 400
    assert [(i["path"], i["code"]) for i in big.json()["issues"]] == [(["metadata"], "too_large")]


def test_a_tool_message_needs_only_what_every_message_needs(api: Api) -> None:
    """Spec 002 lists ``tool`` among the roles with the same fields as the others and no
    tool call id (its metadata keeps only stopReason and agentName); spec 004's call ids
    belong to the calls the server records itself (POST .../tools). So an appended tool
    message without an id is valid, is stored as sent and reaches prepare as a plain
    message, not as a recorded tool result; its content follows the usual rule."""
    thread_id = api.create_thread()["threadId"]
    sent = {"role": "tool", "content": '{"temperature": 21}', "metadata": {"toolCallId": "c1", "agentName": "w"}}
    assert api.post(messages_url(thread_id), sent).status_code == 201
    (row,) = api.get(messages_url(thread_id)).json()["messages"]
    assert (row["role"], row["content"], row["metadata"]) == ("tool", '{"temperature": 21}', {"agentName": "w"})
    window = api.post(f"{BASE}/threads/{thread_id}/prepare", {}).json()
    assert window["messages"] == [{"role": "tool", "content": '{"temperature": 21}'}]
    blank = api.post(messages_url(thread_id), {"role": "tool", "content": " "})
    assert (blank.status_code, [i["path"] for i in blank.json()["issues"]]) == (400, [["content"]])

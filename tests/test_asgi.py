"""memoryapp.asgi: HTTP on the thread pool, with bodies read on the event loop first."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.conf import settings

from memoryapp.asgi import MAX_BODY_BYTES, http_application
from memoryapp.models import ApiKey, Project

TIMEOUT = 10


def _scope(method: str, path: str, headers: list[tuple[bytes, bytes]] | None = None) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), *(headers or [])],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


async def _response(communicator: ApplicationCommunicator) -> tuple[int, bytes]:
    start = await communicator.receive_output(TIMEOUT)
    body = b""
    while True:
        message = await communicator.receive_output(TIMEOUT)
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return start["status"], body


def _make_key() -> str:
    project = Project.objects.create(slug="asgi", name="ASGI")
    return ApiKey.issue(project=project, name="t")[1]


@pytest.mark.django_db(transaction=True)
async def test_it_keeps_serving_while_more_clients_than_threads_stall_mid_upload() -> None:
    secret = await sync_to_async(_make_key)()
    # Authorised API posts: the key passes, then the view reads the body, so without the
    # body read on the event loop each would hold a pool thread while its upload stalls.
    headers = [
        (b"authorization", f"Bearer {secret}".encode()),
        (b"content-type", b"application/json"),
        (b"content-length", b"100"),
    ]
    stalled = []
    for _ in range(int(settings.HTTP_WORKER_THREADS) + 8):
        communicator = ApplicationCommunicator(
            http_application, _scope("POST", "/v1/memory/working/threads", headers)
        )
        await communicator.send_input({"type": "http.request", "body": b'{"data', "more_body": True})
        stalled.append(communicator)
    try:
        probe = ApplicationCommunicator(http_application, _scope("GET", "/login/"))
        await probe.send_input({"type": "http.request", "body": b"", "more_body": False})
        status, body = await _response(probe)
        assert status == 200
        assert b"<form" in body
    finally:
        for communicator in stalled:
            await communicator.send_input({"type": "http.disconnect"})
            await communicator.wait(TIMEOUT)


@pytest.mark.django_db(transaction=True)
async def test_it_runs_a_request_whose_body_came_in_pieces() -> None:
    secret = await sync_to_async(_make_key)()
    communicator = ApplicationCommunicator(
        http_application,
        _scope(
            "POST",
            "/v1/memory/working/threads",
            [
                (b"authorization", f"Bearer {secret}".encode()),
                (b"content-type", b"application/json"),
                (b"content-length", b"16"),
            ],
        ),
    )
    await communicator.send_input({"type": "http.request", "body": b'{"data', "more_body": True})
    await communicator.send_input({"type": "http.request", "body": b'set": "d"}', "more_body": False})

    status, body = await _response(communicator)

    assert status == 201
    assert json.loads(body)["dataset"] == "d"


async def test_it_refuses_a_body_past_the_limit_without_reading_the_rest() -> None:
    communicator = ApplicationCommunicator(
        http_application, _scope("POST", "/v1/memory/working/threads")
    )
    chunk = b"x" * (1024 * 1024)
    for _ in range(MAX_BODY_BYTES // len(chunk) + 1):
        await communicator.send_input({"type": "http.request", "body": chunk, "more_body": True})

    status, body = await _response(communicator)

    assert status == 413
    assert json.loads(body)["issues"][0]["code"] == "body_too_large"

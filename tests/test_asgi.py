"""memoryapp.asgi: HTTP on the thread pool, with bodies read on the event loop first."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.conf import settings
from django.db import connection

from memoryapp.asgi import MAX_BODY_BYTES, http_application
from memoryapp.models import ApiKey, Project
from tests.conftest import close_sync_thread_connections
from tests.servers import Server, manage, uvicorn_server

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


@pytest.mark.django_db(transaction=True)
async def test_the_sync_thread_gives_its_database_connection_back_after_a_test() -> None:
    # An async test's ORM calls (sync_to_async) run on asgiref's one sync thread and
    # keep its connection open: on PostgreSQL the test database could not be dropped
    # cleanly at the end of the run. tests.conftest closes it after every test.
    await sync_to_async(_make_key)()
    assert await sync_to_async(lambda: connection.connection is not None)()

    close_sync_thread_connections()

    assert await sync_to_async(lambda: connection.connection is None)()
    assert await sync_to_async(lambda: Project.objects.get(slug="asgi").name)() == "ASGI"


# --- over a real server: HTTP framing and read timeouts -------------------------------------

BODY_TIMEOUT_S = "1"  # short, so the stalled-client tests end quickly
SOCKET_WAIT_S = 30  # how long a test waits for the server's answer at most


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    """uvicorn as ``./dev serve`` runs it, on a migrated SQLite file, with short read
    timeouts; yields it with an API key of a project."""
    env = {
        "DATABASE_URL": f"sqlite:///{tmp_path_factory.mktemp('asgi') / 'db.sqlite3'}",
        "HTTP_READ_TIMEOUT_SECONDS": BODY_TIMEOUT_S,
    }
    manage(env, "migrate", "--noinput", "-v0")
    key = manage(env, "create_api_key", "--project", "asgi", "--create").strip().splitlines()[-1]
    with uvicorn_server(env, "--timeout-keep-alive", BODY_TIMEOUT_S) as running:
        yield running, key


def _raw(server: Server, request: bytes) -> bytes:
    """Send ``request`` as is, then read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=SOCKET_WAIT_S) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


def test_it_reads_a_chunked_request_body_whole(server: tuple[Server, str]) -> None:
    running, key = server

    def pieces() -> Iterator[bytes]:
        yield b'{"data'
        yield b'set": "chunked", "tags": ["a"]}'

    response = httpx.post(
        f"{running.url}/v1/memory/working/threads",
        content=pieces(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )

    assert response.request.headers["transfer-encoding"] == "chunked"
    assert response.status_code == 201, response.text
    assert (response.json()["dataset"], response.json()["tags"]) == ("chunked", ["a"])


def _head_of_100_bytes(key: str) -> str:
    """A create-thread request head announcing a 100-byte JSON body."""
    return (
        "POST /v1/memory/working/threads HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        "Content-Length: 100\r\n\r\n"
    )


def test_it_answers_408_to_a_body_that_stops_arriving(server: tuple[Server, str]) -> None:
    running, key = server
    head = _head_of_100_bytes(key)

    answer = _raw(running, head.encode() + b'{"data')

    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 408 Request Timeout"
    assert json.loads(rest.partition(b"\r\n\r\n")[2])["issues"][0]["code"] == "body_timeout"


def test_it_answers_408_to_a_body_that_never_starts(server: tuple[Server, str]) -> None:
    # The first receive() waits (nothing of the body came with the head): the timeout
    # runs from there, around the receive already begun (memoryapp.asgi._at_once).
    running, key = server
    head = _head_of_100_bytes(key)

    answer = _raw(running, head.encode())

    assert answer.partition(b"\r\n")[0] == b"HTTP/1.1 408 Request Timeout"


def test_it_closes_a_connection_that_sends_nothing(server: tuple[Server, str]) -> None:
    running, _ = server

    assert _raw(running, b"") == b""


def test_it_closes_a_connection_whose_request_head_stops_arriving(
    server: tuple[Server, str],
) -> None:
    running, _ = server

    assert _raw(running, b"GET /login/ HTTP/1.1\r\nHost: 127.0") == b""


def test_it_closes_a_keep_alive_connection_whose_next_request_head_stops_arriving(
    server: tuple[Server, str],
) -> None:
    running, _ = server
    with socket.create_connection(("127.0.0.1", running.port), timeout=SOCKET_WAIT_S) as sock:
        for _ in range(3):  # whole requests on one connection: each head clears its deadline
            sock.sendall(b"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            head = b""
            while b"\r\n\r\n" not in head:
                head += sock.recv(65536)
            length = int(re.search(rb"content-length: (\d+)", head.lower())[1])  # type: ignore[index]
            body = head.partition(b"\r\n\r\n")[2]
            while len(body) < length:
                body += sock.recv(65536)
            assert head.startswith(b"HTTP/1.1 200 OK\r\n")
        sock.sendall(b"GET /login/ HTTP/1.1\r\nHost: 127")
        started = time.monotonic()
        assert sock.recv(65536) == b""  # closed by the head's deadline, not the 30 s wait
        assert time.monotonic() - started < SOCKET_WAIT_S / 2


def test_it_closes_an_idle_keep_alive_connection_after_its_answer(
    server: tuple[Server, str],
) -> None:
    running, _ = server

    answer = _raw(running, b"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")

    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.count(b"HTTP/1.1 ") == 1

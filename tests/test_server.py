"""memoryapp.server: a response's head and body leave in one socket write, in order; the
requests in flight are counted over all connections."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.config import Config
from uvicorn.server import ServerState

from memoryapp.server import HttpProtocol, _HeldWrites, http_requests_in_flight


class FakeTransport:
    """What the socket was given, write by write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def writelines(self, lines: Any) -> None:
        self.writes.append(b"".join(lines))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"


def test_head_and_body_leave_in_one_write_and_nothing_waits_past_the_iteration() -> None:
    async def scenario() -> list[list[bytes]]:
        transport = FakeTransport()
        held = _HeldWrites(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
        seen = []
        held.write(b"HTTP/1.1 200 OK\r\n\r\n")
        held.write(b"body")
        seen.append(list(transport.writes))
        held.write(b"late chunk")  # nothing follows in this iteration
        seen.append(list(transport.writes))
        await asyncio.sleep(0)
        seen.append(list(transport.writes))
        held.write(b"a")
        held.writelines([b"b", b"c"])
        held.write(b"d")
        held.close()
        seen.append(list(transport.writes))
        assert transport.closed and held.get_extra_info("peername") == "info peername"
        return seen

    seen = asyncio.run(scenario())
    assert seen[0] == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
    assert seen[1] == seen[0]
    assert seen[2] == [*seen[0], b"late chunk"]
    assert seen[3] == [*seen[2], b"a", b"bc", b"d"]


class SocketTransport(FakeTransport):
    """What uvicorn's protocol asks of a TCP transport besides writing."""

    def get_extra_info(self, name: str) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def test_it_counts_the_http_requests_in_flight_over_every_connection() -> None:
    """Counted from a request's head to its response, or to its connection's loss."""

    async def scenario() -> list[int]:
        release = asyncio.Event()

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            await release.wait()
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        config = Config(app=app, lifespan="off", ws="none")
        config.load()
        state = ServerState()
        seen = [http_requests_in_flight()]
        protocols = []
        for _ in range(3):
            protocol = HttpProtocol(config=config, server_state=state, app_state={})
            protocol.connection_made(SocketTransport())  # type: ignore[arg-type]
            protocols.append(protocol)
        first, second, third = protocols
        first.data_received(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        second.data_received(b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        third.data_received(b"GET /c HTTP/1.1\r\nHost: x\r\n\r\n")
        seen.append(http_requests_in_flight())
        third.connection_lost(None)  # the client left before its answer
        seen.append(http_requests_in_flight())
        release.set()
        for _ in range(5):
            await asyncio.sleep(0)
        seen.append(http_requests_in_flight())
        first.data_received(b"GET /d HTTP/1.1\r\nHost: x\r\n\r\n")  # keep-alive: the next one
        seen.append(http_requests_in_flight())
        for _ in range(5):
            await asyncio.sleep(0)
        seen.append(http_requests_in_flight())
        for protocol in (first, second):
            protocol.connection_lost(None)
        return seen

    assert asyncio.run(scenario()) == [0, 3, 2, 0, 1, 0]


def test_it_answers_what_is_not_an_http_request_with_the_apis_json_error_and_closes() -> None:
    """httptools refuses a raw non-ASCII byte in the request target: uvicorn answered it
    with text/plain; the API's 400 shape is JSON, every answer's."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        raise AssertionError("no request reaches the application")

    config = Config(app=app, lifespan="off", ws="none")
    config.load()
    transport = SocketTransport()

    async def scenario() -> None:  # the protocol takes the running loop
        protocol = HttpProtocol(config=config, server_state=ServerState(), app_state={})
        protocol.connection_made(transport)  # type: ignore[arg-type]
        protocol.data_received(b"GET /v1/memory/working/threads?tag=\xff HTTP/1.1\r\nHost: x\r\n\r\n")
        protocol.connection_lost(None)

    asyncio.run(scenario())
    head, _, body = b"".join(transport.writes).partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"HTTP/1.1 400 Bad Request"
    assert b"content-type: application/json" in lines and b"connection: close" in lines
    assert f"content-length: {len(body)}".encode() in lines
    assert json.loads(body) == {
        "error": "Validation error",
        "issues": [{"path": [], "message": "Invalid HTTP request received.", "code": "invalid_http"}],
    }
    assert transport.closed

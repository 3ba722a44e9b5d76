"""memoryapp.server: a response's head and body leave in one socket write, in order."""

from __future__ import annotations

import asyncio
from typing import Any

from memoryapp.server import _HeldWrites


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

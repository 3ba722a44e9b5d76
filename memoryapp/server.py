"""uvicorn's HTTP protocol with a read timeout on the request head (``./dev serve --http``),
sending each response's head and body in one socket write (``_HeldWrites``), and
counting the requests in flight (``http_requests_in_flight``).

uvicorn closes a keep-alive connection that stays idle after a response
(``--timeout-keep-alive``), but a connection that sends nothing at all, or sends part of a
request line and headers and stops, is held for ever: each costs a socket and a file
descriptor until the server runs out. This protocol closes any connection whose request
head has not fully arrived ``HTTP_READ_TIMEOUT_SECONDS`` after the connection opened or
the previous request began. The body's own deadline is in memoryapp.asgi (408).
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol


class _HeldWrites:
    """The connection's transport, with each write held until the next one or the end of
    the event loop's current iteration, whichever comes first, so a response's head and
    body leave in one socket write (issue 11).

    uvicorn writes the status line and headers, then the body, separately: two send()
    calls, and on loopback the client is woken for each. The order of bytes is kept
    (every write, close, writelines and write_eof sends what is held first), and nothing
    waits past the iteration that wrote it (``loop.call_soon``). Everything else is the
    transport's own (``__getattr__``).
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport, self.loop = transport, loop
        self.held: bytes | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Hold ``data``, or send it after what is held."""
        held = self.held
        if held is None:
            self.held = bytes(data)
            self.loop.call_soon(self.flush)
        else:
            self.held = None
            self.transport.write(held + bytes(data))

    def flush(self) -> None:
        """Send what is held, if anything."""
        held = self.held
        if held is not None:
            self.held = None
            if not self.transport.is_closing():
                self.transport.write(held)

    def writelines(self, lines: Any) -> None:
        self.flush()
        self.transport.writelines(lines)

    def write_eof(self) -> None:
        self.flush()
        self.transport.write_eof()

    def close(self) -> None:
        self.flush()
        self.transport.close()


# HTTP requests of this process between their head and their response, on all
# connections (the event loop's thread alone changes it): HttpProtocol counts them.
_in_flight = 0


def http_requests_in_flight() -> int:
    """How many HTTP requests this process's HttpProtocol connections have begun (head
    read) and not yet answered; 0 under any other server. memoryapp.asgi serves a
    request inline on the event loop only when it is the only one (wsgipool.PooledWsgi)."""
    return _in_flight


def _read_timeout() -> float:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")
    from django.conf import settings

    return float(settings.HTTP_READ_TIMEOUT_SECONDS)


class HttpProtocol(HttpToolsProtocol):
    """httptools' protocol, closing connections whose request head stalls (see module).

    Each head has a deadline (``head_deadline``); one timer per connection enforces it and
    is re-armed only when it fires, so a keep-alive connection's requests set and clear
    the deadline without scheduling and cancelling a timer each (issue 11: 3-10 us of the
    event loop's time per request, with the setting read each time).
    """

    head_timer: asyncio.TimerHandle | None = None
    counted = False  # this connection's current request is in _in_flight
    head_deadline: float | None = None  # when the head now arriving must be complete
    read_timeout: float = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # Every write of the connection goes through _HeldWrites (uvicorn's protocol and
        # each request's cycle hold this transport), so the bytes keep their order.
        super().connection_made(_HeldWrites(transport, self.loop))  # type: ignore[arg-type]
        self.read_timeout = _read_timeout()
        self._head_begins()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to bytes that are not an HTTP request it can parse (a
        malformed request line or header, a raw non-ASCII byte in the target, a bad
        chunk), in the API's error shape: 400 ``{"error": "Validation error", "issues":
        [{"path": [], "message": msg, "code": "invalid_http"}]}`` as JSON, where uvicorn
        sent it as text/plain; then the connection is closed, as uvicorn closes it
        (nothing after the bad bytes can be read as a request)."""
        body = json.dumps(
            {"error": "Validation error", "issues": [{"path": [], "message": msg, "code": "invalid_http"}]}
        ).encode()
        head = [STATUS_LINE[400]]
        for name, value in self.server_state.default_headers:
            head.extend([name, b": ", value, b"\r\n"])
        head.extend(
            [
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
                b"connection: close\r\n",
                b"\r\n",
                body,
            ]
        )
        self.transport.write(b"".join(head))
        self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self.head_deadline is None:  # the first head's deadline runs from the connection
            self._head_begins()

    def on_headers_complete(self) -> None:
        self.head_deadline = None  # the timer, when it fires, finds nothing to enforce
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not before and not self.counted:  # a request began (not an upgrade)
            global _in_flight
            _in_flight += 1
            self.counted = True

    def on_response_complete(self) -> None:
        self._uncount()
        super().on_response_complete()

    def _uncount(self) -> None:
        if self.counted:
            global _in_flight
            _in_flight -= 1
            self.counted = False

    def connection_lost(self, exc: Exception | None) -> None:
        self._uncount()
        self.head_deadline = None
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None
        super().connection_lost(exc)

    def _head_begins(self) -> None:
        self.head_deadline = self.loop.time() + self.read_timeout
        if self.head_timer is None:
            self.head_timer = self.loop.call_at(self.head_deadline, self._head_check)

    def _head_check(self) -> None:
        self.head_timer = None
        deadline = self.head_deadline
        if deadline is None:  # no head arriving; the next one arms the timer again
            return
        if self.loop.time() < deadline:  # a later head, begun after the timer was set
            self.head_timer = self.loop.call_at(deadline, self._head_check)
        elif not self.transport.is_closing():
            self.transport.close()

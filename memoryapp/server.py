"""uvicorn's HTTP protocol with a read timeout on the request head (``./dev serve --http``).

uvicorn closes a keep-alive connection that stays idle after a response
(``--timeout-keep-alive``), but a connection that sends nothing at all, or sends part of a
request line and headers and stops, is held for ever: each costs a socket and a file
descriptor until the server runs out. This protocol closes any connection whose request
head has not fully arrived ``HTTP_READ_TIMEOUT_SECONDS`` after the connection opened or
the previous request began. The body's own deadline is in memoryapp.asgi (408).
"""

from __future__ import annotations

import asyncio
import os

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


def _read_timeout() -> float:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")
    from django.conf import settings

    return float(settings.HTTP_READ_TIMEOUT_SECONDS)


class HttpProtocol(HttpToolsProtocol):
    """httptools' protocol, closing connections whose request head stalls (see module)."""

    head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_timer()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self.head_timer is None:
            self._arm_head_timer()

    def on_headers_complete(self) -> None:
        self._cancel_head_timer()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def _arm_head_timer(self) -> None:
        self.head_timer = self.loop.call_later(_read_timeout(), self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_timed_out(self) -> None:
        self.head_timer = None
        if not self.transport.is_closing():
            self.transport.close()

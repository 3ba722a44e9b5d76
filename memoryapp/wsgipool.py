"""Django's WSGI handler on a pool of long-lived threads, one hand-off each way (issue 11).

memoryapp.asgi reads a request's whole body on the event loop, then calls PooledWsgi: the
request runs on a pool thread (which keeps its database connection), and the finished
response comes back to the loop in one piece. a2wsgi, used before, handed every step
across threads and waited for the loop each time (the body read, the status line, each
body chunk, the end): five round trips per request, which cost more than Django itself
for a small /v1 call (docs/decisions.md, "Hot paths"). No response of this service
streams over HTTP (chat replies stream over the WebSocket), so a response is gathered
whole in the pool thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import io
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from a2wsgi.wsgi import build_environ

Response = tuple[int, list[tuple[bytes, bytes]], bytes]


class PooledWsgi:
    """Serve a WSGI ``app`` from ``workers`` threads to ASGI requests whose body is read."""

    def __init__(self, app: Callable[..., Iterable[bytes]], workers: int) -> None:
        self.app = app
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="http")

    async def __call__(self, scope: dict[str, Any], body: bytes, send: Any) -> None:
        """Run the request described by ``scope`` with ``body`` and send its response."""
        environ: dict[str, Any] = dict(build_environ(scope, io.BytesIO(body)))  # type: ignore[arg-type]
        # The body is whole here, however it was sent (chunked too): say how long it is.
        environ["CONTENT_LENGTH"] = str(len(body))
        environ["wsgi.errors"] = sys.stderr
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        respond = functools.partial(context.run, self._respond, environ)
        status, headers, content = await loop.run_in_executor(self.executor, respond)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    def _respond(self, environ: dict[str, Any]) -> Response:
        started: list[Any] = []
        written: list[bytes] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            started[:] = [status, headers]
            return written.append

        iterable = self.app(environ, start_response)
        try:
            written.extend(iterable)
        finally:
            close = getattr(iterable, "close", None)
            if close is not None:
                close()
        status, headers = started
        encoded = [(k.strip().lower().encode("latin1"), v.strip().encode("latin1")) for k, v in headers]
        return int(status.split(" ", 1)[0]), encoded, b"".join(written)

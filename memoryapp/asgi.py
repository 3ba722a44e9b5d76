"""ASGI entry point (uvicorn or daphne): HTTP on a thread pool, WebSockets through channels.

HTTP requests run Django's synchronous handler on a bounded pool of long-lived threads
(memoryapp.wsgipool), not through Django's ASGI handler. Every view is synchronous; the ASGI
handler gives each request a fresh thread, so each request opened a new database
connection and paid several thread hand-offs: about 4 ms before any view ran
(bench/bench_working.py prints that floor). Pool threads keep their connection
(CONN_MAX_AGE on SQLite, psycopg's pool on PostgreSQL). A slow request (a compaction's
model call, a chat turn) holds one pool thread, never the event loop, so WebSockets and
other requests go on. Broadcasts from pool threads reach the channel layer through the
server loop (memoryapp.events.loop_sender).
"""

from __future__ import annotations

import asyncio
import json
import os
import types
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")
django_wsgi_app = get_wsgi_application()

from memoryapp.checks import serving_checks_pass  # noqa: E402

# Fail now, with the reason, rather than answer 500 to every request (missing manifest).
serving_checks_pass()

# Imported after Django is set up: routing pulls in consumers, which import models.
from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from memoryapp.errors import BODY_TOO_LARGE, error_body  # noqa: E402
from memoryapp.events import loop_sender  # noqa: E402
from memoryapp.fastpath import fast_path  # noqa: E402
from memoryapp.server import http_requests_in_flight  # noqa: E402
from memoryapp.wsgipool import PooledWsgi  # noqa: E402
from playground.routing import websocket_urlpatterns  # noqa: E402

# The hot routes' happy path is served before Django (memoryapp.fastpath; HTTP_FAST_PATH).
# On a SQLite file it is served on the event loop itself where nothing can wait
# (fast_path.inline; HTTP_FAST_PATH_INLINE), when no other request is in flight.
_pooled_http = PooledWsgi(
    django_wsgi_app,
    workers=int(settings.HTTP_WORKER_THREADS),
    fast=fast_path,
    inline=fast_path.inline,
    crowded=lambda: http_requests_in_flight() > 1,
)


# Largest body read at all; Django refuses anything over DATA_UPLOAD_MAX_MEMORY_SIZE with
# its own 413 (memoryapp.api), so this only stops a client from filling memory.
MAX_BODY_BYTES = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) + 1024 * 1024
# A client that starts a body and stops sending gets 408 after this long (docs/decisions.md,
# "Serving"); idle keep-alive connections are uvicorn's --timeout-keep-alive.
BODY_TIMEOUT_SECONDS = float(settings.HTTP_READ_TIMEOUT_SECONDS)
TOO_LARGE = json.dumps(error_body("Payload too large", BODY_TOO_LARGE)).encode()
TIMED_OUT = json.dumps(
    error_body(
        "Request timeout",
        [{"path": [], "message": "The request body did not arrive in time", "code": "body_timeout"}],
    )
).encode()


class _BodyTooLarge(Exception):
    pass


async def _read_body(receive: Any) -> bytes | None:
    """The whole request body, read on the event loop; None if the client went away.

    Reads every ``http.request`` message until ``more_body`` is false, so a chunked body
    (no Content-Length) arrives whole like any other. Raises _BodyTooLarge past
    MAX_BODY_BYTES (nothing more is read then), TimeoutError when the whole body has not
    arrived within BODY_TIMEOUT_SECONDS.

    Most requests arrive whole with their head, and the server's first ``receive()``
    answers without waiting (``_at_once``): such a body is returned with no timer
    armed. Arming and cancelling ``asyncio.timeout``'s timer cost 3.5-4 us of the event
    loop per request (issue 11); a receive that does wait runs under it as before, from
    the moment it first waited.
    """
    pending, message = _at_once(receive())
    if message is not None and message["type"] == "http.request" and not message.get("more_body", False):
        body: bytes = message.get("body", b"")
        if len(body) > MAX_BODY_BYTES:
            raise _BodyTooLarge()
        return body
    chunks: list[bytes] = []
    size = 0
    async with asyncio.timeout(BODY_TIMEOUT_SECONDS):
        while True:
            if message is None:
                message = await pending
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise _BodyTooLarge()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)
            pending, message = receive(), None


def _at_once(awaitable: Any) -> tuple[Any, Any]:
    """``(None, result)`` when coroutine ``awaitable`` finishes without waiting (run
    here, one step); else ``(what awaits the rest of it, None)``: the coroutine's own
    step already taken is not repeated (``_resumed``). Anything but a coroutine is
    returned as it is, to be awaited."""
    if not isinstance(awaitable, types.CoroutineType):
        return awaitable, None
    try:
        waiting_on = awaitable.send(None)
    except StopIteration as done:
        return None, done.value
    return _resumed(awaitable, waiting_on), None


@types.coroutine
def _resumed(coro: Any, waiting_on: Any) -> Any:
    """Await coroutine ``coro`` whose first step yielded ``waiting_on``, as ``await coro``
    would from there: each yield goes to the task, what the task throws in (the timeout's
    cancellation) goes to ``coro``, and its result is the result; closing it closes
    ``coro`` (``yield from``'s rules)."""
    while True:
        try:
            yield waiting_on
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                waiting_on = coro.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                waiting_on = coro.send(None)
            except StopIteration as done:
                return done.value


async def _refuse(send: Any, status: int, body: bytes) -> None:
    """Answer ``status`` with a JSON error and close the connection (the rest of the
    request was never read, so the connection cannot carry another one)."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def http_application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """HTTP through the thread pool, once the whole body has arrived.

    The body is read here, on the event loop, as Django's own ASGI handler does: a pool
    thread is taken only by a request that is ready to run, so clients that upload slowly
    (or stall mid-body) cost a coroutine each, never one of the HTTP_WORKER_THREADS, and
    are answered 408 once HTTP_READ_TIMEOUT_SECONDS pass. Also binds the live-update
    sender to this server loop.
    """
    loop_sender.bind(asyncio.get_running_loop())
    try:
        body = await _read_body(receive)
    except _BodyTooLarge:
        await _refuse(send, 413, TOO_LARGE)
        return
    except TimeoutError:
        await _refuse(send, 408, TIMED_OUT)
        return
    if body is None:  # the client left before sending its whole request
        return
    await _pooled_http(scope, body, send)


application = ProtocolTypeRouter(
    {
        "http": http_application,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)

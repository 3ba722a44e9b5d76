"""ASGI entry point (uvicorn or daphne): HTTP on a thread pool, WebSockets through channels.

HTTP requests run Django's synchronous handler on a bounded pool of long-lived threads
(a2wsgi), not through Django's ASGI handler. Every view here is synchronous; the ASGI
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
import os
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryapp.settings")
django_wsgi_app = get_wsgi_application()

# Imported after Django is set up: routing pulls in consumers, which import models.
from a2wsgi import WSGIMiddleware  # noqa: E402
from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from memoryapp.events import loop_sender  # noqa: E402
from playground.routing import websocket_urlpatterns  # noqa: E402

_pooled_http = WSGIMiddleware(
    django_wsgi_app,  # type: ignore[arg-type]  # Django's responses are iterables of bytes
    workers=int(settings.HTTP_WORKER_THREADS),
)


async def http_application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """HTTP through the thread pool; binds the event sender to this server loop first."""
    loop_sender.bind(asyncio.get_running_loop())
    await _pooled_http(scope, receive, send)  # type: ignore[arg-type]


application = ProtocolTypeRouter(
    {
        "http": http_application,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)

"""WebSocket routes of the dashboard (wired in memoryapp.asgi)."""

from __future__ import annotations

from typing import Any

from django.urls import path

from playground.consumers import ThreadConsumer

websocket_urlpatterns: list[Any] = [
    # <str:...>, not <uuid:...>: a malformed id must reach the consumer and be refused with
    # 4403 like any other, not fail routing with a 500 at the handshake.
    path("ws/threads/<str:thread_id>/", ThreadConsumer.as_asgi()),
]

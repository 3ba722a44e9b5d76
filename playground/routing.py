"""WebSocket routes of the dashboard (wired in memoryapp.asgi)."""

from __future__ import annotations

from typing import Any

from django.urls import path

from playground.consumers import ThreadConsumer

websocket_urlpatterns: list[Any] = [
    path("ws/threads/<uuid:thread_id>/", ThreadConsumer.as_asgi()),
]

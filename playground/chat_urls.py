"""Routes of the playground chat (included under ``dashboard/chat/`` in playground.urls,
so they share the ``playground`` namespace)."""

from __future__ import annotations

from django.urls import include, path

from playground import chat_views, xray_views
from playground.chat_api import chat_api

urlpatterns = [
    # The chat route (playground.chat_api), named "chat" in this namespace; ninja's root
    # view (a 404 without docs) is left out.
    path("", include([p for p in chat_api.urls[0] if getattr(p, "name", None) == "chat"])),
    path("turns/<int:turn_id>/", chat_views.turn_context, name="turn-context"),
    path("turns/<int:turn_id>/replay/", xray_views.turn_replay, name="turn-replay"),
]

"""Routes of the playground chat (included under ``dashboard/chat/`` in playground.urls,
so they share the ``playground`` namespace)."""

from __future__ import annotations

from django.urls import path

from playground import chat_views

urlpatterns = [
    path("threads/<uuid:thread_id>/chat", chat_views.chat, name="chat"),
    path("turns/<int:turn_id>/", chat_views.turn_context, name="turn-context"),
]

"""App config for the dashboard and playground."""

from __future__ import annotations

from django.apps import AppConfig


class PlaygroundConfig(AppConfig):
    """Dashboard pages, the playground chat, and the live-update WebSocket."""

    name = "playground"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from playground import signals

        signals.connect()

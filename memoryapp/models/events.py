"""Live events on their way from a process without WebSockets to the server (memoryapp.relay)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class RelayedEvent(models.Model):
    """One channel-layer message sent by a worker or command, for the servers to forward.

    Rows are short-lived: every server polls for ids above the last it saw and forwards
    them to its own channel layer; writers delete rows older than a minute.
    """

    group = models.CharField(max_length=200)
    payload = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    def __str__(self) -> str:
        return f"{self.group} #{self.pk}"

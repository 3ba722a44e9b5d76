"""Live events across processes without Redis: a table the servers poll.

The default setup's channel layer (in-memory) lives inside one process, but background
jobs run in another (``manage.py db_worker``), and their events (a compaction's new
summary, ``job.changed``) must still reach the pages the server holds open. So while a
job runs in the worker (``relaying()``, entered by memoryapp.jobs.run_job), each event
is written as a RelayedEvent row, and every server process polls that table every
MEMORY_EVENT_RELAY_POLL_SECONDS for rows above the last id it saw and sends them into its
own layer. With REDIS_URL the layer crosses processes itself and none of this runs.
Why this and not polling pages or a database channel layer: docs/decisions.md,
"Background jobs".
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta
from typing import Any

from channels.layers import BaseChannelLayer, InMemoryChannelLayer
from django.conf import settings
from django.db import close_old_connections, connection
from django.db.models import Max
from django.utils import timezone

from memoryapp.models import RelayedEvent

logger = logging.getLogger(__name__)

# Rows older than this are deleted by the next writer: a server that was down that long
# has reloaded its pages' data anyway (the pages refresh when their socket reconnects).
KEEP = timedelta(seconds=60)
BATCH = 500

Deliver = Callable[[str, dict[str, Any]], bool]


_relaying: ContextVar[bool] = ContextVar("memory_event_relaying", default=False)


@contextmanager
def relaying() -> Iterator[None]:
    """Within this block, events go through the table when the layer is process-local:
    the code runs in a process that serves no WebSockets (a job in the db worker)."""
    token = _relaying.set(True)
    try:
        yield
    finally:
        _relaying.reset(token)


def _process_local(layer: BaseChannelLayer | None) -> bool:
    return bool(settings.MEMORY_EVENT_RELAY) and isinstance(layer, InMemoryChannelLayer)


def relay_wanted(layer: BaseChannelLayer | None) -> bool:
    """Whether an event sent now must go through the table: inside ``relaying()``, with a
    process-local layer, and the relay on (MEMORY_EVENT_RELAY)."""
    return _relaying.get() and _process_local(layer)


def relay_store(group: str, payload: dict[str, Any]) -> None:
    """Write one event for the servers to forward (its own autocommit statement) and
    delete rows past KEEP. Best-effort, like every broadcast: a failure is logged."""
    now = timezone.now()
    try:
        RelayedEvent.objects.create(group=group, payload=payload, created_at=now)
        RelayedEvent.objects.filter(created_at__lt=now - KEEP).delete()
    except Exception:
        logger.exception("relaying %s to %s failed", payload.get("event"), group)


def relay_fetch(after: int) -> list[RelayedEvent]:
    """The relayed events with an id above ``after``, oldest first (at most BATCH)."""
    return list(RelayedEvent.objects.filter(id__gt=after).order_by("id")[:BATCH])


def relay_last_id() -> int:
    """The newest relayed event's id (0 when there is none): a new poller starts there."""
    return int(RelayedEvent.objects.aggregate(last=Max("id"))["last"] or 0)


class _Poller(threading.Thread):
    """Forwards relayed events to ``deliver`` until ``loop`` closes.

    A thread of its own (with its own database connection), never the event loop: a
    query must not stall WebSockets. ``deliver`` (events.loop_sender.submit) hands each
    event to the server loop in order.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, deliver: Deliver) -> None:
        super().__init__(name="event-relay", daemon=True)
        self.loop = loop
        self.deliver = deliver
        self.ready = threading.Event()  # set once it knows where to start

    def run(self) -> None:
        interval = float(settings.MEMORY_EVENT_RELAY_POLL_SECONDS)
        cursor: int | None = None
        stop = threading.Event()
        while not self.loop.is_closed():
            try:
                if cursor is None:
                    cursor = relay_last_id()
                    self.ready.set()
                for row in relay_fetch(cursor):
                    self.deliver(row.group, row.payload)
                    cursor = row.id
            except Exception:
                logger.exception("polling relayed events failed; trying again")
                close_old_connections()
            stop.wait(interval)
        connection.close()


_pollers: dict[int, _Poller] = {}
_lock = threading.Lock()


def relay_poller_start(*, loop: asyncio.AbstractEventLoop, deliver: Deliver) -> bool:
    """Start forwarding relayed events to ``deliver`` for as long as ``loop`` runs (once
    per loop); False when the relay is not wanted (Redis, or MEMORY_EVENT_RELAY off)."""
    from channels.layers import get_channel_layer

    if not _process_local(get_channel_layer()):
        return False
    with _lock:
        poller = _pollers.get(id(loop))
        if poller is not None and poller.loop is loop and poller.is_alive():
            return True
        poller = _Poller(loop, deliver)
        _pollers[id(loop)] = poller
        poller.start()
    return True

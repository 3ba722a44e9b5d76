"""The one place that broadcasts live events to channel groups (STYLE.md: side effects in one place).

Every event goes to the group of its thread, ``thread.<uuid>``; the dashboard's
WebSocket consumer (playground.consumers) joins that group and forwards events to the
browser. Events are sent after the surrounding transaction commits, so a listener never
sees a row that is later rolled back. A broadcast that fails (Redis down) is logged and
never fails the write that caused it.

Nothing is done for listeners that are not there: with the in-process channel layer (the
default) a send to a group no consumer joined is skipped before its event dict is built.
With Redis (REDIS_URL) listeners may be in any process, so every event is sent: from
the server's pool threads through the server loop (``loop_sender``), elsewhere (a
management command, a worker) with async_to_sync.

Event shape: ``{"type": "thread.event", "event": <name>, "threadId": str, "data": {...}}``
with names ``message.appended``, ``thread.compacted``, ``compaction.failed``,
``thread.changed``, ``thread.deleted``, ``chat.delta``, ``chat.done``, ``chat.error``,
``job.changed``; ``dataset.changed`` goes to a dataset's group (``dataset_group``). Events that jobs send in the db worker travel through memoryapp.relay
when the layer is process-local (no REDIS_URL).
playground.consumers forwards each to the browser as ``{"event", "threadId", "data"}``.
``access.recheck`` goes to a session's or a user's group (access_changed) instead.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction

from memoryapp import relay, serializers

if TYPE_CHECKING:
    from memoryapp.models import Message, Thread
    from memoryapp.results import CompactionResult

logger = logging.getLogger(__name__)


def thread_group(thread_id: uuid.UUID | str) -> str:
    """The channel group name of a thread."""
    return f"thread.{thread_id}"


class _LoopSender:
    """Hands broadcasts from worker threads to the server's event loop, in order.

    When HTTP requests run on a thread pool (memoryapp.asgi), the channel layer lives on
    the server's event loop, not in the request's thread. Sending from the thread with
    async_to_sync would start a new event loop per event (and the in-memory layer's queues
    must only be touched from their own loop), so events are queued to one task on the
    server loop that sends them one by one: the request never waits for the send, and
    events of one process keep their order (a chat reply's pieces arrive in sequence).
    """

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.queue: asyncio.Queue[tuple[str, dict[str, Any]]] | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Use ``loop`` (the running server loop) from now on; idempotent."""
        if self.loop is loop:
            return
        self.loop = loop
        self.queue = asyncio.Queue()
        loop.create_task(self._drain(self.queue))
        # Without Redis, events from the db worker reach this server through the relay.
        relay.relay_poller_start(loop=loop, deliver=self.submit)

    async def _drain(self, queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> None:
        while True:
            group, payload = await queue.get()
            layer = get_channel_layer()
            if layer is None:
                continue
            try:
                await layer.group_send(group, payload)
            except Exception:  # best-effort, as below
                logger.exception("broadcast of %s to %s failed", payload.get("event"), group)

    def submit(self, group: str, payload: dict[str, Any]) -> bool:
        """Queue the event for the bound server loop; False if none is bound (then the
        caller sends it itself, as in tests and management commands)."""
        loop, queue = self.loop, self.queue
        if loop is None or queue is None or loop.is_closed():
            return False
        loop.call_soon_threadsafe(queue.put_nowait, (group, payload))
        return True


loop_sender = _LoopSender()


def _nobody_listens(layer: Any, group: str) -> bool:
    """True when no consumer can receive a send to ``group``, so it can be skipped.

    Only provable for the in-process layer (channels' InMemoryChannelLayer, the default
    without REDIS_URL): its consumers are in this process, and its ``groups`` holds every
    channel that joined. A layer that crosses processes (Redis) may have listeners
    elsewhere, so its sends always go out.
    """
    return isinstance(layer, InMemoryChannelLayer) and not layer.groups.get(group)


def _payload(
    thread_id: uuid.UUID | str | None, event: str, build: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    thread = None if thread_id is None else str(thread_id)
    return {"type": "thread.event", "event": event, "threadId": thread, "data": build()}


def dataset_group(project_id: int, dataset: str) -> str:
    """The channel group of one dataset of a project (group names are ASCII and short,
    dataset names are neither, hence the hash)."""
    digest = hashlib.sha256(f"{project_id}\0{dataset}".encode()).hexdigest()[:40]
    return f"dataset.{digest}"


def session_group(session_key: str) -> str:
    """The channel group of the live sockets opened with one login session."""
    return f"session.{session_key}"


def user_group(user_id: int) -> str:
    """The channel group of every live socket of one user."""
    return f"user.{user_id}"


def _group_send(group: str, build: Callable[[], dict[str, Any]]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    if relay.relay_wanted(layer):
        # Sent by a job in the db worker: this process's own layer reaches nobody, the
        # servers' layers may, so the event goes to them through the database.
        relay.relay_store(group, build())
        return
    if _nobody_listens(layer, group):
        return  # no payload, no loop hand-off, no async_to_sync for nobody
    payload = build()
    if loop_sender.submit(group, payload):
        return
    try:
        async_to_sync(layer.group_send)(group, payload)
    except Exception:  # a live update is best-effort; the write already committed
        logger.exception("broadcast of %s to %s failed", payload.get("event", payload["type"]), group)


def _send_now(
    thread_id: uuid.UUID | str | None,
    event: str,
    build: Callable[[], dict[str, Any]],
    group: str | None = None,
) -> None:
    _group_send(group or thread_group(str(thread_id)), lambda: _payload(thread_id, event, build))


def broadcast(thread_id: uuid.UUID | str, event: str, build: Callable[[], dict[str, Any]]) -> None:
    """Send ``event`` to the thread's group once the current transaction commits.

    ``build`` makes the event's ``data`` and is called only if someone can listen.
    """
    transaction.on_commit(lambda: _send_now(thread_id, event, build))


def message_appended(message: Message) -> None:
    """A message (or summary) row was stored."""
    broadcast(message.thread_id, "message.appended", lambda: serializers.message_to_dict(message))


def thread_compacted(result: CompactionResult) -> None:
    """A compaction run committed; the event carries the compact response body."""
    broadcast(
        result.summary.thread_id,
        "thread.compacted",
        lambda: serializers.compaction_to_dict(result),
    )


def compaction_failed(thread_id: uuid.UUID, error: str) -> None:
    """A compaction run's model call failed; nothing was changed."""
    broadcast(thread_id, "compaction.failed", lambda: {"error": error})


def thread_changed(thread: Thread) -> None:
    """Thread settings (dataset, tags, metadata, threshold) changed."""
    data = serializers.thread_to_dict(thread)  # now: the caller may change ``thread`` later
    broadcast(thread.pk, "thread.changed", lambda: data)


def thread_deleted(thread_id: uuid.UUID) -> None:
    """The thread and its messages were deleted."""
    broadcast(thread_id, "thread.deleted", dict)


def chat_stream(thread_id: uuid.UUID | str, event: str, data: dict[str, Any]) -> None:
    """Stream a playground chat event (``chat.delta`` / ``chat.done`` / ``chat.error``) now.

    Not deferred to commit: the reply streams while the model is still generating, before
    anything is stored.
    """
    _send_now(thread_id, event, lambda: data)


def job_changed(thread_id: uuid.UUID, job: dict[str, Any]) -> None:
    """A background job of the thread changed status; ``job`` is its wire shape
    (memoryapp.serializers.job_to_dict)."""
    broadcast(thread_id, "job.changed", lambda: job)


def dataset_changed(*, project_id: int, dataset: str, thread_id: uuid.UUID | None = None) -> None:
    """The memory of a dataset changed, once the current transaction commits: sent to the
    dataset's group, which the dashboard's dataset page listens to.

    Every writer of a dataset's memory calls it: an episode and its facts written by a
    thread's job (``thread_id`` that thread), a fact deleted, an invalidation confirmed or
    restored (``thread_id`` None: the frame's ``threadId`` is null)."""
    group = dataset_group(project_id, dataset)
    transaction.on_commit(lambda: _send_now(thread_id, "dataset.changed", dict, group=group))


def _recheck_message() -> dict[str, Any]:
    return {"type": "access.recheck"}


def access_changed(*, session_key: str | None = None, user_id: int | None = None) -> None:
    """Once the current transaction commits, make the live sockets of a login session (or
    of every session of a user) re-check that they may still listen, and close if not.

    Sent when a session ends (logout, flush, expiry clean-up) and when a user or one of
    their memberships changes (password, removal, project deletion); see
    playground.consumers for the re-check and docs/decisions.md for why.
    """
    groups = [session_group(session_key)] if session_key else []
    if user_id is not None:
        groups.append(user_group(user_id))
    for group in groups:
        transaction.on_commit(functools.partial(_group_send, group, _recheck_message))

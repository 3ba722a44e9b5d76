"""The live-update WebSocket of a thread (issue 4 item 3; DESIGN.md section 3).

ws://host/ws/threads/<uuid>/?projectId=<pid>, authenticated by the dashboard's session
(AuthMiddlewareStack in memoryapp.asgi). Only a logged-in member of the project, for a
thread of that project, is subscribed; anyone else is accepted and at once closed with
code 4403, so the browser sees the code (a refusal before the handshake would reach it
only as 1006) and knows not to retry.

Once subscribed, the consumer forwards every event memoryapp.events sends to the
thread's group as one JSON frame ``{"event", "threadId", "data"}``.
"""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from memoryapp import events
from memoryapp.models import Membership, Thread

CLOSE_FORBIDDEN = 4403


def may_subscribe(user: Any, thread_id: uuid.UUID | str, project_id: str | None) -> bool:
    """Whether ``user`` is a logged-in member of project ``project_id`` and
    ``thread_id`` (a UUID, or its text from the URL) is one of its threads (one query)."""
    if user is None or not user.is_authenticated:
        return False
    try:
        thread_id = uuid.UUID(str(thread_id))
    except ValueError:
        return False
    if not project_id or not project_id.isdigit() or len(project_id) > 18:
        return False
    return Thread.objects.filter(
        pk=thread_id, project_id=int(project_id), project__members=user
    ).exists()


class ThreadConsumer(AsyncJsonWebsocketConsumer):
    """Forwards a thread's live events to one browser page."""

    group: str | None = None

    async def connect(self) -> None:
        thread_id: str = str(self.scope["url_route"]["kwargs"]["thread_id"])
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        project_id = (query.get("projectId") or [None])[0]
        allowed = await database_sync_to_async(may_subscribe)(
            self.scope.get("user"), thread_id, project_id
        )
        if not allowed:
            await self.accept()
            await self.close(code=CLOSE_FORBIDDEN)
            return
        # Join before accepting, so no event between the two is missed.
        self.group = events.thread_group(uuid.UUID(thread_id))
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """The socket is one-way: frames from the browser are ignored."""

    async def thread_event(self, message: dict[str, Any]) -> None:
        """A ``thread.event`` from memoryapp.events: forward it as one JSON frame."""
        await self.send_json(
            {"event": message["event"], "threadId": message["threadId"], "data": message["data"]}
        )


def may_watch_dataset(user: Any, project_id: str | None, dataset: str | None) -> bool:
    """Whether ``user`` is a logged-in member of project ``project_id`` and names a
    ``dataset`` (any name: a dataset is a scope of the project, not a row)."""
    if user is None or not user.is_authenticated or not dataset or len(dataset) > 200:
        return False
    if not project_id or not project_id.isdigit() or len(project_id) > 18:
        return False
    return Membership.objects.filter(project_id=int(project_id), user=user).exists()


class DatasetConsumer(AsyncJsonWebsocketConsumer):
    """Forwards a dataset's events (``dataset.changed``) to its dashboard page:
    ws://host/ws/datasets/?projectId=<pid>&dataset=<name>; refused like ThreadConsumer."""

    group: str | None = None

    async def connect(self) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode("utf-8", "replace"))
        project_id = (query.get("projectId") or [None])[0]
        dataset = (query.get("dataset") or [None])[0]
        allowed = await database_sync_to_async(may_watch_dataset)(
            self.scope.get("user"), project_id, dataset
        )
        if not allowed or project_id is None or dataset is None:
            await self.accept()
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.group = events.dataset_group(int(project_id), dataset)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """The socket is one-way: frames from the browser are ignored."""

    async def thread_event(self, message: dict[str, Any]) -> None:
        """An event of memoryapp.events: forward it as one JSON frame."""
        await self.send_json(
            {"event": message["event"], "threadId": message["threadId"], "data": message["data"]}
        )

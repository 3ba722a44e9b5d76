"""The live-update WebSocket of a thread (issue 4 item 3; issue 7 item 1).

ws://host/ws/threads/<uuid>/?projectId=<pid>, authenticated by the dashboard's session
(AuthMiddlewareStack in memoryapp.asgi). Only a logged-in member of the project, for a
thread of that project, is subscribed; anyone else is accepted and at once closed with
code 4403, so the browser sees the code (a refusal before the handshake would reach it
only as 1006) and knows not to retry.

Once subscribed, the consumer forwards every event memoryapp.events sends to the
thread's group as one JSON frame ``{"event", "threadId", "data"}``, for as long as its
session is a member's. It also joins its session's and its user's groups: on
``access.recheck`` (memoryapp.events.access_changed: logout or any end of the session, a
password change, a membership removed, a project deleted) and when the session's expiry
date passes, it checks its session and membership again and closes with 4401 (signed
out) or 4403 (no longer a member) before anything else is sent.
"""

from __future__ import annotations

import asyncio
import uuid
from importlib import import_module
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.contrib import auth
from django.http import HttpRequest
from django.utils import timezone

from memoryapp import events
from memoryapp.models import Membership, Thread

CLOSE_FORBIDDEN = 4403
CLOSE_SIGNED_OUT = 4401


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


def session_access(
    session_key: str | None, user_id: int, thread_id: str, project_id: str | None
) -> tuple[int | None, float | None]:
    """Whether session ``session_key`` may still listen to the thread, read fresh.

    Returns ``(close_code, seconds_left)``: close_code is CLOSE_SIGNED_OUT when the
    session is gone, expired, or no longer logs in user ``user_id`` (a password change
    makes its hash stale, as Django's own request check does), CLOSE_FORBIDDEN when the
    user is no longer a member of the thread's project, else None; seconds_left is the
    time until the session expires (None when it is closed).
    """
    if not session_key:
        return CLOSE_SIGNED_OUT, None
    request = HttpRequest()
    request.session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user = auth.get_user(request)  # anonymous for a missing, expired or stale session
    if not user.is_authenticated or user.pk != user_id:
        return CLOSE_SIGNED_OUT, None
    if not may_subscribe(user, thread_id, project_id):
        return CLOSE_FORBIDDEN, None
    expiry = request.session.get_expiry_date()
    return None, max(0.0, (expiry - timezone.now()).total_seconds())


class ThreadConsumer(AsyncJsonWebsocketConsumer):
    """Forwards a thread's live events to one browser page while its session may see them."""

    groups_joined: list[str]
    closed = False
    expiry_timer: asyncio.TimerHandle | None = None

    async def connect(self) -> None:
        self.groups_joined = []
        self.thread_id: str = str(self.scope["url_route"]["kwargs"]["thread_id"])
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        self.project_id: str | None = (query.get("projectId") or [None])[0]
        user = self.scope.get("user")
        allowed = await database_sync_to_async(may_subscribe)(user, self.thread_id, self.project_id)
        session_key = getattr(self.scope.get("session"), "session_key", None)
        if not allowed or not session_key:
            await self.accept()
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.user_id: int = user.pk
        self.session_key: str = session_key
        # Join before accepting, so no event between the two is missed.
        for group in (
            events.thread_group(uuid.UUID(self.thread_id)),
            events.session_group(session_key),
            events.user_group(self.user_id),
        ):
            await self.channel_layer.group_add(group, self.channel_name)
            self.groups_joined.append(group)
        await self.accept()
        # Access may have gone between the first check and joining the groups.
        await self.access_recheck({})

    async def disconnect(self, code: int) -> None:
        self.closed = True
        if self.expiry_timer is not None:
            self.expiry_timer.cancel()
        for group in self.groups_joined:
            await self.channel_layer.group_discard(group, self.channel_name)
        self.groups_joined = []

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """The socket is one-way: frames from the browser are ignored."""

    async def thread_event(self, message: dict[str, Any]) -> None:
        """A ``thread.event`` from memoryapp.events: forward it as one JSON frame."""
        if self.closed:
            return
        await self.send_json(
            {"event": message["event"], "threadId": message["threadId"], "data": message["data"]}
        )

    async def access_recheck(self, message: dict[str, Any]) -> None:
        """An ``access.recheck`` (or the session's expiry): close unless still allowed.

        Messages are handled one at a time, so no event queued after the recheck is
        forwarded before it has decided.
        """
        if self.closed:
            return
        code, seconds_left = await database_sync_to_async(session_access)(
            self.session_key, self.user_id, self.thread_id, self.project_id
        )
        if code is not None:
            self.closed = True
            await self.close(code=code)
            return
        if self.expiry_timer is not None:
            self.expiry_timer.cancel()
        loop = asyncio.get_running_loop()
        self.expiry_timer = loop.call_later(
            (seconds_left or 0) + 1, self._on_expiry, loop
        )

    def _on_expiry(self, loop: asyncio.AbstractEventLoop) -> None:
        # Through the channel layer, so it is handled in turn with the events.
        self.expiry_timer = None
        loop.create_task(
            self.channel_layer.send(self.channel_name, {"type": "access.recheck"})
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

"""The live-update WebSockets of a thread and of a dataset's page (issue 4 item 3;
issue 8 item 6; issue 7 item 1).

ws://host/ws/threads/<uuid>/?projectId=<pid> and
ws://host/ws/datasets/?projectId=<pid>&dataset=<name>, authenticated by the dashboard's
session (AuthMiddlewareStack in memoryapp.asgi). Only a logged-in member of the project
(for a thread, of the thread's project) is subscribed; anyone else is accepted and at
once closed with code 4403, so the browser sees the code (a refusal before the
handshake would reach it only as 1006) and knows not to retry.

Both are a SessionBoundConsumer: once subscribed, it forwards every event
memoryapp.events sends to its group as one JSON frame ``{"event", "threadId", "data"}``,
for as long as its session is a member's. A thread's socket opened with ``&fragments=1``
(the thread page and the playground) also gets the thread's messages and stats panels,
rendered once for all such sockets of the process after a burst of events
(``thread.fragments``, playground.fragments), so open tabs do not each refetch them.
It also joins its session's and its user's groups: on
``access.recheck`` (memoryapp.events.access_changed: logout or any end of the session, a
password change, a membership removed, a project deleted) and when the session's expiry
date passes, it checks its session and membership again and closes with 4401 (signed
out) or 4403 (no longer a member) before anything else is sent.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
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
from playground import fragments
from playground.access import parse_project_id, parse_thread_id

CLOSE_FORBIDDEN = 4403
CLOSE_SIGNED_OUT = 4401


def may_subscribe(user: Any, thread_id: uuid.UUID | str, project_id: str | None) -> bool:
    """Whether ``user`` is a logged-in member of project ``project_id`` and
    ``thread_id`` (a UUID, or its text from the URL) is one of its threads (one query).

    Ids are read as every dashboard view reads them (playground.access): a thread id not
    in the canonical form (braces, ``urn:uuid:``, no hyphens) or a ``projectId`` not
    written as the dashboard writes one (a sign, a leading zero, non-ASCII digits) is no
    thread and no project, so the answer is no, as for a thread that does not exist."""
    if user is None or not user.is_authenticated:
        return False
    pk, project = parse_thread_id(thread_id), parse_project_id(project_id)
    if pk is None or project is None:
        return False
    return Thread.objects.filter(pk=pk, project_id=project, project__members=user).exists()


def session_access(
    session_key: str | None, user_id: int, may_listen: Callable[[Any], bool]
) -> tuple[int | None, float | None]:
    """Whether session ``session_key`` may still listen, read fresh.

    Returns ``(close_code, seconds_left)``: close_code is CLOSE_SIGNED_OUT when the
    session is gone, expired, or no longer logs in user ``user_id`` (a password change
    makes its hash stale, as Django's own request check does), CLOSE_FORBIDDEN when
    ``may_listen(user)`` (the socket's own membership check) is now false, else None;
    seconds_left is the time until the session expires (None when it is closed).
    """
    if not session_key:
        return CLOSE_SIGNED_OUT, None
    request = HttpRequest()
    request.session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user = auth.get_user(request)  # anonymous for a missing, expired or stale session
    if not user.is_authenticated or user.pk != user_id:
        return CLOSE_SIGNED_OUT, None
    if not may_listen(user):
        return CLOSE_FORBIDDEN, None
    expiry = request.session.get_expiry_date()
    return None, max(0.0, (expiry - timezone.now()).total_seconds())


class SessionBoundConsumer(AsyncJsonWebsocketConsumer):
    """A one-way socket that forwards the events of its groups to one browser page while
    its session may see them (issue 7 item 1).

    A subclass says what it listens to: ``may_listen(user)`` (run in a database thread,
    at the connect and at every re-check) and ``content_groups()`` (the groups whose
    events it forwards); ``self.query`` holds the parsed query string. Refused at the
    connect: accepted and closed at once with CLOSE_FORBIDDEN. Subscribed: it also joins
    its session's and its user's groups and re-checks on ``access.recheck`` and when
    the session's expiry passes, closing with CLOSE_SIGNED_OUT or CLOSE_FORBIDDEN.
    """

    groups_joined: list[str]
    closed = False
    expiry_timer: asyncio.TimerHandle | None = None

    def may_listen(self, user: Any) -> bool:
        """Whether ``user`` may listen to this socket's events (one or two queries)."""
        raise NotImplementedError

    def content_groups(self) -> list[str]:
        """The groups whose events this socket forwards (called once may_listen said yes)."""
        raise NotImplementedError

    def query_param(self, name: str) -> str | None:
        """The first value of ``name`` in the socket URL's query string, or None."""
        return (self.query.get(name) or [None])[0]

    async def connect(self) -> None:
        self.groups_joined = []
        self.query = parse_qs(self.scope.get("query_string", b"").decode("utf-8", "replace"))
        user = self.scope.get("user")
        allowed = await database_sync_to_async(self.may_listen)(user)
        session_key = getattr(self.scope.get("session"), "session_key", None)
        if not allowed or not session_key:
            await self.accept()
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.user_id: int = user.pk
        self.session_key: str = session_key
        # Join before accepting, so no event between the two is missed.
        for group in (
            *self.content_groups(),
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
            self.session_key, self.user_id, self.may_listen
        )
        if code is not None:
            self.closed = True
            await self.close(code=code)
            return
        if self.expiry_timer is not None:
            self.expiry_timer.cancel()
        loop = asyncio.get_running_loop()
        self.expiry_timer = loop.call_later((seconds_left or 0) + 1, self._on_expiry, loop)

    def _on_expiry(self, loop: asyncio.AbstractEventLoop) -> None:
        # Through the channel layer, so it is handled in turn with the events.
        self.expiry_timer = None
        loop.create_task(self.channel_layer.send(self.channel_name, {"type": "access.recheck"}))


class ThreadConsumer(SessionBoundConsumer):
    """A thread's live events (ws://host/ws/threads/<uuid>/?projectId=<pid>) for a member
    of the thread's project."""

    @property
    def url_thread_id(self) -> str:
        """The thread id as the URL gives it (any text: may_subscribe checks it)."""
        return str(self.scope["url_route"]["kwargs"]["thread_id"])

    @property
    def thread_id(self) -> str:
        """The thread id in its one text form (lower case), once may_listen said yes: an
        upper-case id in the URL names the same thread, group and panels' frame."""
        pk = parse_thread_id(self.url_thread_id)
        assert pk is not None  # may_listen said yes
        return str(pk)

    def may_listen(self, user: Any) -> bool:
        """may_subscribe for the URL's thread and ``projectId``."""
        return may_subscribe(user, self.url_thread_id, self.query_param("projectId"))

    def content_groups(self) -> list[str]:
        """The thread's group."""
        return [events.thread_group(uuid.UUID(self.thread_id))]

    fragments_subscribed = False

    async def connect(self) -> None:
        await super().connect()
        # Messages are handled only once connect returns: no event is missed here.
        if self.groups_joined and not self.closed and self.query_param("fragments") == "1":
            fragments.hub.subscribe(self.thread_id, self.channel_name)
            self.fragments_subscribed = True

    async def disconnect(self, code: int) -> None:
        if self.fragments_subscribed:
            fragments.hub.unsubscribe(self.thread_id, self.channel_name)
            self.fragments_subscribed = False
        await super().disconnect(code)

    async def thread_event(self, message: dict[str, Any]) -> None:
        """Forward the event; one that changes the panels asks the hub for them."""
        await super().thread_event(message)
        if self.fragments_subscribed and message["event"] in fragments.FRAGMENT_EVENTS:
            fragments.hub.poke(self.thread_id)

    async def thread_fragments(self, message: dict[str, Any]) -> None:
        """The thread's panels were rendered (playground.fragments): send the newest
        frame, encoded once for every socket of the thread."""
        frame = fragments.hub.frame(self.thread_id)
        if not self.closed and frame is not None:
            await self.send(text_data=frame)


def may_watch_dataset(user: Any, project_id: str | None, dataset: str | None) -> bool:
    """Whether ``user`` is a logged-in member of project ``project_id`` and names a
    ``dataset`` (any name: a dataset is a scope of the project, not a row)."""
    if user is None or not user.is_authenticated or not dataset or len(dataset) > 200:
        return False
    project = parse_project_id(project_id)
    if project is None:
        return False
    return Membership.objects.filter(project_id=project, user=user).exists()


class DatasetConsumer(SessionBoundConsumer):
    """A dataset's events (``dataset.changed``) for its dashboard page:
    ws://host/ws/datasets/?projectId=<pid>&dataset=<name>, for a member of the project."""

    def may_listen(self, user: Any) -> bool:
        """may_watch_dataset for the URL's ``projectId`` and ``dataset``."""
        return may_watch_dataset(user, self.query_param("projectId"), self.query_param("dataset"))

    def content_groups(self) -> list[str]:
        """The dataset's group."""
        project_id, dataset = parse_project_id(self.query_param("projectId")), self.query_param("dataset")
        assert project_id is not None and dataset is not None  # may_listen said yes
        return [events.dataset_group(project_id, dataset)]

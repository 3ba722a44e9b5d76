"""A thread page's live panels rendered once per burst of events, not once per open tab
(issue 10 item 5).

Before, every open thread page (or playground) refetched its messages and stats over HTTP
after each event: with N tabs a turn cost 2N requests, each authenticating its session and
rendering the same HTML. Now the sockets that ask for it (``?fragments=1``, the thread page
and the playground) are subscribed here, in the process that holds them; an event that
changes the panels makes the hub render the newest messages page and the stats panel once,
FRAGMENT_DELAY_MS after the first event of a burst (a chat turn's two appends and its
``chat.done`` fall in one window), and hands each subscribed socket the same pre-encoded
frame ``{"event": "thread.fragments", "threadId", "data": {"messages": html, "stats": html}}``.

The frame goes through each consumer's own channel (a ``thread.fragments`` message naming
no HTML), so it is handled in turn with ``access.recheck``: a socket that has just lost
access closes before it could send it. The HTML is the same the HTMX refresh renders
(``playground/thread.html#messages`` and ``#stats``; Django's templates escape every
value); neither depends on who is looking (no CSRF token, no user), which is what lets one
rendering serve every tab. With Redis each server process renders once for the sockets it
holds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.template.loader import render_to_string

from memoryapp import serializers, working
from memoryapp.models import Thread
from playground import selectors
from playground.pages import project_url

logger = logging.getLogger(__name__)

# Events after which the messages or stats panel may read differently.
FRAGMENT_EVENTS = frozenset(
    {
        "message.appended",
        "thread.compacted",
        "thread.changed",
        "compaction.failed",
        "chat.done",
        "chat.error",
    }
)


def _duration_text(stats: dict[str, Any]) -> str:
    """``sessionDuration`` as people read it: ``"2 h 5 min"``, ``"3 min 20 s"``, ``"12 s"``."""
    duration = stats.get("sessionDuration")
    if not duration:
        return ""
    seconds = int(duration["seconds"])
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def stats_context(thread: Thread) -> dict[str, Any]:
    """The template context of a thread's stats panel (``thread.html#stats``)."""
    counted = working.thread_stats(thread=thread)
    stats = serializers.stats_to_dict(counted)
    usage = counted.token_usage
    return {
        "stats": stats,
        "token_average": None
        if usage is None
        else selectors.thread_token_average(thread=thread, average=usage.average_per_message),
        "in_context": counted.context,
        "duration_text": _duration_text(stats),
        "chat": selectors.thread_chat_totals(thread=thread),
        "turns_url": project_url("playground:thread-turns", thread.project, thread.pk),
        "history_url": project_url("playground:thread-compactions", thread.project, thread.pk),
    }


def render_thread_fragments(thread_id: uuid.UUID | str) -> str | None:
    """The ``thread.fragments`` frame of a thread as JSON text, or None if it is gone.

    ``data.messages`` is the newest page of ``thread.html#messages`` (rendered without
    ``hx-push-url``; the thread page adds it, live.js), ``data.stats`` the stats panel.
    """
    thread = Thread.objects.select_related("project").filter(pk=thread_id).first()
    if thread is None:
        return None
    project = thread.project
    context = {
        "project": project,
        "thread": thread,
        "timeline": selectors.thread_timeline(thread=thread, before=None),
        "thread_url": project_url("playground:thread", project, thread.pk),
        "push_url": False,
        **stats_context(thread),
    }
    data = {
        "messages": render_to_string("playground/thread.html#messages", context),
        "stats": render_to_string("playground/thread.html#stats", context),
    }
    return json.dumps({"event": "thread.fragments", "threadId": str(thread.pk), "data": data})


class FragmentHub:
    """The sockets of this process that take rendered panels, by thread, and one
    rendering task per thread with pending events."""

    def __init__(self) -> None:
        self.subscribers: dict[str, set[str]] = {}
        self.frames: dict[str, str] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.dirty: set[str] = set()

    def subscribe(self, thread_id: str, channel: str) -> None:
        """Send ``thread.fragments`` messages for ``thread_id`` to consumer ``channel``."""
        self.subscribers.setdefault(thread_id, set()).add(channel)

    def unsubscribe(self, thread_id: str, channel: str) -> None:
        """Stop; the thread's last frame is forgotten with its last subscriber."""
        channels = self.subscribers.get(thread_id)
        if channels is None:
            return
        channels.discard(channel)
        if not channels:
            del self.subscribers[thread_id]
            self.frames.pop(thread_id, None)

    def frame(self, thread_id: str) -> str | None:
        """The newest rendered frame of the thread (JSON text), None before the first."""
        return self.frames.get(thread_id)

    def poke(self, thread_id: str) -> None:
        """An event that changes the panels reached a subscriber: render once the burst's
        window has passed. Every subscriber pokes for the same event; one task serves all,
        and an event during a rendering makes it render once more afterwards."""
        if thread_id not in self.subscribers:
            return
        loop = asyncio.get_running_loop()
        task = self.tasks.get(thread_id)
        if task is not None and not task.done() and task.get_loop() is loop:
            self.dirty.add(thread_id)
            return
        self.tasks[thread_id] = loop.create_task(self._run(thread_id))

    async def _run(self, thread_id: str) -> None:
        try:
            while thread_id in self.subscribers:
                await asyncio.sleep(settings.MEMORY_LIVE_FRAGMENT_DELAY_MS / 1000)
                self.dirty.discard(thread_id)
                await self._render_and_notify(thread_id)
                if thread_id not in self.dirty:
                    break
        finally:
            self.tasks.pop(thread_id, None)
            self.dirty.discard(thread_id)

    async def _render_and_notify(self, thread_id: str) -> None:
        try:
            frame = await database_sync_to_async(render_thread_fragments)(thread_id)
        except Exception:  # best-effort, as every live update: the tab can still reload
            logger.exception("rendering the live panels of thread %s failed", thread_id)
            return
        channels = self.subscribers.get(thread_id)
        layer = get_channel_layer()
        if frame is None or not channels or layer is None:
            return
        self.frames[thread_id] = frame
        for channel in list(channels):
            await layer.send(channel, {"type": "thread.fragments", "threadId": thread_id})


hub = FragmentHub()

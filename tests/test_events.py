"""memoryapp.events: broadcasts from HTTP pool threads reach the channel layer in order."""

from __future__ import annotations

import asyncio
import uuid

from channels.layers import get_channel_layer

from memoryapp import events


async def test_it_sends_broadcasts_from_worker_threads_through_the_server_loop_in_order() -> None:
    layer = get_channel_layer()
    assert layer is not None
    group = events.thread_group(uuid.uuid4())
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    sender = events._LoopSender()
    sender.bind(asyncio.get_running_loop())

    def from_a_worker_thread() -> list[bool]:
        return [
            sender.submit(group, {"type": "thread.event", "event": "chat.delta", "n": i})
            for i in range(50)
        ]

    queued = await asyncio.to_thread(from_a_worker_thread)
    received = [(await asyncio.wait_for(layer.receive(channel), 5))["n"] for _ in range(50)]

    assert queued == [True] * 50
    assert received == list(range(50))


def test_it_leaves_the_send_to_the_caller_when_no_server_loop_is_bound() -> None:
    # Tests, management commands and the db worker have no server loop: _send_now then
    # sends with async_to_sync itself.
    assert events._LoopSender().submit("thread.x", {"type": "thread.event"}) is False

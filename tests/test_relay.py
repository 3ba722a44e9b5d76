"""memoryapp.relay: events of a process without WebSockets reach the server's layer."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from channels.layers import InMemoryChannelLayer, get_channel_layer
from channels_redis.core import RedisChannelLayer

from memoryapp import events, relay
from memoryapp.models import RelayedEvent


@pytest.fixture
def relay_on(settings: Any) -> None:
    """The default setup's process-local layer (also when CI runs this with REDIS_URL)."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.MEMORY_EVENT_RELAY = True
    settings.MEMORY_EVENT_RELAY_POLL_SECONDS = 0.05


def test_it_writes_the_events_a_job_sends_in_the_worker_to_the_table(
    db: None, relay_on: None
) -> None:
    thread_id = uuid.uuid4()

    with relay.relaying():
        events.chat_stream(thread_id, "job.changed", {"status": "running"})

    rows = list(RelayedEvent.objects.values_list("group", "payload"))
    assert rows == [
        (
            f"thread.{thread_id}",
            {
                "type": "thread.event",
                "event": "job.changed",
                "threadId": str(thread_id),
                "data": {"status": "running"},
            },
        )
    ]


def test_it_writes_nothing_outside_a_job_in_the_worker(db: None, relay_on: None) -> None:
    events.chat_stream(uuid.uuid4(), "chat.delta", {"text": "hi"})

    assert RelayedEvent.objects.count() == 0


def test_it_relays_only_in_a_job_for_a_process_local_layer_when_switched_on(settings: Any) -> None:
    settings.MEMORY_EVENT_RELAY = True
    assert relay.relay_wanted(InMemoryChannelLayer()) is False
    with relay.relaying():
        assert relay.relay_wanted(InMemoryChannelLayer()) is True
        assert relay.relay_wanted(RedisChannelLayer(hosts=["redis://127.0.0.1:1/0"])) is False
        assert relay.relay_wanted(None) is False
        settings.MEMORY_EVENT_RELAY = False
        assert relay.relay_wanted(InMemoryChannelLayer()) is False


def test_it_deletes_rows_older_than_a_minute_when_it_writes(db: None, clock: Any) -> None:
    relay.relay_store("thread.a", {"n": 1})
    clock.now += relay.KEEP * 2
    relay.relay_store("thread.a", {"n": 2})

    assert [row.payload for row in relay.relay_fetch(0)] == [{"n": 2}]


@pytest.mark.django_db(transaction=True)
async def test_it_forwards_events_written_by_another_process_to_the_server_layer_in_order(
    relay_on: None,
) -> None:
    layer = get_channel_layer()
    assert layer is not None
    group = events.thread_group(uuid.uuid4())
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    sender = events._LoopSender()
    loop = asyncio.get_running_loop()
    sender.bind(loop)  # as the server does; this starts the poller
    # It forwards what is written after it started, not the rows already there.
    assert await asyncio.to_thread(relay._pollers[id(loop)].ready.wait, 10)

    def worker() -> None:  # stands in for the db worker: no server loop, so the table
        for n in range(3):
            relay.relay_store(group, {"type": "thread.event", "event": "job.changed", "n": n})

    await asyncio.to_thread(worker)
    received = [(await asyncio.wait_for(layer.receive(channel), 5))["n"] for _ in range(3)]

    assert received == [0, 1, 2]

"""Scale-out for real (issue 12 item 4; docs/scaling.md, "Many machines").

Two uvicorn processes and two db_worker processes on one PostgreSQL test database and one
Redis. Client threads append (crossing a low autoCompactThreshold, so compactions run),
prepare, recall, compact, end() and call memory tools on the same threads through both
servers; afterwards every invariant holds (memoryapp.audit), every job succeeded, every
acknowledged append is stored exactly once under the number its answer gave, and a
WebSocket on one server saw the events of writes made through the other and of the jobs
the workers ran. Skipped without PostgreSQL (DATABASE_URL) or a Redis on 127.0.0.1:6379.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client as DjangoClient
from websockets.sync.client import connect

from memoryapp.models import ApiKey, Project
from tests.cluster import BASE, Client, Cluster, Load, cluster_env, redis_url_answering, verify
from tests.factories import make_membership, make_user

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

# TEST_REDIS_DB: another Redis db for a run beside others on one machine.
REDIS_DB = int(os.environ.get("TEST_REDIS_DB", "2"))
CLIENTS = 8
CALLS_PER_CLIENT = 40
PLAIN_THREADS = 4
AGENT_THREADS = 2
SOCKET_TIMEOUT_S = 30


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    if connection.vendor != "postgresql":
        pytest.skip("several server processes need PostgreSQL (DATABASE_URL)")
    redis_url = redis_url_answering(REDIS_DB)
    if redis_url is None:
        pytest.skip("no Redis answers on 127.0.0.1:6379")
    parts = urlsplit(os.environ["DATABASE_URL"])
    url = urlunsplit(parts._replace(path=f"/{connection.settings_dict['NAME']}"))
    running = Cluster(cluster_env(url, redis_url), tmp_path)
    try:
        running.start()
        yield running
    finally:
        running.stop()


class Watcher:
    """Collects the JSON frames of an open WebSocket in a thread of its own."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.frames: list[dict[str, Any]] = []
        self.arrived = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for raw in self.socket:
            with self.arrived:
                self.frames.append(json.loads(raw))
                self.arrived.notify_all()

    def wait_for(self, event: str, match: Any) -> dict[str, Any]:
        """The first frame of ``event`` whose data ``match`` accepts (fails after a timeout)."""

        def found() -> dict[str, Any] | None:
            return next((f for f in self.frames if f["event"] == event and match(f["data"])), None)

        with self.arrived:
            assert self.arrived.wait_for(found, timeout=SOCKET_TIMEOUT_S), (event, self.frames[-5:])
            frame = found()
        assert frame is not None
        return frame


def _session_cookie(project: Project) -> str:
    user = make_user("watcher")
    make_membership(user, project, "member")
    browser = DjangoClient()
    browser.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={browser.cookies[name].value}"


def test_it_keeps_every_invariant_with_two_servers_and_two_workers(cluster: Cluster) -> None:
    project = Project.objects.create(slug="acme", name="Acme")
    _, key = ApiKey.issue(project=project, name="scale")
    one, other = (Client(port, key) for port in cluster.ports)
    status, _ = one.call(
        "PUT", "/v1/memory/agents/keeper", {"systemPrompt": "Keep notes.", "memory": {}}
    )
    assert status == 201
    plain = [
        (one if i % 2 else other).call("POST", BASE, {"dataset": "u1", "autoCompactThreshold": 5})
        for i in range(PLAIN_THREADS)
    ]
    agent = [
        other.call("POST", BASE, {"dataset": "u1", "agent": "keeper"}) for _ in range(AGENT_THREADS)
    ]
    assert [s for s, _ in plain + agent] == [201] * (PLAIN_THREADS + AGENT_THREADS)
    one.close()
    other.close()
    load = Load(
        cluster.ports,
        key,
        [b["threadId"] for _, b in plain],
        [b["threadId"] for _, b in agent],
        "u1",
    )
    watched = load.plain[0]
    port = cluster.ports[0]
    with connect(
        f"ws://127.0.0.1:{port}/ws/threads/{watched}/?projectId={project.pk}",
        additional_headers={
            "Cookie": _session_cookie(project),
            "Origin": f"http://127.0.0.1:{port}",
        },
        open_timeout=SOCKET_TIMEOUT_S,
    ) as socket:
        watcher = Watcher(socket)
        load.run(CLIENTS, calls=CALLS_PER_CLIENT)
        # Through the other server: an append, then end(), whose job a worker runs.
        other = Client(cluster.ports[1], key)
        status, appended = other.call(
            "POST", f"{BASE}/{watched}/messages", {"role": "user", "content": "seen?"}
        )
        assert status == 201
        watcher.wait_for("message.appended", lambda d: d["messageId"] == appended["messageId"])
        status, ended = other.call("POST", f"{BASE}/{watched}/end", {})
        assert status == 202
        watcher.wait_for(
            "job.changed", lambda d: (d["jobId"], d["status"]) == (ended["jobId"], "succeeded")
        )
        other.close()

    assert load.errors == []
    assert load.calls == CLIENTS * CALLS_PER_CLIENT
    assert len(load.latency["append"]) > CLIENTS * CALLS_PER_CLIENT // 3
    assert load.jobs != []  # end() did queue episode jobs
    assert verify(load) == []
    # Compactions ran on the shared threads (the threshold was crossed).
    assert any(f["event"] == "thread.compacted" for f in watcher.frames)

"""Durability of acknowledged writes (issue 12 item 7; docs/scaling.md, "Durability").

A real uvicorn server (a child process, as ``./dev serve`` runs it) on the test database
takes a burst of appends from several client threads; it is killed with SIGKILL in the
middle of the burst and started again on the same listening socket, while the clients
keep sending. Afterwards every append that was answered 201 is stored exactly once, with
the sequence number its answer gave, and the thread's numbers run 1..N without a gap.
Appends whose answer was lost to the kill may or may not be stored: either way once.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.db import connection

from memoryapp import working
from memoryapp.models import ApiKey, Message, Project, Thread

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = 6
ACKS_BEFORE_KILL = 30
ACKS_AFTER_RESTART = 30
KILLS = 5
START_TIMEOUT_S = 60
BURST_TIMEOUT_S = 120


def _server_env() -> dict[str, str]:
    """The environment of the server: this test run's database, no rate limit, offline."""
    env = dict(os.environ)
    name = str(connection.settings_dict["NAME"])
    if connection.vendor == "sqlite":
        env["SQLITE_PATH"] = name
    else:
        parts = urlsplit(env["DATABASE_URL"])
        env["DATABASE_URL"] = urlunsplit(parts._replace(path=f"/{name}"))
    env.update(MEMORY_API_RATE_LIMIT="", MEMORY_LLM_ADAPTER="offline", DEBUG="true")
    return env


@dataclass
class Server:
    """uvicorn serving memoryapp.asgi on an inherited socket, which outlives each process."""

    sock: socket.socket
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def start(self) -> None:
        fd = self.sock.fileno()
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable, "-m", "uvicorn", "memoryapp.asgi:application", "--no-proxy-headers",
                    "--fd", str(fd), "--lifespan", "off", "--no-access-log",
                    "--log-level", "warning",
                ],
                cwd=ROOT,
                env=_server_env(),
                pass_fds=[fd],
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._ready():
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)

    def _ready(self) -> bool:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
        try:
            conn.request("GET", "/login/")
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()

    def kill(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        return self.process.wait(timeout=30)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    srv = Server(sock, tmp_path / "server.log")
    try:
        yield srv
    finally:
        if srv.process is not None and srv.process.poll() is None:
            srv.kill()
        sock.close()


@dataclass
class Burst:
    """Client threads appending to one thread until told to stop; what the server acknowledged."""

    port: int
    key: str
    thread: Thread
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: dict[str, int] = field(default_factory=dict)  # content -> acknowledged number
    unanswered: int = 0
    errors: list[str] = field(default_factory=list)  # answers other than 201

    def client(self, n: int) -> None:
        i = 0
        while not self.stop.is_set():
            i += 1
            content = f"client {n} append {i}"
            number = self._append(content)
            with self.lock:
                if number is None:
                    self.unanswered += 1
                else:
                    self.acked[content] = number
            if number is None:
                time.sleep(0.05)  # the server is down; try again shortly

    def _append(self, content: str) -> int | None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(
                "POST",
                f"/v1/memory/working/threads/{self.thread.pk}/messages",
                body=json.dumps({"role": "user", "content": content}),
                headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
            )
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 201:
                with self.lock:
                    self.errors.append(f"{resp.status} {body[:200]!r}")
                return None
            return int(json.loads(body)["sequenceNumber"])
        except (OSError, http.client.HTTPException):
            return None
        finally:
            conn.close()

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + BURST_TIMEOUT_S
        while len(self.acked) < count:
            assert self.errors == []
            assert time.monotonic() < deadline, f"only {len(self.acked)} appends acknowledged"
            time.sleep(0.01)


def test_it_commits_as_docs_scaling_says(db: None) -> None:
    # The durability docs/scaling.md states rests on these settings of the database.
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA journal_mode")
            mode = cursor.fetchone()[0]
            cursor.execute("PRAGMA synchronous")
            assert (mode, cursor.fetchone()[0]) == ("wal", 1)  # 1: NORMAL
        else:
            cursor.execute("SHOW synchronous_commit")
            commit = cursor.fetchone()[0]
            cursor.execute("SHOW fsync")
            assert (commit, cursor.fetchone()[0]) == ("on", "on")


@pytest.mark.django_db(transaction=True)
def test_it_keeps_every_acknowledged_append_across_a_kill_9(server: Server) -> None:
    project = Project.objects.create(slug="acme", name="Acme")
    _, key = ApiKey.issue(project=project, name="durability")
    thread = working.thread_create(project=project, dataset="user_42")
    server.start()
    burst = Burst(server.port, key, thread)
    clients = [threading.Thread(target=burst.client, args=(n,)) for n in range(CLIENTS)]
    for client in clients:
        client.start()
    try:
        # A kill that lands between two requests hits nothing in flight: kill again (at
        # most KILLS times) until one does, so the test always exercises the case.
        for _ in range(KILLS):
            burst.wait_for(len(burst.acked) + ACKS_BEFORE_KILL)
            assert server.kill() == -signal.SIGKILL  # mid-burst: the clients are still sending
            acked_before_kill = len(burst.acked)
            server.start()
            burst.wait_for(acked_before_kill + ACKS_AFTER_RESTART)
            if burst.unanswered:
                break
    finally:
        burst.stop.set()
        for client in clients:
            client.join(timeout=60)
    rows = list(
        Message.objects.filter(thread=thread).order_by("sequence_number")
        .values_list("sequence_number", "content")
    )
    numbers = [n for n, _ in rows]
    stored = dict((content, n) for n, content in rows)
    assert numbers == list(range(1, len(rows) + 1))
    assert [c for c, k in Counter(c for _, c in rows).items() if k > 1] == []
    missing = {c: n for c, n in burst.acked.items() if stored.get(c) != n}
    assert missing == {}, f"acknowledged but not stored as answered: {missing}"
    assert len(burst.acked) >= ACKS_BEFORE_KILL + ACKS_AFTER_RESTART
    assert len(rows) - len(burst.acked) <= burst.unanswered
    assert burst.errors == []
    assert burst.unanswered >= 1  # the kill did hit appends in flight

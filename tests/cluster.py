"""Several server and worker processes on one database, and a mixed load against them.

Used by tests/test_scaleout.py (a short run, issue 12 item 4) and bench/load.py (a long
one). ``Cluster`` starts N uvicorn processes (each on its own loopback socket, as
``./dev serve`` runs uvicorn) and M ``manage.py db_worker`` processes with one
environment (DATABASE_URL, REDIS_URL, ...). ``Load`` is a set of client threads that
append (crossing the threads' compaction threshold), prepare, recall, compact, end()
and call memory tools on shared threads through every server in turn, and keeps what was
acknowledged and how long each call took. ``verify`` checks the database afterwards.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 60
BASE = "/v1/memory/working/threads"


def redis_url_answering(db: int) -> str | None:
    """``redis://127.0.0.1:6379/<db>`` when a Redis answers PING there, else None."""
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            if sock.recv(16).startswith(b"+PONG"):
                return f"redis://127.0.0.1:6379/{db}"
    except OSError:
        pass
    return None


@dataclass
class Cluster:
    """``servers`` uvicorn and ``workers`` db_worker processes sharing ``env``; logs in ``logs``."""

    env: dict[str, str]
    logs: Path
    servers: int = 2
    workers: int = 2
    ports: list[int] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def _spawn(self, args: list[str], name: str, pass_fds: tuple[int, ...] = ()) -> None:
        with (self.logs / f"{name}.log").open("ab") as log:
            self.processes.append(
                subprocess.Popen(
                    [sys.executable, *args],
                    cwd=ROOT,
                    env=self.env,
                    pass_fds=pass_fds,
                    stdout=log,
                    stderr=log,
                )
            )

    def start(self) -> None:
        """Start every process; return once each server answers GET /login/ with 200."""
        for n in range(self.servers):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            sock.listen(256)
            self.ports.append(int(sock.getsockname()[1]))
            fd = sock.fileno()
            self._spawn(
                [
                    "-m",
                    "uvicorn",
                    "memoryapp.asgi:application",
                    "--fd",
                    str(fd),
                    "--lifespan",
                    "off",
                    "--no-access-log",
                    "--no-proxy-headers",
                    "--log-level",
                    "warning",
                    # Longer than a client stays idle between calls (uvicorn's default is 5 s).
                    "--timeout-keep-alive",
                    "120",
                ],
                f"server{n}",
                pass_fds=(fd,),
            )
            sock.close()  # the child holds its own copy
        for n in range(self.workers):
            self._spawn(
                [
                    "manage.py",
                    "db_worker",
                    "--no-reload",
                    "--no-startup-delay",
                    "--interval",
                    "0.1",
                ],
                f"worker{n}",
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        for port in self.ports:
            while not _answers(port):
                dead = [p.args for p in self.processes if p.poll() is not None]
                assert not dead, f"exited: {dead}; see {self.logs}"
                assert time.monotonic() < deadline, f"a server did not start; see {self.logs}"
                time.sleep(0.1)

    def stop(self) -> None:
        """SIGTERM every process, SIGKILL whichever is still running 10 s later."""
        for p in self.processes:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.processes:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


def _answers(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("GET", "/login/")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


class Client:
    """A keep-alive JSON client for /v1 on one port (reconnects after a failure)."""

    def __init__(self, port: int, key: str) -> None:
        self.port = port
        self.key = key
        self.conn: http.client.HTTPConnection | None = None

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """(status, decoded JSON or None); status 0 when the connection failed."""
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        try:
            self.conn.request(
                method, path, body=None if body is None else json.dumps(body), headers=headers
            )
            resp = self.conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = None
            return 0, None
        return resp.status, (json.loads(raw) if raw else None)

    def close(self) -> None:
        """Close the kept-alive connection (a server shuts down only once none is open)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None


EXPECTED = {
    "append": {201},
    "prepare": {200},
    "recall": {200},
    "compact": {200},
    "end": {200, 202},
    "tools": {200},
}


@dataclass
class Load:
    """Client threads running a mix of calls on shared threads through every server.

    ``plain`` threads have a low autoCompactThreshold, so appends cross it; ``agent``
    threads belong to an agent with memory, so tool calls write notes there. Each client
    sends its calls to the servers in turn. Appends carry unique content; ``acked`` maps
    (thread id, content) to the sequence number of each 201.
    """

    ports: list[int]
    key: str
    plain: list[str]
    agent: list[str]
    dataset: str
    seed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: dict[tuple[str, str], int] = field(default_factory=dict)
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    calls: int = 0

    def run(self, clients: int, *, seconds: float | None = None, calls: int | None = None) -> None:
        """Run ``clients`` threads until ``seconds`` passed or each made ``calls`` calls."""
        stop = time.monotonic() + seconds if seconds is not None else None
        workers = [
            threading.Thread(target=self._client, args=(n, stop, calls)) for n in range(clients)
        ]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    def _client(self, n: int, stop: float | None, calls: int | None) -> None:
        rng = random.Random(self.seed * 1000 + n)
        clients = [Client(port, self.key) for port in self.ports]
        i = 0
        while (stop is None or time.monotonic() < stop) and (calls is None or i < calls):
            i += 1
            self._one(rng, clients[i % len(clients)], f"load c{n} #{i}")
        for client in clients:
            client.close()

    def _one(self, rng: random.Random, client: Client, tag: str) -> None:
        roll = rng.random()
        if roll < 0.2:
            thread = rng.choice(self.agent)
            kind, path, body = self._tool(rng, thread)
        else:
            thread = rng.choice(self.plain)
            kind, path, body = self._plain(roll, thread, tag)
        started = time.perf_counter()
        status, answer = client.call("POST", path, body)
        elapsed = time.perf_counter() - started
        with self.lock:
            self.calls += 1
            self.latency[kind].append(elapsed)
            if status not in EXPECTED[kind]:
                self.errors.append(f"{kind} {path}: {status} {str(answer)[:200]}")
            elif kind == "append":
                self.acked[(thread, body["content"])] = int(answer["sequenceNumber"])
            elif kind == "end" and status == 202:
                self.jobs.append(answer["jobId"])

    def _plain(self, roll: float, thread: str, tag: str) -> tuple[str, str, Any]:
        if roll < 0.7:
            role = "user" if roll < 0.5 else "assistant"
            return (
                "append",
                f"{BASE}/{thread}/messages",
                {"role": role, "content": f"{tag}: I like tea"},
            )
        if roll < 0.82:
            return "prepare", f"{BASE}/{thread}/prepare", {"messageLimit": 20}
        if roll < 0.9:
            return "recall", "/v1/memory/recall", {"dataset": self.dataset, "query": "tea"}
        if roll < 0.95:
            return "compact", f"{BASE}/{thread}/compact", {}
        return "end", f"{BASE}/{thread}/end", {}

    def _tool(self, rng: random.Random, thread: str) -> tuple[str, str, Any]:
        name = f"note{rng.randrange(3)}"
        if rng.random() < 0.5:
            arguments: dict[str, Any] = {"name": name}
            tool = "open_memory"
        else:
            arguments = {
                "name": name,
                "description": "what we know",
                "content": f"tea {uuid.uuid4()}",
            }
            tool = "close_memory"
        return "tools", f"{BASE}/{thread}/tools", {"name": tool, "arguments": arguments}

    def report(self, seconds: float) -> str:
        """Throughput, p50/p99 per endpoint (milliseconds) and the error count, as text."""
        lines = [f"{self.calls} calls in {seconds:.1f} s: {self.calls / seconds:.1f} calls/s"]
        for kind, values in sorted(self.latency.items()):
            qs = statistics.quantiles(values, n=100) if len(values) > 1 else values * 99
            lines.append(
                f"  {kind:8} {len(values):6} calls  p50 {qs[49] * 1000:7.1f} ms  "
                f"p99 {qs[98] * 1000:7.1f} ms"
            )
        lines.append(f"errors: {len(self.errors)}")
        lines.extend(f"  {e}" for e in self.errors[:20])
        return "\n".join(lines)


def jobs_settle(thread_ids: list[str], timeout_s: float = 120) -> None:
    """Wait until no job of these threads is queued or running (or ``timeout_s`` passed)."""
    from memoryapp.models import Job

    deadline = time.monotonic() + timeout_s
    while Job.objects.filter(thread_id__in=thread_ids, status__in=Job.ACTIVE).exists():
        if time.monotonic() > deadline:
            return
        time.sleep(0.2)


def verify(load: Load) -> list[str]:
    """Every problem found after a load: thread invariants (memoryapp.audit), jobs that did
    not succeed, and acknowledged appends not stored exactly once under their number."""
    from memoryapp import audit
    from memoryapp.models import Message

    threads = load.plain + load.agent
    jobs_settle(threads)
    problems = [p for t in threads for p in audit.thread_audit(thread_id=t)]
    problems += audit.jobs_unfinished(thread_ids=[uuid.UUID(t) for t in threads])
    rows = Message.objects.filter(thread_id__in=threads, content__startswith="load ")
    stored = Counter(
        (str(t), c, n) for t, c, n in rows.values_list("thread_id", "content", "sequence_number")
    )
    copies = Counter((t, c) for t, c, _ in stored.elements())
    problems += [f"stored {k} times: {c!r}" for (_, c), k in copies.items() if k > 1]
    problems += [
        f"acknowledged as {n} but not stored so: {c!r}"
        for (t, c), n in load.acked.items()
        if stored[(t, c, n)] != 1
    ]
    return problems


def cluster_env(database_url: str, redis_url: str, *, debug: bool = True) -> dict[str, str]:
    """The environment of every process: this database and Redis ("" for none), the
    offline model, no rate limit; DEBUG as given (a benchmark runs without it)."""
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        REDIS_URL=redis_url,
        MEMORY_API_RATE_LIMIT="",
        MEMORY_LLM_ADAPTER="offline",
        DEBUG=str(debug).lower(),
        LOG_LEVEL="WARNING",
    )
    return env

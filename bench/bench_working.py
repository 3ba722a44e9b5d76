"""Append and list latency on a thread of 10,000 messages, in-process and over real HTTP.

    .venv/bin/python bench/bench_working.py [--database sqlite|postgres] [--messages 10000]
                                            [--iterations 300] [--debug]

Spec 002 says an append "usually" takes 5-15 ms; the goal here is an append p50 under 5 ms
over HTTP with SQLite on one laptop, and a list of 20 that costs the same whatever the
thread's length (one indexed range read on (thread, sequence_number) plus the key and
thread look-ups).

A thread of ``--messages`` messages is bulk-created (counters set as appends would leave
them) next to a small thread of 40, in the same table. Then, for each transport:

- in-process: Django's test client (routing, middleware, key auth, ninja validation,
  JSON; no server, no socket);
- HTTP: uvicorn (what ./dev serve runs) and daphne, each started here on a free
  loopback port, serving the same database, driven
  by one keep-alive http.client connection (what an SDK with a connection pool does);

it measures POST .../messages on the big thread, and GET .../messages?order=desc&limit=20
(the newest page) and ?before=<middle>&order=desc&limit=20 (a page deep in the thread) on
the big thread, the newest page on the small one, and a 401 (no key: no query, no view)
as the floor of the stack itself. It prints p50/p95 in milliseconds, the ratio
list-at-10k / list-at-40 of the p50s (about 1.0 is the goal), and over HTTP the server
process's CPU time per call, which other load on the machine hardly moves.

Figures depend on the machine; nothing here asserts a time. ``--debug`` serves with
DEBUG=true, as ``./dev serve`` does (the default is DEBUG=false, as in production).
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from _common import (
    BASE,
    DEFAULT_POSTGRES_URL,
    REPO,
    Api,
    analyze_tables,
    percentile,
    throwaway_database,
)

SMALL = 40
CONTENT = "I'm looking for a family car with good resale value and room for the dog."


def bulk_thread(project: Any, messages: int, dataset: str) -> str:
    """Write a thread of ``messages`` ordinary messages with bulk_create; return its id."""
    from django.utils import timezone

    from memoryapp.models import Message, Thread

    start = timezone.now() - timedelta(hours=1)
    thread = Thread.objects.create(project=project, dataset=dataset)
    Message.objects.bulk_create(
        (
            Message(
                thread=thread,
                sequence_number=n,
                role="user" if n % 2 else "assistant",
                content=f"{CONTENT} ({n})",
                created_at=start + timedelta(milliseconds=n),
            )
            for n in range(1, messages + 1)
        ),
        batch_size=1000,
    )
    Thread.objects.filter(pk=thread.pk).update(
        next_sequence=messages + 1,
        uncompacted_count=messages,
        first_message_at=start + timedelta(milliseconds=1),
        last_message_at=start + timedelta(milliseconds=messages),
    )
    return str(thread.pk)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of process ``pid`` so far (Linux /proc), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Sample(list[float]):
    """Wall times in ms, plus the server's CPU ms per call when it could be read."""

    cpu_ms: float | None = None


def timed(iterations: int, call: Callable[[int], None], server_pid: int | None = None) -> Sample:
    """Run ``call(i)`` ``iterations`` times; return each call's wall time in ms.

    With ``server_pid``, also record the server process's CPU time per call: unlike wall
    time it hardly moves when other processes load the machine, so it is the fairer
    figure for comparing two versions of the code.
    """
    samples = Sample()
    cpu0 = cpu_seconds(server_pid) if server_pid else None
    for i in range(iterations):
        t0 = time.perf_counter()
        call(i)
        samples.append((time.perf_counter() - t0) * 1000)
    cpu1 = cpu_seconds(server_pid) if server_pid else None
    if cpu0 is not None and cpu1 is not None:
        samples.cpu_ms = (cpu1 - cpu0) * 1000 / iterations
    return samples


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class HttpApi:
    """One keep-alive HTTP/1.1 connection to the server, with the project's key."""

    def __init__(self, port: int, key: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def call(
        self, method: str, path: str, body: Any = None, expect: int = 200, auth: bool = True
    ) -> Any:
        data = None if body is None else json.dumps(body)
        headers = self.headers if auth else {"Content-Type": "application/json"}
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        if resp.status != expect:
            raise SystemExit(f"{method} {path} answered {resp.status}: {raw[:300]!r}")
        return json.loads(raw) if raw else None


SERVER_COMMANDS = {
    # As ./dev serve runs it.
    "uvicorn": lambda port: [
        "uvicorn", "memoryapp.asgi:application", "--host", "127.0.0.1", "--port", str(port),
        "--log-level", "warning", "--no-access-log", "--no-proxy-headers",
    ],
    "daphne": lambda port: [
        "daphne", "-b", "127.0.0.1", "-p", str(port), "-v", "0", "memoryapp.asgi:application",
    ],
}


def start_server(server: str, port: int, log: Path, debug: bool) -> subprocess.Popen[bytes]:
    """Serve memoryapp.asgi with ``server`` (uvicorn | daphne) on 127.0.0.1:``port``,
    against this process's database settings."""
    env = {**os.environ, "DEBUG": "true" if debug else "false", "PYTHONPATH": str(REPO)}
    command = SERVER_COMMANDS[server](port)
    command[0] = str(Path(sys.executable).with_name(command[0]))
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{server} exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{server} did not listen on port {port} within 30 s:\n{log.read_text()}")


def report(rows: list[tuple[str, Sample]]) -> dict[str, float]:
    """Print one line per measurement; return the p50s by label."""
    p50s = {}
    for label, samples in rows:
        p50, p95 = percentile(samples, 50), percentile(samples, 95)
        p50s[label] = p50
        cpu = f"   server CPU {samples.cpu_ms:5.2f} ms/call" if samples.cpu_ms is not None else ""
        print(f"  {label:<42} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms{cpu}   (n={len(samples)})")
    return p50s


def measure(
    name: str,
    request: Callable[..., Any],
    big: str,
    small: str,
    messages: int,
    iterations: int,
    server_pid: int | None = None,
) -> None:
    """Warm up, then measure append and the three list shapes through ``request``.

    ``server_pid`` is the HTTP server's process, whose CPU time per call is reported too.
    """
    big_msgs, small_msgs = f"{BASE}/threads/{big}/messages", f"{BASE}/threads/{small}/messages"
    middle = messages // 2
    newest = "?order=desc&limit=20"
    deep = f"?order=desc&limit=20&before={middle}"

    def append(i: int) -> None:
        request("POST", big_msgs, {"role": "user", "content": f"{name} append {i}"}, 201)

    def unauthorized(i: int) -> None:
        request("GET", big_msgs, None, 401, False)

    for i in range(20):  # warm-up: connections, caches, the first-call imports
        append(-i - 1)
        request("GET", big_msgs + newest)
        request("GET", small_msgs + newest)
        unauthorized(i)
    pid = server_pid
    rows = [
        ("POST messages (10k thread)", timed(iterations, append, pid)),
        (
            "GET messages newest 20 (10k thread)",
            timed(iterations, lambda i: request("GET", big_msgs + newest), pid),
        ),
        (
            f"GET messages before={middle} (10k thread)",
            timed(iterations, lambda i: request("GET", big_msgs + deep), pid),
        ),
        (
            f"GET messages newest 20 ({SMALL}-message thread)",
            timed(iterations, lambda i: request("GET", small_msgs + newest), pid),
        ),
        ("floor: 401 without a key (no query)", timed(iterations, unauthorized, pid)),
    ]
    print(f"\n{name}:")
    p50 = report(rows)
    ratio = p50[rows[1][0]] / p50[rows[3][0]]
    deep_ratio = p50[rows[2][0]] / p50[rows[3][0]]
    print(f"  list p50 ratio 10k/{SMALL}: newest page {ratio:.2f}, deep page {deep_ratio:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument(
        "--debug", action="store_true", help="serve with DEBUG=true like ./dev serve"
    )
    parser.add_argument(
        "--server",
        choices=["uvicorn", "daphne", "both"],
        default="both",
        help="the ASGI server to measure over HTTP (uvicorn is what ./dev serve runs)",
    )
    args = parser.parse_args()

    with throwaway_database(args.database, args.postgres_url) as label:
        from memoryapp.models import Project

        # The floor's 401s are expected; Django would log a warning for each one.
        logging.getLogger("django.request").setLevel(logging.ERROR)

        print(
            f"Database: {label}; thread of {args.messages} messages; {args.iterations} samples each"
        )
        api = Api.for_new_project()
        project = Project.objects.get(slug="bench")
        t0 = time.perf_counter()
        big = bulk_thread(project, args.messages, "bench-big")
        small = bulk_thread(project, SMALL, "bench-small")
        # As autovacuum would after a load this size; without statistics PostgreSQL plans
        # the newest-page read as "all rows of the thread, then sort".
        analyze_tables()
        print(f"Bulk-created the threads in {time.perf_counter() - t0:.1f} s (then ANALYZE)")

        anonymous = Api(key="", client=api.client)

        def in_process(
            method: str, path: str, body: Any = None, expect: int = 200, auth: bool = True
        ) -> Any:
            path, _, query = path.partition("?")
            params = dict(p.split("=") for p in query.split("&")) if query else {}
            return (api if auth else anonymous).ok(method, path, body, expect=expect, **params)

        measure(
            "in-process (Django test client)",
            in_process,
            big,
            small,
            args.messages,
            args.iterations,
        )

        from django.db import connections

        connections.close_all()  # let the server take the SQLite write lock freely
        servers = ["uvicorn", "daphne"] if args.server == "both" else [args.server]
        for name in servers:
            with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
                port = free_port()
                server = start_server(name, port, Path(tmp) / "server.log", args.debug)
                try:
                    http_api = HttpApi(port, api.key)
                    mode = "DEBUG=true" if args.debug else "DEBUG=false"
                    measure(
                        f"HTTP ({name} on 127.0.0.1:{port}, {mode}, keep-alive)",
                        http_api.call,
                        big,
                        small,
                        args.messages,
                        args.iterations,
                        server.pid,
                    )
                finally:
                    server.terminate()
                    try:
                        server.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        server.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())

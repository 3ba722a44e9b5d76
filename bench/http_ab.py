"""The HTTP hot paths of two checkouts side by side, interleaved in one run (issue 11).

    .venv/bin/python bench/http_ab.py --a /path/to/old/checkout [--b .] [--rounds 20]
                                      [--calls 50] [--database sqlite|postgres]
                                      [--a-env NAME=VALUE] [--b-env NAME=VALUE] [--ports A,B]

Starts one server per checkout as ``./dev serve`` runs it (uvicorn
memoryapp.asgi:application --http memoryapp.server:HttpProtocol, loopback, DEBUG off,
rate limit off, no HTTPS redirect), each on a database of its own (a SQLite file, or a
throwaway PostgreSQL database dropped at exit), with a project, a key and a thread.
Then ``--rounds`` rounds, each making ``--calls`` calls of every kind on one keep-alive
connection per server, A and B alternating (the order flips every round), so the load
of a shared machine hits both alike:

- floor: GET /v1/memory/working/threads without a key (401);
- append: POST .../messages, one short message;
- prepare: POST .../prepare with messageLimit 20 (the thread holds the appends so far).

Prints p50 (ms) per server and kind and the ratio B / A; ``--json FILE`` writes them. The
server processes' CPU time per call is printed too (from /proc), which load moves less
than wall time. Nothing here is used by the service or the tests.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

BASE = "/v1/memory/working"
DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/postgres"
KINDS = ["floor", "append", "prepare"]
SETUP = """
from memoryapp import working
from memoryapp.models import ApiKey, Project
project = Project.objects.create(slug="ab", name="ab")
_, key = ApiKey.issue(project=project, name="ab")
thread = working.thread_create(project=project, dataset="ab")
print("SETUP", key, thread.pk)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def database(engine: str, postgres_url: str, workdir: Path, label: str) -> Iterator[dict[str, str]]:
    """Environment variables naming a new database for one server; dropped on exit."""
    if engine == "sqlite":
        yield {"SQLITE_PATH": str(workdir / f"{label}.sqlite3")}
        return
    import psycopg

    name = f"ab_{label}_{secrets.token_hex(4)}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield {"DATABASE_URL": postgres_url.rsplit("/", 1)[0] + f"/{name}"}
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Server:
    """One checkout's server, its key and thread, and a keep-alive client to it."""

    def __init__(self, checkout: Path, env: dict[str, str], workdir: Path, label: str, port: int = 0) -> None:
        self.checkout, self.label = checkout, label
        python = str(checkout / ".venv" / "bin" / "python")
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SQLITE_PATH")},
            "PYTHONPATH": str(checkout),
            "DEBUG": "false",
            "SECURE_SSL_REDIRECT": "false",
            "MEMORY_API_RATE_LIMIT": "",
            "MEMORY_LLM_ADAPTER": "offline",
            "SECRET_KEY": "ab-only-" + secrets.token_hex(16),
            "LOG_LEVEL": "WARNING",
            "STATIC_ROOT": str(workdir / f"static-{label}"),
            **env,
        }
        run = {"cwd": checkout, "env": self.env, "check": True}
        subprocess.run([python, "manage.py", "migrate", "--noinput", "-v0"], **run)  # type: ignore[call-overload]
        subprocess.run([python, "manage.py", "collectstatic", "--noinput", "-v0"], **run)  # type: ignore[call-overload]
        out = subprocess.run(
            [python, "manage.py", "shell", "-c", SETUP], capture_output=True, text=True, **run  # type: ignore[call-overload]
        ).stdout
        _, self.key, self.thread = next(line for line in out.splitlines() if line.startswith("SETUP")).split()
        self.port = port or free_port()
        self.log = (workdir / f"{label}.log").open("wb")
        self.proc = subprocess.Popen(
            [
                str(checkout / ".venv" / "bin" / "uvicorn"), "memoryapp.asgi:application",
                "--host", "127.0.0.1", "--port", str(self.port), "--no-access-log",
                "--lifespan", "off", "--log-level", "warning",
                "--http", "memoryapp.server:HttpProtocol", "--no-proxy-headers",
            ],
            cwd=checkout, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"server {label} did not start; see {self.log.name}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.1)
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        self.samples: dict[str, list[float]] = {k: [] for k in KINDS}
        self.cpu: dict[str, float] = dict.fromkeys(KINDS, 0.0)
        self.count = 0

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def call(self, kind: str) -> None:
        headers = {"Content-Type": "application/json"}
        if kind != "floor":
            headers["Authorization"] = f"Bearer {self.key}"
        if kind == "floor":
            method, path, body, expect = "GET", f"{BASE}/threads", None, 401
        elif kind == "append":
            self.count += 1
            body = json.dumps({"role": "user", "content": f"A family car with room for the dog #{self.count}"})
            method, path, expect = "POST", f"{BASE}/threads/{self.thread}/messages", 201
        else:
            method, path, body, expect = "POST", f"{BASE}/threads/{self.thread}/prepare", '{"messageLimit": 20}', 200
        self.conn.request(method, path, body=body, headers=headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        if resp.status != expect:
            raise SystemExit(f"{self.label}: {method} {path} answered {resp.status}: {raw[:300]!r}")

    def batch(self, kind: str, calls: int, record: bool) -> None:
        cpu = self.cpu_seconds()
        for _ in range(calls):
            start = time.perf_counter()
            self.call(kind)
            if record:
                self.samples[kind].append((time.perf_counter() - start) * 1000)
        if record:
            self.cpu[kind] += self.cpu_seconds() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", type=Path, required=True, help="the baseline checkout")
    parser.add_argument("--b", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--a-env", action="append", default=[], metavar="NAME=VALUE",
        help="an environment variable of A's server only (repeatable); e.g. --a . --b . "
        "--a-env MEMORY_HTTP_FAST_PATH=false compares one checkout with a setting off and on",
    )
    parser.add_argument("--b-env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument(
        "--ports", default="0,0", metavar="A,B", help="the two servers' ports (0: any free one)"
    )
    args = parser.parse_args()
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="http-ab-")))
        servers = []
        ports = [int(p) for p in args.ports.split(",")]
        for label, checkout, extra, port in (
            ("A", args.a, args.a_env, ports[0]),
            ("B", args.b, args.b_env, ports[1]),
        ):
            env = stack.enter_context(database(args.database, args.postgres_url, workdir, label))
            env.update(item.split("=", 1) for item in extra)
            server = Server(checkout.resolve(), env, workdir, label, port)
            stack.callback(server.stop)
            servers.append(server)
        for server in servers:  # warm up: connections, caches, first compiles
            for kind in KINDS:
                server.batch(kind, 100, record=False)
        for n in range(args.rounds):
            for kind in KINDS:
                for server in servers if n % 2 == 0 else reversed(servers):
                    server.batch(kind, args.calls, record=True)
        load = os.getloadavg()[0]
        result: dict[str, Any] = {"load": load, "database": args.database}
        print(f"{args.database}, {args.rounds} x {args.calls} calls of each kind, load average {load:.2f}")
        print(f"{'kind':<8} {'A p50':>8} {'B p50':>8} {'B/A':>6}   {'A cpu/call':>10} {'B cpu/call':>10}")
        for kind in KINDS:
            a, b = (statistics.median(s.samples[kind]) for s in servers)
            ca, cb = (s.cpu[kind] * 1000 / len(s.samples[kind]) for s in servers)
            result[kind] = {"a": a, "b": b, "ratio": b / a, "a_cpu": ca, "b_cpu": cb}
            print(f"{kind:<8} {a:8.3f} {b:8.3f} {b / a:6.2f}   {ca:10.3f} {cb:10.3f}")
        if args.json:
            args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""This service's hot paths side by side with other conversation stores, in one run.

    .venv/bin/pip install -e ".[bench]"      # the peers (not needed by the service or CI)
    .venv/bin/python bench/peers.py [--database sqlite|postgres] [--json FILE] [--quick]

Each store runs in a process of its own, one after the other, on a file in a fresh
temporary directory (SQLite in WAL), with the same workload (issue 11):

1. ``--appends`` (2,000) appends to one conversation, one by one: "append" is their p50;
2. ``--reads`` (200) reads of the last 20 messages at that length: "read 20 @2k";
3. the conversation is filled to ``--big`` (10,000) messages with the store's own bulk
   path (not timed), then appends and reads again: "append @10k", "read 20 @10k";
4. a new conversation gets 4 writer processes x 250 appends released together:
   "arrived" (rows there afterwards, of 1,000) and "msgs/s" (arrived / wall time).

The stores: ``ours`` (memoryapp's domain functions in-process: the append /v1 makes,
compaction.message_append_compacting, and working.prepare with messageLimit 20);
``ours-http`` (the same over HTTP: the server ``./dev serve`` runs, uvicorn on loopback,
one keep-alive connection per client; also "floor", a request with no key answered 401);
``agents-normal`` and ``agents-full`` (OpenAI Agents SDK SQLiteSession, add_items of one
item and get_items(limit=20), at synchronous NORMAL as ours and at its default FULL);
``langgraph`` (LangGraph's SqliteSaver under a one-node MessagesState graph:
update_state with one message, get_state's last 20); ``sqlite3`` (a plain table, one
INSERT + COMMIT per append, synchronous NORMAL). ``--database postgres`` puts our two
stores on a throwaway PostgreSQL database (``--postgres-url``); the peers stay SQLite.

With ``ours-http`` it also times HTTP alone: bench/hello_asgi.py (an app that does no
work) under uvicorn with the same client and body, answered on the event loop and from a
pool thread, the part of any HTTP figure no server-side change can remove.

Prints every store's p50s (ms), then our figures as ratios to each peer's (ours / peer:
below 1 we are cheaper; for msgs/s above 1 we are faster). ``--json FILE`` writes all of
it. Times depend on the machine and its load: the ratios of one run are the result.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import multiprocessing
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from _common import BASE, DEFAULT_POSTGRES_URL, REPO

STORES = ["ours", "ours-http", "agents-normal", "agents-full", "langgraph", "sqlite3"]
OURS = ["ours", "ours-http"]
METRICS = ["append", "append@10k", "read20@2k", "read20@10k", "msgs/s"]
WRITERS = 4
PER_WRITER = 250
TEXT = "I'm looking for a family car with good resale value and room for the dog. #{}"
# LangGraph rewrites the whole conversation per append: far fewer calls at 10k.
SLOW_STORES = {"langgraph"}


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def timed(count: int, call: Callable[[int], Any]) -> list[float]:
    """Milliseconds of ``count`` calls of ``call(i)``."""
    out = []
    for i in range(count):
        start = time.perf_counter()
        call(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


# --- the stores --------------------------------------------------------------------------
#
# Each store offers append(i), read20(), fill(total), count(), and spec(): a picklable
# description that attach() turns into a writer in another process.


class PlainSqlite:
    """One table, INSERT + COMMIT per append, WAL and synchronous NORMAL."""

    def __init__(self, path: str, conversation: str) -> None:
        self.path, self.conversation = path, conversation
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS message (id INTEGER PRIMARY KEY, conversation TEXT,"
            " role TEXT, content TEXT, created REAL)"
        )
        self.db.execute("CREATE INDEX IF NOT EXISTS message_conv ON message (conversation, id)")

    def append(self, i: int) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute(
            "INSERT INTO message (conversation, role, content, created) VALUES (?, ?, ?, ?)",
            (self.conversation, "user", TEXT.format(i), time.time()),
        )
        self.db.execute("COMMIT")

    def read20(self) -> int:
        rows = self.db.execute(
            "SELECT role, content FROM message WHERE conversation = ? ORDER BY id DESC LIMIT 20",
            (self.conversation,),
        ).fetchall()
        return len(rows)

    def fill(self, total: int) -> None:
        have = self.count()
        self.db.execute("BEGIN")
        self.db.executemany(
            "INSERT INTO message (conversation, role, content, created) VALUES (?, ?, ?, ?)",
            [(self.conversation, "user", TEXT.format(i), time.time()) for i in range(have, total)],
        )
        self.db.execute("COMMIT")

    def count(self) -> int:
        row = self.db.execute(
            "SELECT count(*) FROM message WHERE conversation = ?", (self.conversation,)
        ).fetchone()
        return int(row[0])

    def spec(self) -> dict[str, Any]:
        return {"path": self.path, "conversation": self.conversation}

    @classmethod
    def attach(cls, spec: dict[str, Any]) -> PlainSqlite:
        return cls(spec["path"], spec["conversation"])


class AgentsSession:
    """OpenAI Agents SDK SQLiteSession; ``normal`` sets synchronous=NORMAL on its connections."""

    def __init__(self, path: str, conversation: str, normal: bool) -> None:
        from agents import SQLiteSession

        class NormalSession(SQLiteSession):
            @staticmethod
            def _configure_connection(conn: sqlite3.Connection) -> None:
                SQLiteSession._configure_connection(conn)
                conn.execute("PRAGMA synchronous=NORMAL")

        self.path, self.conversation, self.normal = path, conversation, normal
        self.loop = asyncio.new_event_loop()
        kind = NormalSession if normal else SQLiteSession
        self.session = kind(session_id=conversation, db_path=path)

    def append(self, i: int) -> None:
        self.loop.run_until_complete(
            self.session.add_items([{"role": "user", "content": TEXT.format(i)}])
        )

    def read20(self) -> int:
        return len(self.loop.run_until_complete(self.session.get_items(limit=20)))

    def fill(self, total: int) -> None:
        have = self.count()
        items: list[Any] = [{"role": "user", "content": TEXT.format(i)} for i in range(have, total)]
        self.loop.run_until_complete(self.session.add_items(items))

    def count(self) -> int:
        return len(self.loop.run_until_complete(self.session.get_items()))

    def spec(self) -> dict[str, Any]:
        return {"path": self.path, "conversation": self.conversation, "normal": self.normal}

    @classmethod
    def attach(cls, spec: dict[str, Any]) -> AgentsSession:
        return cls(spec["path"], spec["conversation"], spec["normal"])


class LangGraphStore:
    """LangGraph's SqliteSaver checkpointing a one-node MessagesState graph."""

    def __init__(self, path: str, conversation: str) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import START, MessagesState, StateGraph

        self.path, self.conversation = path, conversation
        self.db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        builder = StateGraph(MessagesState)
        builder.add_node("noop", lambda state: {})
        builder.add_edge(START, "noop")
        self.graph = builder.compile(checkpointer=SqliteSaver(self.db))
        self.config: Any = {"configurable": {"thread_id": conversation}}

    def append(self, i: int) -> None:
        self.graph.update_state(self.config, {"messages": [("user", TEXT.format(i))]})

    def read20(self) -> int:
        return len(self.graph.get_state(self.config).values.get("messages", [])[-20:])

    def fill(self, total: int) -> None:
        have = self.count()
        batch = [("user", TEXT.format(i)) for i in range(have, total)]
        self.graph.update_state(self.config, {"messages": batch})

    def count(self) -> int:
        return len(self.graph.get_state(self.config).values.get("messages", []))

    def spec(self) -> dict[str, Any]:
        return {"path": self.path, "conversation": self.conversation}

    @classmethod
    def attach(cls, spec: dict[str, Any]) -> LangGraphStore:
        return cls(spec["path"], spec["conversation"])


def _django_setup() -> None:
    import django

    django.setup()


class OursInProcess:
    """memoryapp's domain functions, called as the /v1 handlers call them."""

    def __init__(self, thread_id: str, project_id: int) -> None:
        _django_setup()
        from memoryapp.models import Project

        self.thread_id, self.project = thread_id, Project.objects.get(pk=project_id)

    @classmethod
    def new(cls, conversation: str) -> OursInProcess:
        from memoryapp import working
        from memoryapp.models import Project

        project, _ = Project.objects.get_or_create(slug="bench", defaults={"name": "bench"})
        thread = working.thread_create(project=project, dataset=conversation)
        return cls(str(thread.pk), project.pk)

    def append(self, i: int) -> None:
        from memoryapp import compaction

        compaction.message_append_compacting(
            thread=self.thread_id, project=self.project, role="user", content=TEXT.format(i)
        )

    def read20(self) -> int:
        from memoryapp import working

        window = working.prepare(thread=self.thread_id, project=self.project, message_limit=20)
        return len(window.tail)

    def fill(self, total: int) -> None:
        fill_thread(self.thread_id, total)

    def count(self) -> int:
        from memoryapp.models import Message

        return Message.objects.filter(thread_id=self.thread_id).count()

    def spec(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "project_id": self.project.pk}

    @classmethod
    def attach(cls, spec: dict[str, Any]) -> OursInProcess:
        return cls(spec["thread_id"], spec["project_id"])


def fill_thread(thread_id: str, total: int) -> None:
    """Bulk-insert messages up to ``total`` and set the thread's counters as appends would,
    then do the upkeep those appends would have done along the way (SQLite: index the new
    rows for search, checkpoint the write-ahead log), so the store is measured in the
    state its own appends leave it in, not with a 10k-row backlog that appends never
    build (every FTS_BATCH rows they index, every WAL_CHECKPOINT_EVERY they checkpoint)."""
    from django.db import transaction
    from django.db.models import F
    from django.utils import timezone

    from memoryapp import sql
    from memoryapp.models import Message, Thread

    with transaction.atomic():
        thread = Thread.objects.select_for_update().get(pk=thread_id)
        first = int(thread.next_sequence)
        now = timezone.now()
        Message.objects.bulk_create(
            [
                Message(thread=thread, sequence_number=n, role="user", content=TEXT.format(n), created_at=now)
                for n in range(first, total + 1)
            ],
            batch_size=1000,
        )
        added = max(total + 1 - first, 0)
        Thread.objects.filter(pk=thread_id).update(
            next_sequence=F("next_sequence") + added, uncompacted_count=F("uncompacted_count") + added
        )
    sql.search_index_catch_up()
    sql.wal_checkpoint()


class OursHttp:
    """The same over HTTP: one keep-alive connection to the server ./dev serve runs."""

    def __init__(self, port: int, key: str, thread_id: str) -> None:
        self.port, self.key, self.thread_id = port, key, thread_id
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: Any, expect: int, auth: bool = True) -> bytes:
        headers = self.headers if auth else {"Content-Type": "application/json"}
        self.conn.request(method, path, body=json.dumps(body), headers=headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        if resp.status != expect:
            raise SystemExit(f"{method} {path} answered {resp.status}: {raw[:300]!r}")
        return raw

    def append(self, i: int) -> None:
        body = {"role": "user", "content": TEXT.format(i)}
        self.call("POST", f"{BASE}/threads/{self.thread_id}/messages", body, 201)

    def read20(self) -> int:
        raw = self.call("POST", f"{BASE}/threads/{self.thread_id}/prepare", {"messageLimit": 20}, 200)
        return len(json.loads(raw)["messages"])

    def floor(self, i: int) -> None:
        self.call("GET", f"{BASE}/threads", None, 401, auth=False)

    def fill(self, total: int) -> None:
        fill_thread(self.thread_id, total)

    def count(self) -> int:
        from memoryapp.models import Message

        return Message.objects.filter(thread_id=self.thread_id).count()

    def spec(self) -> dict[str, Any]:
        return {"port": self.port, "key": self.key, "thread_id": self.thread_id}

    @classmethod
    def attach(cls, spec: dict[str, Any]) -> OursHttp:
        return cls(spec["port"], spec["key"], spec["thread_id"])


# --- running a store ------------------------------------------------------------------------


@contextmanager
def serving(port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """uvicorn as ./dev serve starts it, on this process's database, until exit."""
    import socket

    # DEBUG is off as in production (bench._common), which serves static files from the
    # manifest collectstatic writes: collect them beside the log, once per run.
    static = log.parent / "static"
    env = {**os.environ, "PYTHONPATH": str(REPO), "MEMORY_API_RATE_LIMIT": "", "STATIC_ROOT": str(static)}
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=REPO, env=env, check=True
    )
    command = [
        str(Path(sys.executable).with_name("uvicorn")), "memoryapp.asgi:application",
        "--host", "127.0.0.1", "--port", str(port), "--no-access-log", "--lifespan", "off",
        "--log-level", "warning", "--http", "memoryapp.server:HttpProtocol", "--no-proxy-headers",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"uvicorn did not start:\n{log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def transport(calls: int) -> dict[str, float]:
    """What HTTP alone costs here (bench/hello_asgi.py under uvicorn, this script's
    client, the append's body): p50 ms answered on the event loop ("inline") and from a
    pool thread ("pool"), as memoryapp's server hands a request to Django's pool."""
    port = free_port()
    command = [
        str(Path(sys.executable).with_name("uvicorn")), "hello_asgi:app", "--app-dir", str(REPO / "bench"),
        "--host", "127.0.0.1", "--port", str(port), "--no-access-log", "--log-level", "warning",
        "--lifespan", "off",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        conn = _connect(port, proc)
        body = json.dumps({"role": "user", "content": TEXT.format(0)})
        headers = {"Authorization": "Bearer x", "Content-Type": "application/json"}

        def post(path: str) -> None:
            conn.request("POST", path, body=body, headers=headers)
            conn.getresponse().read()

        inline = p50(timed(calls, lambda i: post("/inline")))
        return {"inline": inline, "pool": p50(timed(calls, lambda i: post("/pool")))}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _connect(port: int, proc: subprocess.Popen[bytes]) -> http.client.HTTPConnection:
    """A keep-alive connection to the server ``proc`` starts on ``port``, once it listens."""
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the hello_asgi server did not start")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            conn.connect()
            return conn
        except OSError:
            time.sleep(0.1)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


KINDS: dict[str, Any] = {
    "ours": OursInProcess,
    "ours-http": OursHttp,
    "agents-normal": AgentsSession,
    "agents-full": AgentsSession,
    "langgraph": LangGraphStore,
    "sqlite3": PlainSqlite,
}


def _writer(name: str, spec: dict[str, Any], start: Any, done: Any, offset: int) -> None:
    """A writer process: attach to the store, wait for the others, append PER_WRITER."""
    if name in OURS:
        sys.path.insert(0, str(REPO))
    store = KINDS[name].attach(spec)
    errors = 0
    start.wait()
    for i in range(PER_WRITER):
        try:
            store.append(offset + i)
        except Exception:  # a peer may refuse under contention: count it, go on
            errors += 1
    done.put(errors)


def writers(name: str, spec: dict[str, Any], count: Callable[[], int]) -> dict[str, float]:
    """WRITERS processes x PER_WRITER appends to one new conversation, released together."""
    ctx = multiprocessing.get_context("spawn")
    start, done = ctx.Barrier(WRITERS + 1), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(name, spec, start, done, w * PER_WRITER))
        for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    start.wait()
    began = time.perf_counter()
    errors = sum(done.get(timeout=1800) for _ in procs)
    wall = time.perf_counter() - began
    for p in procs:
        p.join()
    arrived = count()
    return {"arrived": arrived, "errors": errors, "msgs/s": arrived / wall, "wall_s": wall}


def make_store(name: str, workdir: Path, conversation: str, extra: dict[str, Any]) -> Any:
    path = str(workdir / f"{name}.sqlite3")
    if name == "sqlite3":
        return PlainSqlite(path, conversation)
    if name.startswith("agents"):
        return AgentsSession(path, conversation, normal=name == "agents-normal")
    if name == "langgraph":
        return LangGraphStore(path, conversation)
    ours = OursInProcess.new(conversation)
    if name == "ours":
        return ours
    return OursHttp(extra["port"], extra["key"], ours.thread_id)


def measure(name: str, args: argparse.Namespace, workdir: Path, extra: dict[str, Any]) -> dict[str, Any]:
    """The whole workload on one store; p50s in ms."""
    slow = name in SLOW_STORES
    store = make_store(name, workdir, "conversation", extra)
    result: dict[str, Any] = {}
    result["append"] = p50(timed(args.appends, store.append))
    result["read20@2k"] = p50(timed(args.reads, lambda i: store.read20()))
    store.fill(args.big)
    later = args.slow_calls if slow else args.reads
    result["append@10k"] = p50(timed(later, lambda i: store.append(args.big + i)))
    result["read20@10k"] = p50(timed(later, lambda i: store.read20()))
    result["length"] = store.count()
    if name == "ours-http":
        result["floor"] = p50(timed(args.reads, store.floor))
    crowd = make_store(name, workdir, "writers", extra)
    result.update(writers(name, crowd.spec(), crowd.count))
    return result


def run_one(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Measure store ``name`` (this is the store's own process)."""
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="peers-")))
        extra: dict[str, Any] = {}
        if name in OURS:
            from _common import throwaway_database

            stack.enter_context(throwaway_database(args.database, args.postgres_url))
            if name == "ours-http":
                from memoryapp.models import ApiKey, Project

                project, _ = Project.objects.get_or_create(slug="bench", defaults={"name": "bench"})
                _, extra["key"] = ApiKey.issue(project=project, name="bench")
                extra["port"] = args.port or free_port()
                stack.enter_context(serving(extra["port"], workdir / "uvicorn.log"))
        return measure(name, args, workdir, extra)


# --- the report --------------------------------------------------------------------------------


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| store | append | append @10k | read 20 @2k | read 20 @10k | 4 writers: arrived, msgs/s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['append']:.3f} | {r['append@10k']:.3f} | {r['read20@2k']:.3f} | "
            f"{r['read20@10k']:.3f} | {r['arrived']}/{WRITERS * PER_WRITER}, {r['msgs/s']:,.0f} |"
        )
    return "\n".join(lines)


def ratios(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """ours / peer for every metric (msgs/s too: above 1 we write faster)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for ours in OURS:
        if ours not in results:
            continue
        out[ours] = {}
        for peer, r in results.items():
            if peer in OURS:
                continue
            out[ours][peer] = {m: results[ours][m] / r[m] for m in METRICS if r[m]}
    return out


def ratio_table(rat: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = [
        "| ours / peer | append | append @10k | read 20 @2k | read 20 @10k | msgs/s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for ours, peers in rat.items():
        for peer, r in peers.items():
            cells = " | ".join(f"{r.get(m, float('nan')):.2f}" for m in METRICS)
            lines.append(f"| {ours} / {peer} | {cells} |")
    return "\n".join(lines)


def transport_lines(wire: dict[str, float], results: dict[str, dict[str, Any]]) -> str:
    """HTTP's own cost (transport) beside the peer the HTTP bar is set against."""
    text = (
        f"HTTP alone (uvicorn + this client, an app that does nothing): {wire['inline']:.3f} ms "
        f"answered on the event loop, {wire['pool']:.3f} ms from a pool thread"
    )
    peer = results.get("agents-normal")
    if peer:
        shares = ", ".join(
            f"{m} {wire['pool'] / peer[m]:.2f}x" for m in ("append", "read20@2k", "read20@10k")
        )
        text += f"\n  from a pool thread, as ratios to agents-normal in-process: {shares}"
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--stores", default=",".join(STORES))
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--big", type=int, default=10_000)
    parser.add_argument("--slow-calls", type=int, default=20, help="calls at 10k for LangGraph")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--port", type=int, default=0, help="the HTTP server's port (0: any free)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 200 appends, 1k")
    parser.add_argument("--only", help=argparse.SUPPRESS)  # the child process's store
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.appends, args.reads, args.big, args.slow_calls = 200, 50, 1000, 5
    if args.only:
        args.out.write_text(json.dumps(run_one(args.only, args)))
        return 0
    results: dict[str, dict[str, Any]] = {}
    for name in args.stores.split(","):
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            command = [sys.executable, __file__, *sys.argv[1:], "--only", name, "--out", out.name]
            print(f"measuring {name} ...", file=sys.stderr, flush=True)
            subprocess.run(command, check=True)
            results[name] = json.loads(Path(out.name).read_text())
    rat = ratios(results)
    print(f"\np50 in ms; our side on {args.database}; {WRITERS} writers x {PER_WRITER} appends\n")
    print(table(results))
    wire = transport(args.appends) if "ours-http" in results else None
    if wire is not None:
        print(f"\nHTTP floor (a request with no key, 401): {results['ours-http']['floor']:.3f} ms")
        print(transport_lines(wire, results))
    print("\nours / peer (below 1: we are cheaper; msgs/s above 1: we write faster)\n")
    print(ratio_table(rat))
    if args.json:
        everything = {"database": args.database, "results": results, "ratios": rat, "transport": wire}
        args.json.write_text(json.dumps(everything, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""GET thread, the thread list and the message list: latency and statements (issue 11 item 2).

    .venv/bin/python bench/bench_lists.py [--database sqlite|postgres] [--threads 10000]
                                          [--messages 10000] [--calls 300] [--http] [--forms]
    .venv/bin/python bench/bench_lists.py --compare /path/to/other/checkout [--rounds 2]

On a throwaway database (bench._common): a project of ``--threads`` threads (50 datasets,
one tag of 10 on each, one a second apart) and one thread of ``--messages`` messages in
it, loaded as bench/scale.py loads them. Then, through Django's test client (routing,
middleware, key auth, ninja, JSON; no server), ``--calls`` of each request, p50 ms and the
statements one request runs:

- GET /threads/{id}; GET /threads (first page of 20, ``?dataset=``, ``?tag=``, the second
  page by ``cursor``); GET .../messages (newest 20, a page of 20 in the middle, the
  first 20 ascending); GET .../stats; and, as a control these reads do not touch,
  POST .../prepare.

``--forms`` times the three reads (domain functions, JSON built) through the ORM's model
instances, through ``.values()`` of the same columns and through memoryapp.sql, side by
side (this checkout's code only). ``--http`` measures the same requests over uvicorn
(as ``./dev serve`` runs it) on one keep-alive connection, with the server's CPU time
per call. ``--code DIR`` imports memoryapp from
another checkout (the same bench on other code). ``--compare DIR`` runs this bench on
DIR's code ("before") and on this checkout's ("after"), alternating, ``--rounds`` times
each, each in a process of its own, and prints every p50 with the ratio after / before:
the figure to quote, since the machine's load moves both alike. Nothing here asserts a
time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _code_path() -> str | None:
    """The ``--code`` argument, read before memoryapp is imported."""
    for i, arg in enumerate(sys.argv):
        if arg == "--code" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if arg.startswith("--code="):
            return arg.split("=", 1)[1]
    return None


CODE = _code_path()
import _common  # noqa: E402  (sets sys.path up for the bench modules)

if CODE:
    _common.REPO = Path(CODE).resolve()
    sys.path.insert(0, str(_common.REPO))

from _common import BASE, DEFAULT_POSTGRES_URL, Api, throwaway_database  # noqa: E402


def p50_ms(count: int, call: Callable[[], Any]) -> float:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def load(threads: int, messages: int) -> tuple[Api, str, str]:
    """The project, its threads and tags, and the big thread; returns the client, the big
    thread's id and a cursor to the list's second page."""
    import scale
    from django.db import connection
    from django.utils import timezone

    from memoryapp.models import Project, Thread, ThreadTag

    api = Api.for_new_project()
    project = Project.objects.get(slug="bench")
    start = timezone.now() - timedelta(seconds=threads + 10)
    batch: list[Thread] = []
    tags: list[ThreadTag] = []
    # Since migration 0016 a tag row copies its thread's project and created (--code may
    # be older code, without them).
    copied = any(f.name == "created" for f in ThreadTag._meta.fields)

    def copies(at: Any) -> dict[str, Any]:
        return {"project": project, "created": at} if copied else {}

    for i in range(threads - 1):
        at = start + timedelta(seconds=i)
        thread = Thread(
            id=uuid.uuid4(),
            project=project,
            dataset=f"user_{i % 50}",
            tags=[f"t{i % 10}"],
            metadata={"n": i},
            created=at,
            last_activity=at,
        )
        batch.append(thread)
        tags.append(ThreadTag(thread=thread, name=f"t{i % 10}", **copies(at)))
        if len(batch) == 2000:
            Thread.objects.bulk_create(batch)
            ThreadTag.objects.bulk_create(tags)
            batch, tags = [], []
    Thread.objects.bulk_create(batch)
    ThreadTag.objects.bulk_create(tags)
    _status, body = api.request(
        "POST", f"{BASE}/threads", {"dataset": "user_0", "tags": ["t0"], "metadata": {"k": 1}}
    )
    big = body["threadId"]
    scale.load_messages(uuid.UUID(big), messages)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    cursor = api.ok("GET", f"{BASE}/threads")["nextCursor"]
    return api, big, cursor


def requests(big: str, cursor: str, messages: int) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """label -> (method, path, query or body) of every measured request."""
    msgs = f"{BASE}/threads/{big}/messages"
    return {
        "GET thread": ("GET", f"{BASE}/threads/{big}", {}),
        "GET threads (20)": ("GET", f"{BASE}/threads", {}),
        "GET threads ?dataset": ("GET", f"{BASE}/threads", {"dataset": "user_7"}),
        "GET threads ?tag": ("GET", f"{BASE}/threads", {"tag": "t3"}),
        "GET threads ?cursor (page 2)": ("GET", f"{BASE}/threads", {"cursor": cursor}),
        "GET messages newest 20": ("GET", msgs, {"order": "desc"}),
        "GET messages middle 20": ("GET", msgs, {"order": "desc", "before": messages // 2}),
        "GET messages first 20 asc": ("GET", msgs, {}),
        "GET stats": ("GET", f"{BASE}/threads/{big}/stats", {}),
        "control: POST prepare": ("POST", f"{BASE}/threads/{big}/prepare", {}),
    }


def count_statements(call: Callable[[], Any]) -> int:
    from django.db import connection

    ran: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        ran.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        call()
    return len(ran)


def in_process(api: Api, todo: dict[str, tuple[str, str, dict[str, Any]]], calls: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, (method, path, params) in todo.items():

        def call(method: str = method, path: str = path, params: dict[str, Any] = params) -> Any:
            if method == "GET":
                return api.ok(method, path, **params)
            return api.ok(method, path, params)

        for _ in range(20):
            call()
        out[label] = {"p50": p50_ms(calls, call), "statements": count_statements(call)}
    return out


def over_http(api: Api, todo: dict[str, tuple[str, str, dict[str, Any]]], calls: int) -> dict[str, Any]:
    from urllib.parse import urlencode

    import bench_working
    from django.db import connections

    bench_working.REPO = _common.REPO
    connections.close_all()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-lists-") as tmp:
        # DEBUG=false serves only collected static files (as bench/peers.py does).
        os.environ["STATIC_ROOT"] = str(Path(tmp) / "static")
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
            cwd=_common.REPO,
            env={**os.environ, "PYTHONPATH": str(_common.REPO)},
            check=True,
        )
        port = bench_working.free_port()
        server = bench_working.start_server("uvicorn", port, Path(tmp) / "server.log", False)
        try:
            client = bench_working.HttpApi(port, api.key)
            for label, (method, path, params) in todo.items():
                url = path + ("?" + urlencode(params) if params and method == "GET" else "")
                body = params if method == "POST" else None

                def run(i: int, method: str = method, url: str = url, body: Any = body) -> Any:
                    return client.call(method, url, body)

                for i in range(20):
                    run(i)
                sample = bench_working.timed(calls, run, server.pid)
                out[label] = {"p50": statistics.median(sample), "cpu": sample.cpu_ms}
        finally:
            server.terminate()
            server.wait(timeout=10)
    return out


def forms(big: str, calls: int) -> dict[str, Any]:
    """p50 ms of the three reads (JSON built) in three forms: the ORM's model instances
    (what the API did before), the ORM's ``.values()`` of the same columns, and
    memoryapp.sql's statements (what it does now). This checkout's code only."""
    from memoryapp import serializers, sql
    from memoryapp.models import Message, Project, Thread
    from memoryapp.results import MessageView, ThreadView

    project = Project.objects.get(slug="bench")
    pk = uuid.UUID(big)
    shown = [f.name for f in ThreadView.__dataclass_fields__.values() if f.name != "agent_name"]
    columns = [*shown, "agent__name"]
    message_columns = [f for f in MessageView.__dataclass_fields__ if f != "tokens"]
    message_columns += ["tokens_input", "tokens_output", "tokens_total"]

    def view(row: dict[str, Any]) -> ThreadView:
        return ThreadView(agent_name=row.pop("agent__name"), **row)

    def message_view(row: dict[str, Any]) -> MessageView:
        t_in, t_out, total = row.pop("tokens_input"), row.pop("tokens_output"), row.pop("tokens_total")
        tokens = None if total is None else {"input": t_in or 0, "output": t_out or 0, "total": total}
        return MessageView(tokens=tokens, **row)

    threads = Thread.objects.filter(project=project).order_by("-created", "-id")
    newest = Message.objects.filter(thread_id=pk).order_by("-sequence_number")
    cases: dict[str, Callable[[], Any]] = {
        "GET thread: ORM instances": lambda: serializers.thread_to_dict(
            Thread.objects.select_related("agent").get(pk=pk, project=project)
        ),
        "GET thread: ORM .values()": lambda: serializers.thread_to_dict(
            view(Thread.objects.filter(pk=pk, project=project).values(*columns).get())
        ),
        "GET thread: memoryapp.sql": lambda: serializers.thread_to_dict(
            sql.thread_view(thread_id=pk, project_id=project.pk)  # type: ignore[arg-type]
        ),
        "list of 20: ORM instances": lambda: [
            serializers.thread_to_dict(t) for t in threads.select_related("agent")[:21]
        ],
        "list of 20: ORM .values()": lambda: [
            serializers.thread_to_dict(view(t)) for t in threads.values(*columns)[:21]
        ],
        "list of 20: memoryapp.sql": lambda: [
            serializers.thread_to_dict(t)
            for t in sql.thread_page(
                project_id=project.pk, dataset=None, tag=None, after=None, limit=21
            )
        ],
        "messages 20: ORM instances": lambda: [
            serializers.message_to_dict(m) for m in newest[:21]
        ],
        "messages 20: ORM .values()": lambda: [
            serializers.message_to_dict(message_view(m))
            for m in newest.values(*message_columns)[:21]
        ],
        "messages 20: memoryapp.sql": lambda: [
            serializers.message_to_dict(m)
            for m in sql.message_page(  # type: ignore[index]
                thread_id=pk, project_id=project.pk, before=None, after=None, descending=True, limit=21
            )[1]
        ],
    }
    out = {}
    for label, call in cases.items():
        for _ in range(20):
            call()
        out[label] = {"p50": p50_ms(calls, call)}
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    with throwaway_database(args.database, args.postgres_url):
        started = time.perf_counter()
        api, big, cursor = load(args.threads, args.messages)
        print(f"  loaded in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        todo = requests(big, cursor, args.messages)
        results = {"in-process": in_process(api, todo, args.calls)}
        if args.forms:
            results["forms"] = forms(big, args.calls)
        if args.http:
            results["http"] = over_http(api, todo, args.calls)
        return results


def compare(args: argparse.Namespace) -> int:
    """Alternate before (``--compare`` DIR's code) and after (this checkout's) runs."""
    passed = [a for a in sys.argv[1:] if not a.startswith("--compare") and a != args.compare]
    passed = [a for i, a in enumerate(passed) if not (a == "--rounds" or (i and passed[i - 1] == "--rounds"))]
    passed = [a for a in passed if a != "--forms"]
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="bench-lists-cmp-") as tmp:
        for r in range(args.rounds):
            for name, code in (("before", args.compare), ("after", str(HERE.parent))):
                out = Path(tmp) / f"{name}-{r}.json"
                command = [sys.executable, str(HERE / "bench_lists.py"), *passed, "--code", code, "--json", str(out)]
                print(f"round {r + 1}: {name} ({code})", file=sys.stderr)
                subprocess.run(command, check=True, cwd=code)
                runs[name].append(json.loads(out.read_text()))
    print(f"\nload average at the end: {os.getloadavg()}")
    for mode in runs["after"][0]:
        print(f"\n{mode}: p50 ms per round, before -> after, ratio after / before\n")
        last = "server CPU ms/call (ratio)" if mode == "http" else "statements"
        print(f"| request | before | after | ratio | {last} before -> after |")
        print("| --- | --- | --- | --- | --- |")
        for label in runs["after"][0][mode]:
            b = [run[mode][label]["p50"] for run in runs["before"]]
            a = [run[mode][label]["p50"] for run in runs["after"]]
            ratios = " / ".join(f"{x / y:.2f}" for x, y in zip(a, b, strict=True))
            fmt = lambda v: " / ".join(f"{x:.3f}" for x in v)  # noqa: E731
            if mode == "http":  # the server's CPU per call: what load moves least
                c_b = [run[mode][label]["cpu"] or 0.0 for run in runs["before"]]
                c_a = [run[mode][label]["cpu"] or 0.0 for run in runs["after"]]
                c_r = " / ".join(f"{x / y:.2f}" if y else "-" for x, y in zip(c_a, c_b, strict=True))
                last = f"{fmt(c_b)} -> {fmt(c_a)} ({c_r})"
            else:
                s_b = runs["before"][0][mode][label]["statements"]
                last = f"{s_b} -> {runs['after'][0][mode][label]['statements']}"
            print(f"| {label} | {fmt(b)} | {fmt(a)} | {ratios} | {last} |")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--http", action="store_true", help="also over uvicorn")
    parser.add_argument(
        "--forms", action="store_true", help="also the ORM, .values() and SQL forms side by side"
    )
    parser.add_argument("--code", help="import memoryapp from this checkout")
    parser.add_argument("--compare", help="another checkout: before (it) vs after (this)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.compare:
        return compare(args)
    results = run(args)
    for mode, rows in results.items():
        print(f"\n{mode} (p50 ms)")
        for label, r in rows.items():
            extra = f"  {r['statements']} statements" if "statements" in r else ""
            if r.get("cpu") is not None:
                extra += f"  server CPU {r['cpu']:.2f} ms/call"
            print(f"  {label:<32} {r['p50']:7.3f}{extra}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

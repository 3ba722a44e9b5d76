"""Do the hot paths stay flat as threads and projects grow? (issue 11 item 4)

    .venv/bin/python bench/scale.py [--database sqlite|postgres] [--json FILE] [--quick]

On a throwaway database (bench._common), in this process:

1. **Messages per thread**: threads of 1k, 10k and 100k messages, bulk-loaded with the
   append's own INSERT (memoryapp.sql) through ``executemany``, counters set as appends
   would leave them; then ``--calls`` appends (compaction.message_append_compacting, what
   /v1 calls) and ``--calls`` prepares (working.prepare, messageLimit 20) on each, and
   the reads of GET thread, GET threads (first page of 20) and GET messages (newest 20)
   with their JSON built: p50 ms.
2. **Threads per project**: projects of 10, 1k and 100k threads (bulk-created, 10
   messages each for the measured thread); the same appends, prepares and reads on one
   of them (the list is the project's first page).
3. **Dashboard**: the thread page of each of those threads (1k, 10k, 100k messages) and
   the thread list of each of those projects (10, 1k, 100k threads), rendered through
   Django's test client by a logged-in member: p50 ms of ``--pages`` renders and the
   statements each render runs (the same number at every size: nothing is read whole).

Prints the figures and the ratios of the largest size to the smallest (flat is 1.0), and
for the dashboard the query plans of its statements that read messages or threads
(``--explain``). Times depend on the machine's load: the ratios of one run are the result.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from _common import DEFAULT_POSTGRES_URL, throwaway_database

TEXT = "I'm looking for a family car with good resale value and room for the dog. #{}"


def p50_ms(count: int, call: Callable[[int], Any]) -> float:
    samples = []
    for i in range(count):
        start = time.perf_counter()
        call(i)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def load_messages(thread_id: uuid.UUID, total: int) -> None:
    """Insert messages 1..total into an empty thread as appends would leave them."""
    from django.db import connection, transaction
    from django.utils import timezone

    from memoryapp import sql
    from memoryapp.models import Message, Thread

    now = timezone.now()
    insert = sql._insert_sql(connection.vendor)
    with transaction.atomic(), connection.cursor() as cursor:
        for start in range(1, total + 1, 5000):
            rows = []
            for n in range(start, min(start + 5000, total + 1)):
                message = Message(
                    id=uuid.uuid4(),
                    thread_id=thread_id,
                    role="user" if n % 2 else "assistant",
                    content=TEXT.format(n),
                    created_at=now,
                )
                params = sql.message_params(message)
                params[sql.MESSAGE_COLUMNS.index("sequence_number")] = n
                rows.append(params)
            cursor.executemany(insert, rows)
        Thread.objects.filter(pk=thread_id).update(
            next_sequence=total + 1,
            uncompacted_count=total,
            first_message_at=now,
            last_message_at=now,
            latest_created_at=now,
        )
    sql.search_index_catch_up()  # as the appends' batches would have


def load_threads(project: Any, count: int) -> None:
    """``count`` empty threads in ``project`` (bulk_create, 2,000 a statement)."""
    from django.utils import timezone

    from memoryapp.models import Thread

    start = timezone.now() - timedelta(seconds=count)
    batch: list[Thread] = []
    for i in range(count):
        at = start + timedelta(seconds=i)  # one a second, as a busy project makes them
        batch.append(
            Thread(project=project, dataset=f"user_{i % 50}", created=at, last_activity=at)
        )
        if len(batch) == 2000:
            Thread.objects.bulk_create(batch)
            batch = []
    if batch:
        Thread.objects.bulk_create(batch)


def hot_paths(project: Any, thread_id: uuid.UUID, calls: int) -> dict[str, float]:
    """p50 ms of ``calls`` appends and ``calls`` prepares on one thread, and of the reads
    of GET thread, GET threads (first page of 20) and GET messages (newest 20), each with
    its JSON body built (what /v1 calls)."""
    from memoryapp import compaction, serializers, working

    tid = str(thread_id)
    append = p50_ms(
        calls,
        lambda i: compaction.message_append_compacting(
            thread=tid, project=project, role="user", content=TEXT.format(i)
        ),
    )
    prepare = p50_ms(
        calls, lambda i: working.prepare(thread=tid, project=project, message_limit=20)
    )
    thread = p50_ms(
        calls,
        lambda i: serializers.thread_to_dict(working.thread_view(project=project, thread_id=tid)),
    )
    listed = p50_ms(
        calls,
        lambda i: [
            serializers.thread_to_dict(t) for t in working.thread_list(project=project, limit=20)[0]
        ],
    )
    messages = p50_ms(
        calls,
        lambda i: serializers.message_page_to_dict(
            working.message_list(thread=tid, project=project, order="desc", limit=20)
        ),
    )
    return {
        "append": append,
        "prepare": prepare,
        "thread": thread,
        "list": listed,
        "messages": messages,
    }


def by_thread_length(
    sizes: list[int], calls: int, pages: list[tuple[str, str]]
) -> dict[int, dict[str, float]]:
    """Append and prepare p50 on threads of each size; their thread pages go on ``pages``."""
    from memoryapp import working
    from memoryapp.models import Project

    project = Project.objects.create(slug="lengths", name="lengths")
    out = {}
    for size in sizes:
        thread = working.thread_create(project=project, dataset="d")
        started = time.perf_counter()
        load_messages(thread.pk, size)
        print(
            f"  loaded {size:,} messages in {time.perf_counter() - started:.1f} s", file=sys.stderr
        )
        out[size] = hot_paths(project, thread.pk, calls)
        url = f"/dashboard/threads/{thread.pk}/?projectId={project.pk}"
        pages.append((f"thread page, {size:,} messages", url))
    return out


def by_thread_count(
    counts: list[int], calls: int, pages: list[tuple[str, str]]
) -> dict[int, dict[str, float]]:
    """Append and prepare p50 in projects of each size; their thread lists go on ``pages``."""
    from memoryapp import working
    from memoryapp.models import Project

    out = {}
    for i, count in enumerate(counts):
        project = Project.objects.create(slug=f"threads-{i}", name=f"{count} threads")
        started = time.perf_counter()
        load_threads(project, count - 1)
        thread = working.thread_create(project=project, dataset="user_0")
        load_messages(thread.pk, 10)
        print(
            f"  loaded {count:,} threads in {time.perf_counter() - started:.1f} s", file=sys.stderr
        )
        out[count] = hot_paths(project, thread.pk, calls)
        pages.append(
            (f"thread list, {count:,} threads", f"/dashboard/threads/?projectId={project.pk}")
        )
    return out


def dashboard(pages: list[tuple[str, str]], renders: int, explain: bool) -> dict[str, Any]:
    """Render each of ``pages`` (label, URL) as a member of every project: p50 ms of
    ``renders`` full renders and the statements one render runs."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from memoryapp.models import Membership, Project

    user = get_user_model().objects.create_user("bench", password="bench-only-password")
    for project in Project.objects.all():
        Membership.objects.create(user=user, project=project, role=Membership.Role.OWNER)
    client = Client()
    client.force_login(user)
    out: dict[str, Any] = {}
    for label, url in pages:

        def get(i: int, url: str = url) -> None:
            response = client.get(url)
            if response.status_code != 200:
                raise SystemExit(f"GET {url} answered {response.status_code}")

        get(0)
        ran: list[str] = []

        def record(
            execute: Any, sql: str, params: Any, many: bool, context: Any, ran: list[str] = ran
        ) -> Any:
            ran.append(sql if params is None else sql % tuple(_literal(p) for p in params))
            return execute(sql, params, many, context)

        with connection.execute_wrapper(record):
            get(0)
        out[label] = {"p50": p50_ms(renders, get), "statements": len(ran)}
        if explain:
            out[label]["plans"] = plans(ran)
    return out


def _literal(value: Any) -> str:
    """``value`` as an SQL literal, for EXPLAIN of a captured statement (bench only)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool | int | float):
        return str(int(value) if isinstance(value, bool) else value)
    return "'" + str(value).replace("'", "''") + "'"


def plans(statements: list[str]) -> list[str]:
    """EXPLAIN of each captured statement reading the message or thread table."""
    from django.db import connection

    found = []
    for text in statements:
        if not text.upper().startswith("SELECT") or not (
            "memoryapp_message" in text or "memoryapp_thread" in text
        ):
            continue
        prefix = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
        with connection.cursor() as cursor:
            cursor.execute(prefix + text)
            plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
        found.append(f"{text[:160]}...\n      -> {plan}")
    return found


def report(results: dict[str, Any]) -> None:
    for key, title, unit in (
        ("lengths", "messages in the thread", "messages"),
        ("counts", "threads in the project", "threads"),
    ):
        rows = results[key]
        sizes = sorted(rows, key=int)
        print(f"\nBy {title} (p50 ms)\n")
        paths = [p for p in ("append", "prepare", "thread", "list", "messages") if p in rows[sizes[0]]]
        print(f"| {unit} | {' | '.join(paths)} |")
        print("| ---: |" + " ---: |" * len(paths))
        for size in sizes:
            print(f"| {int(size):,} | " + " | ".join(f"{rows[size][p]:.3f}" for p in paths) + " |")
        low, high = rows[sizes[0]], rows[sizes[-1]]
        ratios = ", ".join(f"{p} {high[p] / low[p]:.2f}x" for p in paths)
        print(f"\n{int(sizes[-1]):,} / {int(sizes[0]):,}: {ratios}")
    print("\nDashboard (p50 ms of a full render, statements per render)\n")
    for label, r in results["dashboard"].items():
        print(f"- {label}: {r['p50']:.1f} ms, {r['statements']} statements")
        for plan in r.get("plans", []):
            print(f"    {plan}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--calls", type=int, default=200, help="appends and prepares per size")
    parser.add_argument("--pages", type=int, default=20, help="renders per dashboard page")
    parser.add_argument("--explain", action="store_true", help="print the dashboard's query plans")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--quick", action="store_true", help="a smoke run: sizes / 100")
    args = parser.parse_args()
    scale = 100 if args.quick else 1
    lengths = [1_000 // scale, 10_000 // scale, 100_000 // scale]
    counts = [10, 100, 1_000] if args.quick else [10, 1_000, 100_000]
    results: dict[str, Any] = {}
    static = tempfile.TemporaryDirectory(prefix="scale-static-")
    # DEBUG is off (bench._common): pages name static files from collectstatic's manifest.
    os.environ["STATIC_ROOT"] = static.name
    with static, throwaway_database(args.database, args.postgres_url) as label:
        from django.core.management import call_command

        call_command("collectstatic", interactive=False, verbosity=0)
        print(f"scale bench on {label}", file=sys.stderr)
        pages: list[tuple[str, str]] = []
        results["lengths"] = by_thread_length(lengths, args.calls, pages)
        results["counts"] = by_thread_count(counts, args.calls, pages)
        results["dashboard"] = dashboard(pages, args.pages, args.explain)
    results["database"] = args.database
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

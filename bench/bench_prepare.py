"""prepare() latency against thread length, append latency with and without compaction.

    .venv/bin/python bench/bench_prepare.py [--database sqlite|postgres] [--iterations 300]

prepare (spec 002 POST .../prepare) should cost the same on a thread of 1,000 messages as
on one of 100,000: three queries (API key, thread + active summary, tail), the tail a
range of the (thread, sequence_number) index above the active summary's end (migration
0022; before it, the partial index message_live_tail_idx). Threads of 1k, 10k and 100k messages are
bulk-created in the shape rolling compaction at threshold 30 leaves them (every run folds
29 messages and the previous summary, keeps the tripping one; so 3% extra summary rows and
a short live tail), with the thread row's counters set as the service would. All threads
share one table, so the big thread's rows are in the way of the small ones.

Measured, in this process through Django's test client (routing, middleware, key auth,
validation, JSON; no server, no network): prepare p50/p95 per thread length with the
ratio 100k/1k (flat is the goal), and prepare's domain call alone (thread read + tail,
no HTTP). Then POST .../messages p50/p95 on a threshold-30 thread, split into inserts
that trip compaction (offline adapter: an extractive summary, no network) and those that
do not. The tail query of each prepare is captured and EXPLAINed (EXPLAIN QUERY PLAN on
SQLite, EXPLAIN ANALYZE on PostgreSQL, after ANALYZE); the bench exits 1 if it is not
such a range (RANGE_MARKS).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import timedelta
from typing import Any

from _common import (
    BASE,
    DEFAULT_POSTGRES_URL,
    Api,
    analyze_tables,
    capture_queries,
    explain,
    percentile,
    throwaway_database,
)

THRESHOLD = 30
TAIL_SQL_MARK = 'ORDER BY "memoryapp_message"."sequence_number" DESC'
SENTENCES = [
    "I'm looking for a family car with good resale value.",
    "We decided on the hybrid after the test drive on Saturday.",
    "My budget is around 28,000 dollars, maybe a bit more.",
    "Do you know if the dealer on Main Street is open on Sundays?",
    "Thanks, that helps a lot.",
    "Emma prefers the blue one, and I like the grey.",
    "The insurance quote came back at 1,150 a year.",
    "Let's compare the Corolla Hybrid and the Civic next week.",
]


def bulk_thread(project: Any, messages: int) -> Any:
    """Write a thread of ``messages`` ordinary messages as sequential appends with
    autoCompactThreshold 30 would have left it, directly with bulk_create; return it."""
    from django.utils import timezone

    from memoryapp.models import Message, Thread

    thread = Thread.objects.create(project=project, dataset=f"bench-{messages}", auto_compact_threshold=THRESHOLD)
    start = timezone.now()
    rows: list[Message] = []
    live: list[Message] = []
    summary: Message | None = None
    runs = 0
    sequence = 0
    for i in range(1, messages + 1):
        sequence += 1
        row = Message(
            thread=thread,
            sequence_number=sequence,
            role="user" if i % 2 else "assistant",
            content=SENTENCES[i % len(SENTENCES)],
            created_at=start + timedelta(milliseconds=sequence),
        )
        rows.append(row)
        live.append(row)
        if len(live) >= THRESHOLD:
            runs += 1
            sequence += 1
            now = start + timedelta(milliseconds=sequence)
            for folded in live[:-1]:
                folded.compacted_at = now
            if summary is not None:
                summary.compacted_at = now
            summary = Message(
                thread=thread,
                sequence_number=sequence,
                role="system",
                content=f"Summary of earlier conversation, run {runs}. " + " ".join(SENTENCES),
                is_summary=True,
                covers_from_sequence=1,
                covers_to_sequence=live[-2].sequence_number,
                created_at=now,
            )
            rows.append(summary)
            live = live[-1:]
    Message.objects.bulk_create(rows, batch_size=5000)
    Thread.objects.filter(pk=thread.pk).update(
        next_sequence=sequence + 1,
        uncompacted_count=len(live),
        active_summary=summary,
        compaction_count=runs,
        first_message_at=start,
        last_message_at=start + timedelta(milliseconds=sequence),
        last_activity=start + timedelta(milliseconds=sequence),
    )
    return Thread.objects.get(pk=thread.pk)


def time_ms(fn: Any, iterations: int) -> list[float]:
    samples = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


# How each database's plan shows the tail read as a bounded range of the unique index.
RANGE_MARKS = ("sequence_number>? AND sequence_number<?", "message_thread_sequence_unique")


def _ranged(plan: str) -> bool:
    return any(mark in plan for mark in RANGE_MARKS)


def bench_prepare(api: Api, project: Any, sizes: list[int], iterations: int, limit: int) -> bool:
    """Print prepare figures per size and the plans; False if the tail is not a range."""
    from memoryapp import working

    t0 = time.perf_counter()
    threads = {size: bulk_thread(project, size) for size in sizes}
    analyze_tables()
    print(f"bulk-created {sum(sizes)} messages (+ summaries) in {time.perf_counter() - t0:.1f} s")
    print(f"\nprepare, messageLimit {limit}, {iterations} calls each (after 20 warm-up calls)")
    print(f"{'messages':>9}{'rows':>8}{'live':>6}{'http p50':>10}{'http p95':>10}{'domain p50':>12}{'domain p95':>12}  index")
    http_p50: dict[int, float] = {}
    domain_p50: dict[int, float] = {}
    plans: dict[int, str] = {}
    all_use_index = True
    calls: dict[int, tuple[Any, Any]] = {}
    for size, thread in threads.items():
        path = f"{BASE}/threads/{thread.id}/prepare"
        body = {"messageLimit": limit}

        def call_http(path: str = path, body: dict[str, int] = body) -> None:
            api.ok("POST", path, body)

        def call_domain(thread: Any = thread) -> None:
            fresh = working.thread_get(project=project, thread_id=thread.id, with_summary=True)
            working.prepare(thread=fresh, message_limit=limit)

        calls[size] = (call_http, call_domain)
        for _ in range(20):
            call_http()
        window = api.ok("POST", path, body)
        expected = min(thread.uncompacted_count, limit) + 1
        if len(window["messages"]) != expected:
            raise SystemExit(f"prepare of {size} returned {len(window['messages'])} messages, expected {expected}")
        with capture_queries(lambda sql: TAIL_SQL_MARK in sql) as captured:
            call_http()
        sql, params = captured[0]
        plans[size] = explain(sql, params)
        all_use_index &= _ranged(plans[size])
    # Round-robin over the sizes so load from elsewhere on the machine hits them alike.
    http: dict[int, list[float]] = {size: [] for size in sizes}
    domain: dict[int, list[float]] = {size: [] for size in sizes}
    for _ in range(iterations):
        for size in sizes:
            http[size].extend(time_ms(calls[size][0], 1))
            domain[size].extend(time_ms(calls[size][1], 1))
    for size, thread in threads.items():
        http_p50[size], domain_p50[size] = percentile(http[size], 50), percentile(domain[size], 50)
        print(
            f"{size:>9}{thread.next_sequence - 1:>8}{thread.uncompacted_count:>6}"
            f"{http_p50[size]:>10.2f}{percentile(http[size], 95):>10.2f}"
            f"{domain_p50[size]:>12.2f}{percentile(domain[size], 95):>12.2f}"
            f"  {'yes' if _ranged(plans[size]) else 'NO'}"
        )
    small, big = min(sizes), max(sizes)
    print(
        f"ratio {big}/{small} p50: http {http_p50[big] / http_p50[small]:.2f}, "
        f"domain {domain_p50[big] / domain_p50[small]:.2f} (1.00 = flat)"
    )
    print(f"\nplan of prepare's tail query on the {big}-message thread:")
    print("\n".join("    " + line for line in plans[big].splitlines()))
    return all_use_index


def bench_append(api: Api, inserts: int) -> None:
    """Print append p50/p95 for inserts that trip compaction and for those that do not."""
    thread = api.ok("POST", f"{BASE}/threads", {"dataset": "bench-append", "autoCompactThreshold": THRESHOLD}, expect=201)
    path = f"{BASE}/threads/{thread['threadId']}/messages"
    tripping: list[float] = []
    plain: list[float] = []
    for i in range(inserts):
        body = {"role": "user" if i % 2 else "assistant", "content": SENTENCES[i % len(SENTENCES)]}
        t0 = time.perf_counter()
        data = api.ok("POST", path, body, expect=201)
        elapsed = (time.perf_counter() - t0) * 1000
        (tripping if data["compacted"] else plain).append(elapsed)
    print(f"\nappend, threshold {THRESHOLD}, offline adapter, {inserts} inserts")
    print(f"  does not trip: n={len(plain):>5}  p50 {percentile(plain, 50):7.2f} ms  p95 {percentile(plain, 95):7.2f} ms")
    print(f"  trips:         n={len(tripping):>5}  p50 {percentile(tripping, 50):7.2f} ms  p95 {percentile(tripping, 95):7.2f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--sizes", default="1000,10000,100000", help="thread lengths, comma-separated")
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--limit", type=int, default=THRESHOLD, help="messageLimit (default: the threshold)")
    parser.add_argument("--inserts", type=int, default=60 * (THRESHOLD - 1) + 1)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))

    with throwaway_database(args.database, args.postgres_url) as label:
        from django.utils import timezone

        from memoryapp.models import ApiKey

        print(f"database: {label}; client: Django test client in-process; model: offline")
        api = Api.for_new_project("prepare-bench")
        ApiKey.objects.update(last_used=timezone.now())
        project = ApiKey.objects.get().project
        ok = bench_prepare(api, project, sizes, args.iterations, args.limit)
        bench_append(api, args.inserts)
    if not ok:
        print("\nFAIL: prepare's tail query is not a range of the unique index", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where the 4 writers of bench/peers.py spend their time: the write lock, instrumented.

    .venv/bin/python bench/writers_probe.py [--stores ours,agents-normal] [--rounds 3] [--prefill 12000]

Runs peers.py's "4 writers" (4 processes x 250 appends to one new conversation, released
together by one barrier) on ``ours`` and ``agents-normal``, alternating, ``--rounds``
times, with every append timed in its writer process:

- ``hold``: the write lock held (ours: inside ``sql.writers_queue``, BEGIN IMMEDIATE to
  COMMIT; agents: from the end of its first statement, which took SQLite's write lock, to
  the end of its COMMIT);
- ``wait``: asked for the lock until it was had;
- ``handoff``: one holder's release until the next holder had it (CLOCK_MONOTONIC, the
  same clock in every process);
- ``cpu in / out``: the writer's CPU time (user+sys) per append inside the lock and
  outside it (the whole process, its other threads included);
- ``streak``: appends one process made in a row before another got the lock;
- ``first``: the first append of each writer (connection warm-up, caches) against the
  median of the rest.

``--prefill N`` first fills another conversation of the same database to N messages (the
store's bulk path, then for ours the search index caught up), as peers.py's writers find
the database after its single-writer phases (~12,200 messages).

Prints a line per store and round; the msgs/s of stores in one round are comparable.
Nothing here is used by the service.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import queue
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers
from _common import REPO, throwaway_database

WRITERS, PER_WRITER = peers.WRITERS, peers.PER_WRITER


class Probe:
    """Per-append timestamps (ns) of one writer process."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, int, int]] = []  # ask, got, released, cpu in lock, done
        self.ask = self.got = self.cpu = 0

    def asking(self) -> None:
        self.ask = time.perf_counter_ns()

    def acquired(self) -> None:
        self.got = time.perf_counter_ns()
        self.cpu = time.thread_time_ns()

    def released(self) -> None:
        self.rows.append((self.ask, self.got, time.perf_counter_ns(), time.thread_time_ns() - self.cpu, 0))


def _polling_queue(pause: float) -> Callable[[], Any]:
    """writers_queue's flock taken with LOCK_NB and a sleep between tries: no waiter is
    woken by a release (a what-if)."""
    import fcntl

    from django.db import connection

    fds: dict[str, int] = {}

    @contextmanager
    def polling() -> Iterator[None]:
        name = str(connection.settings_dict["NAME"])
        fd = fds.get(name) or fds.setdefault(name, os.open(name + ".append-lock", os.O_RDWR | os.O_CREAT))
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(pause)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    return polling


def _flock_queue() -> Callable[[], Any]:
    """writers_queue as it was before the turnstile: one flock (a what-if)."""
    import fcntl

    from django.db import connection

    fds: dict[str, int] = {}

    @contextmanager
    def single() -> Iterator[None]:
        name = str(connection.settings_dict["NAME"])
        fd = fds.get(name) or fds.setdefault(name, os.open(name + ".append-lock", os.O_RDWR | os.O_CREAT))
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    return single


def _turnstile_queue() -> Callable[[], Any]:
    """writers_queue as two flocks, a turnstile then the lock, both held to the end and the
    turnstile let go first: the waiters queue on the turnstile, so none is woken while a
    holder works, only when it leaves (a what-if)."""
    import fcntl

    from django.db import connection

    fds: dict[str, tuple[int, int]] = {}

    @contextmanager
    def turnstile() -> Iterator[None]:
        name = str(connection.settings_dict["NAME"])
        if name not in fds:
            fds[name] = (
                os.open(name + ".append-turnstile", os.O_RDWR | os.O_CREAT),
                os.open(name + ".append-lock", os.O_RDWR | os.O_CREAT),
            )
        door, lock = fds[name]
        fcntl.flock(door, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(door, fcntl.LOCK_UN)
            fcntl.flock(lock, fcntl.LOCK_UN)

    return turnstile


def _instrument_ours(probe: Probe) -> None:
    from memoryapp import sql

    # PROBE_QUEUE=none: no file lock, SQLite's busy handler alone (then only msgs/s
    # means anything: the times are taken outside BEGIN IMMEDIATE's own wait).
    queue: Callable[[], Any] = sql.writers_queue
    if os.environ.get("PROBE_QUEUE") == "none":
        queue = contextlib.nullcontext
    if os.environ.get("PROBE_QUEUE", "").startswith("poll"):  # poll:50 = LOCK_NB every 50 us
        queue = _polling_queue(float(os.environ["PROBE_QUEUE"].split(":")[1]) / 1e6)
    if os.environ.get("PROBE_QUEUE") == "turnstile":
        queue = _turnstile_queue()
    if os.environ.get("PROBE_QUEUE") == "flock":  # the lock alone, as before the turnstile
        queue = _flock_queue()

    @contextmanager
    def timed_queue(wrapper: Any = None) -> Iterator[None]:
        # sql hands over the connection it looked up; each queue here looks its own up.
        probe.asking()
        with queue():
            probe.acquired()
            yield
        probe.released()

    sql.writers_queue = timed_queue
    # PROBE_SET="FTS_BATCH=100000,WAL_CHECKPOINT_EVERY=100000": override sql's constants.
    for item in filter(None, os.environ.get("PROBE_SET", "").split(",")):
        key, value = item.split("=")
        setattr(sql, key, int(value))


class _TimedConnection:
    """A sqlite3 connection whose first statement of a transaction and COMMIT are timed."""

    def __init__(self, conn: Any, probe: Probe) -> None:
        self.conn, self.probe, self.first = conn, probe, True

    def execute(self, *args: Any) -> Any:
        if self.first:
            self.probe.asking()
        out = self.conn.execute(*args)
        if self.first:
            self.probe.acquired()
            self.first = False
        return out

    def executemany(self, *args: Any) -> Any:
        return self.conn.executemany(*args)

    def commit(self) -> None:
        self.conn.commit()
        self.probe.released()

    def rollback(self) -> None:
        self.conn.rollback()


def _instrument_agents(store: Any, probe: Probe) -> None:
    session = store.session
    write_connection = session._write_connection

    @contextmanager
    def timed() -> Iterator[Any]:
        with write_connection() as conn:
            yield _TimedConnection(conn, probe)

    session._write_connection = timed


def _writer(name: str, spec: dict[str, Any], start: Any, done: Any, offset: int) -> None:
    if name in peers.OURS:
        sys.path.insert(0, str(REPO))
    store = peers.KINDS[name].attach(spec)
    probe = Probe()
    if name in peers.OURS:
        _instrument_ours(probe)
    else:
        _instrument_agents(store, probe)
    start.wait()
    cpu0 = time.process_time_ns()
    ends = []
    for i in range(PER_WRITER):
        store.append(offset + i)
        ends.append(time.perf_counter_ns())
    cpu = time.process_time_ns() - cpu0
    done.put((os.getpid(), cpu, probe.rows, ends))


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def _prefill(name: str, workdir: Path, total: int) -> None:
    """Another conversation of the same database filled to ``total`` messages."""
    if not total:
        return
    peers.make_store(name, workdir, "conversation", {}).fill(total)
    if name in peers.OURS:
        from memoryapp import sql

        sql.search_index_catch_up()
        sql.wal_checkpoint()


def run(name: str, workdir: Path, prefill: int = 0) -> dict[str, Any]:
    _prefill(name, workdir, prefill)
    if name in peers.OURS and os.environ.get("PROBE_SQL"):  # e.g. "DROP+INDEX+x" (+ for spaces): what-ifs
        from django.db import connection

        with connection.cursor() as cursor:
            for statement in os.environ["PROBE_SQL"].replace("+", " ").split(";"):
                cursor.execute(statement)
    store = peers.make_store(name, workdir, f"writers-{time.time_ns()}", {})
    ctx = multiprocessing.get_context("spawn")
    start, done = ctx.Barrier(WRITERS + 1), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(name, store.spec(), start, done, w * PER_WRITER))
        for w in range(WRITERS)
    ]
    for p in procs:
        p.start()
    start.wait()
    began = time.perf_counter_ns()
    results: list[Any] = []
    while len(results) < len(procs):
        try:
            results.append(done.get(timeout=1))
        except queue.Empty:
            if any(p.exitcode not in (None, 0) for p in procs):
                raise SystemExit("a writer failed") from None
    wall = time.perf_counter_ns() - began
    for p in procs:
        p.join()
    events = sorted(
        (got, released, ask, cpu_in, end, pid)
        for pid, _, rows, _ in results
        for ask, got, released, cpu_in, end in rows
    )
    holds = [(r - g) / 1e3 for g, r, *_ in events]
    waits = [(g - a) / 1e3 for g, _, a, *_ in events]
    handoffs = [(events[i][0] - events[i - 1][1]) / 1e3 for i in range(1, len(events))]
    streaks, run_len = [], 1
    for i in range(1, len(events)):
        if events[i][5] == events[i - 1][5]:
            run_len += 1
        else:
            streaks.append(run_len)
            run_len = 1
    streaks.append(run_len)
    appends = sum(len(ends) for *_, ends in results)
    cpu_total = sum(r[1] for r in results) / 1e3 / appends
    cpu_in = statistics.mean(e[3] for e in events) / 1e3
    firsts, rest = [], []
    for *_, ends in results:
        laps = [(ends[0] - began) / 1e3] + [(ends[i] - ends[i - 1]) / 1e3 for i in range(1, len(ends))]
        firsts.append(laps[0])
        rest.extend(laps[1:])
    return {
        "msgs/s": store.count() / (wall / 1e9),
        "arrived": store.count(),
        "hold_p50": statistics.median(holds),
        "hold_p90": _pct(holds, 0.9),
        "hold_mean": statistics.mean(holds),
        "long_share": sum(h for h in holds if h > 1000) / sum(holds),
        "busy": sum(holds) / (wall / 1e3),
        "wait_p50": statistics.median(waits),
        "handoff_p50": statistics.median(handoffs),
        "handoff_mean": statistics.mean(handoffs),
        "streak_mean": statistics.mean(streaks),
        "cpu_per_append": cpu_total,
        "cpu_in_lock": cpu_in,
        "first_max": max(firsts),
        "lap_p50": statistics.median(rest),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="ours,agents-normal")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prefill", type=int, default=0, help="messages in another conversation first")
    parser.add_argument("--only", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        with tempfile.TemporaryDirectory(prefix="probe-") as tmp:
            if args.only in peers.OURS:
                with throwaway_database("sqlite"):
                    result = run(args.only, Path(tmp), args.prefill)
            else:
                result = run(args.only, Path(tmp), args.prefill)
        print(repr(result))
        return 0
    import ast
    import subprocess

    cols = [
        "msgs/s", "hold_p50", "hold_p90", "hold_mean", "long_share", "busy", "wait_p50", "handoff_p50",
        "handoff_mean", "streak_mean", "cpu_per_append", "cpu_in_lock", "first_max", "lap_p50",
    ]
    print("| round | store | " + " | ".join(cols) + " |")
    print("| --- | --- |" + " ---: |" * len(cols))
    for r in range(args.rounds):
        for name in args.stores.split(","):
            out = subprocess.run(
                [sys.executable, __file__, "--only", name, "--prefill", str(args.prefill)], check=True, capture_output=True, text=True
            ).stdout
            res = ast.literal_eval(out.strip().splitlines()[-1])
            cells = " | ".join(f"{res[c]:.2f}" if res[c] < 100 else f"{res[c]:,.0f}" for c in cols)
            print(f"| {r + 1} | {name} | {cells} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

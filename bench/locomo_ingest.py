"""Ingest the LoCoMo conversations through the /v1 API and check compaction's invariants.

    .venv/bin/python bench/locomo_ingest.py [--database sqlite|postgres] [--data DIR]

Every session of every conversation in ``--data`` (default /work/shared/data/locomo, read
in place, never copied) is appended turn by turn with POST .../messages, in session order,
into a thread with ``autoCompactThreshold`` 30 (spec 000 "Compaction"). ``speaker_a`` is
the ``user``, ``speaker_b`` the ``assistant``; the message is the turn's ``text``.

One thread per conversation, dataset = the conversation id (the file name, e.g.
``conv-26``). A LoCoMo conversation is one relationship carried across 19-32 sessions,
and threads never end (spec 000 "Threads"), so it is one long thread: 369-680 turns, which
makes 12-23 rolling compaction runs each. A thread per session (9-47 turns, median under
30) would mostly never reach the threshold and prove little.

Requests go through Django's test client in this process (real routing, middleware, key
auth, validation; no server, no network) against a throwaway database: a temporary SQLite
file by default, or a new PostgreSQL database that is dropped at exit. The model is the
offline adapter, so the figures measure the service, not a model provider.

Checks, for every thread: sequence numbers are 1..N with no gap; exactly one active
summary; every folded row was folded by a summary whose range holds it (its compactedAt is
that summary's createdAt; a folded summary was folded by the next one); the number of runs
is what the threshold rule gives (DESIGN.md section 6 item 2) and matches the thread's
compaction count and the inserts that answered ``compacted: true``; prepare is
[active summary] + the un-compacted messages in order; and no turn is lost or duplicated:
the non-summary rows, in sequence order, are exactly the turns (role and text). Prints
messages/s and compaction counts; exits 1 on any violation.
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import BASE, Api, conversation_files, locomo_arguments, percentile, throwaway_database

THRESHOLD = 30
PAGE = 100


@dataclass
class Conversation:
    """One LoCoMo file: its id and its turns as (role, text), sessions in order."""

    conversation_id: str
    sessions: int
    turns: list[tuple[str, str]]


@dataclass
class Ingested:
    """What ingesting one conversation produced and measured."""

    conversation: Conversation
    thread_id: str
    seconds: float
    latencies_ms: list[float]
    compacted_responses: int
    violations: list[str] = field(default_factory=list)


def load(path: Path) -> Conversation:
    """Read one conversation file; raise SystemExit if a turn's speaker is neither speaker."""
    data = json.loads(path.read_text(encoding="utf-8"))
    speaker_a, speaker_b = data["speaker_a"], data["speaker_b"]
    numbers = sorted(int(m.group(1)) for k in data if (m := re.fullmatch(r"session_(\d+)", k)))
    turns: list[tuple[str, str]] = []
    for number in numbers:
        for turn in data[f"session_{number}"]:
            if turn["speaker"] == speaker_a:
                role = "user"
            elif turn["speaker"] == speaker_b:
                role = "assistant"
            else:
                raise SystemExit(f"{path.name} {turn['dia_id']}: unknown speaker {turn['speaker']!r}")
            turns.append((role, turn["text"]))
    return Conversation(conversation_id=path.stem, sessions=len(numbers), turns=turns)


def expected_runs(turns: int, threshold: int) -> int:
    """Runs the rule of DESIGN.md section 6 item 2 gives for ``turns`` sequential inserts:
    a run trips when the live count reaches the threshold and leaves the tripping message."""
    live = runs = 0
    for _ in range(turns):
        live += 1
        if live >= threshold:
            runs += 1
            live = 1
    return runs


def ingest(api: Api, conversation: Conversation) -> Ingested:
    """Create the conversation's thread and append every turn, timing each request."""
    thread = api.ok(
        "POST",
        f"{BASE}/threads",
        {
            "dataset": conversation.conversation_id,
            "tags": ["locomo"],
            "autoCompactThreshold": THRESHOLD,
        },
        expect=201,
    )
    thread_id = thread["threadId"]
    latencies: list[float] = []
    compacted = 0
    started = time.perf_counter()
    for role, text in conversation.turns:
        t0 = time.perf_counter()
        body = api.ok(
            "POST", f"{BASE}/threads/{thread_id}/messages", {"role": role, "content": text}, expect=201
        )
        latencies.append((time.perf_counter() - t0) * 1000)
        compacted += bool(body["compacted"])
    seconds = time.perf_counter() - started
    return Ingested(conversation, thread_id, seconds, latencies, compacted)


def all_rows(api: Api, thread_id: str) -> list[dict[str, Any]]:
    """Every row of the thread, summaries and compacted rows included, by sequence number."""
    rows: list[dict[str, Any]] = []
    after = 0
    while True:
        page = api.ok("GET", f"{BASE}/threads/{thread_id}/messages", limit=PAGE, after=after)
        rows.extend(page["messages"])
        if not page["hasMore"]:
            return rows
        after = page["messages"][-1]["sequenceNumber"]


def check(api: Api, result: Ingested) -> None:
    """Append every invariant the thread breaks to ``result.violations``."""
    bad = result.violations
    thread_id = result.thread_id
    rows = all_rows(api, thread_id)
    summaries = [r for r in rows if "summary" in r]
    ordinary = [r for r in rows if "summary" not in r]

    numbers = [r["sequenceNumber"] for r in rows]
    if numbers != list(range(1, len(rows) + 1)):
        bad.append(f"sequence numbers are not 1..{len(rows)}")

    runs = expected_runs(len(result.conversation.turns), THRESHOLD)
    state = api.ok("GET", f"{BASE}/threads/{thread_id}")["compaction"]
    if not (len(summaries) == runs == state["count"] == result.compacted_responses):
        bad.append(
            f"runs: expected {runs}, summaries {len(summaries)}, thread count {state['count']}, "
            f"compacted responses {result.compacted_responses}"
        )
    if state["lastError"] is not None:
        bad.append(f"compaction.lastError is {state['lastError']!r}")

    active = [s for s in summaries if s["compactedAt"] is None]
    if len(active) != (1 if runs else 0):
        bad.append(f"{len(active)} active summaries")
    if active and state["activeSummaryId"] != active[0]["messageId"]:
        bad.append("the thread's activeSummaryId is not the active summary row")
    for s in summaries:
        if s["role"] != "system":
            bad.append(f"summary {s['sequenceNumber']} has role {s['role']}")

    for index, s in enumerate(summaries):
        if s["compactedAt"] is None:
            continue
        later = summaries[index + 1] if index + 1 < len(summaries) else None
        if later is None or later["createdAt"] != s["compactedAt"]:
            bad.append(f"summary {s['sequenceNumber']} was not folded by the next summary")
    for r in ordinary:
        if r["compactedAt"] is None:
            continue
        seq = r["sequenceNumber"]
        folder = next(
            (s for s in summaries if s["sequenceNumber"] > seq and s["summary"]["toSequence"] >= seq),
            None,
        )
        if folder is None:
            bad.append(f"message {seq} is folded but no later summary covers it")
        elif not (folder["summary"]["fromSequence"] <= seq <= folder["summary"]["toSequence"]):
            bad.append(f"message {seq} is outside the range of summary {folder['sequenceNumber']}")
        elif folder["createdAt"] != r["compactedAt"]:
            bad.append(f"message {seq} was not folded by summary {folder['sequenceNumber']}")

    live = [r for r in ordinary if r["compactedAt"] is None]
    window = api.ok("POST", f"{BASE}/threads/{thread_id}/prepare", {"messageLimit": 100})
    expected_messages = [{"role": "system", "content": a["content"]} for a in active] + [
        {"role": r["role"], "content": r["content"]} for r in live
    ]
    if window["messages"] != expected_messages:
        bad.append("prepare is not [active summary] + the un-compacted messages")
    if (window["messageCount"], window["compacted"], window["truncated"]) != (
        len(live),
        bool(active),
        len(live) > 100,
    ):
        bad.append(f"prepare counters wrong: {window['messageCount']=} {window['compacted']=}")
    if "warning" in window:
        bad.append("prepare warned with messageLimit 100 >= threshold 30")

    stored = [(r["role"], r["content"]) for r in ordinary]
    if stored != result.conversation.turns:
        missing = len(set(result.conversation.turns) - set(stored))
        bad.append(
            f"stored turns differ from the conversation: {len(stored)} stored, "
            f"{len(result.conversation.turns)} turns, {missing} missing"
        )


def main() -> int:
    args = locomo_arguments(__doc__)
    files = conversation_files(args.data)
    conversations = [load(f) for f in files]

    with throwaway_database(args.database, args.postgres_url) as label:
        print(f"database: {label}; client: Django test client in-process; model: offline")
        print(f"threshold {THRESHOLD}; one thread per conversation (dataset = conversation id)\n")
        api = Api.for_new_project("locomo-bench")
        results = []
        header = f"{'conversation':<13}{'sessions':>9}{'turns':>7}{'runs':>6}{'msg/s':>9}{'p50 ms':>8}{'p95 ms':>8}  result"
        print(header)
        for conversation in conversations:
            result = ingest(api, conversation)
            check(api, result)
            results.append(result)
            print(
                f"{conversation.conversation_id:<13}{conversation.sessions:>9}"
                f"{len(conversation.turns):>7}{result.compacted_responses:>6}"
                f"{len(conversation.turns) / result.seconds:>9.0f}"
                f"{percentile(result.latencies_ms, 50):>8.2f}{percentile(result.latencies_ms, 95):>8.2f}"
                f"  {'ok' if not result.violations else 'VIOLATIONS'}"
            )
            for violation in result.violations:
                print(f"    - {violation}")

    messages = sum(len(r.conversation.turns) for r in results)
    seconds = sum(r.seconds for r in results)
    runs = sum(r.compacted_responses for r in results)
    violations = sum(len(r.violations) for r in results)
    every = [ms for r in results for ms in r.latencies_ms]
    print(
        f"\n{len(results)} threads, {messages} messages in {seconds:.1f} s: "
        f"{messages / seconds:.0f} messages/s (append p50 {percentile(every, 50):.2f} ms, "
        f"p95 {percentile(every, 95):.2f} ms), {runs} compaction runs, {violations} violations"
    )
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())

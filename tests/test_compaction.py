"""Compaction (memoryapp/compaction.py): spec 000 "Compaction", spec 002 POST .../compact,
DESIGN.md section 6 items 2-4.

The model is a fake summarizer (``memoryapp.llm.get_model`` is monkeypatched) that records
what it was given, can fail, and can hold a call on a ``threading.Event`` so races are
orchestrated deterministically. Race tests use real threads, each with its own database
connection, so they need ``django_db(transaction=True)``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from memoryapp import compaction, llm, working
from memoryapp.llm.port import ModelError, OpenNote, Summary, TranscriptMessage, Usage
from memoryapp.llm.registry import GuardedModel
from memoryapp.models import Job, Message, Thread
from tests.conftest import BASE, Api

# Generous bound so a broken orchestration fails the test instead of hanging the suite;
# never reached when the code is right.
WAIT_SECONDS = 30


@dataclass
class SummarizeCall:
    """What one summarize() call was given, and on which thread it ran."""

    previous_summary: str | None
    messages: list[tuple[int, str, str]]
    thread_name: str


@dataclass
class Gate:
    """Holds one summarize() call: ``entered`` is set when the call arrives, the call
    returns only after ``release`` is set."""

    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


class FakeSummarizer:
    """A ModelPort whose summarize() is scripted; every other call is a test failure."""

    name = "fake"

    def __init__(self) -> None:
        self.calls: list[SummarizeCall] = []
        self.error: Exception | None = None
        self._gates: dict[str, Gate] = {}
        self._lock = threading.Lock()

    def hold(self, thread_name: str) -> Gate:
        """Hold the next summarize() call made on the thread named ``thread_name``."""
        gate = Gate()
        self._gates[thread_name] = gate
        return gate

    def summarize(
        self,
        *,
        previous_summary: str | None,
        messages: list[TranscriptMessage],
        max_tokens: int,
        open_notes: list[OpenNote] | None = None,
    ) -> Summary:
        assert open_notes is None  # only an agent's thread hands over notes
        name = threading.current_thread().name
        with self._lock:
            number = len(self.calls) + 1
            self.calls.append(
                SummarizeCall(
                    previous_summary,
                    [(m.sequence_number, m.role, m.content) for m in messages],
                    name,
                )
            )
            gate = self._gates.pop(name, None)
        if gate is not None:
            gate.entered.set()
            if not gate.release.wait(WAIT_SECONDS):
                raise AssertionError("summarize() was never released")
        if self.error is not None:
            raise self.error
        folded = " | ".join(f"{m.sequence_number} {m.role}: {m.content}" for m in messages)
        return Summary(
            text=f"S{number} [previous: {previous_summary}] {folded}",
            model="fake-summarizer",
            usage=Usage(input_tokens=10, output_tokens=5),
        )

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"compaction must not call model.{name}")


@pytest.fixture
def summarizer(monkeypatch: pytest.MonkeyPatch, settings: Any) -> FakeSummarizer:
    # These tests drive the model call; a fold short enough to be kept word for word
    # (memoryapp.summary_rules) is tested in tests/test_short_folds.py.
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    fake = FakeSummarizer()
    # Handed out as the registry hands out every adapter (a stray error becomes ModelError).
    monkeypatch.setattr(llm, "get_model", lambda: GuardedModel(fake))
    return fake


# --- helpers ------------------------------------------------------------------------------


def url(thread_id: str, action: str) -> str:
    return f"{BASE}/threads/{thread_id}/{action}"


def append_all(api: Api, thread_id: str, contents: list[str]) -> list[dict[str, Any]]:
    out = []
    for content in contents:
        resp = api.append(thread_id, content)
        assert resp.status_code == 201, resp.content
        out.append(resp.json())
    return out


def all_rows(api: Api, thread_id: str) -> list[dict[str, Any]]:
    resp = api.get(url(thread_id, "messages"), limit=100)
    assert resp.status_code == 200
    body = resp.json()
    assert body["hasMore"] is False
    return list(body["messages"])


def prepare(api: Api, thread_id: str, **body: Any) -> dict[str, Any]:
    resp = api.post(url(thread_id, "prepare"), body)
    assert resp.status_code == 200, resp.content
    return dict(resp.json())


def assert_compaction_invariants(thread_id: str) -> Message:
    """Sequence numbers 1..N; exactly one active summary; every folded row (ordinary or
    summary) was folded by a summary that covers it: its compacted_at is the created_at of
    a later summary whose covers_from..covers_to range holds it. Returns the active summary."""
    rows = list(Message.objects.filter(thread_id=thread_id).order_by("sequence_number"))
    assert [r.sequence_number for r in rows] == list(range(1, len(rows) + 1))
    summaries = [r for r in rows if r.is_summary]
    active = [s for s in summaries if s.compacted_at is None]
    assert len(active) == 1
    for row in rows:
        if row.compacted_at is None:
            continue
        folders = [
            s
            for s in summaries
            if s.created_at == row.compacted_at and s.sequence_number > row.sequence_number
        ]
        assert len(folders) == 1, f"row {row.sequence_number} has no single folding summary"
        folder = folders[0]
        assert folder.covers_from_sequence is not None and folder.covers_to_sequence is not None
        if not row.is_summary:
            assert folder.covers_from_sequence <= row.sequence_number <= folder.covers_to_sequence
    thread = Thread.objects.get(pk=thread_id)
    assert thread.active_summary_id == active[0].id
    assert thread.uncompacted_count == sum(
        1 for r in rows if not r.is_summary and r.compacted_at is None
    )
    return active[0]


@pytest.fixture(name="run_in_thread")
def run_in_thread_fixture() -> Iterator[Callable[[str, Callable[[], Any]], dict[str, Any]]]:
    """Start ``fn`` on a named thread that closes its own DB connection; returns a box that
    gets ``value`` or ``error``, and ``thread`` to join."""
    started: list[threading.Thread] = []

    def start(name: str, fn: Callable[[], Any]) -> dict[str, Any]:
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = fn()
            except BaseException as exc:  # reported by the test, not lost in the thread
                box["error"] = exc
            finally:
                connection.close()

        worker = threading.Thread(target=target, name=name, daemon=True)
        box["thread"] = worker
        started.append(worker)
        worker.start()
        return box

    yield start
    for worker in started:
        worker.join(WAIT_SECONDS)


def finish(box: dict[str, Any]) -> Any:
    box["thread"].join(WAIT_SECONDS)
    assert not box["thread"].is_alive()
    if "error" in box:
        raise box["error"]
    return box["value"]


def wait(event: threading.Event) -> None:
    assert event.wait(WAIT_SECONDS), "the other thread never got there"


# --- automatic compaction ------------------------------------------------------------------


def test_it_folds_the_messages_before_the_one_that_reaches_the_threshold(
    api: Api, summarizer: FakeSummarizer
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=6)["threadId"]
    results = append_all(api, thread_id, [f"m{i}" for i in range(1, 7)])

    assert [r["compacted"] for r in results] == [False] * 5 + [True]
    assert [r["sequenceNumber"] for r in results] == [1, 2, 3, 4, 5, 6]
    rows = all_rows(api, thread_id)
    assert [r["sequenceNumber"] for r in rows] == [1, 2, 3, 4, 5, 6, 7]
    assert all(r["compactedAt"] is not None for r in rows[:5])
    assert rows[5]["compactedAt"] is None
    assert rows[5]["content"] == "m6"
    summary = rows[6]
    assert summary["role"] == "system"
    assert summary["compactedAt"] is None
    assert summary["summary"] == {"fromSequence": 1, "toSequence": 5}
    assert (
        summary["content"]
        == "S1 [previous: None] 1 user: m1 | 2 user: m2 | 3 user: m3 | 4 user: m4 | 5 user: m5"
    )
    assert [(c.previous_summary, [m[0] for m in c.messages]) for c in summarizer.calls] == [
        (None, [1, 2, 3, 4, 5])
    ]
    thread = api.get(f"{BASE}/threads/{thread_id}").json()
    assert thread["compaction"]["count"] == 1
    assert thread["compaction"]["activeSummaryId"] == summary["messageId"]
    assert thread["compaction"]["lastError"] is None
    assert_compaction_invariants(thread_id)


def test_it_never_compacts_with_a_null_threshold(api: Api, summarizer: FakeSummarizer) -> None:
    thread_id = api.create_thread(autoCompactThreshold=None)["threadId"]
    results = append_all(api, thread_id, [f"m{i}" for i in range(1, 41)])

    assert [r["compacted"] for r in results] == [False] * 40
    assert summarizer.calls == []
    rows = all_rows(api, thread_id)
    assert len(rows) == 40
    assert all(r["compactedAt"] is None and "summary" not in r for r in rows)
    window = prepare(api, thread_id, messageLimit=100)
    assert window["messageCount"] == 40
    assert window["compacted"] is False


def test_it_does_not_count_the_summary_row_toward_the_threshold(
    api: Api, summarizer: FakeSummarizer
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=3)["threadId"]
    first = append_all(api, thread_id, ["m1", "m2", "m3"])
    assert [r["compacted"] for r in first] == [False, False, True]
    # Live now: m3 (kept) and the summary (sequence 4). If the summary counted, the next
    # insert would already make three and trip.
    fourth = append_all(api, thread_id, ["m4"])[0]
    assert (fourth["sequenceNumber"], fourth["compacted"]) == (5, False)
    fifth = append_all(api, thread_id, ["m5"])[0]
    assert (fifth["sequenceNumber"], fifth["compacted"]) == (6, True)

    assert [c.messages for c in summarizer.calls] == [
        [(1, "user", "m1"), (2, "user", "m2")],
        [(3, "user", "m3"), (5, "user", "m4")],
    ]
    active = assert_compaction_invariants(thread_id)
    assert (active.sequence_number, active.covers_from_sequence, active.covers_to_sequence) == (
        7,
        1,
        5,
    )


def test_it_keeps_exactly_one_active_summary_over_many_runs(
    api: Api, summarizer: FakeSummarizer
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=3)["threadId"]
    results = append_all(api, thread_id, [f"m{i}" for i in range(1, 31)])

    # The 3rd insert trips; each run leaves one live message, so every 2nd insert after it
    # trips again: inserts 3, 5, ..., 29.
    tripped = [i + 1 for i, r in enumerate(results) if r["compacted"]]
    assert tripped == list(range(3, 30, 2))
    assert Message.objects.filter(thread_id=thread_id).count() == 30 + 14
    active = assert_compaction_invariants(thread_id)
    m28 = Message.objects.get(thread_id=thread_id, content="m28")
    assert (active.covers_from_sequence, active.covers_to_sequence) == (1, m28.sequence_number)
    # Each run was handed the previous summary's text: the summary is rolling.
    assert summarizer.calls[0].previous_summary is None
    for number, call in enumerate(summarizer.calls[1:], start=1):
        assert call.previous_summary is not None
        assert call.previous_summary.startswith(f"S{number} [previous: ")
    assert api.get(f"{BASE}/threads/{thread_id}").json()["compaction"]["count"] == 14


def test_it_keeps_folded_rows_and_lists_them_with_the_summary(
    api: Api, summarizer: FakeSummarizer
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=4)["threadId"]
    append_all(api, thread_id, ["m1", "m2", "m3", "m4", "m5"])

    rows = all_rows(api, thread_id)
    assert [(r["sequenceNumber"], r["role"], r["content"]) for r in rows[:4]] == [
        (1, "user", "m1"),
        (2, "user", "m2"),
        (3, "user", "m3"),
        (4, "user", "m4"),
    ]
    assert [r["compactedAt"] is not None for r in rows] == [True, True, True, False, False, False]
    assert rows[4]["summary"] == {"fromSequence": 1, "toSequence": 3}
    assert rows[4]["role"] == "system"
    assert (rows[5]["sequenceNumber"], rows[5]["content"]) == (6, "m5")
    assert all("summary" not in r for r in rows[:4] + rows[5:])
    assert api.get(url(thread_id, "messages"), limit=100).json()["total"] == 6


# --- manual compaction ---------------------------------------------------------------------


def test_it_folds_everything_on_manual_compact(api: Api, summarizer: FakeSummarizer) -> None:
    thread_id = api.create_thread()["threadId"]
    append_all(api, thread_id, [f"m{i}" for i in range(1, 7)])

    resp = api.post(url(thread_id, "compact"))

    assert resp.status_code == 200
    summary_row = Message.objects.get(thread_id=thread_id, sequence_number=7)
    assert resp.json() == {
        "threadId": thread_id,
        "summaryMessageId": str(summary_row.id),
        "compactedCount": 6,
        "fromSequence": 1,
        "toSequence": 6,
    }
    assert summary_row.is_summary and summary_row.role == "system"
    assert (summary_row.covers_from_sequence, summary_row.covers_to_sequence) == (1, 6)
    window = prepare(api, thread_id)
    assert window["messages"] == [{"role": "system", "content": summary_row.content}]
    assert window["messageCount"] == 0
    assert window["compacted"] is True
    assert window["truncated"] is False
    assert_compaction_invariants(thread_id)


def test_it_says_nothing_to_compact_when_everything_is_folded(
    api: Api, summarizer: FakeSummarizer
) -> None:
    thread_id = api.create_thread()["threadId"]
    append_all(api, thread_id, ["m1", "m2"])
    assert api.post(url(thread_id, "compact")).status_code == 200

    again = api.post(url(thread_id, "compact"))

    assert again.status_code == 200
    assert again.json() == {"ok": True, "compacted": False, "message": "Nothing to compact"}
    assert len(summarizer.calls) == 1
    assert Message.objects.filter(thread_id=thread_id).count() == 3


def test_it_says_nothing_to_compact_on_an_empty_thread(
    api: Api, summarizer: FakeSummarizer
) -> None:
    thread_id = api.create_thread()["threadId"]

    resp = api.post(url(thread_id, "compact"))

    assert resp.status_code == 200
    assert resp.json() == {"ok": True, "compacted": False, "message": "Nothing to compact"}
    assert summarizer.calls == []
    assert api.get(f"{BASE}/threads/{thread_id}").json()["compaction"]["count"] == 0


def test_it_rolls_the_kept_message_and_the_old_summary_into_a_manual_compact(
    api: Api, summarizer: FakeSummarizer
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=4)["threadId"]
    results = append_all(api, thread_id, ["a", "b", "c", "d"])
    assert results[3]["compacted"] is True  # d tripped and is kept verbatim
    first_summary = Message.objects.get(thread_id=thread_id, sequence_number=5)
    assert append_all(api, thread_id, ["e"])[0]["sequenceNumber"] == 6

    resp = api.post(url(thread_id, "compact"))

    assert resp.status_code == 200
    body = resp.json()
    assert (body["compactedCount"], body["fromSequence"], body["toSequence"]) == (2, 4, 6)
    new_summary = Message.objects.get(pk=body["summaryMessageId"])
    assert new_summary.sequence_number == 7
    assert (new_summary.covers_from_sequence, new_summary.covers_to_sequence) == (1, 6)
    assert (
        Message.objects.filter(
            thread_id=thread_id, is_summary=True, compacted_at__isnull=True
        ).count()
        == 1
    )
    first_summary.refresh_from_db()
    assert first_summary.compacted_at is not None
    last_call = summarizer.calls[-1]
    assert last_call.previous_summary == first_summary.content
    assert last_call.messages == [(4, "user", "d"), (6, "user", "e")]
    assert_compaction_invariants(thread_id)


def test_it_answers_404_to_compact_for_another_projects_thread(
    api: Api, outsider_api: Api, summarizer: FakeSummarizer
) -> None:
    thread_id = api.create_thread()["threadId"]
    append_all(api, thread_id, ["m1"])

    resp = outsider_api.post(url(thread_id, "compact"))

    assert resp.status_code == 404
    assert resp.json() == {"error": "Thread not found"}
    assert summarizer.calls == []


# --- failures ------------------------------------------------------------------------------


def test_it_answers_502_and_changes_nothing_when_the_summarizer_fails(
    api: Api, summarizer: FakeSummarizer
) -> None:
    thread_id = api.create_thread()["threadId"]
    append_all(api, thread_id, ["m1", "m2", "m3"])
    summarizer.error = ModelError("summarizer down", kind="unavailable")

    resp = api.post(url(thread_id, "compact"))

    assert resp.status_code == 502
    assert resp.json() == {
        "error": "Model call failed",
        "kind": "unavailable",
        "detail": "summarizer down",
    }
    rows = all_rows(api, thread_id)
    assert [(r["sequenceNumber"], r["compactedAt"]) for r in rows] == [
        (1, None),
        (2, None),
        (3, None),
    ]
    state = api.get(f"{BASE}/threads/{thread_id}").json()["compaction"]
    assert state["count"] == 0
    assert state["activeSummaryId"] is None
    assert state["lastError"] == "unavailable: summarizer down"
    assert state["lastErrorAt"] is not None
    stats = api.get(url(thread_id, "stats")).json()
    assert stats["messageCount"] == 3
    assert stats["compaction"]["lastError"] == "unavailable: summarizer down"


def test_a_failed_auto_compaction_logs_one_line_and_its_traceback_only_at_debug(
    api: Api, summarizer: FakeSummarizer, caplog: pytest.LogCaptureFixture
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=3)["threadId"]
    append_all(api, thread_id, ["m1", "m2"])
    summarizer.error = ModelError("Gemini summarize: connection failed", kind="unavailable")

    with caplog.at_level(logging.DEBUG, logger="memoryapp.compaction"):
        assert api.append(thread_id, "m3").status_code == 201

    records = [r for r in caplog.records if r.name == "memoryapp.compaction"]
    assert [(r.levelname, r.getMessage(), r.exc_info is None) for r in records] == [
        ("WARNING", f"auto-compaction of thread {thread_id} failed (unavailable: Gemini summarize: "
         "connection failed); the thread keeps the error and the next append tries again", True),
        ("DEBUG", f"auto-compaction of thread {thread_id} failed", False),
    ]


def test_it_keeps_the_tripping_insert_when_the_summarizer_fails_and_retries_on_the_next(
    api: Api, summarizer: FakeSummarizer
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=3)["threadId"]
    append_all(api, thread_id, ["m1", "m2"])
    summarizer.error = ModelError("quota", kind="rate_limited")

    tripping = api.append(thread_id, "m3")

    assert tripping.status_code == 201
    assert (tripping.json()["sequenceNumber"], tripping.json()["compacted"]) == (3, False)
    assert Message.objects.filter(thread_id=thread_id, compacted_at__isnull=False).count() == 0
    assert Message.objects.filter(thread_id=thread_id, is_summary=True).count() == 0
    assert (
        api.get(f"{BASE}/threads/{thread_id}").json()["compaction"]["lastError"]
        == "rate_limited: quota"
    )
    assert (
        api.get(url(thread_id, "stats")).json()["compaction"]["lastError"] == "rate_limited: quota"
    )
    assert prepare(api, thread_id)["messageCount"] == 3

    summarizer.error = None
    retry = api.append(thread_id, "m4")

    assert retry.status_code == 201
    assert (retry.json()["sequenceNumber"], retry.json()["compacted"]) == (4, True)
    assert summarizer.calls[-1].messages == [
        (1, "user", "m1"),
        (2, "user", "m2"),
        (3, "user", "m3"),
    ]
    active = assert_compaction_invariants(thread_id)
    assert (active.sequence_number, active.covers_from_sequence, active.covers_to_sequence) == (
        5,
        1,
        3,
    )
    state = api.get(f"{BASE}/threads/{thread_id}").json()["compaction"]
    assert (state["count"], state["lastError"], state["lastErrorAt"]) == (1, None, None)


def test_it_treats_an_adapter_crash_as_a_failed_model_call(
    api: Api, summarizer: FakeSummarizer
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=2)["threadId"]
    append_all(api, thread_id, ["m1"])
    summarizer.error = RuntimeError("adapter bug")

    tripping = api.append(thread_id, "m2")
    manual = api.post(url(thread_id, "compact"))

    assert (tripping.status_code, tripping.json()["compacted"]) == (201, False)
    assert manual.status_code == 502
    assert manual.json()["kind"] == "bad_response"
    state = api.get(f"{BASE}/threads/{thread_id}").json()["compaction"]
    assert state["lastError"] == "bad_response: RuntimeError: adapter bug"
    assert Message.objects.filter(thread_id=thread_id).count() == 2


# --- races (real threads, one connection each) ----------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_it_keeps_a_message_appended_during_the_model_call_once_after_the_summary(
    api: Api, summarizer: FakeSummarizer, run_in_thread: Any
) -> None:
    thread_id = api.create_thread()["threadId"]
    append_all(api, thread_id, ["m1", "m2", "m3"])
    gate = summarizer.hold("compactor")
    other = Api(Client(), api.key)

    box = run_in_thread("compactor", lambda: other.post(url(thread_id, "compact")))
    wait(gate.entered)
    late = api.append(thread_id, "late")
    gate.release.set()
    resp = finish(box)

    assert (late.status_code, late.json()["sequenceNumber"], late.json()["compacted"]) == (
        201,
        4,
        False,
    )
    assert resp.status_code == 200
    body = resp.json()
    assert (body["compactedCount"], body["fromSequence"], body["toSequence"]) == (3, 1, 3)
    summary_row = Message.objects.get(pk=body["summaryMessageId"])
    assert summary_row.sequence_number == 5
    window = prepare(api, thread_id)
    assert window["messages"] == [
        {"role": "system", "content": summary_row.content},
        {"role": "user", "content": "late"},
    ]
    assert window["messageCount"] == 1
    assert [r["content"] for r in all_rows(api, thread_id)].count("late") == 1
    assert_compaction_invariants(thread_id)


@pytest.mark.django_db(transaction=True)
def test_it_leaves_one_active_summary_when_two_manual_compactions_race(
    api: Api, summarizer: FakeSummarizer, run_in_thread: Any
) -> None:
    thread_id = api.create_thread()["threadId"]
    append_all(api, thread_id, [f"m{i}" for i in range(1, 7)])
    gate_a = summarizer.hold("compactor-a")
    gate_b = summarizer.hold("compactor-b")
    client_a, client_b = Api(Client(), api.key), Api(Client(), api.key)

    box_a = run_in_thread("compactor-a", lambda: client_a.post(url(thread_id, "compact")))
    wait(gate_a.entered)
    box_b = run_in_thread("compactor-b", lambda: client_b.post(url(thread_id, "compact")))
    wait(gate_b.entered)
    # Both runs read messages 1-6 and no previous summary. A message arrives meanwhile.
    assert api.append(thread_id, "m7").json()["sequenceNumber"] == 7
    gate_b.release.set()
    resp_b = finish(box_b)  # B commits first: summary 8 over 1-6
    gate_a.release.set()
    resp_a = finish(box_a)  # A finds the summary changed and starts again from what is left

    assert resp_b.status_code == 200 and resp_a.status_code == 200
    b, a = resp_b.json(), resp_a.json()
    assert (b["compactedCount"], b["fromSequence"], b["toSequence"]) == (6, 1, 6)
    assert (a["compactedCount"], a["fromSequence"], a["toSequence"]) == (1, 7, 7)
    summary_b = Message.objects.get(pk=b["summaryMessageId"])
    summary_a = Message.objects.get(pk=a["summaryMessageId"])
    assert (
        summary_b.sequence_number,
        summary_b.covers_from_sequence,
        summary_b.covers_to_sequence,
    ) == (8, 1, 6)
    assert (
        summary_a.sequence_number,
        summary_a.covers_from_sequence,
        summary_a.covers_to_sequence,
    ) == (9, 1, 7)
    # A's retry was a fresh model call over what B left, rolling B's summary in.
    assert [
        (c.thread_name, c.previous_summary, [m[0] for m in c.messages]) for c in summarizer.calls
    ] == [
        ("compactor-a", None, [1, 2, 3, 4, 5, 6]),
        ("compactor-b", None, [1, 2, 3, 4, 5, 6]),
        ("compactor-a", summary_b.content, [7]),
    ]
    active = assert_compaction_invariants(thread_id)
    assert active.pk == summary_a.pk
    assert prepare(api, thread_id)["messages"] == [{"role": "system", "content": summary_a.content}]


@pytest.mark.django_db(transaction=True)
def test_it_runs_one_compaction_when_two_tripping_inserts_race(
    api: Api, summarizer: FakeSummarizer, run_in_thread: Any
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=4)["threadId"]
    append_all(api, thread_id, ["m1", "m2", "m3"])
    gate_4 = summarizer.hold("writer-4")
    client_4 = Api(Client(), api.key)

    # m4 trips (keeps m4, folds 1-3) and holds the thread's compaction lease during its
    # model call; m5 trips too, but finds the lease taken and answers at once without a
    # second model call.
    box_4 = run_in_thread("writer-4", lambda: client_4.append(thread_id, "m4"))
    wait(gate_4.entered)
    resp_5 = api.append(thread_id, "m5")
    assert (resp_5.status_code, resp_5.json()["sequenceNumber"], resp_5.json()["compacted"]) == (
        201,
        5,
        False,
    )
    gate_4.release.set()
    resp_4 = finish(box_4)

    assert (resp_4.status_code, resp_4.json()["sequenceNumber"], resp_4.json()["compacted"]) == (
        201,
        4,
        True,
    )
    assert len(summarizer.calls) == 1
    assert Message.objects.filter(thread_id=thread_id, is_summary=True).count() == 1
    active = assert_compaction_invariants(thread_id)
    assert active.sequence_number == 6
    assert (active.covers_from_sequence, active.covers_to_sequence) == (1, 3)
    window = prepare(api, thread_id)
    assert window["messages"][0] == {"role": "system", "content": active.content}
    assert [m["content"] for m in window["messages"][1:]] == ["m4", "m5"]
    assert Thread.objects.get(pk=thread_id).compaction_lease_until is None


@pytest.mark.django_db(transaction=True)
def test_it_takes_over_an_expired_compaction_lease(
    api: Api, summarizer: FakeSummarizer
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=4)["threadId"]
    append_all(api, thread_id, ["m1", "m2"])
    # A worker that died mid-run left its lease behind; once it has expired, the next
    # tripping insert compacts as usual.
    Thread.objects.filter(pk=thread_id).update(
        compaction_lease_until=timezone.now() - timedelta(seconds=1)
    )
    resp = api.append(thread_id, "m3")
    assert resp.json()["compacted"] is False  # 3 < threshold 4: not due yet
    resp = api.append(thread_id, "m4")
    assert (resp.status_code, resp.json()["compacted"]) == (201, True)
    assert len(summarizer.calls) == 1
    # A lease still in force makes the tripping insert skip its run.
    append_all(api, thread_id, ["m5", "m6"])
    Thread.objects.filter(pk=thread_id).update(
        compaction_lease_until=timezone.now() + timedelta(seconds=60)
    )
    resp = api.append(thread_id, "m7")
    assert (resp.status_code, resp.json()["compacted"]) == (201, False)
    assert len(summarizer.calls) == 1


@pytest.mark.django_db(transaction=True)
def test_it_looks_again_when_its_own_run_finds_nothing_left_to_fold(
    api: Api, summarizer: FakeSummarizer, run_in_thread: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Review item 7: 20 parallel appends at threshold 5 sometimes ended with 6 or 7
    # messages un-compacted and no run pending. An append that tripped took the lease only
    # after another run had folded the rows before it, so its own run had nothing to fold;
    # it stopped there without looking again, while the appends it had turned away (lease
    # taken) brought the count back to the threshold.
    thread_id = api.create_thread(autoCompactThreshold=3)["threadId"]
    append_all(api, thread_id, ["m1", "m2"])
    late = working.message_append(thread=thread_id, role="user", content="m3")
    assert late.compaction_due  # m3 tripped, but its run has not started yet
    assert api.append(thread_id, "m4").json()["compacted"] is True  # folds 1-3, keeps m4

    reading, resume = threading.Event(), threading.Event()
    rows_to_fold = compaction._rows_to_fold

    def paused(**kwargs: Any) -> Any:
        if threading.current_thread().name == "late-m3":
            reading.set()
            assert resume.wait(WAIT_SECONDS)
        return rows_to_fold(**kwargs)

    monkeypatch.setattr(compaction, "_rows_to_fold", paused)
    box = run_in_thread(
        "late-m3",
        lambda: compaction.auto_compact(thread_id=late.message.thread_id, keep_from_sequence=3),
    )
    wait(reading)  # m3's run holds the lease and is about to find nothing before m3
    turned_away = [api.append(thread_id, text).json()["compacted"] for text in ["m6", "m7"]]
    resume.set()
    outcome = finish(box)

    assert turned_away == [False, False]  # m7 brought the count to 3, but the lease was taken
    assert [[m[0] for m in c.messages] for c in summarizer.calls] == [[1, 2, 3], [4, 6]]
    assert [(r.from_sequence, r.to_sequence) for r in outcome.runs] == [(4, 6)]
    active = assert_compaction_invariants(thread_id)
    assert (active.sequence_number, active.covers_from_sequence, active.covers_to_sequence) == (8, 1, 6)
    assert Thread.objects.get(pk=thread_id).uncompacted_count == 1
    assert prepare(api, thread_id)["messages"] == [
        {"role": "system", "content": active.content},
        {"role": "user", "content": "m7"},
    ]


@pytest.mark.django_db(transaction=True)
def test_it_catches_up_with_appends_that_arrived_during_a_run(
    api: Api, summarizer: FakeSummarizer, run_in_thread: Any
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=3)["threadId"]
    append_all(api, thread_id, ["m1", "m2"])
    gate = summarizer.hold("writer-3")
    client_3 = Api(Client(), api.key)

    # m3 trips and holds the lease; m4-m6 each trip too but find the lease taken. When
    # m3's run commits, the count is 4 (m3-m6), past the threshold again: the same call
    # runs once more, keeping the newest message (m6) verbatim.
    box = run_in_thread("writer-3", lambda: client_3.append(thread_id, "m3"))
    wait(gate.entered)
    skipped = [api.append(thread_id, text).json()["compacted"] for text in ["m4", "m5", "m6"]]
    gate.release.set()
    resp_3 = finish(box)

    assert skipped == [False, False, False]
    assert (resp_3.status_code, resp_3.json()["compacted"]) == (201, True)
    first, second = summarizer.calls
    assert [m[0] for m in first.messages] == [1, 2]
    assert [m[0] for m in second.messages] == [3, 4, 5]
    assert second.previous_summary == Message.objects.get(thread_id=thread_id, sequence_number=7).content
    active = assert_compaction_invariants(thread_id)
    assert (active.sequence_number, active.covers_from_sequence, active.covers_to_sequence) == (8, 1, 5)
    window = prepare(api, thread_id)
    assert window["messages"] == [
        {"role": "system", "content": active.content},
        {"role": "user", "content": "m6"},
    ]
    assert window["messageCount"] == 1


@pytest.mark.django_db(transaction=True)
def test_it_queues_the_catch_up_when_appends_outlast_its_runs(
    api: Api, summarizer: FakeSummarizer, run_in_thread: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One append makes at most MAX_CATCH_UP_RUNS runs (1 here); when appends it turned away
    # keep the thread at its threshold past them, a job takes the catch-up over instead of
    # leaving them un-compacted with no run pending (review item 7). Tests run jobs at once.
    monkeypatch.setattr(compaction, "MAX_CATCH_UP_RUNS", 1)
    thread_id = api.create_thread(autoCompactThreshold=3)["threadId"]
    append_all(api, thread_id, ["m1", "m2"])
    gate = summarizer.hold("writer-3")
    client_3 = Api(Client(), api.key)
    box = run_in_thread("writer-3", lambda: client_3.append(thread_id, "m3"))
    wait(gate.entered)
    turned_away = [api.append(thread_id, text).json()["compacted"] for text in ["m4", "m5", "m6"]]
    gate.release.set()
    resp_3 = finish(box)

    assert turned_away == [False, False, False]
    assert (resp_3.status_code, resp_3.json()["compacted"]) == (201, True)
    assert [[m[0] for m in c.messages] for c in summarizer.calls] == [[1, 2], [3, 4, 5]]
    job = Job.objects.get(kind=compaction.AUTO_COMPACTION_JOB)
    assert (job.status, job.args, job.result, str(job.thread_id)) == (
        Job.Status.SUCCEEDED, {"keepFromSequence": 6}, {"runs": 1, "error": None}, thread_id,
    )
    active = assert_compaction_invariants(thread_id)
    assert (active.sequence_number, active.covers_from_sequence, active.covers_to_sequence) == (8, 1, 5)
    assert Thread.objects.get(pk=thread_id).uncompacted_count == 1

"""Invariants of a thread's stored memory, checked after the fact (issue 12 items 2-4).

The scale-out test (tests/test_scaleout.py), the fault tests and ``bench/load.py`` run
many writers at once and then ask one question: is every thread still well-formed?
``thread_audit`` answers it with a list of violations (empty when all hold), so a caller
can report every broken thread at once instead of stopping at the first.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection

from memoryapp import notes, working
from memoryapp.models import Fact, Job, Message, Thread

PREPARE_LIMIT = 100  # the largest window prepare builds (memoryapp.working.prepare)


def _numbering(rows: list[Message]) -> list[str]:
    numbers = [r.sequence_number for r in rows]
    if numbers != list(range(1, len(rows) + 1)):
        return [f"sequence numbers are not 1..{len(rows)} without gaps"]
    return []


def _summaries(thread: Thread, rows: list[Message]) -> list[str]:
    """Exactly one active summary once anything was compacted (none before), the thread
    row pointing at it, and every folded row inside the range of the summary that folded it
    (its compacted_at is that later summary's created_at)."""
    problems: list[str] = []
    summaries = [r for r in rows if r.is_summary]
    active = [s for s in summaries if s.compacted_at is None]
    if len(active) != (1 if summaries else 0):
        problems.append(f"{len(active)} active summaries among {len(summaries)}")
    if (active[0].id if len(active) == 1 else None) != thread.active_summary_id:
        problems.append("the thread row does not point at its active summary")
    for row in rows:
        if row.compacted_at is None:
            continue
        folders = [
            s
            for s in summaries
            if s.created_at == row.compacted_at and s.sequence_number > row.sequence_number
        ]
        if len(folders) != 1:
            problems.append(f"row {row.sequence_number} has no single folding summary")
            continue
        low, high = folders[0].covers_from_sequence, folders[0].covers_to_sequence
        if not row.is_summary and not (low or 0) <= row.sequence_number <= (high or 0):
            problems.append(f"row {row.sequence_number} is outside its summary's range")
    return problems


def _window(thread: Thread, rows: list[Message], limit: int) -> list[str]:
    """prepare's window is the un-compacted tail (the newest ``limit`` ordinary rows,
    without a tool result at its head whose call was cut off) and its counters agree."""
    live = [r for r in rows if not r.is_summary and r.compacted_at is None]
    problems: list[str] = []
    if thread.uncompacted_count != len(live):
        problems.append(f"uncompacted_count {thread.uncompacted_count} != {len(live)} live rows")
    tail = live[-limit:]
    if tail and "toolResult" in (tail[0].metadata or {}):
        tail = tail[1:]
    window = working.prepare(thread=thread.pk, message_limit=limit)
    if [(m.role, m.content) for m in window.tail] != [(r.role, r.content) for r in tail]:
        problems.append(f"prepare's window of {limit} is not the un-compacted tail")
    summary = window.summary.message_id if window.summary else None
    if summary != thread.active_summary_id:
        problems.append("prepare's summary is not the active summary")
    return problems


def _pairs(rows: list[Message]) -> list[str]:
    """Every recorded tool call is followed by its result (same id), and compaction never
    split them: both are live, or both were folded by the same run."""
    ordinary = [r for r in rows if not r.is_summary]
    problems: list[str] = []
    for before, after in zip([None, *ordinary], [*ordinary, None], strict=True):
        call = (before.metadata or {}).get("toolCall") if before else None
        result = (after.metadata or {}).get("toolResult") if after else None
        if (call is None) != (result is None) or (call and result and call["id"] != result["id"]):
            where = after.sequence_number if after else (before.sequence_number if before else 0)
            problems.append(f"a tool call and its result are not adjacent at row {where}")
        elif before and after and call and before.compacted_at != after.compacted_at:
            problems.append(f"compaction split the tool call {before.sequence_number} from its result")
    return problems


def thread_audit(*, thread_id: uuid.UUID | str, message_limit: int = PREPARE_LIMIT) -> list[str]:
    """Every invariant of one thread that does not hold, as readable lines (empty: all hold).

    Checks: sequence numbers 1..N without gaps; exactly one active summary once the thread
    was compacted, and the thread row's pointer to it; every compacted row inside the range
    of the summary that folded it; the un-compacted counter and prepare's window (of
    ``message_limit`` messages, 1..100) equal to the un-compacted tail, its summary the
    active one (spec 002); every memory tool call adjacent to its result and never split
    from it by compaction; the note store under its cap (spec 004). Read-only;
    run it when no writer is active, or a write between its reads may show as a violation.
    Raises Thread.DoesNotExist for an unknown id.
    """
    thread = Thread.objects.get(pk=thread_id)
    rows = list(Message.objects.filter(thread=thread).order_by("sequence_number"))
    problems = _numbering(rows) + _summaries(thread, rows) + _window(thread, rows, message_limit)
    problems += _pairs(rows)
    if notes.store_bytes(thread.pk) > notes.store_cap_bytes():
        problems.append("the note store is over its cap")
    return [f"thread {thread.pk}: {p}" for p in problems]


def fact_audit(
    *, project_id: int, dataset: str, successors_forgotten: Collection[uuid.UUID] = ()
) -> list[str]:
    """Every lineage rule of the dataset's facts that does not hold (empty: all hold).

    A fact is invalidated exactly when it names the fact that replaced it
    (``invalidated_at`` and ``invalidated_by`` set together), except a fact in
    ``successors_forgotten``: its replacement was deleted, and what was said stays said
    (memoryapp.semantic.fact_delete), so it stays invalidated with no successor. A
    successor is another fact of the same project, dataset, subject and attribute; among
    the current facts of one subject and attribute at most one is single-valued (a
    second one would have invalidated the first), events aside (Fact.event: something
    that happened is no current value). Read-only, like thread_audit.
    """
    facts = list(Fact.objects.filter(project_id=project_id, dataset=dataset))
    by_id = {f.pk: f for f in facts}
    problems: list[str] = []
    single: dict[tuple[object, str], int] = {}
    for fact in facts:
        if fact.invalidated_at is None:
            if fact.invalidated_by_id is not None:
                problems.append(f"fact {fact.pk} names a successor but is current")
            elif fact.single_valued and not fact.event:
                key = (fact.subject_id, fact.attribute)
                single[key] = single.get(key, 0) + 1
            continue
        successor = by_id.get(fact.invalidated_by_id) if fact.invalidated_by_id else None
        if fact.invalidated_by_id is None:
            if fact.pk not in successors_forgotten:
                problems.append(f"fact {fact.pk} is invalidated without a successor")
        elif successor is None or successor.pk == fact.pk:
            problems.append(f"fact {fact.pk} is invalidated by a fact outside its dataset")
        elif (successor.subject_id, successor.attribute) != (fact.subject_id, fact.attribute):
            problems.append(f"fact {fact.pk} is invalidated by a fact about something else")
    problems += [f"{n} current single-valued facts for {key}" for key, n in single.items() if n > 1]
    return [f"dataset {dataset!r}: {p}" for p in problems]


def jobs_unfinished(*, thread_ids: list[uuid.UUID]) -> list[str]:
    """The jobs of these threads that did not succeed, as ``"<kind> <id> <status>: <error>"``."""
    jobs = Job.objects.filter(thread_id__in=thread_ids).exclude(status=Job.Status.SUCCEEDED)
    return [f"{j.kind} {j.pk} {j.status}: {j.error}" for j in jobs]

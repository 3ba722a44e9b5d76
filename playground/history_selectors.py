"""The compaction history page's read model (issue 10 item 2): a thread's compaction runs,
newest first, each with the line diff of the summary it replaced against the one it
wrote and what the new summary dropped (stored on the run, memoryapp.compaction_history).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Count, Sum

from memoryapp.models import CompactionRun, Thread

HISTORY_PAGE_SIZE = 20


@dataclass(frozen=True)
class DiffLine:
    """One line of a summary diff: ``kind`` is ``"same"``, ``"removed"`` or ``"added"``;
    ``segments`` the line's text as ``(text, dropped)`` pairs, ``dropped`` True for an
    occurrence of a term the new summary lost (highlighted)."""

    kind: str
    segments: list[tuple[str, bool]]


@dataclass
class RunView:
    """A run with its number on the thread (1 for the first, in the order runs were
    created), its diff (empty unless it succeeded) and counts of the diff's lines."""

    run: CompactionRun
    number: int = 0
    diff: list[DiffLine] = field(default_factory=list)
    added: int = 0
    removed: int = 0


@dataclass(frozen=True)
class HistoryPage:
    """One page of runs, newest first; ``older_before`` is the ``before=`` of the next
    page, the number of this page's oldest run (None on the last); the totals cover
    every run of the thread."""

    runs: list[RunView]
    older_before: int | None
    total_runs: int
    total_tokens: int
    total_cost: Decimal


def _marker(terms: list[str]) -> re.Pattern[str] | None:
    """A pattern of ``terms`` as whole words (as memoryapp.salient.survives reads them),
    longest first so "New York" wins over "New"."""
    if not terms:
        return None
    alternatives = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
    return re.compile(rf"(?<![\w$€£])(?:{alternatives})(?![\w%])")


def _segments(line: str, marker: re.Pattern[str] | None) -> list[tuple[str, bool]]:
    if marker is None:
        return [(line, False)]
    out: list[tuple[str, bool]] = []
    at = 0
    for match in marker.finditer(line):
        if match.start() > at:
            out.append((line[at : match.start()], False))
        out.append((match.group(0), True))
        at = match.end()
    if at < len(line) or not out:
        out.append((line[at:], False))
    return out


def line_diff(before: str, after: str, dropped: list[str]) -> list[DiffLine]:
    """The line diff of ``before`` against ``after`` (difflib), oldest text first; on
    removed lines the ``dropped`` terms are marked."""
    old, new = before.splitlines(), after.splitlines()
    marker = _marker(dropped)
    out: list[DiffLine] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            out.extend(DiffLine("same", [(line, False)]) for line in old[i1:i2])
            continue
        out.extend(DiffLine("removed", _segments(line, marker)) for line in old[i1:i2])
        out.extend(DiffLine("added", [(line, False)]) for line in new[j1:j2])
    return out


def _run_view(run: CompactionRun, number: int) -> RunView:
    if run.summary is None:
        return RunView(run=run, number=number)
    before = run.previous_summary.content if run.previous_summary else ""
    dropped = [t for terms in (run.dropped or {}).values() for t in terms]
    diff = line_diff(before, run.summary.content, dropped)
    return RunView(
        run=run,
        number=number,
        diff=diff,
        added=sum(line.kind == "added" for line in diff),
        removed=sum(line.kind == "removed" for line in diff),
    )


def compaction_history(*, thread: Thread, before: int | None) -> HistoryPage:
    """The thread's runs numbered below ``before`` (all when None), newest first, at most
    HISTORY_PAGE_SIZE, with both summaries loaded (two queries: totals, page; none per
    run). Runs are numbered 1..N on their thread in the order they were created (by id),
    the way the page names them ("Run 3") and pages back (``before=3``); runs are never
    deleted one by one, so a number keeps naming the same run."""
    qs = CompactionRun.objects.filter(thread=thread)
    totals = qs.aggregate(
        runs=Count("pk"),
        tokens_in=Sum("tokens_input"),
        tokens_out=Sum("tokens_output"),
        cost=Sum("cost"),
    )
    total_runs = totals["runs"] or 0
    newest = total_runs if before is None else min(before - 1, total_runs)
    oldest = max(newest - HISTORY_PAGE_SIZE + 1, 1)
    rows = (
        list(
            qs.select_related("summary", "previous_summary").order_by("pk")[oldest - 1 : newest]
        )
        if newest >= 1
        else []
    )
    return HistoryPage(
        runs=[_run_view(run, oldest + i) for i, run in reversed(list(enumerate(rows)))],
        older_before=oldest if oldest > 1 else None,
        total_runs=total_runs,
        total_tokens=(totals["tokens_in"] or 0) + (totals["tokens_out"] or 0),
        total_cost=totals["cost"] or Decimal(0),
    )

"""Read models of the dashboard: what its pages show, built with a bounded number of
queries (HackSoft's selectors; the writes live in memoryapp's domain functions)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Count, OuterRef, Subquery, Sum

from memoryapp import sql
from memoryapp.models import Message, Project, Thread, Turn
from memoryapp.results import ThreadView

# The thread page shows the newest rows of a thread and pages back with ``before=``, so
# a thread of 100,000 messages costs the same to show as one of 50.
MESSAGES_PAGE_SIZE = 50
DATASET_CHOICES_MAX = 200
# Later summaries looked at to find which one folded a row shown on an older page.
LATER_SUMMARIES_MAX = 3


@dataclass
class SummaryBlock:
    """A summary row shown where it sits in the thread, with the rows its run folded.

    ``folded`` holds the rows on this page; ``fold_from``..``summary.covers_to_sequence``
    is the range its run folded (the previous summary's end + 1 onwards), so
    ``folded_before_page`` says some of them are on older pages. ``on_page`` is False
    for a summary from a newer page that folded rows shown here. ``earlier`` holds the
    page's older summaries, newest first: each was superseded by the next, so the model
    no longer sees them (issue 10 item 2: collapsed into the history).
    """

    summary: Message
    fold_from: int
    folded: list[Message] = field(default_factory=list)
    folded_before_page: bool = False
    on_page: bool = True
    earlier: list[SummaryBlock] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return self.summary.compacted_at is None


@dataclass
class Timeline:
    """One page of a thread for the dashboard, oldest first.

    ``items`` are ``("message", Message)`` for rows in the context window or left
    verbatim, and ``("summary", SummaryBlock)``; ``older_before`` is the ``before=``
    value of the previous page (None on the first one).
    """

    items: list[tuple[str, Any]]
    older_before: int | None
    before: int | None
    first_sequence: int | None


@dataclass
class _Page:
    """The rows of one page, oldest first, and what the folding needs to know of it."""

    thread: Thread
    rows: list[Message]
    has_older: bool

    @property
    def first(self) -> int:
        return self.rows[0].sequence_number

    @property
    def last(self) -> int:
        return self.rows[-1].sequence_number

    @property
    def summaries(self) -> list[Message]:
        return [r for r in self.rows if r.is_summary]

    @property
    def off_page(self) -> int:
        # Every committed run adds one summary row, so compaction_count says how many
        # exist off this page; when none (or only the active one) can be off it, the
        # scans below (which walk the thread's rows: no index covers is_summary) are skipped.
        return self.thread.compaction_count - len(self.summaries)


def _page_rows(thread: Thread, before: int | None) -> _Page:
    qs = Message.objects.filter(thread=thread)
    if before is not None:
        qs = qs.filter(sequence_number__lt=before)
    rows = list(qs.order_by("-sequence_number")[: MESSAGES_PAGE_SIZE + 1])
    has_older = len(rows) > MESSAGES_PAGE_SIZE
    rows = rows[:MESSAGES_PAGE_SIZE]
    rows.reverse()
    return _Page(thread=thread, rows=rows, has_older=has_older)


def _on_page_blocks(page: _Page) -> tuple[dict[int, SummaryBlock], int]:
    """The summaries on the page by sequence number, and where the last one's range ends."""
    previous_end = 0
    if page.summaries and page.has_older and page.off_page > 0:
        previous = (
            Message.objects.filter(
                thread=page.thread, is_summary=True, sequence_number__lt=page.first
            )
            .order_by("-sequence_number")
            .values_list("covers_to_sequence", flat=True)
            .first()
        )
        previous_end = int(previous or 0)
    blocks: dict[int, SummaryBlock] = {}
    for summary in page.summaries:
        fold_from = previous_end + 1
        blocks[summary.sequence_number] = SummaryBlock(
            summary=summary,
            fold_from=fold_from,
            folded_before_page=page.has_older and fold_from < page.first,
        )
        previous_end = int(summary.covers_to_sequence or previous_end)
    return blocks, previous_end


def _later_blocks(page: _Page, previous_end: int) -> list[SummaryBlock]:
    """Summaries on newer pages that may have folded rows of this page."""
    thread = page.thread
    active = thread.active_summary if thread.active_summary_id else None
    later: Iterable[Message]
    if page.off_page == 1 and active is not None and active.sequence_number > page.last:
        later = [active]
    else:
        later = Message.objects.filter(
            thread=thread, is_summary=True, sequence_number__gt=page.last
        ).order_by("sequence_number")[:LATER_SUMMARIES_MAX]
    blocks = []
    for summary in later:
        blocks.append(SummaryBlock(summary=summary, fold_from=previous_end + 1, on_page=False))
        previous_end = int(summary.covers_to_sequence or previous_end)
    return blocks


def _place_folded(folded: list[Message], candidates: list[SummaryBlock]) -> list[Message]:
    """Put each folded row under the first summary whose range reaches it; return the
    rows no summary reached."""
    unplaced: list[Message] = []
    for row in folded:
        block = next(
            (c for c in candidates if (c.summary.covers_to_sequence or 0) >= row.sequence_number),
            None,
        )
        if block is None:
            unplaced.append(row)
        else:
            block.folded.append(row)
    return unplaced


def turn_number() -> Subquery:
    """The expression of a turn's number for ``.annotate(number=turn_number())``: its
    place among its thread's turns, 1 for the first, in the order they were created (by
    id). Pages name a turn "Turn 3" by it, the same on every page; its id (which counts
    every thread's turns) stays in URLs only. One correlated count per row, in the same
    query."""
    earlier = (
        Turn.objects.filter(thread_id=OuterRef("thread_id"), pk__lte=OuterRef("pk"))
        .order_by()
        .values("thread_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Subquery(earlier)


def _mark_turns(rows: Iterable[Message]) -> None:
    """Give each assistant row that a playground turn stored ``xray_turn`` (the Turn's
    id, for its X-ray link; issue 10 item 1) and ``xray_turn_number`` (its number on the
    thread, turn_number); one query."""
    replies = {row.pk: row for row in rows if row.role == "assistant"}
    if not replies:
        return
    turns = Turn.objects.filter(assistant_message_id__in=list(replies)).annotate(number=turn_number())
    for message_id, turn_id, number in turns.values_list("assistant_message_id", "pk", "number"):
        replies[message_id].xray_turn = turn_id  # type: ignore[attr-defined]
        replies[message_id].xray_turn_number = number  # type: ignore[attr-defined]


def _model_order(page: _Page, blocks: dict[int, SummaryBlock]) -> list[tuple[str, Any]]:
    """The page's visible items in the order the model reads them: the newest summary on
    the page (its older ones in ``earlier``) where its range ends, not where its row was
    inserted (the rows kept verbatim by its run come after it, as in prepare's window),
    then the un-compacted rows."""
    keyed: list[tuple[float, tuple[str, Any]]] = [
        (row.sequence_number, ("message", row))
        for row in page.rows
        if not row.is_summary and row.compacted_at is None
    ]
    ordered = [blocks[s.sequence_number] for s in page.summaries]
    if ordered:
        newest = ordered[-1]
        newest.earlier = ordered[-2::-1]
        end = newest.summary.covers_to_sequence or newest.summary.sequence_number
        keyed.append((end + 0.5, ("summary", newest)))
    keyed.sort(key=lambda pair: pair[0])
    return [item for _, item in keyed]


def thread_timeline(*, thread: Thread, before: int | None) -> Timeline:
    """Build one page of ``thread`` (the newest MESSAGES_PAGE_SIZE rows below ``before``).

    A compacted ordinary row belongs to the first summary whose range reaches it: runs
    fold every un-compacted row up to their ``covers_to_sequence`` and ranges only grow
    (docs/decisions.md, "The summary row"). Items come in the order the model reads
    them (_model_order). Costs at most three queries whatever the thread's length.
    """
    page = _page_rows(thread, before)
    if not page.rows:
        return Timeline(items=[], older_before=None, before=before, first_sequence=None)
    blocks, previous_end = _on_page_blocks(page)
    folded = [r for r in page.rows if r.compacted_at is not None and not r.is_summary]
    candidates = list(blocks.values())
    reach = max((c.summary.covers_to_sequence or 0 for c in candidates), default=0)
    if folded and folded[-1].sequence_number > reach:
        candidates += _later_blocks(page, previous_end)
    unplaced = _place_folded(folded, candidates)
    _mark_turns(page.rows)

    items = _model_order(page, blocks)
    # Rows folded by a summary on a newer page sit after everything on this page.
    items.extend(("summary", c) for c in candidates if not c.on_page and c.folded)
    items.extend(("message", r) for r in unplaced)
    return Timeline(
        items=items,
        older_before=page.first if page.has_older else None,
        before=before,
        first_sequence=page.first,
    )


def project_datasets(*, project: Project) -> list[str]:
    """The project's distinct datasets, sorted, at most DATASET_CHOICES_MAX (the thread
    list's filter suggestions)."""
    return sql.project_datasets(project_id=project.pk, limit=DATASET_CHOICES_MAX)


@dataclass(frozen=True)
class ChatTotals:
    """A thread's playground turns at a glance: how many, their running cost (USD), and
    the newest turn's model input in tokens (its last model call's, on a tool loop)
    against its model's context window (None before the first turn stored with its
    input)."""

    turns: int
    cost: Decimal
    last_input_tokens: int | None
    context_window: int | None


def thread_chat_totals(*, thread: Thread) -> ChatTotals:
    """ChatTotals of ``thread`` (two queries: one aggregate, the newest turn's context)."""
    totals = Turn.objects.filter(thread=thread).aggregate(
        turns=Count("pk", distinct=True), cost=Sum("usage_lines__cost")
    )
    last = Turn.objects.filter(thread=thread).order_by("-created", "-pk").values_list("context", flat=True).first()
    stored = (last or {}).get("input") or {}
    # A tool loop's last call holds the most of the window (its input grew each call).
    calls = (last or {}).get("calls") or ()
    return ChatTotals(
        turns=totals["turns"] or 0,
        cost=totals["cost"] or Decimal(0),
        last_input_tokens=calls[-1]["totalTokens"] if calls else stored.get("totalTokens"),
        context_window=stored.get("contextWindow"),
    )


@dataclass(frozen=True)
class TokenAverage:
    """The Stats panel's average: ``tokens`` (GET stats' averagePerMessage, total tokens
    over the messages that carried tokens, rounded) ``per`` what it says: ``"reply"``
    when only assistant replies carried tokens (every playground turn records its model
    call's tokens on the reply, none on the user message), ``"message"`` when every
    message did, else ``"message with tokens"`` with ``carriers`` of ``messages``."""

    tokens: int
    per: str
    carriers: int
    messages: int


def thread_token_average(*, thread: Thread, average: int) -> TokenAverage:
    """What the thread's ``average`` (averagePerMessage, from its counters) is an average
    of (TokenAverage). One count of the thread's replies that carried tokens."""
    carriers = thread.messages_with_tokens
    messages = thread.message_total - thread.compaction_count
    replies = Message.objects.filter(
        thread=thread, role=Message.Role.ASSISTANT, tokens_total__isnull=False, is_summary=False
    ).count()
    if replies == carriers:
        per = "reply"
    elif carriers >= messages:
        per = "message"
    else:
        per = "message with tokens"
    return TokenAverage(tokens=average, per=per, carriers=carriers, messages=messages)


def thread_openers(*, threads: Iterable[Thread | ThreadView]) -> dict[Any, str]:
    """Each thread's label for the thread list (issue 10 item 4): its metadata ``title``
    when it has one, else its first user message (cut to 120 characters), else "".
    One query for the page, a correlated subquery per thread on (thread, sequence)."""
    threads = list(threads)
    labels = {t.pk: str((t.metadata or {}).get("title") or "") for t in threads}
    need = [pk for pk, label in labels.items() if not label]
    if need:
        first = Message.objects.filter(thread=OuterRef("pk"), role="user", is_summary=False).order_by(
            "sequence_number"
        )
        rows = Thread.objects.filter(pk__in=need).annotate(opener=Subquery(first.values("content")[:1]))
        for pk, opener in rows.values_list("pk", "opener"):
            labels[pk] = (opener or "")[:120]
    return labels

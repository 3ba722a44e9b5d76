"""Threads and messages: the rows working memory is made of (spec 000, "Threads", "Messages")."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from memoryapp.models.projects import Project


class Thread(models.Model):
    """One conversation. Threads never end; they stay writable for ever (spec 000, "Threads").

    The row also carries the per-thread counters that keep the hot paths O(1):
    ``next_sequence`` (the sequence-number counter, taken under a row lock),
    ``uncompacted_count`` (un-compacted, non-summary messages: prepare's messageCount and
    the auto-compaction trigger), the token totals that stats reports, and the
    compaction state (active summary, last run, last error).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="threads")
    dataset = models.CharField(max_length=200)
    tags = models.JSONField(default=list)
    metadata = models.JSONField(default=dict)
    auto_compact_threshold = models.PositiveIntegerField(null=True, blank=True)
    # The agent that talks in this thread (spec 004); its notes live with the thread.
    agent = models.ForeignKey(
        "memoryapp.Agent", null=True, blank=True, on_delete=models.PROTECT, related_name="threads"
    )
    created = models.DateTimeField(default=timezone.now)
    last_activity = models.DateTimeField(default=timezone.now)

    next_sequence = models.PositiveBigIntegerField(default=1)
    uncompacted_count = models.PositiveIntegerField(default=0)
    # The first non-summary message's createdAt (sessionDuration runs from it to
    # latest_created_at, DESIGN.md section 6 item 9); the last append's time (the
    # thread's real silence, which idle detection reads).
    first_message_at = models.DateTimeField(null=True, blank=True)
    last_message_at = models.DateTimeField(null=True, blank=True)
    # The latest createdAt of the thread's non-summary messages (None: none yet), kept by
    # the append's own UPDATE under the thread's lock: a message appended without
    # createdAt is dated max(the server's clock, this), so createdAt never decreases with
    # the sequence number (docs/decisions.md, "createdAt never goes backwards in a thread").
    latest_created_at = models.DateTimeField(null=True, blank=True)
    tokens_input = models.PositiveBigIntegerField(default=0)
    tokens_output = models.PositiveBigIntegerField(default=0)
    tokens_total = models.PositiveBigIntegerField(default=0)
    messages_with_tokens = models.PositiveIntegerField(default=0)

    active_summary = models.ForeignKey(
        "Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    compaction_count = models.PositiveIntegerField(default=0)
    last_compacted_at = models.DateTimeField(null=True, blank=True)
    last_compaction_error = models.TextField(blank=True, default="")
    last_compaction_error_at = models.DateTimeField(null=True, blank=True)
    # Set while an automatic compaction run holds the thread's model call, so appends that
    # arrive during that call do not each start (and pay for) a run that would lose.
    compaction_lease_until = models.DateTimeField(null=True, blank=True)
    # The last sequence number end() has handed to an episode job (0: none yet), taken
    # under the thread's row lock, so two end() calls never queue the same range
    # (memoryapp.episodic.thread_end).
    episode_through = models.PositiveBigIntegerField(default=0)

    class Meta:
        indexes = [
            models.Index(fields=["project", "dataset", "-created"], name="thread_dataset_idx"),
            models.Index(fields=["project", "-created"], name="thread_project_idx"),
        ]

    def __str__(self) -> str:
        return f"thread {self.id} ({self.dataset})"

    @property
    def live_floor(self) -> int:
        """Every message numbered at or below this is compacted or a summary: the active
        summary's covers_to_sequence (0 without one). A compaction folds every live row
        below the one it keeps, so the live rows are a range above it of the (thread,
        sequence_number) index, however long the compacted history (load the thread with
        ``select_related("active_summary")``)."""
        summary = self.active_summary
        return int(summary.covers_to_sequence or 0) if summary is not None else 0

    @property
    def message_total(self) -> int:
        """Every row in the thread, summaries and compacted rows included (numbers have no gaps)."""
        return int(self.next_sequence) - 1


class ThreadTag(models.Model):
    """One tag of a thread, so listing by tag is an indexed lookup on every database.

    ``project`` and ``created`` are copies of the thread's (neither ever changes), so a
    project's threads with one tag are a range of thread_tag_page_idx in the thread
    list's order (newest first): a page of them is read without walking the project.
    """

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="tag_rows")
    name = models.CharField(max_length=100)
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    created = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread", "name"], name="thread_tag_unique")
        ]
        indexes = [
            models.Index(fields=["name"], name="thread_tag_name_idx"),
            models.Index(
                fields=["project", "name", "-created", "-thread"], name="thread_tag_page_idx"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Message(models.Model):
    """One message of a thread, or the thread's compaction summary (``is_summary``).

    ``sequence_number`` is assigned by the server (memoryapp.working.message_append), 1..N
    with no gaps. Token fields are all null when the client sent no ``tokens``. A summary
    is a ``system`` row that records the range of sequence numbers it covers
    (``covers_from_sequence``..``covers_to_sequence``). Folded rows keep their content and
    get ``compacted_at`` (spec 000, "Compaction": non-destructive).
    """

    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        SYSTEM = "system"
        TOOL = "tool"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: the (thread, sequence_number) unique index leads with thread_id
    # and serves every look-up by thread; a second one only slowed inserts and, with stale
    # statistics, tempted PostgreSQL away from the ordered index.
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="messages", db_index=False
    )
    sequence_number = models.PositiveBigIntegerField()
    role = models.CharField(max_length=10, choices=Role.choices)
    content = models.TextField()
    tokens_input = models.PositiveIntegerField(null=True, blank=True)
    tokens_output = models.PositiveIntegerField(null=True, blank=True)
    tokens_total = models.PositiveIntegerField(null=True, blank=True)
    model = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 - null is "not sent"
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    metadata = models.JSONField(null=True, blank=True)
    is_summary = models.BooleanField(default=False)
    covers_from_sequence = models.PositiveBigIntegerField(null=True, blank=True)
    covers_to_sequence = models.PositiveBigIntegerField(null=True, blank=True)
    compacted_at = models.DateTimeField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001 - unique when set
    # Whether this insert tripped auto-compaction, so an idempotent replay can return
    # exactly the first response.
    triggered_compaction = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["sequence_number"]
        constraints = [
            models.UniqueConstraint(
                fields=["thread", "sequence_number"], name="message_thread_sequence_unique"
            ),
            models.UniqueConstraint(
                fields=["thread", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="message_idempotency_unique",
            ),
        ]
        # No index of the live rows (0022 dropped message_live_tail_idx, one more B-tree
        # written by every append): they are the rows above the active summary's
        # covers_to_sequence, a range of the (thread, sequence_number) index (live_floor).

    def __str__(self) -> str:
        return f"#{self.sequence_number} {self.role}"

    @property
    def tokens(self) -> dict[str, int] | None:
        """``{"input", "output", "total"}`` as the client sent them, or None."""
        if self.tokens_total is None:
            return None
        return {
            "input": self.tokens_input or 0,
            "output": self.tokens_output or 0,
            "total": self.tokens_total,
        }

"""Compaction history: one row per compaction run of a thread (issue 10 item 2).

The summaries themselves are kept as message rows (spec 000, "Compaction":
non-destructive; a superseded summary keeps its row), so a run refers to the summary it
replaced and the one it wrote instead of copying their text.
"""

from __future__ import annotations

from decimal import Decimal

from django.db import models
from django.utils import timezone

from memoryapp.models.threads import Message, Thread


class CompactionRun(models.Model):
    """One compaction run: what it folded, the summaries before and after, its cost.

    ``from_sequence``..``to_sequence`` is the range of ordinary messages the run folded
    (or tried to: a failed run folded nothing); ``folded_count`` how many rows. ``previous_summary`` is the
    summary the run replaced (null on the first run), ``summary`` the one it wrote (null
    unless ``outcome`` is succeeded). ``tokens_input``/``tokens_output`` are what the
    model call reported (0 when no call was made or it failed), ``cost`` USD at the
    provider's prices when the run was made (memoryapp.usage). ``dropped`` is
    ``{"names": [...], "dates": [...], "numbers": [...]}``: the terms of the folded
    messages and the previous summary that the new summary lacks (memoryapp.salient),
    computed when the run committed; empty lists unless succeeded. ``mode`` is
    ``"summary"`` for a thread's rolling summary, or the agent's compaction type
    (``"summarize"``, ``"sliding-window"``) on an agent's thread (spec 004).
    """

    class Trigger(models.TextChoices):
        MANUAL = "manual", "Manual (POST compact)"
        AUTO = "auto", "Automatic"
        JOB = "job", "Compact now (dashboard)"

    class Outcome(models.TextChoices):
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        # The model answered but another run committed first; its summary was thrown away.
        DISCARDED = "discarded", "Discarded (another run won)"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="compaction_runs")
    trigger = models.CharField(max_length=10, choices=Trigger.choices)
    mode = models.CharField(max_length=20, default="summary")
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    error = models.TextField(blank=True, default="")
    from_sequence = models.PositiveBigIntegerField()
    to_sequence = models.PositiveBigIntegerField()
    folded_count = models.PositiveIntegerField(default=0)
    previous_summary = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    summary = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    adapter = models.CharField(max_length=20, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    model_called = models.BooleanField(default=True)
    tokens_input = models.PositiveIntegerField(default=0)
    tokens_output = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=16, decimal_places=8, default=Decimal(0))
    dropped = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["thread", "-created_at"], name="compaction_run_thread_idx")]

    def __str__(self) -> str:
        return f"compaction run {self.pk} ({self.outcome}) on {self.thread_id}"

    @property
    def dropped_count(self) -> int:
        """How many terms the run dropped, all kinds together."""
        return sum(len(v) for v in (self.dropped or {}).values())

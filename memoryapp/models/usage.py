"""Playground turns and their cost lines (DESIGN.md section 4, "UsageLine"; issue 4 item 5).

A Turn records one run of the playground chat route (spec 002, POST
/dashboard/chat/threads/:threadId/chat): the messages it stored, the adapter that
answered, and what memory put into the context (``context``), so the dashboard can show
the per-turn context view. Its UsageLines are the turn's cost breakdown.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from memoryapp.models.threads import Message, Thread


class Turn(models.Model):
    """One playground chat turn on a thread.

    ``context`` is a JSON object written by memoryapp.chat.chat_turn with the keys
    ``prepare`` (summary and tail as prepare returned them), ``recall`` (the recall
    result, or null), ``recallError``, ``layers`` (tokens per layer, memoryapp.tokens),
    ``timings`` (milliseconds per step) and ``model``. ``error`` is non-empty when the
    model call failed; ``assistant_message`` is then null.
    """

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="turns")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    user_message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    assistant_message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(default=timezone.now)
    adapter = models.CharField(max_length=20)
    system_prompt = models.TextField(blank=True, default="")
    message_limit = models.PositiveIntegerField(default=20)
    context = models.JSONField(default=dict)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["thread", "-created"], name="turn_thread_idx")]

    def __str__(self) -> str:
        return f"turn {self.pk} on {self.thread_id}"

    @property
    def total_cost(self) -> Decimal:
        """Sum of the turn's usage lines' costs, in USD."""
        return sum((line.cost for line in self.usage_lines.all()), Decimal(0))


class UsageLine(models.Model):
    """One cost line of a turn: ``quantity`` of ``unit`` (tokens) costing ``cost`` USD.

    ``detail`` says which model produced it, or that the quantity is an estimate.
    """

    class Kind(models.TextChoices):
        MODEL_INPUT = "model_input", "Model input tokens"
        MODEL_OUTPUT = "model_output", "Model output tokens"
        COMPACTION = "compaction", "Compaction"
        SYNTHESIS = "synthesis", "Recall synthesis"
        MEMORY_ACCESS = "memory_access", "Memory access"
        EMBEDDING = "embedding", "Embedding"

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="usage_lines")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    quantity = models.PositiveBigIntegerField(default=0)
    unit = models.CharField(max_length=20, default="tokens")
    cost = models.DecimalField(max_digits=16, decimal_places=8, default=Decimal(0))
    detail = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"{self.kind}: {self.quantity} {self.unit}"

    def to_dict(self) -> dict[str, Any]:
        """``{"kind", "quantity", "unit", "cost" (USD, string), "detail"}``."""
        return {
            "kind": self.kind,
            "quantity": self.quantity,
            "unit": self.unit,
            "cost": str(self.cost),
            "detail": self.detail,
        }

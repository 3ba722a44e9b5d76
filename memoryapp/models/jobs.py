"""Background jobs as the API and the dashboard show them (issue 7, "Background jobs").

django-tasks keeps its own row per enqueued task (django_tasks_db.DBTaskResult); a Job is
ours: scoped to a project (and optionally a thread), with a status that stays honest when
a worker dies mid-job (``lease_until``), a count of attempts that fences late writers,
and the idempotency key that makes enqueueing the same work twice a no-op.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from memoryapp.models.projects import Project
from memoryapp.models.threads import Thread


class Job(models.Model):
    """One unit of background work of a registered kind (memoryapp.jobs).

    ``status`` moves queued -> running -> succeeded | failed; a retry moves failed back
    to queued. ``attempts`` counts claims: each enqueued task carries the attempt number
    it may claim, so a task delivered twice, or a worker that comes back after its job
    was declared lost, can neither run it again nor overwrite the newer attempt's outcome.
    ``lease_until`` bounds a running attempt; past it the job counts as failed ("the
    worker stopped") and may be retried. ``task_result_id`` is django-tasks' id of the
    latest attempt's task.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="jobs")
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, null=True, blank=True, related_name="jobs"
    )
    kind = models.CharField(max_length=64)
    args = models.JSONField(default=dict)
    idempotency_key = models.CharField(max_length=255)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True, default="")
    result = models.JSONField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    task_result_id = models.CharField(max_length=64, blank=True, default="")
    lease_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["project", "-created_at"], name="job_project_recent"),
            models.Index(fields=["thread", "-created_at"], name="job_thread_recent"),
            models.Index(fields=["status", "lease_until"], name="job_status_lease"),
        ]
        constraints = [
            # At most one queued or running job per unit of work: enqueueing it again
            # while one is pending returns that one (memoryapp.jobs.job_enqueue).
            models.UniqueConstraint(
                fields=["project", "kind", "idempotency_key"],
                condition=Q(status__in=["queued", "running"]),
                name="job_one_active_per_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.pk} ({self.status})"

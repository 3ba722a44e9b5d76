"""Background jobs: a registry of kinds, enqueue, run, retry (issue 7, "Background jobs").

A **kind** is a name, a function and an idempotency rule, registered with ``job_kind``
(memoryapp.tasks holds them; memoryapp.apps imports it so every process knows them)::

    @job_kind("compaction", key=lambda args: str(args["throughSequence"]))
    def compaction_job(job: Job) -> dict[str, Any]: ...

``job_enqueue(project=, kind=, thread=, args=)`` stores a queued Job and hands django-tasks
one task (``run_job``) that runs it: with the database backend that task row is written in
the same transaction as the job (a crash cannot leave one without the other); any other
backend (the immediate one in tests) gets it when the transaction commits, so a job never
runs inside its caller's transaction. Tests running in a transaction they never commit
therefore wrap the enqueueing call in ``django_capture_on_commit_callbacks(execute=True)``.

**Idempotency.** Every kind's function must be safe to run twice for the same job: the
work is described by its args (e.g. "fold everything up to sequence 40"), and a second
run finds it done and writes nothing. The key (the thread plus ``key(args)``) names that
unit of work: while a job for it is queued or running, enqueueing it again returns that
job (a partial unique index holds this under concurrency).

**Honest status across crashes.** A worker claims a job by moving it queued -> running
with the attempt number its task carries and a lease (the kind's timeout). A worker
killed mid-job (kill -9) leaves it running; once the lease has passed, reads report it
failed ("the worker stopped") and it may be retried. A retry queues a new attempt; a late
finish from the lost attempt matches no row and is dropped, and the kind's idempotency
means the retry does not write its effects twice.

Every change of a job's status is broadcast as ``job.changed`` on its thread's group, in
the wire shape of memoryapp.serializers.job_to_dict.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django_tasks import task
from django_tasks_db import DatabaseBackend

from memoryapp import events, relay, serializers
from memoryapp.errors import JobNotFound, JobNotRetryable
from memoryapp.models import Job, Project, Thread
from memoryapp.validation import path_id

logger = logging.getLogger(__name__)

JobFunction = Callable[[Job], "dict[str, Any] | None"]
LOST_ERROR = "The worker stopped before finishing this job (it was killed or timed out); retry it."
INTERRUPTED_ERROR = "The worker was stopped while running this job; retry it."
MAX_ERROR_CHARS = 2000


@dataclass(frozen=True)
class JobKind:
    """A registered kind: its name, function, idempotency rule and lease in seconds."""

    name: str
    run: JobFunction
    key: Callable[[dict[str, Any]], str]
    timeout_seconds: int | None

    def lease(self) -> timedelta:
        seconds = self.timeout_seconds or int(settings.MEMORY_JOB_TIMEOUT_SECONDS)
        return timedelta(seconds=seconds)


_KINDS: dict[str, JobKind] = {}


def job_kind(
    name: str, *, key: Callable[[dict[str, Any]], str], timeout_seconds: int | None = None
) -> Callable[[JobFunction], JobFunction]:
    """Register the decorated ``function(job) -> result dict | None`` as job kind ``name``.

    ``key(args)`` names the unit of work within the job's thread (see the module's
    "Idempotency"); ``timeout_seconds`` (default MEMORY_JOB_TIMEOUT_SECONDS) is how long
    one attempt may run before it counts as lost. The function reads ``job.args``,
    ``job.project_id`` and ``job.thread_id``, owns its transactions (all of its writes in
    one, so a failure leaves nothing half-written) and raises to fail the job.
    """

    def register(function: JobFunction) -> JobFunction:
        if name in _KINDS and _KINDS[name].run is not function:
            raise ValueError(f"job kind {name!r} is registered twice")
        _KINDS[name] = JobKind(name=name, run=function, key=key, timeout_seconds=timeout_seconds)
        return function

    return register


def job_kinds() -> dict[str, JobKind]:
    """The registered kinds by name (a copy)."""
    return dict(_KINDS)


def _idempotency_key(kind: JobKind, thread: Thread | None, args: dict[str, Any]) -> str:
    return f"{thread.pk if thread is not None else '-'}:{kind.key(args)}"[:255]


def job_enqueue(
    *, project: Project, kind: str, thread: Thread | None = None, args: dict[str, Any] | None = None
) -> Job:
    """Queue a job of ``kind`` (registered) on ``project`` (and ``thread``); return it.

    ``args`` must be JSON-serialisable. If a job for the same unit of work (same thread and
    ``key(args)``) is already queued or running, that job is returned and nothing new is
    queued. Raises ValueError for an unregistered kind.
    """
    spec = _KINDS.get(kind)
    if spec is None:
        raise ValueError(f"unknown job kind {kind!r}")
    args = dict(args or {})
    key = _idempotency_key(spec, thread, args)
    pending = Job.objects.filter(project=project, kind=kind, idempotency_key=key, status__in=Job.ACTIVE)
    with transaction.atomic():
        existing = pending.first()
        if existing is not None:
            return existing
        try:
            with transaction.atomic():
                job = Job.objects.create(
                    project=project, thread=thread, kind=kind, args=args, idempotency_key=key
                )
                _dispatch(job)
        except IntegrityError:
            # A concurrent enqueue of the same work won (PostgreSQL; SQLite serialises).
            return pending.get()
        _changed(job)
    return job


def _dispatch(job: Job) -> None:
    """Hand django-tasks the task that runs ``job``'s next attempt."""
    attempt = job.attempts + 1
    if isinstance(run_job.get_backend(), DatabaseBackend):
        # Same database: the task row commits (or rolls back) with the job row.
        result = run_job.enqueue(str(job.pk), attempt)
        job.task_result_id = str(result.id)
        Job.objects.filter(pk=job.pk).update(task_result_id=job.task_result_id)
    else:
        job_id = str(job.pk)
        transaction.on_commit(lambda: run_job.enqueue(job_id, attempt))


def job_get(*, project: Project, job_id: uuid.UUID | str) -> Job:
    """The project's job ``job_id`` with its status brought up to date (lost attempts
    show as failed). Raises JobNotFound for a malformed id or another project's job."""
    job_uuid = path_id(job_id, JobNotFound)
    job_reap_lost(project=project)
    job = Job.objects.filter(project=project, pk=job_uuid).first()
    if job is None:
        raise JobNotFound()
    return job


def job_list(*, project: Project, thread: Thread | None = None, limit: int = 50) -> list[Job]:
    """The project's (or thread's) newest ``limit`` jobs, statuses brought up to date."""
    job_reap_lost(project=project)
    jobs = Job.objects.filter(project=project)
    if thread is not None:
        jobs = jobs.filter(thread=thread)
    return list(jobs.order_by("-created_at")[:limit])


def job_retry(*, job: Job) -> Job:
    """Queue a new attempt of a failed job; return the job that will do the work.

    If another job for the same unit of work is already pending, that one is returned and
    nothing is queued. Raises JobNotRetryable when ``job`` is not failed (queued, running
    within its lease, or succeeded), JobNotFound if it was deleted meanwhile.
    """
    job_reap_lost(project=job.project)
    with transaction.atomic():
        locked = Job.objects.select_for_update().filter(pk=job.pk).first()
        if locked is None:
            raise JobNotFound()
        if locked.status != Job.Status.FAILED:
            raise JobNotRetryable(locked.status)
        pending = Job.objects.filter(
            project_id=locked.project_id,
            kind=locked.kind,
            idempotency_key=locked.idempotency_key,
            status__in=Job.ACTIVE,
        ).first()
        if pending is not None:
            return pending
        locked.status = Job.Status.QUEUED
        locked.error = ""
        locked.result = None
        locked.started_at = locked.finished_at = locked.lease_until = None
        locked.save(
            update_fields=["status", "error", "result", "started_at", "finished_at", "lease_until"]
        )
        _dispatch(locked)
        _changed(locked)
    return locked


def job_reap_lost(*, project: Project | None = None, now: datetime | None = None) -> int:
    """Mark running jobs whose lease has passed as failed (their worker is gone); return
    how many. Called by every read, so a killed worker's job never shows as running."""
    now = now or timezone.now()
    lost = Job.objects.filter(status=Job.Status.RUNNING, lease_until__lt=now)
    if project is not None:
        lost = lost.filter(project=project)
    count = 0
    for job in lost:
        if _finish(job, job.attempts, status=Job.Status.FAILED, error=LOST_ERROR, now=now):
            count += 1
    return count


def _claim(job_id: uuid.UUID, attempt: int) -> tuple[Job, JobKind | None] | None:
    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.status != Job.Status.QUEUED or job.attempts != attempt - 1:
        return None
    kind = _KINDS.get(job.kind)
    now = timezone.now()
    lease = kind.lease() if kind else timedelta(seconds=int(settings.MEMORY_JOB_TIMEOUT_SECONDS))
    claimed = Job.objects.filter(pk=job_id, status=Job.Status.QUEUED, attempts=attempt - 1).update(
        status=Job.Status.RUNNING, attempts=attempt, started_at=now, lease_until=now + lease
    )
    if not claimed:
        return None
    job.status, job.attempts, job.started_at, job.lease_until = (
        Job.Status.RUNNING, attempt, now, now + lease,
    )
    _changed(job)
    return job, kind


def _finish(
    job: Job,
    attempt: int,
    *,
    status: str,
    result: dict[str, Any] | None = None,
    error: str = "",
    now: datetime | None = None,
) -> bool:
    """Record attempt ``attempt``'s outcome unless a newer attempt (or the reaper) has
    moved the job on; True if it was recorded."""
    now = now or timezone.now()
    error = error[:MAX_ERROR_CHARS]
    done = Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, attempts=attempt).update(
        status=status, result=result, error=error, finished_at=now, lease_until=None
    )
    if done:
        job.status, job.result, job.error, job.finished_at, job.lease_until = (
            status, result, error, now, None,
        )
        _changed(job)
    return bool(done)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        return INTERRUPTED_ERROR
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def job_run(*, job_id: uuid.UUID, attempt: int) -> None:
    """Run attempt ``attempt`` of job ``job_id`` (what the django-tasks task does).

    Does nothing unless the job is queued for exactly this attempt (a duplicate delivery
    or a stale task). Records success with the function's result, or failure with the
    exception's type and message; the exception is re-raised so django-tasks records
    it too (and the worker logs the traceback).
    """
    claimed = _claim(job_id, attempt)
    if claimed is None:
        logger.info("job %s attempt %s is not queued for this attempt; skipped", job_id, attempt)
        return
    job, kind = claimed
    try:
        if kind is None:
            raise ValueError(f"unknown job kind {job.kind!r}")
        result = kind.run(job)
    except BaseException as exc:
        _finish(job, attempt, status=Job.Status.FAILED, error=_describe(exc))
        raise
    _finish(job, attempt, status=Job.Status.SUCCEEDED, result=result)


@task()
def run_job(job_id: str, attempt: int) -> None:
    """The one django-tasks task: run attempt ``attempt`` of job ``job_id`` (job_run).

    The database backend runs it in the db worker, a process with no WebSockets, so the
    job's events are relayed to the servers (memoryapp.relay); another backend runs it in
    the process that enqueued it, which sends its events as usual.
    """
    in_worker = isinstance(run_job.get_backend(), DatabaseBackend)
    with relay.relaying() if in_worker else nullcontext():
        job_run(job_id=uuid.UUID(job_id), attempt=attempt)


def _changed(job: Job) -> None:
    if job.thread_id is not None:
        events.job_changed(job.thread_id, serializers.job_to_dict(job))

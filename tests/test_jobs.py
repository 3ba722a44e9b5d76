"""memoryapp.jobs: enqueue, run, status, failure, retry, idempotency, lost workers."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

from memoryapp import jobs, working
from memoryapp.errors import JobNotFound, JobNotRetryable
from memoryapp.models import Job, Message, Project, RelayedEvent, Thread
from tests.conftest import Api, Clock

JOBS = "/v1/memory/jobs"
DUMMY = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
DATABASE = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}

# What the test kinds did, and whether "test.flaky" should fail now.
calls: list[str] = []
state = {"fail": False}


@jobs.job_kind("test.echo", key=lambda args: str(args["value"]))
def _echo(job: Job) -> dict[str, Any]:
    calls.append(str(job.pk))
    return {"echo": job.args["value"]}


@jobs.job_kind("test.note", key=lambda args: args["text"], timeout_seconds=30)
def _note(job: Job) -> dict[str, Any]:
    """Writes one message; the job id as Idempotency-Key makes a second run write nothing."""
    calls.append(str(job.pk))
    assert job.thread_id is not None
    appended = working.message_append(
        thread=job.thread_id, role="user", content=job.args["text"], idempotency_key=f"job:{job.pk}"
    )
    if state["fail"]:
        raise RuntimeError("the model said no")
    return {"sequenceNumber": appended.message.sequence_number}


@jobs.job_kind("test.stall", key=lambda args: args["text"], timeout_seconds=1)
def _stall(job: Job) -> dict[str, Any] | None:
    """Like test.note, then hangs while ``state["stall"]`` (until its worker is killed)."""
    result = _note(job)
    while state["stall"]:
        time.sleep(0.05)
    return result


@pytest.fixture(autouse=True)
def fresh_state() -> Iterator[None]:
    calls.clear()
    state["fail"] = False
    state["stall"] = False
    yield


@pytest.fixture
def thread(project: Project) -> Thread:
    return Thread.objects.create(project=project, dataset="user_42")


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks: Any) -> Callable[..., Any]:
    """Call ``fn(**kwargs)`` and run what it queued for commit (the immediate backend's jobs)."""

    def call(fn: Callable[..., Any], **kwargs: Any) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return fn(**kwargs)

    return call


def test_it_runs_an_enqueued_job_and_reports_it_through_the_api(
    api: Api, project: Project, run_on_commit: Callable[..., Any]
) -> None:
    job = run_on_commit(jobs.job_enqueue, project=project, kind="test.echo", args={"value": 7})

    resp = api.get(f"{JOBS}/{job.pk}")

    assert resp.status_code == 200
    body = resp.json()
    assert {k: body[k] for k in ("jobId", "kind", "status", "error", "result", "attempts")} == {
        "jobId": str(job.pk),
        "kind": "test.echo",
        "status": "succeeded",
        "error": None,
        "result": {"echo": 7},
        "attempts": 1,
    }
    assert body["threadId"] is None
    assert body["startedAt"] is not None and body["finishedAt"] is not None
    assert calls == [str(job.pk)]


def test_it_shows_a_job_as_queued_until_a_worker_runs_it(
    api: Api, project: Project, settings: Any
) -> None:
    settings.TASKS = DUMMY
    job = jobs.job_enqueue(project=project, kind="test.echo", args={"value": 1})

    body = api.get(f"{JOBS}/{job.pk}").json()

    assert (body["status"], body["result"], body["error"], body["attempts"]) == ("queued", None, None, 0)
    assert calls == []


def test_it_records_a_failure_with_its_error(
    api: Api, thread: Thread, run_on_commit: Callable[..., Any]
) -> None:
    state["fail"] = True
    job = run_on_commit(
        jobs.job_enqueue, project=thread.project, thread=thread, kind="test.note", args={"text": "hi"}
    )

    body = api.get(f"{JOBS}/{job.pk}").json()

    assert (body["status"], body["error"], body["result"]) == (
        "failed",
        "RuntimeError: the model said no",
        None,
    )
    assert body["threadId"] == str(thread.pk)


def test_it_retries_a_failed_job_without_writing_twice(
    thread: Thread, run_on_commit: Callable[..., Any]
) -> None:
    state["fail"] = True
    job = run_on_commit(
        jobs.job_enqueue, project=thread.project, thread=thread, kind="test.note", args={"text": "hi"}
    )
    state["fail"] = False

    retried = run_on_commit(jobs.job_retry, job=job)

    job.refresh_from_db()
    assert retried.pk == job.pk
    assert (job.status, job.error, job.result, job.attempts) == ("succeeded", "", {"sequenceNumber": 1}, 2)
    assert list(Message.objects.filter(thread=thread).values_list("sequence_number", "content")) == [
        (1, "hi")
    ]
    assert calls == [str(job.pk), str(job.pk)]


def test_it_refuses_to_retry_a_job_that_did_not_fail(
    project: Project, run_on_commit: Callable[..., Any]
) -> None:
    job = run_on_commit(jobs.job_enqueue, project=project, kind="test.echo", args={"value": 2})

    with pytest.raises(JobNotRetryable) as caught:
        jobs.job_retry(job=job)

    assert caught.value.status == "succeeded"


def test_it_returns_the_pending_job_when_the_same_work_is_enqueued_again(
    project: Project, settings: Any
) -> None:
    settings.TASKS = DUMMY
    first = jobs.job_enqueue(project=project, kind="test.echo", args={"value": 3})
    again = jobs.job_enqueue(project=project, kind="test.echo", args={"value": 3})
    other = jobs.job_enqueue(project=project, kind="test.echo", args={"value": 4})

    assert again.pk == first.pk
    assert other.pk != first.pk
    assert Job.objects.filter(project=project).count() == 2


def test_it_queues_the_same_work_anew_once_the_earlier_job_finished(
    project: Project, run_on_commit: Callable[..., Any]
) -> None:
    first = run_on_commit(jobs.job_enqueue, project=project, kind="test.echo", args={"value": 5})
    second = run_on_commit(jobs.job_enqueue, project=project, kind="test.echo", args={"value": 5})

    assert second.pk != first.pk
    assert calls == [str(first.pk), str(second.pk)]


def test_it_runs_each_attempt_once_even_when_its_task_is_delivered_twice(
    project: Project, settings: Any
) -> None:
    settings.TASKS = DUMMY
    job = jobs.job_enqueue(project=project, kind="test.echo", args={"value": 6})

    jobs.job_run(job_id=job.pk, attempt=1)
    jobs.job_run(job_id=job.pk, attempt=1)

    job.refresh_from_db()
    assert (job.status, job.attempts) == ("succeeded", 1)
    assert calls == [str(job.pk)]


def test_it_refuses_an_unknown_kind(project: Project) -> None:
    with pytest.raises(ValueError, match="unknown job kind 'nope'"):
        jobs.job_enqueue(project=project, kind="nope")
    assert Job.objects.count() == 0


def test_it_answers_404_for_another_projects_job_and_for_malformed_ids(
    api: Api, outsider_api: Api, project: Project, settings: Any
) -> None:
    settings.TASKS = DUMMY
    job = jobs.job_enqueue(project=project, kind="test.echo", args={"value": 8})

    for resp in (
        outsider_api.get(f"{JOBS}/{job.pk}"),
        api.get(f"{JOBS}/not-a-uuid"),
        api.get(f"{JOBS}/00000000-0000-0000-0000-000000000000"),
    ):
        assert (resp.status_code, resp.json()) == (404, {"error": "Job not found"})
    with pytest.raises(JobNotFound):
        jobs.job_get(project=Project.objects.create(slug="x", name="X"), job_id=job.pk)


def test_it_answers_401_without_a_key(anon_api: Api) -> None:
    resp = anon_api.get(f"{JOBS}/00000000-0000-0000-0000-000000000000")
    assert (resp.status_code, resp.json()) == (401, {"error": "Unauthorized"})


# The worker closes connections between tasks, as it does outside tests: no test
# transaction can span it.
@pytest.mark.django_db(transaction=True)
def test_it_writes_the_task_row_with_the_job_and_the_db_worker_runs_it(
    project: Project, settings: Any
) -> None:
    settings.TASKS = DATABASE
    job = jobs.job_enqueue(project=project, kind="test.echo", args={"value": 9})

    task_row = DBTaskResult.objects.get(id=job.task_result_id)
    assert (task_row.status, task_row.args_kwargs) == (
        "READY",
        {"args": [str(job.pk), 1], "kwargs": {}},
    )
    _worker().run()

    job.refresh_from_db()
    task_row.refresh_from_db()
    assert (job.status, job.result, task_row.status) == ("succeeded", {"echo": 9}, "SUCCESSFUL")


# The worker closes connections between tasks, as it does outside tests: no test
# transaction can span it.
@pytest.mark.django_db(transaction=True)
def test_it_reports_a_job_whose_worker_was_killed_as_failed_and_its_retry_writes_once(
    api: Api, thread: Thread, settings: Any, clock: Clock
) -> None:
    settings.TASKS = DATABASE
    job = jobs.job_enqueue(
        project=thread.project, thread=thread, kind="test.note", args={"text": "remember this"}
    )
    # A worker claims attempt 1, writes the message, then is killed (kill -9) before it
    # records the outcome: the job stays running until its 30 s lease passes.
    claimed = jobs._claim(job.pk, 1)
    assert claimed is not None
    _note(claimed[0])
    assert api.get(f"{JOBS}/{job.pk}").json()["status"] == "running"

    clock.now += timedelta(seconds=31)
    body = api.get(f"{JOBS}/{job.pk}").json()
    assert (body["status"], body["error"]) == ("failed", jobs.LOST_ERROR)

    jobs.job_retry(job=Job.objects.get(pk=job.pk))
    _worker().run()

    job.refresh_from_db()
    assert (job.status, job.attempts, job.result) == ("succeeded", 2, {"sequenceNumber": 1})
    assert Message.objects.filter(thread=thread).count() == 1
    # The lost attempt coming back late records nothing over the retry's outcome.
    assert jobs._finish(job, 1, status="failed", error="late") is False
    job.refresh_from_db()
    assert job.status == "succeeded"


def test_it_keeps_a_running_job_running_within_its_lease(project: Project, settings: Any) -> None:
    settings.TASKS = DUMMY
    job = jobs.job_enqueue(project=project, kind="test.echo", args={"value": 10})
    jobs._claim(job.pk, 1)

    assert jobs.job_reap_lost(now=timezone.now() + timedelta(seconds=60)) == 0
    assert jobs.job_get(project=project, job_id=job.pk).status == "running"
    with pytest.raises(JobNotRetryable):
        jobs.job_retry(job=job)


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` until true (a wait for another process, not a timed assertion)."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


@pytest.mark.django_db(transaction=True)
def test_it_leaves_a_job_retryable_when_its_db_worker_process_is_killed_and_writes_once(
    thread: Thread, settings: Any
) -> None:
    from django.db import connections

    settings.TASKS = DATABASE
    job = jobs.job_enqueue(
        project=thread.project, thread=thread, kind="test.stall", args={"text": "kept once"}
    )
    first_task = job.task_result_id
    state["stall"] = True  # the forked worker hangs inside the job after writing
    # The child must not share the parent's database connection (nor psycopg's pool).
    connections.close_all()
    for conn in connections.all():
        close_pool = getattr(conn, "close_pool", None)
        if close_pool is not None:
            close_pool()
    worker = multiprocessing.get_context("fork").Process(
        target=lambda: Worker(
            queue_names=["default"], interval=0.05, batch=False, backend_name="default",
            startup_delay=False, max_tasks=None, worker_id="doomed", excluded_queue_names=[],
        ).run(),
        daemon=True,
    )
    worker.start()
    state["stall"] = False
    _wait_for(lambda: Message.objects.filter(thread=thread).exists(), "the job's write")
    assert Job.objects.get(pk=job.pk).status == "running"

    os.kill(worker.pid or 0, signal.SIGKILL)
    worker.join(timeout=10)

    # The library's row stays RUNNING for ever; our job reads failed once its lease is over.
    assert DBTaskResult.objects.get(id=first_task).status == "RUNNING"
    _wait_for(lambda: jobs.job_reap_lost() == 1, "the 1 s lease to pass")
    failed = jobs.job_get(project=thread.project, job_id=job.pk)
    assert (failed.status, failed.error, failed.attempts) == ("failed", jobs.LOST_ERROR, 1)

    jobs.job_retry(job=failed)
    _worker().run()

    job.refresh_from_db()
    assert (job.status, job.attempts, job.result) == ("succeeded", 2, {"sequenceNumber": 1})
    assert list(Message.objects.filter(thread=thread).values_list("content", flat=True)) == [
        "kept once"
    ]


def _worker() -> Worker:
    """django-tasks-db's own worker, in this process, until the queue is empty."""
    return Worker(
        queue_names=["default"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="test-worker",
        excluded_queue_names=[],
    )


@pytest.mark.django_db(transaction=True)
def test_it_relays_the_events_of_a_job_run_by_the_db_worker(thread: Thread, settings: Any) -> None:
    settings.TASKS = DATABASE
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.MEMORY_EVENT_RELAY = True
    jobs.job_enqueue(project=thread.project, thread=thread, kind="test.note", args={"text": "hi"})
    assert RelayedEvent.objects.count() == 0  # the enqueueing process's are not relayed

    _worker().run()

    relayed = [(e.group, e.payload["event"]) for e in RelayedEvent.objects.order_by("id")]
    group = f"thread.{thread.pk}"
    assert relayed == [
        (group, "job.changed"),
        (group, "message.appended"),
        (group, "job.changed"),
    ]
    statuses = [e.payload["data"]["status"] for e in RelayedEvent.objects.order_by("id")[::2]]
    assert statuses == ["running", "succeeded"]

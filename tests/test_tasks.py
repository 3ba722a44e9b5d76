"""The episode job kind (memoryapp/tasks.py episode_job) under worker crashes: a worker
killed mid-job leaves the job retryable and the retry writes everything once (issue 8
"Must show"). The job itself is tested in tests/test_episodic.py and test_api_end.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django_tasks_db.management.commands.db_worker import Worker

from memoryapp import episodic, jobs, tasks, working
from memoryapp.models import Episode, Fact, Job, Project, Thread
from tests.conftest import Clock
from tests.fakes.fixtures import fake_gemini_fixture  # noqa: F401  (registers fake_gemini)
from tests.fakes.gemini_server import FakeGeminiServer, FakeResponse, text_response

ROOT = Path(__file__).resolve().parent.parent
DATABASE = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}


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


def _ended_thread(project: Project) -> tuple[Thread, Job]:
    thread = working.thread_create(project=project, dataset="user_42")
    for content in ("I drive a Honda Civic", "my sister is Mara"):
        working.message_append(thread=thread, role="user", content=content)
    result = episodic.thread_end(project=project, thread_id=thread.pk)
    assert result is not None
    return thread, Job.objects.get(pk=result.job_id)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("wrote_before_dying", [False, True])
def test_it_retries_an_episode_job_whose_worker_died_and_writes_once(
    project: Project, settings: Any, clock: Clock, wrote_before_dying: bool
) -> None:
    settings.TASKS = DATABASE
    _thread, job = _ended_thread(project)
    # A worker claims attempt 1 and is killed (kill -9) before it records the outcome:
    # either mid-model-call (nothing written) or just after the job's commit.
    claimed = jobs._claim(job.pk, 1)
    assert claimed is not None
    if wrote_before_dying:
        tasks.episode_job(claimed[0])

    clock.now += timedelta(seconds=settings.MEMORY_JOB_TIMEOUT_SECONDS + 1)
    lost = jobs.job_get(project=project, job_id=job.pk)
    assert (lost.status, lost.error) == ("failed", jobs.LOST_ERROR)
    jobs.job_retry(job=lost)
    _worker().run()

    job.refresh_from_db()
    assert (job.status, job.attempts) == ("succeeded", 2)
    assert job.result is not None and job.result["created"] is (not wrote_before_dying)
    assert (Episode.objects.count(), Fact.objects.count()) == (1, 2)


ANSWER = {
    "title": "Car and sister",
    "summary": "The user drives a Honda Civic; their sister is Mara.",
    "quotedSequences": [1, 2],
    "facts": [
        {
            "text": "The user drives a Honda Civic.",
            "subject": "user",
            "attribute": "car",
            "value": "Honda Civic",
            "singleValued": True,
            "sourceSequences": [1],
        },
        {
            "text": "The user's sister is Mara.",
            "subject": "user",
            "attribute": "sister",
            "value": "Mara",
            "singleValued": False,
            "sourceSequences": [2],
        },
    ],
    "entities": [],
}


def _wait_for(predicate: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for the worker"
        time.sleep(0.05)


@pytest.mark.postgres
@pytest.mark.skipif(connection.vendor != "postgresql", reason="a worker process needs PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_it_retries_the_job_of_a_real_db_worker_killed_mid_job_and_writes_once(
    project: Project, settings: Any, clock: Clock, fake_gemini: FakeGeminiServer
) -> None:
    settings.TASKS = DATABASE
    clock.now = datetime.now(UTC)
    fake_gemini.delay = 30.0  # the worker's model call hangs: it is killed mid-job
    _thread, job = _ended_thread(project)
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "PYTHONPATH": str(ROOT),
        "MEMORY_LLM_ADAPTER": "gemini",
        "GEMINI_API_KEY": "test-key",
        "GEMINI_BASE_URL": fake_gemini.url,
        "GEMINI_RETRY_ATTEMPTS": "1",
        "GEMINI_TIMEOUT_SECONDS": "60",
    }
    worker = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "db_worker",
            "--no-reload",
            "--no-startup-delay",
            "--interval",
            "0.1",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(lambda: fake_gemini.requests_for("generateContent"))
        assert Job.objects.get(pk=job.pk).status == "running"
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert Episode.objects.count() == 0

    clock.now = datetime.now(UTC) + timedelta(seconds=settings.MEMORY_JOB_TIMEOUT_SECONDS + 1)
    lost = jobs.job_get(project=project, job_id=job.pk)
    assert (lost.status, lost.error) == ("failed", jobs.LOST_ERROR)
    fake_gemini.delay = 0.0
    fake_gemini.enqueue(FakeResponse(body=text_response(json.dumps(ANSWER))))
    jobs.job_retry(job=lost)
    _worker().run()

    job.refresh_from_db()
    assert (job.status, job.attempts, job.error) == ("succeeded", 2, "")
    assert (Episode.objects.count(), Fact.objects.count()) == (1, 2)

"""Background jobs in a real browser: "Compact now" is queued by the server, run by a real
``manage.py db_worker`` process, and its outcome reaches open pages without a reload
(issue 7, "Must show"). Without REDIS_URL the worker's events travel through the relay
table; CI runs this file again with REDIS_URL, where they go through Redis.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django_tasks_db.models import DBTaskResult
from playwright.sync_api import expect

from memoryapp import working
from memoryapp.models import Job, Message, RelayedEvent
from tests.e2e.test_browser import (
    Owner,
    assert_same_document,
    log_in,
    mark_document,
    open_live,
    thread_url,
)

# The worker polls every 0.1 s, the relay every 0.25 s, the page refreshes 0.12 s after
# an event: well under a second; the rest is slack for a loaded two-core machine.
JOB_TIMEOUT_MS = 10_000

pytestmark = pytest.mark.usefixtures("transactional_db")


def test_it_runs_compact_now_in_the_worker_and_updates_an_open_page_without_reload(
    owner: Owner, live_url: str, new_page: Any
) -> None:
    thread = working.thread_create(project=owner.project, dataset="user_e2e")
    for i in range(1, 5):
        working.message_append(thread=thread, role="user" if i % 2 else "assistant", content=f"line {i}")
    url = thread_url(live_url, thread)
    watcher = new_page()
    log_in(watcher, live_url)
    open_live(watcher, url)
    expect(watcher.get_by_test_id("jobs-empty")).to_be_visible()
    mark_document(watcher)

    clicker = new_page()
    log_in(clicker, live_url)
    open_live(clicker, url)
    clicker.get_by_test_id("compact").click()
    expect(clicker.get_by_test_id("flash")).to_contain_text("Compaction queued")

    job_row = watcher.get_by_test_id("job")
    expect(job_row).to_have_attribute("data-status", "succeeded", timeout=JOB_TIMEOUT_MS)
    expect(job_row.get_by_test_id("job-result")).to_have_text(
        "4 compacted · messages #1\u2013#4"
    )
    summary = watcher.get_by_test_id("summary")
    expect(summary).to_have_attribute("data-active", "true", timeout=JOB_TIMEOUT_MS)
    expect(summary.get_by_test_id("summary-range")).to_have_text("covers #1\u2013#4")
    expect(watcher.get_by_test_id("stat-compactions")).to_contain_text("1")
    assert_same_document(watcher)

    job = Job.objects.get(thread=thread)
    task_row = DBTaskResult.objects.get(id=job.task_result_id)
    # Run by the db worker process, not in the server: the task row records the claim.
    assert (job.status, job.attempts, task_row.status, len(task_row.worker_ids)) == (
        "succeeded",
        1,
        "SUCCESSFUL",
        1,
    )
    assert Message.objects.filter(thread=thread, compacted_at__isnull=False).count() == 4
    # How the worker's events travelled: the relay table by default, Redis with REDIS_URL.
    relayed = set(RelayedEvent.objects.values_list("payload__event", flat=True))
    if settings.REDIS_URL:
        assert relayed == set()
    else:
        assert relayed == {"job.changed", "message.appended", "thread.compacted"}

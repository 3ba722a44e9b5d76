"""Dashboard views of background jobs: a thread's jobs panel and the Retry button (issue 7).

Members and owners alike may see and retry a project's jobs; anyone else gets 404
(playground.access). The panel is a fragment of the thread page that live.js refreshes
when a ``job.changed`` event arrives.
"""

from __future__ import annotations

import uuid
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memoryapp import jobs
from memoryapp.errors import JobNotFound, JobNotRetryable
from memoryapp.models import Job, Thread
from playground.access import default_project, get_project_for_user
from playground.pages import thread_fragment

# The thread page shows this many of the thread's newest jobs.
THREAD_JOBS_SHOWN = 5


def thread_jobs_context(thread: Thread) -> dict[str, object]:
    """What the thread page's ``jobs`` partial needs: the newest jobs and the panel URL."""
    query = urlencode({"projectId": thread.project_id})
    return {
        "jobs": jobs.job_list(project=thread.project, thread=thread, limit=THREAD_JOBS_SHOWN),
        "jobs_url": f"{reverse('playground:thread-jobs', args=(thread.pk,))}?{query}",
    }


@require_GET
@login_required
@default_project
def thread_jobs(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """The thread's jobs panel (status, result or error, Retry), as an HTML fragment."""
    return thread_fragment(request, thread_id, "jobs", thread_jobs_context)


@require_POST
@login_required
def job_retry(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    """Queue a new attempt of a failed job, then back to its thread (or, when the form
    says ``next=jobs`` or the job has no thread, to the project's Jobs page)."""
    project = get_project_for_user(request)
    job = get_object_or_404(Job, pk=job_id, project=project)
    try:
        jobs.job_retry(job=job)
    except JobNotRetryable as exc:
        messages.info(
            request, f"Not retried: its status is {exc.status}, and only failed jobs can be retried."
        )
    except JobNotFound:
        messages.info(request, "Not retried: the job is gone.")
    else:
        messages.success(request, "Retry queued: the job runs again in the background.")
    query = urlencode({"projectId": project.pk})
    if job.thread_id is None or request.POST.get("next") == "jobs":
        # The project's Jobs page lists it (a job without a thread appears nowhere else).
        return redirect(f"{reverse('playground:jobs')}?{query}")
    return redirect(f"{reverse('playground:thread', args=(job.thread_id,))}?{query}")

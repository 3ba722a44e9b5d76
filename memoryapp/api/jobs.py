"""/v1/memory/jobs: a background job's status (DESIGN.md section 5; issue 8, end())."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from memoryapp import jobs, serializers
from memoryapp.api.auth import request_project
from memoryapp.api.schemas import ErrorOut, JobOut

router = Router(tags=["jobs"])


@router.get(
    "/{job_id}",
    response={200: JobOut, 401: ErrorOut, 404: ErrorOut},
    summary="Get a background job",
)
def get_job(request: HttpRequest, job_id: str) -> dict[str, Any]:
    """The job's status (queued, running, succeeded, failed), error and result; 404
    ``{"error": "Job not found"}`` for a job of another project or no job at all."""
    project = request_project(request)
    return serializers.job_to_dict(jobs.job_get(project=project, job_id=job_id))

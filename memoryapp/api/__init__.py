"""The /v1 API (django-ninja): one NinjaAPI, its auth, and the one error helper.

Every error leaves as ``{"error": ..., "issues"?: [...]}`` with the status DESIGN.md
section 5 gives; nothing a client can send produces a 500.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from memoryapp.api.auth import ApiKeyAuth
from memoryapp.errors import (
    BODY_TOO_LARGE,
    INVALID_JSON,
    AgentNotFound,
    EpisodeNotFound,
    FactNotFound,
    IdempotencyConflict,
    InvalidInput,
    JobNotFound,
    ModelCallFailed,
    NoMemoryAgent,
    ThreadNotFound,
    error_body,
)
from memoryapp.ratelimit import RateLimited
from memoryapp.validation import JSON_VALUE_SCHEMA, issues_from_pydantic, json_value_refs

logger = logging.getLogger(__name__)

class MemoryApi(NinjaAPI):
    """NinjaAPI whose OpenAPI document also defines ``JsonValue``, the free-form JSON
    that thread metadata holds (memoryapp.validation.JsonObject refers to it)."""

    def get_openapi_schema(self, *args: Any, **kwargs: Any) -> Any:
        schema = super().get_openapi_schema(*args, **kwargs)
        schema["components"].setdefault("schemas", {})["JsonValue"] = JSON_VALUE_SCHEMA
        for key in ("paths", "components"):
            schema[key] = json_value_refs(schema[key])
        return schema


api = MemoryApi(
    title="Memory service",
    version="1",
    description=(
        "Working memory for LLM chat agents: threads, messages with server-assigned "
        "sequence numbers, the LLM-ready context window (prepare) and rolling compaction."
    ),
    auth=ApiKeyAuth(),
    urls_namespace="v1",
    docs_url="/docs",
    openapi_url="/openapi.json",
)

# The request location ninja puts in front of a field's location, then the parameter
# name it wraps bodies and query schemas in; clients only care about their own fields.
# One of each is stripped, so a field that happens to be called "query" keeps its name.
_LOCATION_PREFIXES = {"body", "query", "path", "header"}
_PARAMETER_NAMES = {"payload", "params", "filters"}


def error_response(
    request: HttpRequest, status: int, error: str, issues: list[dict[str, Any]] | None = None, **extra: Any
) -> HttpResponse:
    """An error_body (memoryapp.errors) as ninja's response with ``status``."""
    return api.create_response(request, error_body(error, issues, **extra), status=status)


def validation_response(request: HttpRequest, errors: list[dict[str, Any]]) -> HttpResponse:
    """400 Validation error with the issues of ninja's pydantic ``errors`` (the request
    location and parameter name stripped from each path), or 413 when content is over
    its size limit."""
    issues = []
    for err in errors:
        loc = list(err.get("loc", ()))
        strip = int(bool(loc) and loc[0] in _LOCATION_PREFIXES)
        strip += int(len(loc) > strip and loc[strip] in _PARAMETER_NAMES)
        issues.extend(issues_from_pydantic([err], strip=strip))
    if any(i["code"] == "content_too_large" for i in issues):
        return error_response(request, 413, "Payload too large", issues)
    return error_response(request, 400, "Validation error", issues)


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return validation_response(request, list(exc.errors))


@api.exception_handler(InvalidInput)
def _invalid_input(request: HttpRequest, exc: InvalidInput) -> HttpResponse:
    return error_response(request, 400, "Validation error", exc.issues)


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error_response(request, 401, "Unauthorized")


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if exc.status_code == 400:
        # ninja raises this for a body that is not JSON.
        return error_response(request, 400, "Validation error", INVALID_JSON)
    return error_response(request, exc.status_code, str(exc))


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error_response(request, 413, "Payload too large", BODY_TOO_LARGE)


@api.exception_handler(RateLimited)
def _rate_limited(request: HttpRequest, exc: RateLimited) -> HttpResponse:
    response = error_response(request, 429, "Too many requests")
    response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(ThreadNotFound)
def _thread_not_found(request: HttpRequest, exc: ThreadNotFound) -> HttpResponse:
    return error_response(request, 404, "Thread not found")


@api.exception_handler(EpisodeNotFound)
def _episode_not_found(request: HttpRequest, exc: EpisodeNotFound) -> HttpResponse:
    return error_response(request, 404, "Episode not found")


@api.exception_handler(FactNotFound)
def _fact_not_found(request: HttpRequest, exc: FactNotFound) -> HttpResponse:
    return error_response(request, 404, "Fact not found")


@api.exception_handler(JobNotFound)
def _job_not_found(request: HttpRequest, exc: JobNotFound) -> HttpResponse:
    return error_response(request, 404, "Job not found")


@api.exception_handler(AgentNotFound)
def _agent_not_found(request: HttpRequest, exc: AgentNotFound) -> HttpResponse:
    return error_response(request, 404, "Agent not found")


@api.exception_handler(NoMemoryAgent)
def _no_memory_agent(request: HttpRequest, exc: NoMemoryAgent) -> HttpResponse:
    return error_response(
        request,
        409,
        "Thread has no memory-enabled agent",
        detail="Create the thread with an agent whose memory option is set (PUT /v1/memory/agents/{name}).",
    )


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(request, 404, "Not found")


@api.exception_handler(IdempotencyConflict)
def _idempotency_conflict(request: HttpRequest, exc: IdempotencyConflict) -> HttpResponse:
    return error_response(
        request,
        409,
        "Idempotency-Key already used for a different message on this thread",
    )


@api.exception_handler(Exception)
def _unhandled(request: HttpRequest, exc: Exception) -> HttpResponse:
    # Never a traceback in an API body, even with DEBUG on; the log has it.
    logger.exception("unhandled error on %s %s", request.method, request.path)
    return error_response(request, 500, "Internal server error")


@api.exception_handler(ModelCallFailed)
def _model_failed(request: HttpRequest, exc: ModelCallFailed) -> HttpResponse:
    return error_response(request, 502, "Model call failed", kind=exc.kind, detail=str(exc))


from memoryapp.api.working import router as working_router  # noqa: E402

api.add_router("/memory/working", working_router)

from memoryapp.api.recall import router as recall_router  # noqa: E402

api.add_router("/memory/recall", recall_router)

from memoryapp.api.episodic import end_router  # noqa: E402
from memoryapp.api.episodic import router as episodic_router  # noqa: E402

api.add_router("/memory/working", end_router)
api.add_router("/memory/episodic", episodic_router)

from memoryapp.api.semantic import router as semantic_router  # noqa: E402

api.add_router("/memory/semantic", semantic_router)

from memoryapp.api.jobs import router as jobs_router  # noqa: E402

api.add_router("/memory/jobs", jobs_router)

from memoryapp.api.agents import router as agents_router  # noqa: E402

api.add_router("/memory", agents_router)

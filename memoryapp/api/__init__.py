"""The /v1 API (django-ninja): one NinjaAPI, its auth, its routers.

Every error leaves as ``{"error": ..., "issues"?: [...]}`` with the status DESIGN.md
section 5 gives (memoryapp.http_errors); nothing a client can send produces a 500. A query
parameter a route does not declare, or one given twice, is 400 naming it
(memoryapp.api.params).
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError

from memoryapp.api.auth import ApiKeyAuth
from memoryapp.api.params import query_check
from memoryapp.api.schemas import add_common_responses
from memoryapp.datasets import DatasetNotFound
from memoryapp.errors import (
    AgentInUse,
    AgentNotFound,
    DatasetLocked,
    DuplicateCallId,
    EpisodeNotFound,
    FactNotFound,
    IdempotencyConflict,
    JobNotFound,
    NoMemoryAgent,
    ThreadNotFound,
)
from memoryapp.http_errors import error_response, install_error_handlers
from memoryapp.ratelimit import RateLimited
from memoryapp.validation import JSON_VALUE_SCHEMA, json_value_refs


class MemoryApi(NinjaAPI):
    """NinjaAPI whose OpenAPI document also defines ``JsonValue``, the free-form JSON
    that thread metadata holds (memoryapp.validation.JsonObject refers to it), and lists
    on every operation the errors any route can answer (401, 429, 503...;
    memoryapp.api.schemas.add_common_responses)."""

    def get_openapi_schema(self, *args: Any, **kwargs: Any) -> Any:
        schema = super().get_openapi_schema(*args, **kwargs)
        schema["components"].setdefault("schemas", {})["JsonValue"] = JSON_VALUE_SCHEMA
        for key in ("paths", "components"):
            schema[key] = json_value_refs(schema[key])
        schema["paths"] = add_common_responses(schema["paths"])
        return schema


api = MemoryApi(
    title="Memory service",
    version="1",
    description=(
        "Memory for LLM chat agents. Working memory: threads, messages with server-assigned "
        "sequence numbers, the LLM-ready context window (prepare) and rolling compaction. "
        "Long-term memory: ending a thread's chunk makes an episode and extracts facts about "
        "the entities it names; recall searches episodes, facts and raw messages of a dataset. "
        "Agents: named configurations (system prompt, memory tools, compaction budget) whose "
        "threads keep memory notes. Datasets: export everything stored for one, or delete it. "
        "Every route takes the project's API key as a Bearer token."
    ),
    auth=ApiKeyAuth(),
    urls_namespace="v1",
    docs_url="/docs",
    openapi_url="/openapi.json",
)

# Every route reads only the query parameters it declares, each once (400 otherwise).
api.add_decorator(query_check, mode="view")  # "view": ninja wraps Operation.run

install_error_handlers(
    api,
    [
        (AuthenticationError, 401, "Unauthorized"),
        (ThreadNotFound, 404, "Thread not found"),
        (DatasetNotFound, 404, "Dataset not found"),
        (EpisodeNotFound, 404, "Episode not found"),
        (FactNotFound, 404, "Fact not found"),
        (JobNotFound, 404, "Job not found"),
        (AgentNotFound, 404, "Agent not found"),
        (Http404, 404, "Not found"),
        (
            IdempotencyConflict,
            409,
            "Idempotency-Key already used for a different message on this thread",
        ),
    ],
)


@api.exception_handler(RateLimited)
def _rate_limited(request: HttpRequest, exc: RateLimited) -> HttpResponse:
    response = error_response(api, request, 429, "Too many requests")
    response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(NoMemoryAgent)
def _no_memory_agent(request: HttpRequest, exc: NoMemoryAgent) -> HttpResponse:
    if exc.agent is None:
        detail = "Create the thread with an agent whose memory option is set (PUT /v1/memory/agents/{name})."
    else:
        detail = (
            f"The thread's agent {exc.agent!r} has its memory turned off; set its memory option "
            f"again (PUT /v1/memory/agents/{exc.agent} with \"memory\": {{}}) to give it the tools."
        )
    return error_response(api, request, 409, "Thread has no memory-enabled agent", detail=detail)


@api.exception_handler(AgentInUse)
def _agent_in_use(request: HttpRequest, exc: AgentInUse) -> HttpResponse:
    return error_response(
        api, request, 409, "Agent has threads",
        threads=exc.threads,
        detail="Delete the agent's threads first (DELETE /v1/memory/working/threads/{id}).",
    )


@api.exception_handler(DatasetLocked)
def _dataset_locked(request: HttpRequest, exc: DatasetLocked) -> HttpResponse:
    message = (
        f"dataset cannot change once the thread has long-term memory: its episodes, facts "
        f"and entities were written in dataset {exc.dataset!r}; create a new thread in the "
        "other dataset"
    )
    return error_response(
        api, request, 409, "Thread has long-term memory in its dataset",
        [{"path": ["dataset"], "message": message, "code": "immutable"}],
    )


@api.exception_handler(DuplicateCallId)
def _duplicate_call_id(request: HttpRequest, exc: DuplicateCallId) -> HttpResponse:
    message = f"callId {exc.call_id!r} was already used on this thread; send a new callId"
    return error_response(
        api, request, 409, "callId already used on this thread",
        [{"path": ["callId"], "message": message, "code": "duplicate"}],
    )


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

from memoryapp.api.datasets import router as datasets_router  # noqa: E402

api.add_router("/memory", datasets_router)

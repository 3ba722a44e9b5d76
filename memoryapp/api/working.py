"""/v1/memory/working: threads, messages, prepare, compact, stats (spec 002).

Handlers are thin: parse (ninja + memoryapp.api.schemas), call one domain function in
memoryapp.working or memoryapp.compaction, return its value as memoryapp.serializers
builds it.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import Body, Query, Router, Status

from memoryapp import agents, compaction, datasets, serializers, working
from memoryapp.api.auth import request_project
from memoryapp.api.schemas import (
    ERRORS,
    AppendOut,
    CompactOut,
    ErrorOut,
    MessageIn,
    MessageListOut,
    MessageListQuery,
    NothingToCompactOut,
    PrepareIn,
    PrepareOut,
    StatsOut,
    ThreadIn,
    ThreadListOut,
    ThreadListQuery,
    ThreadOut,
    ThreadPatchIn,
)
from memoryapp.errors import InvalidInput
from memoryapp.models import Project
from memoryapp.results import AppendResult

router = Router(tags=["working memory"])


@router.post("/threads", response={201: ThreadOut, **ERRORS}, summary="Create a thread")
def create_thread(request: HttpRequest, payload: ThreadIn) -> Status[dict[str, Any]]:
    fields: dict[str, Any] = {
        "dataset": payload.dataset,
        "tags": payload.tags,
        "metadata": payload.metadata,
        "auto_compact_threshold": payload.autoCompactThreshold,
    }
    project = request_project(request)
    if payload.agent is None:
        thread = working.thread_create(project=project, **fields)
    else:
        thread = agents.agent_thread_create(project=project, name=payload.agent, **fields)
    return Status(201, serializers.thread_to_dict(thread))


@router.get("/threads", response={200: ThreadListOut, **ERRORS}, summary="List threads")
def list_threads(request: HttpRequest, filters: Query[ThreadListQuery]) -> dict[str, Any]:
    threads, next_cursor = working.thread_list(
        project=request_project(request),
        dataset=filters.dataset,
        tag=filters.tag,
        limit=filters.limit,
        cursor=filters.cursor,
    )
    return {"threads": [serializers.thread_to_dict(t) for t in threads], "nextCursor": next_cursor}


@router.get("/threads/{thread_id}", response={200: ThreadOut, **ERRORS}, summary="Get a thread")
def get_thread(request: HttpRequest, thread_id: str) -> dict[str, Any]:
    # One statement reading the columns the resource shows (no model instance).
    thread = working.thread_view(project=request_project(request), thread_id=thread_id)
    return serializers.thread_to_dict(thread)


@router.patch(
    "/threads/{thread_id}",
    response={200: ThreadOut, 409: ErrorOut, **ERRORS},
    summary="Update a thread",
    description="dataset can change only until the thread has long-term memory (409 after).",
)
def patch_thread(request: HttpRequest, thread_id: str, payload: ThreadPatchIn) -> dict[str, Any]:
    thread = working.thread_get(project=request_project(request), thread_id=thread_id)
    given = payload.model_dump(exclude_unset=True)
    names = {"autoCompactThreshold": "auto_compact_threshold"}
    changes = {names.get(k, k): v for k, v in given.items()}
    thread = working.thread_update(thread=thread, changes=changes)
    return serializers.thread_to_dict(thread)


@router.delete("/threads/{thread_id}", response={204: None, **ERRORS}, summary="Delete a thread")
def delete_thread(request: HttpRequest, thread_id: str) -> Status[None]:
    thread = working.thread_get(project=request_project(request), thread_id=thread_id)
    datasets.thread_forget(thread=thread)
    return Status(204, None)


def idempotency_key(value: str | None) -> str | None:
    """The ``Idempotency-Key`` header's value (None when not sent), stripped; InvalidInput
    unless it is 1 to 255 printable characters, no comma among them.

    A header sent twice reaches the app as one value, the two joined with a comma (by
    memoryapp.wsgipool, any WSGI server or a proxy: RFC 9110 section 5.3), so "a, b" was
    stored as one key that neither retry would match. A comma therefore means "more than
    one key" wherever it comes from, and is refused."""
    if value is None:
        return None
    if "," in value:
        raise InvalidInput(
            [
                {
                    "path": ["Idempotency-Key"],
                    "message": (
                        "Idempotency-Key must be sent once, as one key without commas "
                        "(a header sent twice arrives joined by a comma)"
                    ),
                    "code": "repeated_header",
                }
            ]
        )
    key = value.strip()
    # Printable characters only: a control character (NUL above all) could not be
    # stored on PostgreSQL, and no HTTP client sends one on purpose.
    if not (0 < len(key) <= 255) or not key.isprintable():
        raise InvalidInput(
            [
                {
                    "path": ["Idempotency-Key"],
                    "message": "Idempotency-Key must be 1 to 255 printable characters",
                    "code": "invalid_header",
                }
            ]
        )
    return key


def append_store(
    *, thread_id: str | uuid.UUID, project: Project, payload: MessageIn, key: str | None
) -> AppendResult:
    """POST .../messages, its first half: the validated ``payload`` stored on the thread
    (or the replay of ``key``), as memoryapp.working.message_append does it.

    Raises ThreadNotFound, IdempotencyConflict and InvalidInput (createdAt) only before
    anything is written (message_append's transaction rolled back, or never began);
    memoryapp.fastpath relies on it to hand those requests to Django unchanged.
    """
    tokens = None
    if payload.tokens is not None:
        t = payload.tokens
        t_in, t_out = t.input or 0, t.output or 0
        total = t.total if t.total is not None else t_in + t_out
        tokens = {"input": t_in, "output": t_out, "total": total}
    metadata = None
    if payload.metadata is not None:
        metadata = payload.metadata.model_dump(exclude_none=True) or None
    # The project-scoped thread look-up is message_append's locked read (one query, not two).
    return working.message_append(
        thread=thread_id,
        project=project,
        role=payload.role,
        content=payload.content,
        tokens=tokens,
        model=payload.model,
        latency_ms=payload.latencyMs,
        metadata=metadata,
        idempotency_key=key,
        created_at=payload.createdAt,
    )


def append_body(appended: AppendResult) -> tuple[dict[str, Any], bool]:
    """POST .../messages, its second half: the auto-compaction the stored ``appended``
    tripped (compaction.compact_appended), then the 201 body and whether it replays an
    earlier append (``Idempotent-Replayed: true``); what append_answer and
    memoryapp.fastpath both call."""
    result = compaction.compact_appended(appended)
    return serializers.append_to_dict(result), result.replayed


def append_answer(appended: AppendResult, response: HttpResponse) -> Status[dict[str, Any]]:
    """append_body as the view answers it: a replay is marked on ``response``."""
    body, replayed = append_body(appended)
    if replayed:
        response["Idempotent-Replayed"] = "true"
    return Status(201, body)


@router.post(
    "/threads/{thread_id}/messages",
    response={201: AppendOut, 409: ErrorOut, 413: ErrorOut, **ERRORS},
    summary="Append a message",
)
def append_message(
    request: HttpRequest, thread_id: str, payload: MessageIn, response: HttpResponse
) -> Status[dict[str, Any]]:
    """sequenceNumber is assigned by the server; send ``Idempotency-Key`` to make retries safe."""
    # The same three calls as memoryapp.fastpath makes for the happy path.
    key = idempotency_key(request.headers.get("Idempotency-Key"))
    appended = append_store(thread_id=thread_id, project=request_project(request), payload=payload, key=key)
    return append_answer(appended, response)


@router.get(
    "/threads/{thread_id}/messages",
    response={200: MessageListOut, **ERRORS},
    exclude_unset=True,
    summary="List raw messages",
)
def list_messages(
    request: HttpRequest, thread_id: str, params: Query[MessageListQuery]
) -> dict[str, Any]:
    """Full rows including compacted ones and summaries, paged by sequenceNumber."""
    # The project-scoped thread look-up is message_list's own statement (one in all).
    page = working.message_list(
        thread=thread_id,
        project=request_project(request),
        limit=params.limit,
        before=params.before,
        after=params.after,
        order=params.order,
    )
    return serializers.message_page_to_dict(page)


@router.post(
    "/threads/{thread_id}/prepare",
    response={200: PrepareOut, **ERRORS},
    exclude_unset=True,
    summary="The LLM-ready context window",
)
def prepare(
    request: HttpRequest,
    thread_id: str,
    payload: PrepareIn | None = Body(None),  # noqa: B008
) -> dict[str, Any]:
    """Pure SQL, no model call: [active summary] + the newest un-compacted messages."""
    return prepare_answer(thread_id=thread_id, project=request_project(request), payload=payload)


def prepare_answer(
    *, thread_id: str | uuid.UUID, project: Project, payload: PrepareIn | None
) -> dict[str, Any]:
    """POST .../prepare's 200 body for a validated ``payload`` (None: no body, or
    ``null``); what the view and memoryapp.fastpath both call. Reads only: ThreadNotFound
    changes nothing."""
    # No messageLimit: the default window, which on an agent's thread is the agent's own
    # (working.prepare; spec 004).
    limit = payload.messageLimit if payload is not None and "messageLimit" in payload.model_fields_set else None
    # The project-scoped thread look-up is prepare's own first read (two statements in all).
    window = working.prepare(thread=thread_id, project=project, message_limit=limit)
    return serializers.window_to_dict(window)


@router.post(
    "/threads/{thread_id}/compact",
    response={200: CompactOut | NothingToCompactOut, 502: ErrorOut, **ERRORS},
    summary="Compact every un-compacted message now",
)
def compact(request: HttpRequest, thread_id: str) -> dict[str, Any]:
    """Folds every un-compacted message into the rolling summary; makes a model call."""
    thread = working.thread_get(project=request_project(request), thread_id=thread_id)
    result = compaction.compact(thread_id=thread.pk)
    if result is None:
        return dict(serializers.NOTHING_TO_COMPACT)
    return serializers.compaction_to_dict(result)


@router.get(
    "/threads/{thread_id}/stats", response={200: StatsOut, **ERRORS}, summary="Thread stats"
)
def stats(request: HttpRequest, thread_id: str) -> dict[str, Any]:
    # The project-scoped thread look-up is thread_stats' own statement (one in all).
    stats = working.thread_stats(thread=thread_id, project=request_project(request))
    return serializers.stats_to_dict(stats)

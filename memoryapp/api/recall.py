"""/v1/memory/recall: long-term memory across a dataset's threads (DESIGN.md section 5).

A thin handler over memoryapp.recall.recall; the request and response schemas live here
with the route that uses them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.http import HttpRequest
from ninja import Router, Schema
from pydantic import ConfigDict, Field

from memoryapp import recall as recall_domain
from memoryapp import working
from memoryapp.api.auth import request_project
from memoryapp.api.schemas import ErrorOut
from memoryapp.validation import INTEGRAL, CanonicalUuid, Dataset, Query

router = Router(tags=["recall"])

Layer = Literal["episodes", "facts", "synthesis", "raw"]


RangeSize = Annotated[int, Field(strict=True, ge=0, le=recall_domain.RANGE_MAX)]


class MessageRangeIn(Schema):
    """Neighbours each raw hit carries: ``before`` and ``after`` messages of its thread.
    Left out: the reply that follows a hit that asks a question."""

    model_config = ConfigDict(extra="forbid")

    before: RangeSize = 0
    after: RangeSize = 0


class RecallIn(Schema):
    """POST /v1/memory/recall. Unknown fields are dropped like everywhere in /v1."""

    model_config = ConfigDict(extra="ignore")

    dataset: Dataset
    query: Query
    # Synthesis is a model call: only when asked for.
    include: Annotated[list[Layer], Field(min_length=1, max_length=4)] = [
        "episodes",
        "facts",
        "raw",
    ]
    limit: Annotated[
        int,
        Field(
            strict=True,
            ge=1,
            le=recall_domain.LIMIT_MAX,
            description=(
                "Per list: episodes, facts and raw each hold up to this many items "
                "(entities are those the returned facts name)."
            ),
        ),
        INTEGRAL,
    ] = 10
    threadId: CanonicalUuid | None = None
    messageRange: MessageRangeIn | None = None
    includeInvalidated: Annotated[bool, Field(strict=True)] = False


class NeighbourOut(Schema):
    messageId: str
    sequenceNumber: int
    role: str
    content: str
    createdAt: str


class RangeOut(Schema):
    fromSequence: int
    toSequence: int


class RawMessageOut(NeighbourOut):
    threadId: str
    score: float
    rank: int
    messageRange: RangeOut
    neighbours: list[NeighbourOut]


class RecallOut(Schema):
    episodes: list[dict[str, Any]]
    facts: list[dict[str, Any]]
    entities: list[dict[str, Any]]
    raw: list[RawMessageOut]
    synthesis: str | None
    context: str
    hasContext: bool


@router.post(
    "",
    response={200: RecallOut, 400: ErrorOut, 401: ErrorOut, 404: ErrorOut, 502: ErrorOut},
    summary="Recall long-term memory",
)
def recall(request: HttpRequest, payload: RecallIn) -> dict[str, Any]:
    """Search the dataset's episodes, facts and raw messages (other threads than
    ``threadId``) and optionally synthesise an answer; ``context`` is ready to inject.

    A ``threadId`` that is not one of the key's project's threads answers 404 "Thread
    not found", as on every other route."""
    project = request_project(request)
    if payload.threadId is not None:
        working.thread_get(project=project, thread_id=payload.threadId)
    return recall_domain.recall(
        project=project,
        dataset=payload.dataset,
        query=payload.query,
        include=list(dict.fromkeys(payload.include)),
        limit=payload.limit,
        thread_id=payload.threadId,
        message_range=(
            None
            if payload.messageRange is None
            else (payload.messageRange.before, payload.messageRange.after)
        ),
        include_invalidated=payload.includeInvalidated,
    )

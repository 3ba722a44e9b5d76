"""/v1/memory/semantic: facts and entities (issue 8 item 4; DESIGN.md section 5).

Thin handlers over memoryapp.semantic; request and response schemas live here with the
routes that use them.
"""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from pydantic import Field

from memoryapp import datasets, semantic, serializers
from memoryapp.api.auth import request_project
from memoryapp.api.episodic import Cursor
from memoryapp.api.schemas import ERRORS, _Out
from memoryapp.validation import QUERY_INT, CanonicalUuid, Dataset, QueryBool

router = Router(tags=["semantic memory"])


class FactOut(_Out):
    factId: str
    text: str
    subject: str | None
    attribute: str | None
    value: str | None
    entities: list[str]
    episodeId: str
    threadId: str
    sourceMessageIds: list[str]
    validFrom: str
    invalidatedAt: str | None
    invalidatedBy: str | None


class FactListOut(_Out):
    facts: list[FactOut]
    nextCursor: str | None


class EntityOut(_Out):
    entityId: str
    name: str
    kind: str
    summary: str
    factCount: int


class EntityListOut(_Out):
    entities: list[EntityOut]
    nextCursor: str | None


class FactListQuery(Schema):
    """GET /semantic/facts query. ``entity`` is a name (case-insensitive): facts about it
    or mentioning it. ``threadId``: the facts extracted from that thread (one of the
    project's, 404 otherwise, as for episodes). ``includeInvalidated`` is ``true`` or
    ``false``."""

    dataset: Dataset | None = None
    entity: Dataset | None = None  # a name: the same rules as a dataset
    threadId: CanonicalUuid | None = None
    includeInvalidated: QueryBool = False
    limit: Annotated[int, Field(ge=1, le=100), QUERY_INT] = 50
    cursor: Cursor | None = None


class EntityListQuery(Schema):
    dataset: Dataset | None = None
    limit: Annotated[int, Field(ge=1, le=100), QUERY_INT] = 50
    cursor: Cursor | None = None


@router.get("/facts", response={200: FactListOut, **ERRORS}, summary="List facts")
def list_facts(request: HttpRequest, filters: Query[FactListQuery]) -> dict[str, Any]:
    """Current facts, newest first; superseded ones too with ``includeInvalidated=true``
    (each with ``invalidatedAt`` and the ``invalidatedBy`` fact); ``threadId`` must be one
    of the project's threads (404 otherwise)."""
    facts, next_cursor = semantic.fact_list(
        project=request_project(request),
        dataset=filters.dataset,
        entity=filters.entity,
        thread_id=filters.threadId,
        include_invalidated=filters.includeInvalidated,
        limit=filters.limit,
        cursor=filters.cursor,
    )
    return {"facts": [serializers.fact_to_dict(f) for f in facts], "nextCursor": next_cursor}


@router.delete("/facts/{fact_id}", response={204: None, **ERRORS}, summary="Forget a fact")
def delete_fact(request: HttpRequest, fact_id: str) -> Status[None]:
    """Deletes the fact for good; recall and search stop returning it at once."""
    datasets.fact_forget(project=request_project(request), fact_id=fact_id)
    return Status(204, None)


@router.get("/entities", response={200: EntityListOut, **ERRORS}, summary="List entities")
def list_entities(request: HttpRequest, filters: Query[EntityListQuery]) -> dict[str, Any]:
    """By name; ``factCount`` counts the current facts about or mentioning the entity."""
    entities, next_cursor = semantic.entity_list(
        project=request_project(request),
        dataset=filters.dataset,
        limit=filters.limit,
        cursor=filters.cursor,
    )
    return {
        "entities": [serializers.entity_to_dict(e) for e in entities],
        "nextCursor": next_cursor,
    }

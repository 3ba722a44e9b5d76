"""/v1/memory/episodic and the end() route (issue 8 items 1 and 4; DESIGN.md section 5).

Thin handlers over memoryapp.episodic; request and response schemas live here with the
routes that use them.
"""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from pydantic import Field

from memoryapp import episodic, serializers
from memoryapp.api.auth import request_project
from memoryapp.api.schemas import ERRORS, _Out
from memoryapp.validation import (
    QUERY_INT,
    CanonicalUuid,
    Dataset,
    pydantic_rule,
    storable_pattern,
    storable_problem,
)

router = Router(tags=["episodic memory"])
end_router = Router(tags=["working memory"])

Cursor = Annotated[
    str,
    Field(max_length=500, json_schema_extra=lambda s: s.update(pattern=storable_pattern())),
    pydantic_rule(storable_problem),
]


class EndOut(_Out):
    jobId: str
    threadId: str
    fromSequence: int
    toSequence: int
    status: str


class NothingToExtractOut(_Out):
    ok: bool
    queued: bool
    message: str


class EpisodeOut(_Out):
    episodeId: str
    threadId: str
    dataset: str
    fromSequence: int
    toSequence: int
    title: str
    summary: str
    startedAt: str = Field(description="createdAt of the range's first raw message: when the conversation happened")
    endedAt: str = Field(description="createdAt of the range's last raw message")
    createdAt: str = Field(description="when the episode was written (the job ran)")


class EpisodeListOut(_Out):
    episodes: list[EpisodeOut]
    nextCursor: str | None


class EpisodeListQuery(Schema):
    """GET /episodic/episodes query: filters and the opaque ``nextCursor`` of the last page."""

    dataset: Dataset | None = None
    threadId: CanonicalUuid | None = None
    limit: Annotated[int, Field(ge=1, le=100), QUERY_INT] = 20
    cursor: Cursor | None = None


@end_router.post(
    "/threads/{thread_id}/end",
    response={202: EndOut, 200: NothingToExtractOut, **ERRORS},
    summary="End the current chunk: queue its episode and extraction",
)
def end_thread(request: HttpRequest, thread_id: str) -> Status[dict[str, Any]]:
    """Queues one job that writes an episode for the messages since the last end() and
    extracts facts and entities from them; poll ``GET /v1/memory/jobs/{jobId}``. The
    thread stays writable. Nothing new: 200 ``{"ok": true, "queued": false, ...}``."""
    result = episodic.thread_end(project=request_project(request), thread_id=thread_id)
    if result is None:
        return Status(200, dict(serializers.NOTHING_TO_EXTRACT))
    return Status(202, serializers.end_to_dict(result))


@router.get("/episodes", response={200: EpisodeListOut, **ERRORS}, summary="List episodes")
def list_episodes(request: HttpRequest, filters: Query[EpisodeListQuery]) -> dict[str, Any]:
    """Newest first; ``threadId`` must be one of the project's threads (404 otherwise)."""
    episodes, next_cursor = episodic.episode_list(
        project=request_project(request),
        dataset=filters.dataset,
        thread_id=filters.threadId,
        limit=filters.limit,
        cursor=filters.cursor,
    )
    return {
        "episodes": [serializers.episode_to_dict(e) for e in episodes],
        "nextCursor": next_cursor,
    }


@router.get(
    "/episodes/{episode_id}", response={200: EpisodeOut, **ERRORS}, summary="Get an episode"
)
def get_episode(request: HttpRequest, episode_id: str) -> dict[str, Any]:
    """One episode of the key's project; 404 "Episode not found" for any other id."""
    episode = episodic.episode_get(project=request_project(request), episode_id=episode_id)
    return serializers.episode_to_dict(episode)

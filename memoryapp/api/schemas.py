"""Request and response schemas of the /v1 API (spec 002; DESIGN.md section 5).

Field names are camelCase as in the spec. Unknown request fields are dropped, not
rejected (spec 002 "Field rename"; DESIGN.md section 6 item 7).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from ninja import Schema
from pydantic import ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

Role = Literal["user", "assistant", "system", "tool"]
# strict: 1.5, "12", true and 12.0 are all refused rather than coerced.
NonNegInt = Annotated[int, Field(strict=True, ge=0)]
ShortText = Annotated[str, Field(max_length=200)]


class Issue(Schema):
    """One validation problem: where (``path``), what (``message``), a stable ``code``."""

    path: list[str | int]
    message: str
    code: str


class ErrorOut(Schema):
    """Every error body: ``error`` always; ``issues`` on validation errors."""

    error: str
    issues: list[Issue] | None = None


class _In(Schema):
    model_config = ConfigDict(extra="ignore")


# --- Threads ------------------------------------------------------------------------------


class ThreadIn(_In):
    """POST /v1/memory/working/threads."""

    dataset: Annotated[str, Field(min_length=1, max_length=200)]
    tags: Annotated[list[Annotated[str, Field(min_length=1, max_length=100)]], Field(max_length=50)] = []
    metadata: dict[str, Any] = {}
    autoCompactThreshold: Annotated[int, Field(strict=True, ge=2, le=100_000)] | None = None

    @field_validator("dataset")
    @classmethod
    def _dataset_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise PydanticCustomError("blank", "dataset must not be blank")
        return value


class ThreadPatchIn(_In):
    """PATCH /v1/memory/working/threads/{threadId}: any subset of the create fields."""

    dataset: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    tags: Annotated[list[Annotated[str, Field(min_length=1, max_length=100)]], Field(max_length=50)] | None = None
    metadata: dict[str, Any] | None = None
    autoCompactThreshold: Annotated[int, Field(strict=True, ge=2, le=100_000)] | None = None


class CompactionStateOut(Schema):
    count: int
    activeSummaryId: str | None
    lastCompactedAt: str | None
    lastError: str | None
    lastErrorAt: str | None


class ThreadOut(Schema):
    threadId: str
    dataset: str
    tags: list[str]
    metadata: dict[str, Any]
    autoCompactThreshold: int | None
    createdAt: str
    lastActivityAt: str
    messageCount: int
    compaction: CompactionStateOut


class ThreadListOut(Schema):
    threads: list[ThreadOut]
    nextCursor: str | None


# --- Messages -----------------------------------------------------------------------------


class TokensIn(_In):
    """Optional token telemetry; ``total`` defaults to input + output."""

    input: NonNegInt = 0
    output: NonNegInt = 0
    total: NonNegInt | None = None


class MessageMetadataIn(_In):
    """Only stopReason and agentName are kept; other keys are dropped (spec 002)."""

    stopReason: ShortText | None = None
    agentName: ShortText | None = None


class MessageIn(_In):
    """POST .../threads/{threadId}/messages (spec 002)."""

    role: Role
    content: str
    tokens: TokensIn | None = None
    model: ShortText | None = None
    latencyMs: NonNegInt | None = None
    metadata: MessageMetadataIn | None = None

    @field_validator("content")
    @classmethod
    def _content_rules(cls, value: str) -> str:
        # DESIGN.md section 6 item 6.
        if "\x00" in value:
            raise PydanticCustomError("nul_character", "content must not contain NUL characters")
        if not value.strip():
            raise PydanticCustomError("blank", "content must be non-empty")
        limit = int(settings.MEMORY_MAX_CONTENT_BYTES)
        size = len(value.encode("utf-8", errors="surrogatepass"))
        if size > limit:
            raise PydanticCustomError(
                "content_too_large",
                "content is {size} bytes; the limit is {limit} bytes (UTF-8)",
                {"size": size, "limit": limit},
            )
        return value


class AppendOut(Schema):
    messageId: str
    threadId: str
    sequenceNumber: int
    role: str
    createdAt: str
    compacted: bool


class TokensOut(Schema):
    input: int
    output: int
    total: int


class SummaryRangeOut(Schema):
    fromSequence: int | None
    toSequence: int | None


class MessageOut(Schema):
    messageId: str
    threadId: str
    role: str
    content: str
    sequenceNumber: int
    tokens: TokensOut | None
    model: str | None
    latencyMs: int | None
    metadata: dict[str, Any] | None
    compactedAt: str | None
    createdAt: str
    summary: SummaryRangeOut | None = None


class MessageListQuery(Schema):
    """GET .../messages query (spec 002; ``after`` from DESIGN.md section 6 item 8)."""

    limit: Annotated[int, Field(ge=1, le=100)] = 20
    before: Annotated[int, Field(ge=1)] | None = None
    after: Annotated[int, Field(ge=0)] | None = None
    order: Literal["asc", "desc"] = "asc"


class MessageListOut(Schema):
    messages: list[MessageOut]
    total: int
    hasMore: bool


class ThreadListQuery(Schema):
    dataset: str | None = None
    tag: str | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    cursor: str | None = None


# --- prepare, compact, stats ----------------------------------------------------------------


class PrepareIn(_In):
    """POST .../prepare; ``{}`` (or no body) is valid."""

    messageLimit: Annotated[int, Field(strict=True, ge=1, le=100)] = 20


class ContextMessageOut(Schema):
    role: str
    content: str


class PrepareOut(Schema):
    threadId: str
    dataset: str
    messages: list[ContextMessageOut]
    messageCount: int
    truncated: bool
    compacted: bool
    warning: str | None = None


class CompactOut(Schema):
    threadId: str
    summaryMessageId: str
    compactedCount: int
    fromSequence: int
    toSequence: int


class NothingToCompactOut(Schema):
    ok: bool
    compacted: bool
    message: str


class TokenUsageOut(Schema):
    totalInput: int
    totalOutput: int
    totalTokens: int
    averagePerMessage: int


class DurationOut(Schema):
    ms: int
    seconds: int


class StatsOut(Schema):
    threadId: str
    messageCount: int
    tokenUsage: TokenUsageOut | None
    sessionDuration: DurationOut | None
    createdAt: str
    lastActivityAt: str
    compaction: CompactionStateOut

"""Request and response schemas of the /v1 API (spec 002; DESIGN.md section 5).

Field names are camelCase as in the spec. Unknown request fields are dropped, not
rejected (spec 002 "Field rename"; DESIGN.md section 6 item 7).
"""

from __future__ import annotations

import json
import math
import unicodedata
from typing import Annotated, Any, Literal

from django.conf import settings
from ninja import Schema
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

Role = Literal["user", "assistant", "system", "tool"]

# The largest value the integer columns (tokens, latency) hold on every database:
# PostgreSQL's ``integer``. Anything larger would fail in the database, not here.
INT32_MAX = 2**31 - 1
# Nesting depth allowed in free-form JSON (thread metadata); deeper documents would come
# close to Python's recursion limit when the database layer serialises them.
JSON_MAX_DEPTH = 32
# Thread metadata rides along in every thread resource and list page; keep it small.
JSON_MAX_BYTES = 16 * 1024


def clean_text(value: str) -> str:
    """Return ``value`` if every database can store it as given, else raise a pydantic error.

    Refuses NUL characters (PostgreSQL text and jsonb cannot hold them; DESIGN.md section 6
    item 6) with code ``nul_character`` and unpaired surrogates (a JSON ``"\\ud800"``
    escape decodes to one; it has no UTF-8 form) with code ``invalid_unicode``.
    """
    if "\x00" in value:
        raise PydanticCustomError("nul_character", "text must not contain NUL characters")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise PydanticCustomError(
                "invalid_unicode", "text must not contain unpaired surrogates"
            ) from None
    return value


def clean_json(value: Any) -> Any:
    """Check free-form JSON (thread metadata) with clean_text on every key and string.

    Also refuses NaN and Infinity (``non_finite_number``: JSON columns reject them) and
    nesting deeper than JSON_MAX_DEPTH (``too_deep``). Walks iteratively, so a deep
    document cannot exhaust the stack here.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            clean_text(item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise PydanticCustomError(
                    "non_finite_number", "numbers must be finite (no NaN or Infinity)"
                )
        elif isinstance(item, dict | list):
            if depth >= JSON_MAX_DEPTH:
                raise PydanticCustomError(
                    "too_deep", "JSON is nested more than {limit} levels", {"limit": JSON_MAX_DEPTH}
                )
            if isinstance(item, dict):
                for key, child in item.items():
                    clean_text(key)
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
    return value


def is_blank(value: str) -> bool:
    """True when ``value`` has nothing visible: only whitespace and invisible format
    characters (zero-width space, joiners, BOM, direction marks: Unicode category Cf)."""
    return all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in value)


def _not_blank(value: str) -> str:
    if is_blank(value):
        raise PydanticCustomError("blank", "must not be blank")
    return value


# Length constraints sit on the str itself so errors keep pydantic's string_too_long codes.
Text = Annotated[str, AfterValidator(clean_text)]
ShortText = Annotated[str, Field(max_length=200), AfterValidator(clean_text)]
Dataset = Annotated[
    str, Field(min_length=1, max_length=200), AfterValidator(clean_text), AfterValidator(_not_blank)
]
TagList = Annotated[
    list[
        Annotated[
            str,
            Field(min_length=1, max_length=100),
            AfterValidator(clean_text),
            AfterValidator(_not_blank),
        ]
    ],
    Field(max_length=50),
]
def _json_size(value: dict[str, Any]) -> dict[str, Any]:
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if size > JSON_MAX_BYTES:
        raise PydanticCustomError(
            "too_large",
            "metadata is {size} bytes as JSON; the limit is {limit}",
            {"size": size, "limit": JSON_MAX_BYTES},
        )
    return value


JsonObject = Annotated[dict[str, Any], AfterValidator(clean_json), AfterValidator(_json_size)]
# strict: 1.5, "12", true and 12.0 are all refused rather than coerced.
NonNegInt = Annotated[int, Field(strict=True, ge=0, le=INT32_MAX)]


class _Out(BaseModel):
    """Base of response schemas: plain pydantic, since responses are built from dicts.

    ninja's Schema would wrap every nested object in its attribute getter before
    validating it; that was a sixth of the time of a 20-message list.
    """


class _In(BaseModel):
    # A plain pydantic model, not ninja's Schema: Schema reads attributes off whatever it
    # is given, so a list or a string in place of an object would validate as all
    # defaults (``"tokens": [1]`` became zero tokens) instead of being refused.
    model_config = ConfigDict(extra="ignore")


class Issue(_Out):
    """One validation problem: where (``path``), what (``message``), a stable ``code``."""

    path: list[str | int]
    message: str
    code: str


class ErrorOut(_Out):
    """Every error body: ``error`` always; ``issues`` on validation errors."""

    error: str
    issues: list[Issue] | None = None


# --- Threads ------------------------------------------------------------------------------


class ThreadIn(_In):
    """POST /v1/memory/working/threads."""

    dataset: Dataset
    tags: TagList = []
    metadata: JsonObject = {}
    autoCompactThreshold: Annotated[int, Field(strict=True, ge=2, le=100_000)] | None = None


class ThreadPatchIn(_In):
    """PATCH /v1/memory/working/threads/{threadId}: any subset of the create fields."""

    dataset: Dataset | None = None
    tags: TagList | None = None
    metadata: JsonObject | None = None
    autoCompactThreshold: Annotated[int, Field(strict=True, ge=2, le=100_000)] | None = None


class CompactionStateOut(_Out):
    count: int
    activeSummaryId: str | None
    lastCompactedAt: str | None
    lastError: str | None
    lastErrorAt: str | None


class ThreadOut(_Out):
    threadId: str
    dataset: str
    tags: list[str]
    metadata: dict[str, Any]
    autoCompactThreshold: int | None
    createdAt: str
    lastActivityAt: str
    # Every row, summaries and folded rows included; the same count as GET messages'
    # ``total`` (prepare's and stats' messageCount mean what spec 002 says).
    totalMessages: int
    compaction: CompactionStateOut


class ThreadListOut(_Out):
    threads: list[ThreadOut]
    nextCursor: str | None


# --- Messages -----------------------------------------------------------------------------


class TokensIn(_In):
    """Optional token telemetry; ``total`` defaults to input + output.

    An empty object is refused (``{}`` would count as a message that reported zero
    tokens), so is ``input + output`` above INT32_MAX (the total stored must fit the
    column, as every field does), and so is a ``total`` below ``input + output``: providers count total as at
    least prompt plus completion (Gemini adds thinking and tool-use tokens on top).
    """

    input: NonNegInt | None = None
    output: NonNegInt | None = None
    total: NonNegInt | None = None

    @model_validator(mode="after")
    def _consistent(self) -> TokensIn:
        if self.input is None and self.output is None and self.total is None:
            raise PydanticCustomError(
                "empty_tokens", "tokens needs at least one of input, output, total"
            )
        parts = (self.input or 0) + (self.output or 0)
        if parts > INT32_MAX:
            # The stored total (input + output when not sent) must fit the same column.
            raise PydanticCustomError(
                "tokens_too_large",
                "tokens.input + tokens.output ({parts}) is more than {limit}",
                {"parts": parts, "limit": INT32_MAX},
            )
        if self.total is not None and self.total < parts:
            raise PydanticCustomError(
                "inconsistent_tokens",
                "tokens.total ({total}) is less than input + output ({parts})",
                {"total": self.total, "parts": parts},
            )
        return self


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
        # DESIGN.md section 6 item 6: non-empty after trimming, no NUL, at most the limit
        # in UTF-8 bytes. Size is checked last so a huge blank body still says "blank".
        if "\x00" in value:
            raise PydanticCustomError("nul_character", "content must not contain NUL characters")
        if value.isascii():
            size = len(value)
        else:
            try:
                size = len(value.encode("utf-8"))
            except UnicodeEncodeError:
                raise PydanticCustomError(
                    "invalid_unicode", "content must not contain unpaired surrogates"
                ) from None
        if is_blank(value):
            raise PydanticCustomError("blank", "content must be non-empty")
        limit = int(settings.MEMORY_MAX_CONTENT_BYTES)
        if size > limit:
            raise PydanticCustomError(
                "content_too_large",
                "content is {size} bytes; the limit is {limit} bytes (UTF-8)",
                {"size": size, "limit": limit},
            )
        return value


class AppendOut(_Out):
    messageId: str
    threadId: str
    sequenceNumber: int
    role: str
    createdAt: str
    compacted: bool


class TokensOut(_Out):
    input: int
    output: int
    total: int


class SummaryRangeOut(_Out):
    fromSequence: int | None
    toSequence: int | None


class MessageOut(_Out):
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


class MessageListOut(_Out):
    messages: list[MessageOut]
    total: int
    hasMore: bool


class ThreadListQuery(Schema):
    """GET /working/threads query: filters and the opaque ``nextCursor`` of the last page."""

    dataset: Text | None = None
    tag: Text | None = None
    limit: Annotated[int, Field(ge=1, le=100)] = 20
    cursor: Annotated[str, Field(max_length=500), AfterValidator(clean_text)] | None = None


# --- prepare, compact, stats ----------------------------------------------------------------


class PrepareIn(_In):
    """POST .../prepare; ``{}`` (or no body) is valid."""

    messageLimit: Annotated[int, Field(strict=True, ge=1, le=100)] = 20


class ContextMessageOut(_Out):
    role: str
    content: str


class PrepareOut(_Out):
    threadId: str
    dataset: str
    messages: list[ContextMessageOut]
    messageCount: int
    truncated: bool
    compacted: bool
    warning: str | None = None


class CompactOut(_Out):
    threadId: str
    summaryMessageId: str
    compactedCount: int
    fromSequence: int
    toSequence: int


class NothingToCompactOut(_Out):
    ok: bool
    compacted: bool
    message: str


class TokenUsageOut(_Out):
    totalInput: int
    totalOutput: int
    totalTokens: int
    averagePerMessage: int


class DurationOut(_Out):
    ms: int
    seconds: int


class StatsOut(_Out):
    threadId: str
    messageCount: int
    tokenUsage: TokenUsageOut | None
    sessionDuration: DurationOut | None
    createdAt: str
    lastActivityAt: str
    compaction: CompactionStateOut

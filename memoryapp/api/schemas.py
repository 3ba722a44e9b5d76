"""Request and response schemas of the /v1 API (spec 002; DESIGN.md section 5).

Field names are camelCase as in the spec. Unknown request fields are dropped, not
rejected (spec 002 "Field rename"; DESIGN.md section 6 item 7).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from memoryapp.validation import (
    INT32_MAX,
    INT64_MAX,
    PAGE_LIMIT_MAX,
    QUERY_INT,
    Content,
    Cursor,
    Dataset,
    JsonObject,
    MessageLimit,
    Name,
    NonNegInt,
    PastTime,
    ShortText,
    Tag,
    TagList,
    Threshold,
)

Role = Literal["user", "assistant", "system", "tool"]


def _not_null(value: Any) -> Any:
    # PATCH: a field may be left out, but dataset, tags and metadata cannot be cleared.
    if value is None:
        raise PydanticCustomError("null", "cannot be null")
    return value


def _no_null_defaults(schema: dict[str, Any]) -> None:
    # The None defaults of ThreadPatchIn only mean "left out"; null itself is refused.
    for name in ("dataset", "tags", "metadata"):
        schema["properties"][name].pop("default", None)


def _immutable(value: Any) -> Any:
    # PATCH: a thread's agent is fixed at creation (its history, checkpoint and notes are
    # the agent's); sending it at all is refused rather than dropped like an unknown field.
    raise PydanticCustomError("immutable", "agent cannot be changed; create a new thread with that agent")


# Typed Any so that a non-optional field can default to it; never validated (see below).
_LEFT_OUT: Any = None
PatchDataset = Annotated[Dataset, BeforeValidator(_not_null)]
PatchTagList = Annotated[TagList, BeforeValidator(_not_null)]
PatchJsonObject = Annotated[JsonObject, BeforeValidator(_not_null)]


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


#: The error answers every authenticated route documents (bad input, no key, not found).
ERRORS: dict[int, Any] = {400: ErrorOut, 401: ErrorOut, 404: ErrorOut}

_ERROR_REF = {"$ref": "#/components/schemas/ErrorOut"}
_RETRY_AFTER = {
    "Retry-After": {"description": "seconds to wait before retrying", "schema": {"type": "integer", "minimum": 1}}
}
#: What every /v1 operation can answer whatever the route (docs/api.md, "Errors"):
#: status -> (description, with a Retry-After header).
ANY_ROUTE_ERRORS: dict[str, tuple[str, bool]] = {
    "400": ("Validation error: a bad path or query parameter (or body), named in issues", False),
    "401": ("Unauthorized: no key, a wrong key, a revoked key", False),
    "429": ("Too many requests: the key spent its allowance (MEMORY_API_RATE_LIMIT); wait Retry-After seconds", True),
    "503": ("Database unavailable: the connection was lost mid-request and the request rolled back; retry", True),
}
#: What every write (POST, PUT, PATCH, DELETE) can answer besides: its body, optional or
#: not taken at all, is read as JSON when one is sent (memoryapp.api.params).
WRITE_ERRORS: dict[str, tuple[str, bool]] = {
    "413": ("Payload too large: content over its limit, or a body too large to read", False),
    "415": ("Unsupported media type: a body sent with a Content-Type other than application/json", False),
}


def add_common_responses(paths: dict[str, Any]) -> dict[str, Any]:
    """``paths`` (an OpenAPI document's) with ANY_ROUTE_ERRORS on every operation and
    WRITE_ERRORS on every write, each with the ErrorOut body (and Retry-After where it is
    sent); a status an operation already documents is left as it is."""
    for operations in paths.values():
        for method, operation in operations.items():
            common = dict(ANY_ROUTE_ERRORS)
            if method in ("post", "put", "patch", "delete"):
                common.update(WRITE_ERRORS)
            # ninja's keys are ints; JSON makes every key a string anyway.
            responses = {str(status): answer for status, answer in operation.get("responses", {}).items()}
            for status, (description, retry_after) in common.items():
                if status in responses:
                    continue
                response: dict[str, Any] = {
                    "description": description,
                    "content": {"application/json": {"schema": dict(_ERROR_REF)}},
                }
                if retry_after:
                    response["headers"] = dict(_RETRY_AFTER)
                responses[status] = response
            operation["responses"] = dict(sorted(responses.items()))
    return paths


# --- Threads ------------------------------------------------------------------------------


class ThreadIn(_In):
    """POST /v1/memory/working/threads."""

    dataset: Dataset
    tags: TagList = []
    metadata: JsonObject = {}
    autoCompactThreshold: Threshold | None = None
    # The name of one of the project's agents (spec 004); its thread compacts by its budget.
    agent: Name | None = None


class ThreadPatchIn(_In):
    """PATCH /v1/memory/working/threads/{threadId}: any subset of the create fields but
    ``agent``, which is fixed at creation (sent at all, even null: 400 code ``immutable``).

    dataset, tags and metadata may be left out but not set to null (code ``null``);
    a null autoCompactThreshold turns automatic compaction off. The defaults below are
    never validated: a field left out stays unset (``model_dump(exclude_unset=True)``).
    """

    model_config = ConfigDict(extra="ignore", json_schema_extra=_no_null_defaults)

    dataset: PatchDataset = _LEFT_OUT
    tags: PatchTagList = _LEFT_OUT
    metadata: PatchJsonObject = _LEFT_OUT
    autoCompactThreshold: Threshold | None = None
    # Known but not changeable: 400 naming it (left out of the OpenAPI schema).
    agent: SkipJsonSchema[Annotated[Any, BeforeValidator(_immutable)]] = _LEFT_OUT


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
    agent: str | None = None
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


def _one_count_given(schema: dict[str, Any]) -> None:
    # At least one count that is not null; "total >= input + output" has no JSON-schema
    # form and is stated in the description only.
    schema["anyOf"] = [
        {"required": [name], "properties": {name: {"type": "integer"}}}
        for name in ("input", "output", "total")
    ]


class TokensIn(_In):
    """Optional token telemetry; ``total`` defaults to input + output.

    An empty object is refused (``{}`` would count as a message that reported zero
    tokens), so is ``input + output`` above INT32_MAX (the total stored must fit the
    column, as every field does), and so is a ``total`` below ``input + output`` (the issue
    names ``tokens.total``). A ``total`` above it is kept as sent: spec 002 asks only for
    non-negative integers, and providers count total as at least prompt plus completion
    (Gemini adds thinking and tool-use tokens on top), so equality would refuse real
    telemetry (docs/api.md, "Limits").
    """

    model_config = ConfigDict(extra="ignore", json_schema_extra=_one_count_given)

    input: NonNegInt | None = None
    output: NonNegInt | None = None
    total: NonNegInt | None = None

    @field_validator("total")
    @classmethod
    def _not_below_parts(cls, total: int | None, info: ValidationInfo) -> int | None:
        # input and output are validated first (field order); a part that failed is absent.
        parts = (info.data.get("input") or 0) + (info.data.get("output") or 0)
        if total is not None and total < parts <= INT32_MAX:
            raise PydanticCustomError(
                "inconsistent_tokens",
                "tokens.total ({total}) is less than input + output ({parts})",
                {"total": total, "parts": parts},
            )
        return total

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
        return self


class MessageMetadataIn(_In):
    """Only stopReason and agentName are kept; other keys are dropped (spec 002)."""

    stopReason: ShortText | None = None
    agentName: ShortText | None = None


class MessageIn(_In):
    """POST .../threads/{threadId}/messages (spec 002)."""

    role: Role
    content: Content
    tokens: TokensIn | None = None
    model: ShortText | None = None
    latencyMs: NonNegInt | None = None
    metadata: MessageMetadataIn | None = None
    createdAt: PastTime | None = Field(
        default=None,
        description=(
            "For imports only: when the message was really written (RFC 3339 with a UTC "
            "offset, 1970 to now; up to 5 minutes ahead of the server's clock is taken "
            "as clock skew and stored as the server's clock). Not before the createdAt of "
            "the thread's last non-summary message. Left out: the server's clock at the append."
        ),
    )


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
    """GET .../messages query (spec 002; ``after`` from DESIGN.md section 6 item 8).

    ``before`` and ``after`` are sequence numbers, so at most INT64_MAX (a larger one is
    400 naming it, not read as "no bound")."""

    limit: Annotated[int, Field(ge=1, le=PAGE_LIMIT_MAX), QUERY_INT] = 20
    before: Annotated[Annotated[int, Field(ge=1, le=INT64_MAX)] | None, QUERY_INT] = None
    after: Annotated[Annotated[int, Field(ge=0, le=INT64_MAX)] | None, QUERY_INT] = None
    order: Literal["asc", "desc"] = "asc"


class MessageListOut(_Out):
    messages: list[MessageOut]
    total: int
    hasMore: bool


class ThreadListQuery(Schema):
    """GET /working/threads query: filters and the opaque ``nextCursor`` of the last page.

    ``dataset`` and ``tag`` follow the rules of the names they filter on (a blank or
    empty value, which no thread can have, is 400 naming the parameter, as for the
    episode and fact lists)."""

    dataset: Dataset | None = None
    tag: Tag | None = None
    limit: Annotated[int, Field(ge=1, le=PAGE_LIMIT_MAX), QUERY_INT] = 20
    cursor: Cursor | None = None


# --- prepare, compact, stats ----------------------------------------------------------------


class PrepareIn(_In):
    """POST .../prepare; ``{}`` (or no body) is valid. Without messageLimit an ordinary
    thread's window holds its newest 20 messages, an agent's thread's its whole context
    (checkpoint and every message since, at most 200; spec 004)."""

    messageLimit: MessageLimit = 20


class ContextMessageOut(_Out):
    role: str
    content: str
    # On an agent's thread: a recorded memory tool call and its result (spec 004).
    toolCall: dict[str, Any] | None = None
    toolResult: dict[str, Any] | None = None


class PrepareOut(_Out):
    threadId: str
    dataset: str
    messages: list[ContextMessageOut]
    messageCount: int = Field(
        description=(
            "Un-compacted, non-summary messages in the thread (spec 002), not the length of "
            "messages: 30 of them with messageLimit 5 give 5 messages and messageCount 30."
        )
    )
    truncated: bool = Field(description="messageCount > messageLimit.")
    compacted: bool = Field(description="A compact summary is present, first in messages.")
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


# --- Jobs ---------------------------------------------------------------------------------


class JobOut(_Out):
    """A background job (GET /v1/memory/jobs/{jobId}); ``error`` is null unless it failed,
    ``result`` is the kind's result once it succeeded."""

    jobId: str
    kind: str
    status: Literal["queued", "running", "succeeded", "failed"]
    error: str | None
    result: dict[str, Any] | None
    threadId: str | None
    attempts: int
    createdAt: str
    startedAt: str | None
    finishedAt: str | None

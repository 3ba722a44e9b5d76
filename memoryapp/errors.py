"""Errors the domain raises, and the one function that builds every JSON error body.

memoryapp.api maps each error to one HTTP status; every JSON error anywhere (/v1, the
chat route, the middleware, the ASGI body guard) is built by ``error_body``.
"""

from __future__ import annotations

import sys
from typing import Any

from django.http import JsonResponse


def error_body(error: str, issues: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    """``{"error": error, "issues"?: issues, **extra}``: the shape of every error body
    (DESIGN.md section 5). ``issues`` items are ``{"path", "message", "code"}``."""
    body: dict[str, Any] = {"error": error}
    if issues is not None:
        body["issues"] = issues
    body.update(extra)
    return body


def error_json(
    status: int, error: str, issues: list[dict[str, Any]] | None = None, **extra: Any
) -> JsonResponse:
    """error_body as a JsonResponse with ``status`` (for code outside django-ninja)."""
    return JsonResponse(error_body(error, issues, **extra), status=status)


BODY_TOO_LARGE = [{"path": [], "message": "Request body is too large", "code": "body_too_large"}]
INVALID_JSON = [{"path": [], "message": "Request body is not valid JSON", "code": "invalid_json"}]
# Valid JSON that Python will not read: an integer literal past sys.get_int_max_str_digits()
# (4300 by default; CPython's guard against quadratic-time conversion).
NUMBER_TOO_LONG = [
    {
        "path": [],
        "message": "A number in the request body has more than "
        f"{sys.get_int_max_str_digits()} digits",
        "code": "number_too_long",
    }
]


# Levels of arrays and objects a request body may nest (the body itself is level 1): far
# above what any field takes (thread metadata: 32 levels), well below where Python's JSON
# parser gives up (its recursion limit, ~1000 less the stack in use).
BODY_MAX_DEPTH = 100
TOO_DEEP = [
    {
        "path": [],
        "message": "Request body is nested too deeply: at most "
        f"{BODY_MAX_DEPTH} levels of arrays and objects",
        "code": "too_deep",
    }
]


class MemoryError_(Exception):
    """Base of the domain's errors."""


class ThreadNotFound(MemoryError_):
    """The thread does not exist or belongs to another project (never say which): 404."""


class EpisodeNotFound(MemoryError_):
    """The episode does not exist or belongs to another project: 404."""


class FactNotFound(MemoryError_):
    """The fact does not exist or belongs to another project: 404."""


class InvalidInput(MemoryError_):
    """Input the domain refuses; ``issues`` is a list of ``{"path", "message", "code"}``: 400."""

    def __init__(self, issues: list[dict[str, Any]]) -> None:
        super().__init__("; ".join(str(i.get("message")) for i in issues))
        self.issues = issues


class IdempotencyConflict(MemoryError_):
    """An Idempotency-Key was reused for a different message on the same thread: 409."""


class ModelCallFailed(MemoryError_):
    """A model call that the request needed failed after retries: 502.

    ``kind`` is one of ``timeout``, ``rate_limited``, ``unavailable``, ``bad_response``.
    """

    def __init__(
        self, message: str, *, kind: str = "unavailable", details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        # More fields for the 502 body (the chat route's userMessage and turnId).
        self.details = details or {}


class JobNotFound(MemoryError_):
    """No such background job in this project (also another project's: never say which): 404."""


class JobNotRetryable(MemoryError_):
    """Only a failed job can be retried; ``status`` is the job's current one: 409."""

    def __init__(self, status: str) -> None:
        super().__init__(f"Only a failed job can be retried; this one is {status}")
        self.status = status


class AgentNotFound(MemoryError_):
    """No agent of that name in the project: 404."""


class AgentInUse(MemoryError_):
    """DELETE of an agent that threads still talk with (``threads``: how many): 409.

    A thread's notes, checkpoint and turns belong to its agent; deleting the agent under
    them would leave threads no one can run, so the threads go first (docs/api.md)."""

    def __init__(self, threads: int) -> None:
        super().__init__(f"{threads} thread(s) still use this agent")
        self.threads = threads


class NoMemoryAgent(MemoryError_):
    """The thread has no agent with memory, so it has no memory tools: 409. ``agent`` is
    the name of the thread's agent when it has one whose memory is off (None: no agent),
    so the answer can say which of the two fixes applies."""

    def __init__(self, agent: str | None = None) -> None:
        super().__init__("the thread has no memory-enabled agent")
        self.agent = agent


class DatasetLocked(MemoryError_):
    """PATCH of a thread's ``dataset`` once the thread has long-term memory (an episode,
    with its facts and entity links, written in the old dataset): 409. Moving it would
    split the thread's memory between two user scopes (docs/decisions.md)."""

    def __init__(self, dataset: str) -> None:
        super().__init__(f"the thread's long-term memory is in dataset {dataset!r}")
        self.dataset = dataset


class DuplicateCallId(MemoryError_):
    """A tool call's ``callId`` was already used on the thread (POST .../tools): 409.

    Clients pair each call with its result by id, so a thread never holds two calls with
    one id; a repeat is refused, not replayed (docs/api.md)."""

    def __init__(self, call_id: str) -> None:
        super().__init__(f"callId {call_id!r} was already used on this thread")
        self.call_id = call_id

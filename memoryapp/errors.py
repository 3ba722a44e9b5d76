"""Errors the domain raises; memoryapp.api maps each to one HTTP status and body."""

from __future__ import annotations

from typing import Any


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

    def __init__(self, message: str, *, kind: str = "unavailable") -> None:
        super().__init__(message)
        self.kind = kind

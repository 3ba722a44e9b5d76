"""Opaque keyset cursors for the list endpoints of episodes, facts and entities.

A cursor is the URL-safe base64 of a JSON list of strings: the sort key of the last row of
the previous page. Clients treat it as opaque (``nextCursor``); a cursor that cannot be
decoded is a 400 naming the ``cursor`` field.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from datetime import UTC, datetime
from typing import TypeVar

from django.db.models import Model, Q, QuerySet

from memoryapp.errors import InvalidInput
from memoryapp.validation import path_id

M = TypeVar("M", bound=Model)


def cursor_encode(values: list[str]) -> str:
    """The opaque cursor for ``values`` (the last row's sort key, as strings)."""
    raw = json.dumps(values, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _malformed() -> InvalidInput:
    return InvalidInput(
        [{"path": ["cursor"], "message": "Malformed cursor", "code": "invalid_cursor"}]
    )


def cursor_decode(cursor: str, *, size: int) -> list[str]:
    """The ``size`` strings a cursor carries. Raises InvalidInput (path ``cursor``) for
    anything cursor_encode did not make."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode()).decode())
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise _malformed() from exc
    if not isinstance(values, list) or len(values) != size:
        raise _malformed()
    if not all(isinstance(v, str) and "\x00" not in v for v in values):
        raise _malformed()
    return values


def cursor_time(value: str) -> datetime:
    """A cursor's ISO-8601 time, in UTC. Raises InvalidInput (path ``cursor``)."""
    try:
        moment = datetime.fromisoformat(value)
        if moment.tzinfo is None:
            raise ValueError("no zone")
        return moment.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise _malformed() from exc


def cursor_uuid(value: str) -> uuid.UUID:
    """A cursor's row id. Raises InvalidInput (path ``cursor``)."""
    return path_id(value, _malformed)


def keyset_page(
    qs: QuerySet[M], *, time_field: str, cursor: str | None, limit: int
) -> tuple[list[M], str | None]:
    """One page of ``qs`` newest first by ``time_field`` then id, and the cursor of the next
    page (None on the last). Raises InvalidInput (path ``cursor``) for a malformed cursor."""
    if cursor:
        moment, last_id = cursor_decode(cursor, size=2)
        when, pk = cursor_time(moment), cursor_uuid(last_id)
        qs = qs.filter(Q(**{f"{time_field}__lt": when}) | Q(**{time_field: when, "id__lt": pk}))
    rows = list(qs.order_by(f"-{time_field}", "-id")[: limit + 1])
    next_cursor = None
    if len(rows) > limit:
        last = rows[limit - 1]
        next_cursor = cursor_encode([getattr(last, time_field).isoformat(), str(last.pk)])
    return rows[:limit], next_cursor

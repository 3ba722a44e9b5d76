"""The one timestamp format of the API: UTC ISO-8601 with milliseconds and ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_ms(value: datetime | None) -> str | None:
    """Return ``value`` as ``2026-08-16T09:14:02.114Z`` (truncated to ms), or None.

    DESIGN.md section 6 item 10. Naive datetimes are taken to be UTC.
    """
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"

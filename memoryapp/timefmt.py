"""The one timestamp format of the API: UTC ISO-8601 with milliseconds and ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_ms(value: datetime | None) -> str | None:
    """Return ``value`` as ``2026-08-16T09:14:02.114Z`` (truncated to ms), or None.

    DESIGN.md section 6 item 10. Naive datetimes are taken to be UTC. Written by
    ``isoformat`` (every response carries several: strftime cost twice as much; issue
    11), except before the year 1000, which strftime writes without zeros in front
    ("999-01-01T...") and isoformat with them: those keep strftime's form.
    """
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    elif value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    if value.year < 1000:
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    return value.isoformat(timespec="milliseconds")[:-6] + "Z"

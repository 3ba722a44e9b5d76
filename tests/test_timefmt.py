"""memoryapp.timefmt.iso_ms: the API's one timestamp format (DESIGN.md section 6 item 10)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from memoryapp.timefmt import iso_ms


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (datetime(2026, 8, 16, 9, 14, 2, 114999, tzinfo=UTC), "2026-08-16T09:14:02.114Z"),
        (datetime(2026, 8, 16, 9, 14, 2, tzinfo=UTC), "2026-08-16T09:14:02.000Z"),
        (datetime(2026, 8, 16, 9, 14, 2, 999), "2026-08-16T09:14:02.000Z"),  # naive: UTC
        (datetime(2026, 8, 16, 11, 14, 2, 5000, tzinfo=timezone(timedelta(hours=2))), "2026-08-16T09:14:02.005Z"),
        (datetime(2026, 1, 1, 0, 30, tzinfo=ZoneInfo("America/New_York")), "2026-01-01T05:30:00.000Z"),
        (datetime(1970, 1, 1, tzinfo=UTC), "1970-01-01T00:00:00.000Z"),
        (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "9999-12-31T23:59:59.999Z"),
        (datetime(999, 3, 4, 5, 6, 7, 8000, tzinfo=UTC), "999-03-04T05:06:07.008Z"),
    ],
)
def test_it_writes_utc_with_milliseconds_truncated(value: datetime | None, expected: str | None) -> None:
    assert iso_ms(value) == expected


def test_it_agrees_with_strftime_over_a_range_of_times() -> None:
    start = datetime(1970, 1, 1, tzinfo=UTC)
    for step in range(0, 2_000_000_000, 7_777_777):
        value = start + timedelta(seconds=step, microseconds=step % 1_000_000)
        old = value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
        assert iso_ms(value) == old

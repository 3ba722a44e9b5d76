"""``Thread.first_message_at`` becomes the first non-summary message's createdAt (it was
the first append's time), so sessionDuration, latest_created_at minus it, is the
conversation's own span for imported history too (DESIGN.md section 6 item 9).

Existing threads get the smallest createdAt of their non-summary messages (None for a
thread without one). No schema change."""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.db.models import Min, OuterRef, Subquery


def backfill_first_message_at(apps: Any, schema_editor: Any) -> int:
    """Set every thread's first_message_at from its non-summary messages; the number of
    threads changed."""
    Thread = apps.get_model("memoryapp", "Thread")
    Message = apps.get_model("memoryapp", "Message")
    first = (
        Message.objects.filter(thread_id=OuterRef("pk"), is_summary=False)
        .order_by()
        .values("thread_id")
        .annotate(first=Min("created_at"))
        .values("first")
    )
    changed: int = Thread.objects.filter(next_sequence__gt=1).update(
        first_message_at=Subquery(first)
    )
    return changed


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0025_thread_latest_created_at"),
    ]

    operations = [
        migrations.RunPython(backfill_first_message_at, migrations.RunPython.noop),
    ]

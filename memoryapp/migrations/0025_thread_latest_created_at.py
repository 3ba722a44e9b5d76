"""``Thread.latest_created_at``: the latest createdAt of the thread's non-summary messages,
which the append's UPDATE keeps from now on, so a message the server dates is never
dated before one a client dated ahead of the server's clock (docs/decisions.md,
"createdAt never goes backwards in a thread").

Existing threads get the latest createdAt of their non-summary messages (the largest,
not the highest-numbered one's: the defect this fixes left some threads out of order).
Nullable so SQLite adds the column in place (NOT NULL would rebuild the table)."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models
from django.db.models import Max, OuterRef, Subquery


def backfill_latest_created_at(apps: Any, schema_editor: Any) -> int:
    """Set every thread's latest_created_at from its non-summary messages (None for a
    thread without one); the number of threads changed."""
    Thread = apps.get_model("memoryapp", "Thread")
    Message = apps.get_model("memoryapp", "Message")
    latest = (
        Message.objects.filter(thread_id=OuterRef("pk"), is_summary=False)
        .order_by()
        .values("thread_id")
        .annotate(latest=Max("created_at"))
        .values("latest")
    )
    changed: int = Thread.objects.filter(next_sequence__gt=1).update(
        latest_created_at=Subquery(latest)
    )
    return changed


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0024_fact_event"),
    ]

    operations = [
        migrations.AddField(
            model_name="thread",
            name="latest_created_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(backfill_latest_created_at, migrations.RunPython.noop),
    ]

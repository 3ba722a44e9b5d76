"""Episodes carry when the conversation happened (review item 2): ``started_at`` and
``ended_at``, the createdAt of the first and last raw message of the range, backfilled
from the messages (an episode whose range has no raw message left takes its ``created``).
The dataset index orders by ``started_at``, the episode list's order."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models
from django.db.models import F, OuterRef, Subquery
from django.db.models.functions import Coalesce


def backfill(apps: Any, schema_editor: Any) -> None:
    Episode = apps.get_model("memoryapp", "Episode")
    Message = apps.get_model("memoryapp", "Message")
    in_range = Message.objects.filter(
        thread_id=OuterRef("thread_id"),
        is_summary=False,
        sequence_number__gte=OuterRef("from_sequence"),
        sequence_number__lte=OuterRef("to_sequence"),
    )
    # Raw messages' createdAt never decreases along the sequence (an imported createdAt
    # may not be before the thread's last raw message), so first/last are min/max.
    first = in_range.order_by("sequence_number").values("created_at")[:1]
    last = in_range.order_by("-sequence_number").values("created_at")[:1]
    Episode.objects.update(
        started_at=Coalesce(Subquery(first), F("created")),
        ended_at=Coalesce(Subquery(last), F("created")),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0017_thread_tag_page_idx"),
    ]

    operations = [
        # Nullable: SQLite adds them in place (NOT NULL would rebuild the table and drop
        # its full-text triggers); every row has both after the backfill.
        migrations.AddField(
            model_name="episode", name="started_at", field=models.DateTimeField(null=True)
        ),
        migrations.AddField(
            model_name="episode", name="ended_at", field=models.DateTimeField(null=True)
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AlterModelOptions(
            name="episode",
            options={"ordering": ["-started_at", "-id"]},
        ),
        migrations.RemoveIndex(model_name="episode", name="episode_dataset_idx"),
        migrations.AddIndex(
            model_name="episode",
            index=models.Index(
                fields=["project", "dataset", "-started_at"], name="episode_dataset_started_idx"
            ),
        ),
    ]

"""``Fact.event``: the fact tells that something happened ("The user quit the hospital
job."), which a later value does not invalidate (docs/decisions.md "A change of state is
an event"). Facts stored before keep None, read as a state: which of them were events
is not kept anywhere, and an event already invalidated stays so. Nullable so SQLite adds
the column in place (NOT NULL would rebuild the table and drop its full-text views and
triggers, as migration 0018 says)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0023_fact_invalidation_found_at"),
    ]

    operations = [
        migrations.AddField(
            model_name="fact",
            name="event",
            field=models.BooleanField(null=True),
        ),
    ]

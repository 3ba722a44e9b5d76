"""When an invalidation was found (``Fact.invalidation_found_at``), beside when the old
statement stopped being true (``invalidated_at``, the messages' time). The contradictions
inbox lists what was found lately: by ``invalidated_at`` it never showed contradictions in
imported history (docs/decisions.md "Contradictions inbox").

Facts invalidated before this get the later of the two facts' ``created`` times: the
episode job that wrote the later of the two found the contradiction (a delete or a restore
that settled one later is not told apart; a restored pair is reviewed anyway)."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Greatest


def backfill_found_at(apps: Any, schema_editor: Any) -> int:
    """Set invalidation_found_at on every invalidated fact (invalidated_by set) to the
    later of its and its successor's ``created``; the number of facts changed."""
    Fact = apps.get_model("memoryapp", "Fact")
    successor = Fact.objects.filter(pk=OuterRef("invalidated_by_id")).values("created")[:1]
    changed: int = Fact.objects.filter(invalidated_by__isnull=False).update(
        invalidation_found_at=Greatest("created", Subquery(successor))
    )
    return changed


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0022_append_fewer_pages"),
    ]

    operations = [
        migrations.AddField(
            model_name="fact",
            name="invalidation_found_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(backfill_found_at, migrations.RunPython.noop),
    ]

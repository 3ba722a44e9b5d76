"""autoCompactThreshold no longer applies to an agent's thread (spec 004: its agent's
compaction.maxTokens decides; refused there since review item 8). Threads of an agent
created before that may still carry one: clear it, so no reader meets a threshold that
an agent's thread does not follow (the thread resource, the thread page and its edit
form showed it, and the edit form then refused to save it). Nothing to undo: the
threshold was never used on those threads."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def clear_agent_thresholds(apps: Any, schema_editor: Any) -> int:
    """Set auto_compact_threshold to NULL on every thread that belongs to an agent;
    the number of threads changed."""
    Thread = apps.get_model("memoryapp", "Thread")
    changed: int = Thread.objects.filter(
        agent__isnull=False, auto_compact_threshold__isnull=False
    ).update(auto_compact_threshold=None)
    return changed


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0019_search_accent_folding"),
    ]

    operations = [
        migrations.RunPython(clear_agent_thresholds, migrations.RunPython.noop),
    ]

"""A thread's tag rows carry the thread's project and creation time (issue 11 item 4).

GET /threads?tag= (and the dashboard's tag filter) walked the project's threads newest
first and checked each one's tags, so a tag few threads carry read the whole project
(150-220 ms at 100k threads on SQLite, docs/performance.md). With the project and the
creation time on the tag row, 0017's index (project, name, created, thread) holds a
project's threads of one tag in the list's order: a page is an index range. Neither value
ever changes on a thread. This migration adds the two columns and copies them from the
threads; 0017 makes them required and adds the index (a separate transaction: on
PostgreSQL a table cannot be altered in the transaction that updated its deferred
foreign keys).
"""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models

BACKFILL = (
    "UPDATE memoryapp_threadtag SET "
    "project_id = (SELECT t.project_id FROM memoryapp_thread t "
    "WHERE t.id = memoryapp_threadtag.thread_id), "
    "created = (SELECT t.created FROM memoryapp_thread t WHERE t.id = memoryapp_threadtag.thread_id)"
)


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0015_message_search_deferred"),
    ]

    operations = [
        migrations.AddField(
            model_name="threadtag",
            name="project",
            field=models.ForeignKey(
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="memoryapp.project",
            ),
        ),
        migrations.AddField(
            model_name="threadtag",
            name="created",
            field=models.DateTimeField(null=True),
        ),
        migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop),
    ]

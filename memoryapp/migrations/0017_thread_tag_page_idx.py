"""The tag rows' project and creation time required, and the index of a tag's page
(see 0016): (project, name, created DESC, thread DESC), the thread list's order."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0016_thread_tag_project_created"),
    ]

    operations = [
        migrations.AlterField(
            model_name="threadtag",
            name="project",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="memoryapp.project",
            ),
        ),
        migrations.AlterField(
            model_name="threadtag",
            name="created",
            field=models.DateTimeField(),
        ),
        migrations.AddIndex(
            model_name="threadtag",
            index=models.Index(
                fields=["project", "name", "-created", "-thread"], name="thread_tag_page_idx"
            ),
        ),
    ]

"""Drop the index Django made for Message.thread: the (thread, sequence_number) unique
index leads with thread_id and serves every look-up by thread.

A plain AlterField could make Django rebuild memoryapp_message on SQLite, which would drop
the full-text triggers of 0003; dropping the index by name touches nothing else.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("memoryapp", "0004_thread_compaction_lease"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="message",
                    name="thread",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="messages",
                        to="memoryapp.thread",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql="DROP INDEX IF EXISTS memoryapp_message_thread_id_e5a36cbc",
                    reverse_sql=(
                        "CREATE INDEX memoryapp_message_thread_id_e5a36cbc "
                        "ON memoryapp_message (thread_id)"
                    ),
                ),
            ],
        ),
    ]

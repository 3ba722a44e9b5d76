"""Messages reach SQLite's full-text index in batches, not one by one (issue 11).

0008's trigger indexed every message as it was inserted: FTS5 then wrote a new index
segment (and merged older ones) in every append's transaction, the largest single cost of
an append (bench/peers.py: 0.57 -> 0.36 ms p50 without it). Now the insert trigger only
queues the row's rowid in ``memoryapp_message_fts_pending`` (one small B-tree insert), and
memoryapp.sql.search_index_catch_up indexes the queue in one statement: recall runs it
before it searches (so a message is found by the first recall after its append returned,
as before), and an append runs it after commit whenever its rowid is a multiple of
memoryapp.sql.FTS_BATCH (so the queue stays short without recall).

A delete or an edit removes a row from the index only if it was indexed (a queued row is
simply dropped from, or left in, the queue). Same FTS5 table, tokenizer and external
content as 0008; 0003's caveats hold. PostgreSQL: nothing to do (its stored
``search_vector`` column of 0008 is computed in the insert itself).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

FTS_TABLE = "memoryapp_message_fts"
PENDING = "memoryapp_message_fts_pending"
TRIGGERS = [f"{FTS_TABLE}_ai", f"{FTS_TABLE}_ad", f"{FTS_TABLE}_au"]
NOT_QUEUED = f"NOT EXISTS (SELECT 1 FROM {PENDING} WHERE message_rowid = old.rowid)"

SQLITE_FORWARDS = [
    *(f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS),
    f"CREATE TABLE IF NOT EXISTS {PENDING} (message_rowid INTEGER PRIMARY KEY)",
    f"""CREATE TRIGGER {FTS_TABLE}_ai AFTER INSERT ON memoryapp_message BEGIN
        INSERT OR IGNORE INTO {PENDING}(message_rowid) VALUES (new.rowid);
    END""",
    f"""CREATE TRIGGER {FTS_TABLE}_ad AFTER DELETE ON memoryapp_message BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, content)
            SELECT 'delete', old.rowid, old.content WHERE {NOT_QUEUED};
        DELETE FROM {PENDING} WHERE message_rowid = old.rowid;
    END""",
    f"""CREATE TRIGGER {FTS_TABLE}_au AFTER UPDATE OF content ON memoryapp_message BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, content)
            SELECT 'delete', old.rowid, old.content WHERE {NOT_QUEUED};
        INSERT OR IGNORE INTO {PENDING}(message_rowid) VALUES (new.rowid);
    END""",
]

# 0008's triggers, indexing each row in its own statement, for going back.
SQLITE_BACKWARDS = [
    *(f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS),
    f"DROP TABLE IF EXISTS {PENDING}",
    f"""CREATE TRIGGER {FTS_TABLE}_ai AFTER INSERT ON memoryapp_message BEGIN
        INSERT INTO {FTS_TABLE}(rowid, content) VALUES (new.rowid, new.content);
    END""",
    f"""CREATE TRIGGER {FTS_TABLE}_ad AFTER DELETE ON memoryapp_message BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, content) VALUES ('delete', old.rowid, old.content);
    END""",
    f"""CREATE TRIGGER {FTS_TABLE}_au AFTER UPDATE OF content ON memoryapp_message BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, content) VALUES ('delete', old.rowid, old.content);
        INSERT INTO {FTS_TABLE}(rowid, content) VALUES (new.rowid, new.content);
    END""",
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')",
]


def forwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_FORWARDS:
            schema_editor.execute(statement)


def backwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_BACKWARDS:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0014_compaction_run"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]

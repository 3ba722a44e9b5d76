"""Full-text search over message content, for recall's raw layer (memoryapp.recall).

SQLite: an FTS5 table with external content on memoryapp_message (the text is stored
once, in the message table), kept in step by insert/update/delete triggers, tokenizer
``unicode61 remove_diacritics 2``. The FTS rowid is the message table's implicit rowid.

PostgreSQL: a GIN index on ``to_tsvector('english', COALESCE(content, ''))``, built from
the same SearchVector expression memoryapp.recall queries with, so the planner uses it.

Other databases get nothing and recall's raw layer falls back to no results.

Caveats kept here because they bite later:
- On SQLite, a later migration that makes Django rebuild memoryapp_message (most
  AlterField/RemoveField operations on Message) drops these triggers and renumbers the
  rowids: such a migration must run ``drop_sqlite`` then ``create_sqlite`` (import them
  from this module) after its schema change. tests/test_recall.py checks that the
  triggers exist after all migrations, so a forgotten one fails the suite.
- ``VACUUM`` may renumber rowids of a table without an INTEGER PRIMARY KEY; after a
  VACUUM run ``INSERT INTO memoryapp_message_fts(memoryapp_message_fts) VALUES('rebuild')``
  (memoryapp.recall.rebuild_search_index does it).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

FTS_TABLE = "memoryapp_message_fts"
PG_INDEX = "message_content_fts"

SQLITE_CREATE = [
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(
        content,
        content='memoryapp_message',
        content_rowid='rowid',
        tokenize='unicode61 remove_diacritics 2'
    )""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ai AFTER INSERT ON memoryapp_message BEGIN
        INSERT INTO {FTS_TABLE}(rowid, content) VALUES (new.rowid, new.content);
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_ad AFTER DELETE ON memoryapp_message BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, content) VALUES ('delete', old.rowid, old.content);
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_au AFTER UPDATE OF content ON memoryapp_message BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, content) VALUES ('delete', old.rowid, old.content);
        INSERT INTO {FTS_TABLE}(rowid, content) VALUES (new.rowid, new.content);
    END""",
    # Index rows that existed before this migration.
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')",
]

SQLITE_DROP = [
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_ai",
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_ad",
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_au",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
]


def _pg_index() -> Any:
    from django.contrib.postgres.indexes import GinIndex
    from django.contrib.postgres.search import SearchVector

    return GinIndex(SearchVector("content", config="english"), name=PG_INDEX)


def create_sqlite(schema_editor: Any) -> None:
    for statement in SQLITE_CREATE:
        schema_editor.execute(statement)


def drop_sqlite(schema_editor: Any) -> None:
    for statement in SQLITE_DROP:
        schema_editor.execute(statement)


def forwards(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        create_sqlite(schema_editor)
    elif vendor == "postgresql":
        schema_editor.add_index(apps.get_model("memoryapp", "Message"), _pg_index())


def backwards(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        drop_sqlite(schema_editor)
    elif vendor == "postgresql":
        schema_editor.remove_index(apps.get_model("memoryapp", "Message"), _pg_index())


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0002_turn_usageline"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]

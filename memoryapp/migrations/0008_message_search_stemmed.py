"""Stemmed full-text search over messages, and a stored search vector on PostgreSQL
(recall's raw layer, memoryapp.message_search).

SQLite: the FTS5 table of 0003 is rebuilt with the ``porter`` tokenizer wrapped around
``unicode61 remove_diacritics 2``, so "painting", "painted" and "paints" match one another
(on LoCoMo, evidence recall@10 of plain bm25 0.574 -> 0.613). Same triggers, same
external content; 0003's caveats hold for this table: a migration that makes Django
rebuild memoryapp_message on SQLite must run ``drop_sqlite`` then ``create_sqlite`` from
*this* module after its schema change.
Since 0021 the table indexes memoryapp_search_text(content) through a view: use 0021's
``drop_sqlite`` / ``create_sqlite`` instead.

PostgreSQL: the 'english' configuration stems already; what was slow is that ranking
recomputed ``to_tsvector`` for every matching row (recall p50 56 ms on LoCoMo). A stored
generated column ``search_vector`` holds it once per row, with a GIN index; the expression
index of 0003 goes. The column is not a model field (it only exists on PostgreSQL): only
memoryapp.message_search reads it, in raw SQL.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

FTS_TABLE = "memoryapp_message_fts"
TOKENIZER = "porter unicode61 remove_diacritics 2"
PG_OLD_INDEX = "message_content_fts"
PG_COLUMN = "search_vector"
PG_INDEX = "message_search_vector_gin"

SQLITE_CREATE = [
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(
        content,
        content='memoryapp_message',
        content_rowid='rowid',
        tokenize='{TOKENIZER}'
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
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')",
]

SQLITE_DROP = [
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_ai",
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_ad",
    f"DROP TRIGGER IF EXISTS {FTS_TABLE}_au",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
]

PG_FORWARDS = [
    f"DROP INDEX IF EXISTS {PG_OLD_INDEX}",
    f"""ALTER TABLE memoryapp_message ADD COLUMN {PG_COLUMN} tsvector
        GENERATED ALWAYS AS (to_tsvector('english', COALESCE(content, ''))) STORED""",
    f"CREATE INDEX {PG_INDEX} ON memoryapp_message USING gin ({PG_COLUMN})",
]

PG_BACKWARDS = [
    f"DROP INDEX IF EXISTS {PG_INDEX}",
    f"ALTER TABLE memoryapp_message DROP COLUMN IF EXISTS {PG_COLUMN}",
    f"""CREATE INDEX {PG_OLD_INDEX} ON memoryapp_message
        USING gin (to_tsvector('english'::regconfig, COALESCE(content, '')))""",
]

# 0003's table, for going back.
SQLITE_PLAIN = [
    s.replace(f"tokenize='{TOKENIZER}'", "tokenize='unicode61 remove_diacritics 2'")
    for s in SQLITE_CREATE
]


def create_sqlite(schema_editor: Any) -> None:
    for statement in SQLITE_CREATE:
        schema_editor.execute(statement)


def drop_sqlite(schema_editor: Any) -> None:
    for statement in SQLITE_DROP:
        schema_editor.execute(statement)


def forwards(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        drop_sqlite(schema_editor)
        create_sqlite(schema_editor)
    elif vendor == "postgresql":
        for statement in PG_FORWARDS:
            schema_editor.execute(statement)


def backwards(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        drop_sqlite(schema_editor)
        for statement in SQLITE_PLAIN:
            schema_editor.execute(statement)
    elif vendor == "postgresql":
        for statement in PG_BACKWARDS:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0007_fact_episode_fts"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]

"""Full-text search over facts and episodes, for recall's fact and episode layers.

Built like 0003_message_fts (read its caveats; they hold here too):

SQLite: FTS5 tables with external content, kept in step by insert/update/delete
triggers, tokenizer ``unicode61 remove_diacritics 2``:
- ``memoryapp_fact_fts(text)`` over memoryapp_fact;
- ``memoryapp_episode_fts(title, summary)`` over memoryapp_episode.
Invalidation changes no indexed text: searches filter ``invalidated_at IS NULL``
(memoryapp.semantic.fact_search). Deleting a fact deletes its index row in the same
statement (trigger), so a forgotten fact is gone from search at once.

PostgreSQL: GIN indexes on ``to_tsvector('english', text)`` (facts) and on
``to_tsvector('english', title || ' ' || summary)`` (episodes), built from the same
SearchVector expressions memoryapp.semantic and memoryapp.episodic query with.

A later migration that makes Django rebuild memoryapp_fact or memoryapp_episode on SQLite
must run ``drop_sqlite`` then ``create_sqlite`` after its schema change.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

FACT_FTS = "memoryapp_fact_fts"
EPISODE_FTS = "memoryapp_episode_fts"
PG_FACT_INDEX = "fact_text_fts"
PG_EPISODE_INDEX = "episode_text_fts"


def _fts5(table: str, source: str, columns: list[str]) -> list[str]:
    cols = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    return [
        f"""CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(
            {cols}, content='{source}', content_rowid='rowid',
            tokenize='unicode61 remove_diacritics 2'
        )""",
        f"""CREATE TRIGGER IF NOT EXISTS {table}_ai AFTER INSERT ON {source} BEGIN
            INSERT INTO {table}(rowid, {cols}) VALUES (new.rowid, {new});
        END""",
        f"""CREATE TRIGGER IF NOT EXISTS {table}_ad AFTER DELETE ON {source} BEGIN
            INSERT INTO {table}({table}, rowid, {cols}) VALUES ('delete', old.rowid, {old});
        END""",
        f"""CREATE TRIGGER IF NOT EXISTS {table}_au AFTER UPDATE OF {cols} ON {source} BEGIN
            INSERT INTO {table}({table}, rowid, {cols}) VALUES ('delete', old.rowid, {old});
            INSERT INTO {table}(rowid, {cols}) VALUES (new.rowid, {new});
        END""",
        f"INSERT INTO {table}({table}) VALUES ('rebuild')",
    ]


SQLITE_CREATE = [
    *_fts5(FACT_FTS, "memoryapp_fact", ["text"]),
    *_fts5(EPISODE_FTS, "memoryapp_episode", ["title", "summary"]),
]

SQLITE_DROP = [
    statement
    for table in (FACT_FTS, EPISODE_FTS)
    for statement in (
        f"DROP TRIGGER IF EXISTS {table}_ai",
        f"DROP TRIGGER IF EXISTS {table}_ad",
        f"DROP TRIGGER IF EXISTS {table}_au",
        f"DROP TABLE IF EXISTS {table}",
    )
]


def _pg_indexes() -> list[tuple[str, Any]]:
    from django.contrib.postgres.indexes import GinIndex
    from django.contrib.postgres.search import SearchVector

    return [
        ("Fact", GinIndex(SearchVector("text", config="english"), name=PG_FACT_INDEX)),
        (
            "Episode",
            GinIndex(SearchVector("title", "summary", config="english"), name=PG_EPISODE_INDEX),
        ),
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
        create_sqlite(schema_editor)
    elif vendor == "postgresql":
        for model, index in _pg_indexes():
            schema_editor.add_index(apps.get_model("memoryapp", model), index)


def backwards(apps: Any, schema_editor: Any) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        drop_sqlite(schema_editor)
    elif vendor == "postgresql":
        for model, index in _pg_indexes():
            schema_editor.remove_index(apps.get_model("memoryapp", model), index)


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0006_episodes_facts_entities"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]

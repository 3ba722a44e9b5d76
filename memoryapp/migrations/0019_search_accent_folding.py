"""Accent-insensitive full-text search on PostgreSQL, as on SQLite (recall's three layers).

SQLite's FTS5 tables fold diacritics (``unicode61 remove_diacritics 2``, 0008/0011): "zoe",
"Arhus" and "brulee" find "Zoë", "Århus" and "brûlée", and accented queries find plain
text. PostgreSQL's 'english' configuration kept accents, so the same queries found
nothing there. This migration creates the text search configuration
``memoryapp_english``: a copy of 'english' whose non-ASCII word tokens (``word``,
``hword``, ``hword_part``) go through the ``unaccent`` dictionary before the English
stemmer (ASCII tokens have nothing to fold). It ships with PostgreSQL (contrib, in
Debian's postgresql-15 package itself) and is a trusted extension since PostgreSQL 13, so
a database owner can create it; ``CREATE EXTENSION IF NOT EXISTS`` makes a fresh database
work. The configuration is applied to documents and queries alike (``to_tsvector`` of the
stored columns, ``plainto_tsquery`` of every search), so folding goes both ways.

Rebuilt with it: the stored generated ``search_vector`` columns of messages (0008), facts
and episodes (0013), with their GIN indexes, and 0007's expression indexes on facts and
episodes (the ORM searches of memoryapp.semantic / memoryapp.episodic query that
expression). A generated column's expression cannot be altered before PostgreSQL 17, so
each column is dropped and added again (the table is rewritten once). SQLite: nothing to
do.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

CONFIG = "memoryapp_english"

PG_SETUP = [
    "CREATE EXTENSION IF NOT EXISTS unaccent",
    f"CREATE TEXT SEARCH CONFIGURATION {CONFIG} (COPY = english)",
    f"ALTER TEXT SEARCH CONFIGURATION {CONFIG} "
    "ALTER MAPPING FOR word, hword, hword_part WITH unaccent, english_stem",
]

# (table, generated expression's text, GIN index of the column)
COLUMNS = [
    ("memoryapp_message", "COALESCE(content, '')", "message_search_vector_gin"),
    ("memoryapp_fact", "COALESCE(text, '')", "fact_search_vector_gin"),
    (
        "memoryapp_episode",
        "COALESCE(title, '') || ' ' || COALESCE(summary, '')",
        "episode_search_vector_gin",
    ),
]

# 0007's expression indexes: (model, fields, name)
EXPRESSION_INDEXES = [
    ("Fact", ("text",), "fact_text_fts"),
    ("Episode", ("title", "summary"), "episode_text_fts"),
]


def _columns(config: str) -> list[str]:
    statements = []
    for table, expression, index in COLUMNS:
        statements += [
            f"DROP INDEX IF EXISTS {index}",
            f"ALTER TABLE {table} DROP COLUMN IF EXISTS search_vector",
            f"""ALTER TABLE {table} ADD COLUMN search_vector tsvector
                GENERATED ALWAYS AS (to_tsvector('{config}', {expression})) STORED""",
            f"CREATE INDEX {index} ON {table} USING gin (search_vector)",
        ]
    return statements


def _expression_indexes(apps: Any, schema_editor: Any, config: str) -> None:
    from django.contrib.postgres.indexes import GinIndex
    from django.contrib.postgres.search import SearchVector

    for model_name, fields, name in EXPRESSION_INDEXES:
        model = apps.get_model("memoryapp", model_name)
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")
        schema_editor.add_index(model, GinIndex(SearchVector(*fields, config=config), name=name))


def forwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in [*PG_SETUP, *_columns(CONFIG)]:
        schema_editor.execute(statement)
    _expression_indexes(apps, schema_editor, CONFIG)


def backwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in _columns("english"):
        schema_editor.execute(statement)
    _expression_indexes(apps, schema_editor, "english")
    # The extension stays: other schemas or tools may use it.
    schema_editor.execute(f"DROP TEXT SEARCH CONFIGURATION IF EXISTS {CONFIG}")


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0018_episode_started_ended"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]

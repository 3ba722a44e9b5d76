"""Stored search vectors for facts and episodes on PostgreSQL (recall's fact and episode
layers, memoryapp.layer_search).

0007 indexed facts and episodes by GIN expression indexes. The index finds the matching
rows, but ranking them (``ts_rank_cd``) recomputed ``to_tsvector`` of every matching row,
and episode summaries are long: on LoCoMo recall's episode layer cost more than the raw
layer. As 0008 did for messages, a stored generated column ``search_vector`` holds the
vector once per row, with a GIN index. Being generated, it follows every insert, update
and delete of its row, so a deleted fact leaves the search at once and invalidation
(which changes no text) needs nothing. 0007's expression indexes stay: the ORM searches of
memoryapp.semantic and memoryapp.episodic query that expression. The columns are not model
fields (they exist only on PostgreSQL): only memoryapp.layer_search reads them, in raw SQL.
SQLite: nothing to do (FTS5 tables of 0011).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

PG_COLUMN = "search_vector"
FACT_INDEX = "fact_search_vector_gin"
EPISODE_INDEX = "episode_search_vector_gin"

PG_FORWARDS = [
    f"""ALTER TABLE memoryapp_fact ADD COLUMN {PG_COLUMN} tsvector
        GENERATED ALWAYS AS (to_tsvector('english', COALESCE(text, ''))) STORED""",
    f"CREATE INDEX {FACT_INDEX} ON memoryapp_fact USING gin ({PG_COLUMN})",
    f"""ALTER TABLE memoryapp_episode ADD COLUMN {PG_COLUMN} tsvector
        GENERATED ALWAYS AS (to_tsvector('english',
            COALESCE(title, '') || ' ' || COALESCE(summary, ''))) STORED""",
    f"CREATE INDEX {EPISODE_INDEX} ON memoryapp_episode USING gin ({PG_COLUMN})",
]

PG_BACKWARDS = [
    f"DROP INDEX IF EXISTS {FACT_INDEX}",
    f"ALTER TABLE memoryapp_fact DROP COLUMN IF EXISTS {PG_COLUMN}",
    f"DROP INDEX IF EXISTS {EPISODE_INDEX}",
    f"ALTER TABLE memoryapp_episode DROP COLUMN IF EXISTS {PG_COLUMN}",
]


def forwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for statement in PG_FORWARDS:
            schema_editor.execute(statement)


def backwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        for statement in PG_BACKWARDS:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0012_fact_review"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]

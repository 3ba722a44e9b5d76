"""Stemmed full-text search over facts and episodes on SQLite (recall's fact and episode
layers, memoryapp.layer_search).

0007 indexed them with ``unicode61 remove_diacritics 2``: "what car do I drive" could not
find "The user drives a Honda Civic". Like the message index since 0008, the two FTS5
tables are rebuilt with ``porter`` around that tokenizer; same triggers, same external
content. PostgreSQL's 'english' configuration stems already: nothing to do there.

A later migration that makes Django rebuild memoryapp_fact or memoryapp_episode on SQLite
must run ``drop_sqlite`` then ``create_sqlite`` from *this* module after its change.
Since 0021 the tables index memoryapp_search_text(...) through views: use 0021's
``drop_sqlite`` / ``create_sqlite`` instead.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations

_0007 = importlib.import_module("memoryapp.migrations.0007_fact_episode_fts")

PLAIN = "tokenize='unicode61 remove_diacritics 2'"
STEMMED = "tokenize='porter unicode61 remove_diacritics 2'"
SQLITE_CREATE = [s.replace(PLAIN, STEMMED) for s in _0007.SQLITE_CREATE]
SQLITE_DROP = list(_0007.SQLITE_DROP)


def create_sqlite(schema_editor: Any) -> None:
    for statement in SQLITE_CREATE:
        schema_editor.execute(statement)


def drop_sqlite(schema_editor: Any) -> None:
    for statement in SQLITE_DROP:
        schema_editor.execute(statement)


def forwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        drop_sqlite(schema_editor)
        create_sqlite(schema_editor)


def backwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        drop_sqlite(schema_editor)
        _0007.create_sqlite(schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0010_agents_memory_notes"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]

"""SQLite's full-text indexes read apostrophes as the query does (memoryapp.search_words).

FTS5's tokenizer split "user's", "it's" and "don't" at the apostrophe and indexed the
fragments "s" and "t" as words. Each of the three FTS5 tables (messages, facts, episodes)
now indexes ``memoryapp_search_text(...)`` of its text ("user's" -> "user", "don't" ->
"do not"), the SQL function memoryapp.sqlite_backend registers on every connection:

- its external content is a view over the source table that applies the function, so
  FTS5's own reads of the content ('rebuild', 'integrity-check') see what the triggers
  indexed;
- the triggers (and memoryapp.sql.search_index_catch_up for the message queue of 0015)
  index and un-index the function's text;
- every table is rebuilt from its view, and the message queue emptied (every row is
  indexed by the rebuild).

Same tokenizer (``porter unicode61 remove_diacritics 2``), same rowids (the source
table's), so every search query is unchanged. A connection without the function (the
sqlite3 shell) cannot delete or edit a message, fact or episode: use the service's own
commands. PostgreSQL: nothing to do (its 'english' stop words drop the "s" and "t" its
parser splits off; docs/decisions.md, "Apostrophes in search").

A later migration that makes Django rebuild memoryapp_message, memoryapp_fact or
memoryapp_episode on SQLite must run ``drop_sqlite`` from *this* module before its schema
change (the views name those tables) and ``create_sqlite`` after it; the same functions
of 0008 and 0011 no longer build what is current.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations

FN = "memoryapp_search_text"
TOKENIZER = "porter unicode61 remove_diacritics 2"
PENDING = "memoryapp_message_fts_pending"
MESSAGE_NOT_QUEUED = f"NOT EXISTS (SELECT 1 FROM {PENDING} WHERE message_rowid = old.rowid)"

# (FTS table, source table, indexed columns, whether inserts are queued (0015))
TABLES = [
    ("memoryapp_message_fts", "memoryapp_message", ["content"], True),
    ("memoryapp_fact_fts", "memoryapp_fact", ["text"], False),
    ("memoryapp_episode_fts", "memoryapp_episode", ["title", "summary"], False),
]


def _view(fts: str) -> str:
    return f"{fts}_content"


def _create(fts: str, source: str, columns: list[str], queued: bool) -> list[str]:
    cols = ", ".join(columns)
    read = ", ".join(f"{FN}({c}) AS {c}" for c in columns)
    new = ", ".join(f"{FN}(new.{c})" for c in columns)
    old = ", ".join(f"{FN}(old.{c})" for c in columns)
    unindex = f"INSERT INTO {fts}({fts}, rowid, {cols}) SELECT 'delete', old.rowid, {old}"
    if queued:  # 0015: inserts wait in the queue; a queued row was never indexed
        insert = f"INSERT OR IGNORE INTO {PENDING}(message_rowid) VALUES (new.rowid);"
        delete = f"{unindex} WHERE {MESSAGE_NOT_QUEUED};\n"
        after_delete = delete + f"DELETE FROM {PENDING} WHERE message_rowid = old.rowid;"
        after_update = delete + insert
    else:
        insert = f"INSERT INTO {fts}(rowid, {cols}) VALUES (new.rowid, {new});"
        after_delete = f"{unindex};"
        after_update = f"{unindex};\n{insert}"
    statements = [
        f"CREATE VIEW {_view(fts)} AS SELECT rowid AS source_rowid, {read} FROM {source}",
        f"""CREATE VIRTUAL TABLE {fts} USING fts5(
            {cols}, content='{_view(fts)}', content_rowid='source_rowid',
            tokenize='{TOKENIZER}'
        )""",
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {source} BEGIN {insert} END",
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {source} BEGIN {after_delete} END",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE OF {cols} ON {source} BEGIN {after_update} END",
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",
    ]
    if queued:
        statements.append(f"DELETE FROM {PENDING}")
    return statements


def _drop(fts: str) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {fts}_ai",
        f"DROP TRIGGER IF EXISTS {fts}_ad",
        f"DROP TRIGGER IF EXISTS {fts}_au",
        f"DROP TABLE IF EXISTS {fts}",
        f"DROP VIEW IF EXISTS {_view(fts)}",
    ]


SQLITE_CREATE = [s for table in TABLES for s in _create(*table)]
SQLITE_DROP = [s for table in TABLES for s in _drop(table[0])]


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
    """The tables of 0008/0011 and the triggers of 0015, rebuilt from the raw text."""
    if schema_editor.connection.vendor != "sqlite":
        return
    drop_sqlite(schema_editor)
    m0008 = importlib.import_module("memoryapp.migrations.0008_message_search_stemmed")
    m0011 = importlib.import_module("memoryapp.migrations.0011_fact_episode_search_stemmed")
    m0015 = importlib.import_module("memoryapp.migrations.0015_message_search_deferred")
    m0011.create_sqlite(schema_editor)
    schema_editor.execute(m0008.SQLITE_CREATE[0])  # the table; 0015's triggers follow
    for statement in m0015.SQLITE_FORWARDS:
        schema_editor.execute(statement)
    schema_editor.execute(f"INSERT INTO {TABLES[0][0]}({TABLES[0][0]}) VALUES ('rebuild')")
    schema_editor.execute(f"DELETE FROM {PENDING}")


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0020_agent_thread_threshold_cleared"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]

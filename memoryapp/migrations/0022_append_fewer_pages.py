"""An append writes two B-trees less (issue 11, 4 writers): messages wait for SQLite's
full-text index above a mark, not in a queue, and message_live_tail_idx is dropped.

0015's insert trigger queued every new message's rowid in ``memoryapp_message_fts_pending``:
one more B-tree written (and read back, the page cache being cold under contention) in
every append's transaction. Now an insert runs no trigger. One row,
``memoryapp_message_fts_mark.indexed_to``, keeps the invariant: a message whose rowid is
at most ``indexed_to`` is in the index, one above it is not. New rows always land above it
(SQLite gives a new row the largest rowid plus one, and the delete trigger lowers the mark
when the largest rows go), so memoryapp.sql.search_index_catch_up indexes the rows above
the mark in one statement and moves the mark to the largest rowid, as before at the same
times (recall, and an append every FTS_BATCH rows).

A delete or an edit of a row at or below the mark removes it from the index (an edit
indexes its new text); one above it is simply indexed later, with its text of then.
Forwards indexes what the queue held, then drops it; backwards queues every row above the
mark. Same FTS5 table, view, tokenizer and rowids as 0021. PostgreSQL: nothing to do
(its stored ``search_vector`` is computed by the insert itself).

``message_live_tail_idx`` (thread, sequence_number DESC) over the live rows was a near
copy of the (thread, sequence_number) unique index, written by every append. The live rows
are read as a range of that unique index instead, from the active summary's end up
(``Thread.live_floor``): a compaction folds every live row below the one it keeps, so
nothing at or below that end is live, and the read does not grow with the compacted
history. Both databases.

A later migration that makes Django rebuild memoryapp_message on SQLite (which renumbers
rowids) must run 0021's ``drop_sqlite`` before its schema change and 0021's
``create_sqlite`` and then this module's ``forwards`` after it.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations

FN = "memoryapp_search_text"
FTS = "memoryapp_message_fts"
SOURCE = "memoryapp_message"
PENDING = "memoryapp_message_fts_pending"
MARK = "memoryapp_message_fts_mark"
TRIGGERS = [f"{FTS}_ai", f"{FTS}_ad", f"{FTS}_au"]
INDEXED = f"old.rowid <= (SELECT indexed_to FROM {MARK})"
LARGEST = f"(SELECT coalesce(max(rowid), 0) FROM {SOURCE})"
UNINDEX = (
    f"INSERT INTO {FTS}({FTS}, rowid, content) "
    f"SELECT 'delete', old.rowid, {FN}(old.content) WHERE {INDEXED};"
)

SQLITE_FORWARDS = [
    # What 0015's queue held is indexed first: every row at or below the mark is then.
    f"INSERT INTO {FTS}(rowid, content) SELECT m.rowid, {FN}(m.content) "
    f"FROM {PENDING} AS p JOIN {SOURCE} AS m ON m.rowid = p.message_rowid",
    *(f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS),
    f"DROP TABLE IF EXISTS {PENDING}",
    f"CREATE TABLE {MARK} (id INTEGER PRIMARY KEY CHECK (id = 1), indexed_to INTEGER NOT NULL)",
    f"INSERT INTO {MARK}(id, indexed_to) VALUES (1, {LARGEST})",
    # The largest rows deleted: the next insert reuses their rowids, which must land
    # above the mark, so the mark comes down to the largest row left.
    f"""CREATE TRIGGER {FTS}_ad AFTER DELETE ON {SOURCE} BEGIN
        {UNINDEX}
        UPDATE {MARK} SET indexed_to = {LARGEST} WHERE indexed_to > {LARGEST};
    END""",
    f"""CREATE TRIGGER {FTS}_au AFTER UPDATE OF content ON {SOURCE} BEGIN
        {UNINDEX}
        INSERT INTO {FTS}(rowid, content) SELECT new.rowid, {FN}(new.content) WHERE {INDEXED};
    END""",
]


def _queued_triggers() -> list[str]:
    """0021's message triggers (0015's queue), from 0021's own builder."""
    m0021 = importlib.import_module("memoryapp.migrations.0021_search_clitics")
    statements: list[str] = m0021._create(*m0021.TABLES[0])
    return [s for s in statements if s.startswith("CREATE TRIGGER")]


def forwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_FORWARDS:
            schema_editor.execute(statement)


def backwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    for name in TRIGGERS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
    schema_editor.execute(f"CREATE TABLE {PENDING} (message_rowid INTEGER PRIMARY KEY)")
    schema_editor.execute(
        f"INSERT INTO {PENDING}(message_rowid) SELECT rowid FROM {SOURCE} "
        f"WHERE rowid > (SELECT indexed_to FROM {MARK})"
    )
    schema_editor.execute(f"DROP TABLE {MARK}")
    for statement in _queued_triggers():
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("memoryapp", "0021_search_clitics"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards, elidable=False),
        migrations.RemoveIndex(model_name="message", name="message_live_tail_idx"),
    ]

"""Raw-message search: recall's raw layer (DESIGN.md section 5, "POST /recall").

How a query is answered, in order:

1. **Candidates** from the database's full-text engine over the dataset's messages (other
   threads than the caller's; summary rows never): the best CANDIDATES by SQLite FTS5
   ``bm25()`` over the porter-stemmed index, or by PostgreSQL ``ts_rank_cd`` over the
   stored 'english' ``search_vector`` (migration 0008). The user's words are never handed
   to the engine's syntax: each is quoted (FTS5) or goes through ``plainto_tsquery``, OR-ed.
2. **Neighbour evidence**: a message whose neighbours in its thread also match gains
   NEIGHBOUR_WEIGHT of their scores (a topic discussed over several turns outranks a
   stray word in one).
3. **Speaker field**: a message whose speaker (speaker_name: the message's ``agentName``
   or the thread's ``metadata.participants`` entry for its role) is named in the query is
   multiplied by SPEAKER_BOOST. Names are near every row
   of a two-person conversation, so as plain words they carry almost no weight; as a
   field they say whose statement is asked about.
4. **Message range**: each hit carries neighbours. By default (``message_range`` None) the
   reply that follows a hit that asks a question (a question and its answer sit in
   adjacent turns); or a fixed ``(before, after)`` window.

Scores are higher-is-better and comparable only within one call.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction

from memoryapp.models import Project
from memoryapp.sql import FTS_PENDING, FTS_TABLE, search_index_catch_up
from memoryapp.stopwords import FUNCTION_WORDS

PG_SEARCH_CONFIG = "english"
# How many full-text candidates are re-ranked; the final list is at most 50 (LIMIT_MAX).
CANDIDATES = 60
NEIGHBOUR_WEIGHT = 0.4
SPEAKER_BOOST = 1.6
# Upper bound on query words sent to the engine: a pasted essay must not become a
# thousand-term OR query.
MAX_QUERY_TERMS = 32
RANGE_MAX = 5

_WORD = re.compile(r"\w+", re.UNICODE)
# Words that carry no meaning for search; on PostgreSQL the 'english' configuration drops
# them anyway, on SQLite they would match nearly every row.
STOP_WORDS = FUNCTION_WORDS | frozenset(
    [
        "am", "as", "been", "but", "by", "he", "her", "him", "his", "i", "if", "its", "no",
        "she", "so", "than", "their", "them", "then", "there", "they", "too", "whom"
    ]
)


def query_words(text: str) -> list[str]:
    """Every distinct lower-cased word of ``text``, in order."""
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))


def query_terms(query: str) -> list[str]:
    """The distinct lower-cased words of ``query`` used for search, in order.

    Stop words are dropped unless nothing else is left; at most MAX_QUERY_TERMS words.
    """
    words = query_words(query)
    meaningful = [w for w in words if w not in STOP_WORDS]
    return (meaningful or words)[:MAX_QUERY_TERMS]


def fts5_match_expression(terms: Iterable[str]) -> str:
    """An FTS5 MATCH expression OR-ing ``terms``, each a quoted string (no syntax leaks)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


@dataclass(slots=True)
class Row:
    """The columns of one message that recall uses (read in raw SQL: building model
    instances for every candidate cost more than the search itself)."""

    id: uuid.UUID
    thread_id: uuid.UUID
    sequence_number: int
    role: str
    content: str
    created_at: datetime
    speaker: str | None


@dataclass
class RawHit:
    """One recalled message: its row, its final score, and its neighbours in the thread
    (sequence order, the hit itself not among them)."""

    message: Row
    score: float
    neighbours: list[Row] = field(default_factory=list)


# Columns every query below selects, in Row's order; ``m`` is the message, ``t`` its thread.
_COLUMNS = (
    "m.id, m.thread_id, m.sequence_number, m.role, m.content, m.created_at, m.metadata, t.metadata"
)
# The candidate queries name them, to select from as a subquery ``c``.
_NAMED = (
    "m.id AS id, m.thread_id AS thread_id, m.sequence_number AS seq, m.role AS role, "
    "m.content AS content, m.created_at AS created_at, m.metadata AS metadata, "
    "t.metadata AS tmeta"
)
# After the candidate's columns and score: the message that follows a candidate that asks
# a question (the default message range), in the same round trip.
_NEXT = "n.id, n.thread_id, n.sequence_number, n.role, n.content, n.created_at, n.metadata, c.tmeta"


def _json(value: Any) -> Any:
    # Django reads JSON columns as text on both engines (it parses them itself).
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def speaker_name(message_metadata: Any, thread_metadata: Any, role: str) -> str | None:
    """Who said a message: its ``metadata.agentName``, else the name the thread's
    ``metadata.participants`` gives its role (``{"user": "Caroline", ...}``), else None."""
    own = message_metadata.get("agentName") if isinstance(message_metadata, dict) else None
    if isinstance(own, str) and own.strip():
        return own
    participants = (
        thread_metadata.get("participants") if isinstance(thread_metadata, dict) else None
    )
    name = participants.get(role) if isinstance(participants, dict) else None
    return name if isinstance(name, str) and name.strip() else None


def _row(values: Sequence[Any], speakers: dict[Any, Any]) -> Row:
    pk, thread_id, seq, role, content, created, meta, thread_meta = values[:8]
    if isinstance(created, str):  # SQLite: naive UTC text
        created = datetime.fromisoformat(created).replace(tzinfo=UTC)
    # Thread metadata is parsed once per thread, not once per row.
    if thread_meta not in speakers:
        speakers[thread_meta] = _json(thread_meta)
    return Row(
        id=pk if isinstance(pk, uuid.UUID) else uuid.UUID(str(pk)),
        thread_id=thread_id if isinstance(thread_id, uuid.UUID) else uuid.UUID(str(thread_id)),
        sequence_number=int(seq),
        role=role,
        content=content,
        created_at=created,
        speaker=speaker_name(_json(meta) if meta else None, speakers[thread_meta], role),
    )


def _fetch(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _candidates_sqlite(
    *, project: Project, dataset: str, terms: list[str], exclude: uuid.UUID | None
) -> list[tuple[Any, ...]]:
    # Rows appended since the last catch-up are queued, not yet indexed (migration 0015).
    search_index_catch_up()
    # bm25() is lower-is-better; scores here are higher-is-better.
    query = f"""
        SELECT c.*, {_NEXT} FROM (
            SELECT {_NAMED}, -bm25({FTS_TABLE}) AS score
            FROM {FTS_TABLE}
            JOIN memoryapp_message AS m ON m.rowid = {FTS_TABLE}.rowid
            JOIN memoryapp_thread AS t ON t.id = m.thread_id
            WHERE {FTS_TABLE} MATCH %s
              AND t.project_id = %s AND t.dataset = %s
              AND m.is_summary = 0
              {"AND t.id <> %s" if exclude is not None else ""}
            ORDER BY bm25({FTS_TABLE}), m.created_at DESC
            LIMIT %s
        ) AS c
        LEFT JOIN memoryapp_message AS n ON instr(c.content, '?') > 0 AND n.rowid = (
            SELECT x.rowid FROM memoryapp_message AS x
            WHERE x.thread_id = c.thread_id AND x.sequence_number > c.seq AND x.is_summary = 0
            ORDER BY x.sequence_number LIMIT 1
        )
    """
    params: list[Any] = [fts5_match_expression(terms), project.pk, dataset]
    if exclude is not None:
        params.append(exclude.hex)  # Django stores UUIDs as 32 hex characters on SQLite
    params.append(CANDIDATES)
    return _fetch(query, params)


def _candidates_postgresql(
    *, project: Project, dataset: str, terms: list[str], exclude: uuid.UUID | None
) -> list[tuple[Any, ...]]:
    # plainto_tsquery ignores every operator character, so user input cannot error; a
    # term that is a stop word becomes an empty query, which || skips.
    tsquery = " || ".join(["plainto_tsquery('english', %s)"] * len(terms))
    sql = f"""
        SELECT c.*, {_NEXT} FROM (
            SELECT {_NAMED}, ts_rank_cd(m.search_vector, q.query) AS score
            FROM memoryapp_message AS m
            JOIN memoryapp_thread AS t ON t.id = m.thread_id,
                 (SELECT {tsquery} AS query) AS q
            WHERE m.search_vector @@ q.query
              AND t.project_id = %s AND t.dataset = %s
              AND NOT m.is_summary
              {"AND t.id <> %s" if exclude is not None else ""}
            ORDER BY score DESC, m.created_at DESC
            LIMIT %s
        ) AS c
        LEFT JOIN LATERAL (
            SELECT * FROM memoryapp_message AS x
            WHERE strpos(c.content, '?') > 0
              AND x.thread_id = c.thread_id AND x.sequence_number > c.seq AND NOT x.is_summary
            ORDER BY x.sequence_number LIMIT 1
        ) AS n ON true
    """
    params: list[Any] = [*terms, project.pk, dataset]
    if exclude is not None:
        params.append(exclude)
    params.append(CANDIDATES)
    return _fetch(sql, params)


def _speaker_words(values: Sequence[Any], asked: set[str], cache: dict[Any, set[str]]) -> set[str]:
    # Candidates of one thread share its metadata text: parse it once per thread and role,
    # and not at all when no asked word even appears in the text.
    key = (values[3], values[6], values[7])
    if key not in cache:
        text = f"{values[6] or ''} {values[7] or ''}".lower()
        name = None
        if any(word in text for word in asked):
            name = speaker_name(
                _json(values[6]) if values[6] else None, _json(values[7]), values[3]
            )
        cache[key] = set(query_words(name)) if name else set()
    return cache[key]


def _rank(found: list[tuple[Any, ...]], asked: set[str]) -> list[tuple[float, tuple[Any, ...]]]:
    """Neighbour evidence and the speaker field on top of the engine's scores, on the raw
    candidate rows (only the final hits become Rows)."""
    by_position = {(v[1], v[2]): float(v[8]) for v in found}
    cache: dict[Any, set[str]] = {}
    ranked = []
    for values in found:
        thread, seq = values[1], values[2]
        score = float(values[8]) + NEIGHBOUR_WEIGHT * (
            by_position.get((thread, seq - 1), 0.0) + by_position.get((thread, seq + 1), 0.0)
        )
        if asked and asked & _speaker_words(values, asked, cache):
            score *= SPEAKER_BOOST
        ranked.append((score, values))
    # Ties: the newer message first (what the user said last is likelier still true); the
    # sort is stable, so order by time first, then by score.
    ranked.sort(key=lambda pair: pair[1][5], reverse=True)
    ranked.sort(key=lambda pair: pair[0], reverse=True)
    return ranked


def _attach_neighbours(hits: list[RawHit], message_range: tuple[int, int]) -> None:
    """Fill each hit's neighbours (``before``, ``after`` ordinary messages) with one query.
    Summary rows are skipped over, so a window reaches one row further per summary met
    (at most one between two ordinary messages: one per compaction run)."""
    before, after = message_range
    if not hits or not (before or after):
        return
    sqlite = connection.vendor == "sqlite"
    clauses, params = [], []
    for hit in hits:
        seq = hit.message.sequence_number
        clauses.append("(m.thread_id = %s AND m.sequence_number BETWEEN %s AND %s)")
        thread = hit.message.thread_id
        params += [thread.hex if sqlite else thread, seq - 2 * before, seq + 2 * after]
    sql = f"""
        SELECT {_COLUMNS} FROM memoryapp_message AS m
        JOIN memoryapp_thread AS t ON t.id = m.thread_id
        WHERE ({" OR ".join(clauses)}) AND {"m.is_summary = 0" if sqlite else "NOT m.is_summary"}
        ORDER BY m.sequence_number
    """
    speakers: dict[Any, Any] = {}
    by_thread: dict[uuid.UUID, list[Row]] = {}
    for values in _fetch(sql, params):
        row = _row(values, speakers)
        by_thread.setdefault(row.thread_id, []).append(row)
    for hit in hits:
        seq = hit.message.sequence_number
        rows = by_thread.get(hit.message.thread_id, [])
        earlier = [r for r in rows if r.sequence_number < seq][-before:] if before else []
        hit.neighbours = earlier + [r for r in rows if r.sequence_number > seq][:after]


def message_search(
    *,
    project: Project,
    dataset: str,
    query: str,
    limit: int = 10,
    exclude_thread_id: uuid.UUID | None = None,
    message_range: tuple[int, int] | None = None,
) -> list[RawHit]:
    """Messages of ``dataset`` in ``project`` matching ``query``, best first (module doc).

    At most ``limit`` RawHits. ``message_range`` ``(before, after)`` (each 0..RANGE_MAX)
    fixes the neighbours each hit carries; None means the reply after a question. Summary
    rows and the thread ``exclude_thread_id`` are left out; compacted rows are included
    (they are long-term memory now). A query with no words, or a database without
    full-text search, returns [].
    """
    terms = query_terms(query)
    if not terms or limit < 1:
        return []
    search = {"sqlite": _candidates_sqlite, "postgresql": _candidates_postgresql}.get(
        connection.vendor
    )
    if search is None:
        return []
    found = search(project=project, dataset=dataset, terms=terms, exclude=exclude_thread_id)
    speakers: dict[Any, Any] = {}
    ranked = _rank(found, set(query_words(query)))[:limit]
    hits = [RawHit(message=_row(values, speakers), score=score) for score, values in ranked]
    if message_range is None:  # the reply to a question, read along with the candidates
        for hit, (_, values) in zip(hits, ranked, strict=True):
            if values[9] is not None:
                hit.neighbours = [_row(values[9:], speakers)]
    else:
        _attach_neighbours(hits, message_range)
    return hits


def rebuild_search_index() -> None:
    """Re-index every message for full-text search (SQLite only; PostgreSQL's stored
    vector is maintained by the database). Run after ``VACUUM``, which may renumber rowids
    (the rowids queued for indexing too: the queue is emptied, every row being indexed)."""
    if connection.vendor == "sqlite":
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")
            cursor.execute(f"DELETE FROM {FTS_PENDING}")

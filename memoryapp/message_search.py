"""Raw-message search: recall's raw layer (DESIGN.md section 5, "POST /recall").

How a query is answered, in order:

1. **Candidates** from the database's full-text engine over the dataset's messages that
   can be evidence (evidence_sql, "What is searched" below; other threads than the
   caller's): every message with a query word, by SQLite FTS5 over the porter-stemmed
   index or PostgreSQL's stored ``search_vector`` (migrations 0008, 0019: 'english' with
   accents folded, as FTS5 folds them), with, per
   query word, whether the message has it.
   Past POOL matches, the engine's best POOL (FTS5 ``bm25()``, ``ts_rank_cd``). The
   user's words are never handed to the engine's syntax: each is quoted (FTS5) or goes
   through ``plainto_tsquery``, OR-ed.
   **Scored** by BM25 here (memoryapp.bm25), the same on both engines: N from the scope's
   thread counters, df counted in the pool (by the engine past POOL), avgdl the pool's.
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

**What is searched.** Evidence is what the conversation's participants said. Never
searched, nor returned as a neighbour: summary rows (compaction's, not anybody's words);
memory-tool plumbing (spec 004: an agent's ``open_memory(...)``/``close_memory(...)`` call
and the tool's result, recorded with ``metadata.toolCall`` / ``metadata.toolResult``);
and a reply the playground's chat turn wrote (a Turn's ``assistant_message``): the model
wrote it from the memory blocks the turn handed it, so as evidence it would echo memory
back as a second, newer source, outranking the statement it quotes and outliving that
statement's invalidation (docs/decisions.md, "What recall's raw layer treats as evidence").
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

from memoryapp import bm25
from memoryapp.models import Project
from memoryapp.query_intent import SearchQuery
from memoryapp.search_words import search_text
from memoryapp.sql import FTS_TABLE, search_index_catch_up, search_index_mark_all
from memoryapp.stopwords import FUNCTION_WORDS

# PostgreSQL's 'english' with accents folded (migration 0019), like SQLite's FTS5 tables.
PG_SEARCH_CONFIG = "memoryapp_english"
# How many full-text matches are scored, the engine's best first; a query whose matches
# fit holds every match, so BM25's document frequencies are counted in the pool itself.
POOL = 400
NEIGHBOUR_WEIGHT = 0.4
SPEAKER_BOOST = 1.6
# A message by the role the query asks about (memoryapp.query_intent: a first-person
# question is about the user) is multiplied by this.
ROLE_BOOST = 1.5
# Upper bound on query words sent to the engine: a pasted essay must not become a
# thousand-term OR query.
MAX_QUERY_TERMS = 32
RANGE_MAX = 5
# How many more rows a neighbour window reads past the rows it needs, for the rows that
# are no evidence between a hit and its neighbours (an agent's tool calls: two rows each).
NEIGHBOUR_SKIP = 6

_WORD = re.compile(r"\w+", re.UNICODE)
# Words that carry no meaning for search; on PostgreSQL the 'english' configuration drops
# them anyway, on SQLite they would match nearly every row.
STOP_WORDS = FUNCTION_WORDS | frozenset(
    [
        "am",
        "as",
        "been",
        "but",
        "by",
        "he",
        "her",
        "him",
        "his",
        "i",
        "if",
        "its",
        "no",
        "she",
        "so",
        "than",
        "their",
        "them",
        "then",
        "there",
        "they",
        "too",
        "whom",
    ]
)


def query_words(text: str) -> list[str]:
    """Every distinct lower-cased word of ``text``, in order, apostrophes read as the
    indexes read them (memoryapp.search_words: "Mara's" is "mara", never "s")."""
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(search_text(text))))


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
# What the pool reads per match (never the content: only the final hits are read whole):
# id, thread, sequence number, time, role, speaker (speaker_sql), then size, length, flags.
_POOL = "m.id, m.thread_id, m.sequence_number, {time}, m.role"
# The time as a number (only compared, for ties): parsing every candidate's timestamp
# into a datetime cost more than scoring it.
_TIME = {"sqlite": "julianday(m.created_at)", "postgresql": "EXTRACT(EPOCH FROM m.created_at)"}
_ROLE, _SPEAKER, _SIZE, _LENGTH, _FLAGS = 4, 5, 6, 7, 8


def speaker_sql() -> str:
    """SQL for speaker_name on the row ``m`` of thread ``t``: the message's
    ``metadata.agentName``, else the thread's ``metadata.participants[role]``; blank
    counts as missing."""
    if connection.vendor == "sqlite":
        own = "json_extract(m.metadata, '$.agentName')"
        theirs = "json_extract(t.metadata, '$.participants.' || m.role)"
    else:
        own, theirs = "m.metadata ->> 'agentName'", "t.metadata -> 'participants' ->> m.role"
    return f"COALESCE(NULLIF(TRIM({own}), ''), NULLIF(TRIM({theirs}), ''))"


def evidence_sql() -> str:
    """SQL condition on the message row ``m``: it can be evidence (module doc, "What is
    searched"). Not a summary row; not memory-tool plumbing (an agent's memory-tool call,
    ``metadata.toolCall``, or its result, ``metadata.toolResult``: spec 004, recorded by
    memoryapp.notes); not a reply the playground's chat turn wrote (a Turn's
    ``assistant_message``: the model's words, written from the memory the turn handed it)."""
    if connection.vendor == "sqlite":
        plumbing = (
            "json_type(m.metadata, '$.toolCall') IS NOT NULL "
            "OR json_type(m.metadata, '$.toolResult') IS NOT NULL"
        )
        summary = "m.is_summary = 0"
    else:
        plumbing = "m.metadata -> 'toolCall' IS NOT NULL OR m.metadata -> 'toolResult' IS NOT NULL"
        summary = "NOT m.is_summary"
    turn = "EXISTS (SELECT 1 FROM memoryapp_turn AS u WHERE u.assistant_message_id = m.id)"
    # Only the model's side is read further: a user's message is never either.
    return f"{summary} AND NOT (m.role IN ('assistant', 'tool') AND ({plumbing} OR {turn}))"


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


@dataclass(frozen=True, slots=True)
class _Scope:
    """The messages a search reads: ``project``'s ``dataset``, less one thread."""

    project: Project
    dataset: str
    exclude: uuid.UUID | None

    def threads_sql(self, alias: str) -> tuple[str, list[Any]]:
        """``(condition on thread alias, params)``."""
        sql = f"{alias}.project_id = %s AND {alias}.dataset = %s"
        params: list[Any] = [self.project.pk, self.dataset]
        if self.exclude is not None:
            sql += f" AND {alias}.id <> %s"
            # Django stores UUIDs as 32 hex characters on SQLite
            params.append(self.exclude.hex if connection.vendor == "sqlite" else self.exclude)
        return sql, params


def _size_sql(scope: _Scope) -> tuple[str, list[Any]]:
    # N for BM25: the scope's rows, read off the thread counters (summaries included: a
    # count of the message rows themselves would read the whole dataset every call).
    where, params = scope.threads_sql("z")
    return (
        f"(SELECT COALESCE(SUM(z.next_sequence - 1), 0) FROM memoryapp_thread AS z WHERE {where})",
        params,
    )


def _pool_sqlite(scope: _Scope, terms: list[str], ordered: bool) -> list[tuple[Any, ...]]:
    # Rows appended since the last catch-up are queued, not yet indexed (migration 0015).
    search_index_catch_up()
    size, size_params = _size_sql(scope)
    where, params = scope.threads_sql("t")
    # Per word, whether the row has it: each IN list is read once from the index.
    flags = ", ".join(
        [f"{FTS_TABLE}.rowid IN (SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s)"]
        * len(terms)
    )
    sql = f"""
        SELECT {_POOL.format(time=_TIME[connection.vendor])}, {speaker_sql()}, {size},
               length(m.content), {flags}
        FROM {FTS_TABLE}
        JOIN memoryapp_message AS m ON m.rowid = {FTS_TABLE}.rowid
        JOIN memoryapp_thread AS t ON t.id = m.thread_id
        WHERE {FTS_TABLE} MATCH %s AND {where} AND {evidence_sql()}
        {f"ORDER BY bm25({FTS_TABLE}), m.created_at DESC" if ordered else ""}
        LIMIT %s
    """
    each = [fts5_match_expression([t]) for t in terms]
    limit = POOL if ordered else POOL + 1
    return _fetch(sql, [*size_params, *each, fts5_match_expression(terms), *params, limit])


def _tsqueries(count: int) -> str:
    # One tsquery per word (w0, w1, ...) and their OR (query), built once per statement.
    # plainto_tsquery ignores every operator character, so user input cannot error; a
    # word that is a stop word becomes an empty query, which || skips and matches nothing.
    words = [f"plainto_tsquery('{PG_SEARCH_CONFIG}', %s) AS w{i}" for i in range(count)]
    return f"SELECT *, {' || '.join(f'w{i}' for i in range(count))} AS query FROM (SELECT {', '.join(words)}) AS w"


def _pool_postgresql(scope: _Scope, terms: list[str], ordered: bool) -> list[tuple[Any, ...]]:
    size, size_params = _size_sql(scope)
    where, params = scope.threads_sql("t")
    flags = ", ".join(f"m.search_vector @@ q.w{i}" for i in range(len(terms)))
    sql = f"""
        SELECT {_POOL.format(time=_TIME[connection.vendor])}, {speaker_sql()}, {size},
               length(m.content), {flags}
        FROM memoryapp_message AS m
        JOIN memoryapp_thread AS t ON t.id = m.thread_id,
             ({_tsqueries(len(terms))}) AS q
        WHERE m.search_vector @@ q.query AND {where} AND {evidence_sql()}
        {"ORDER BY ts_rank_cd(m.search_vector, q.query) DESC, m.created_at DESC" if ordered else ""}
        LIMIT %s
    """
    return _fetch(sql, [*size_params, *terms, *params, POOL if ordered else POOL + 1])


def _frequencies(scope: _Scope, terms: list[str]) -> list[int]:
    """Per query term, how many messages of the scope contain it, counted by the engine
    (only for a pool cut at POOL, whose own counts fall short)."""
    where, params = scope.threads_sql("t")
    join = "JOIN memoryapp_thread AS t ON t.id = m.thread_id"
    if connection.vendor == "sqlite":
        one = f"""(SELECT COUNT(*) FROM {FTS_TABLE}
                   JOIN memoryapp_message AS m ON m.rowid = {FTS_TABLE}.rowid {join}
                   WHERE {FTS_TABLE} MATCH %s AND {where} AND {evidence_sql()})"""
        sql = "SELECT " + ", ".join([one] * len(terms))
        values = [v for t in terms for v in (fts5_match_expression([t]), *params)]
    else:
        counts = ", ".join(
            f"COUNT(*) FILTER (WHERE m.search_vector @@ q.w{i})" for i in range(len(terms))
        )
        sql = f"""SELECT {counts} FROM memoryapp_message AS m {join},
                  ({_tsqueries(len(terms))}) AS q
                  WHERE m.search_vector @@ q.query AND {where} AND {evidence_sql()}"""
        values = [*terms, *params]
    (row,) = _fetch(sql, values)
    return [int(count or 0) for count in row]


def _speaker_words(speaker: Any, cache: dict[Any, set[str]]) -> set[str]:
    if speaker not in cache:
        cache[speaker] = set(query_words(speaker)) if isinstance(speaker, str) else set()
    return cache[speaker]


def _bm25(
    scope: _Scope,
    terms: list[str],
    pool: list[tuple[Any, ...]],
    weights: Sequence[float],
    alternatives: Sequence[int] = (),
) -> list[float]:
    """BM25 (memoryapp.bm25, each term at its weight) of every pool row. When the pool
    holds every match, df is counted in it; when it was cut at POOL, the engine counts df
    over the scope."""
    hits = [[bool(flag) for flag in values[_FLAGS:]] for values in pool]
    lengths = [int(values[_LENGTH] or 0) for values in pool]
    corpus = bm25.pool_corpus(hits, lengths, int(pool[0][_SIZE]) if pool else 0)
    if len(pool) >= POOL:
        corpus = bm25.Corpus(corpus.size, corpus.mean_length, _frequencies(scope, terms))
    return bm25.scores(hits, lengths, corpus, weights, alternatives)


def _rank(
    pool: list[tuple[Any, ...]],
    scores: list[float],
    asked: set[str],
    roles: frozenset[str] = frozenset(),
) -> list[tuple[float, tuple[Any, ...]]]:
    """Neighbour evidence, the speaker field and the asked role (ROLE_BOOST) on top of
    the BM25 scores, on the raw candidate rows (only the final hits become Rows)."""
    by_position = {(v[1], v[2]): s for v, s in zip(pool, scores, strict=True)}
    cache: dict[Any, set[str]] = {}
    ranked = []
    for values, own in zip(pool, scores, strict=True):
        thread, seq = values[1], values[2]
        score = own + NEIGHBOUR_WEIGHT * (
            by_position.get((thread, seq - 1), 0.0) + by_position.get((thread, seq + 1), 0.0)
        )
        if asked and asked & _speaker_words(values[_SPEAKER], cache):
            score *= SPEAKER_BOOST
        if values[_ROLE] in roles:
            score *= ROLE_BOOST
        ranked.append((score, values))
    # Ties: the newer message first (what the user said last is likelier still true),
    # then the later in its thread, then by thread id (the pool comes in no set order);
    # the sort is stable, so order by those first, then by score.
    ranked.sort(key=lambda pair: (float(pair[1][3]), pair[1][2], pair[1][1]), reverse=True)
    ranked.sort(key=lambda pair: pair[0], reverse=True)
    return ranked


def _read_rows(ids: list[Any]) -> dict[Any, Row]:
    """The Rows of message ``ids`` (as the pool read them), by those ids; one query."""
    if not ids:
        return {}
    sql = f"""
        SELECT {_COLUMNS} FROM memoryapp_message AS m
        JOIN memoryapp_thread AS t ON t.id = m.thread_id
        WHERE m.id IN ({", ".join(["%s"] * len(ids))})
    """
    speakers: dict[Any, Any] = {}
    return {values[0]: _row(values, speakers) for values in _fetch(sql, list(ids))}


def _attach_neighbours(hits: list[RawHit], message_range: tuple[int, int]) -> None:
    """Fill each hit's neighbours (``before``, ``after`` ordinary messages) with one query.
    Rows that are not evidence (evidence_sql) are skipped over, so a window reaches
    further per such row met: a summary (one per compaction run) and up to NEIGHBOUR_SKIP
    rows of memory-tool plumbing or playground replies beside it."""
    before, after = message_range
    if not hits or not (before or after):
        return
    sqlite = connection.vendor == "sqlite"
    clauses, params = [], []
    for hit in hits:
        seq = hit.message.sequence_number
        clauses.append("(m.thread_id = %s AND m.sequence_number BETWEEN %s AND %s)")
        thread = hit.message.thread_id
        low = seq - 2 * before - (NEIGHBOUR_SKIP if before else 0)
        high = seq + 2 * after + (NEIGHBOUR_SKIP if after else 0)
        params += [thread.hex if sqlite else thread, low, high]
    sql = f"""
        SELECT {_COLUMNS} FROM memoryapp_message AS m
        JOIN memoryapp_thread AS t ON t.id = m.thread_id
        WHERE ({" OR ".join(clauses)}) AND {evidence_sql()}
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
    search: SearchQuery | None = None,
) -> list[RawHit]:
    """Messages of ``dataset`` in ``project`` matching ``query``, best first (module doc).
    ``search``: the query's terms with their weights and the role it asks about
    (memoryapp.query_intent); None: query_terms, each at 1.0, no role.

    At most ``limit`` RawHits. ``message_range`` ``(before, after)`` (each 0..RANGE_MAX)
    fixes the neighbours each hit carries; None means the reply after a question. Summary
    rows and the thread ``exclude_thread_id`` are left out; compacted rows are included
    (they are long-term memory now). A query with no words, or a database without
    full-text search, returns [].
    """
    terms = list(search.terms) if search is not None else query_terms(query)
    weights = list(search.weights) if search is not None else [1.0] * len(terms)
    roles = search.roles if search is not None else frozenset()
    if not terms or limit < 1:
        return []
    engine = {"sqlite": _pool_sqlite, "postgresql": _pool_postgresql}.get(connection.vendor)
    if engine is None:
        return []
    scope = _Scope(project=project, dataset=dataset, exclude=exclude_thread_id)
    # Every match, unordered (ranking them all in the engine costs more than the search);
    # past POOL, the engine's best POOL.
    pool = engine(scope, terms, False)
    if len(pool) > POOL:
        pool = engine(scope, terms, True)
    scores = _bm25(scope, terms, pool, weights, search.related if search is not None else ())
    ranked = _rank(pool, scores, set(query_words(query)), roles)[:limit]
    rows = _read_rows([values[0] for _, values in ranked])
    hits = [RawHit(message=rows[values[0]], score=score) for score, values in ranked]
    _neighbours(hits, message_range)
    return hits


def _neighbours(hits: list[RawHit], message_range: tuple[int, int] | None) -> None:
    if message_range is None:  # the reply to a question
        _attach_neighbours([h for h in hits if "?" in h.message.content], (0, 1))
    else:
        _attach_neighbours(hits, message_range)


def messages_as_hits(
    *,
    project: Project,
    dataset: str,
    message_ids: Sequence[str],
    exclude_thread_id: uuid.UUID | None = None,
    message_range: tuple[int, int] | None = None,
) -> list[RawHit]:
    """The messages ``message_ids`` as RawHits (score 0.0, neighbours as message_search
    gives them), in that order; an id that is not a message of ``dataset`` in
    ``project`` that can be evidence (evidence_sql), or is in ``exclude_thread_id``, is
    left out. Two queries at most. (Recall brings in the messages a current fact was
    drawn from this way.)"""
    wanted = []
    for value in message_ids:
        try:
            wanted.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    if not wanted:
        return []
    sqlite = connection.vendor == "sqlite"
    scope = _Scope(project=project, dataset=dataset, exclude=exclude_thread_id)
    where, params = scope.threads_sql("t")
    sql = f"""
        SELECT {_COLUMNS} FROM memoryapp_message AS m
        JOIN memoryapp_thread AS t ON t.id = m.thread_id
        WHERE m.id IN ({", ".join(["%s"] * len(wanted))}) AND {where} AND {evidence_sql()}
    """
    ids = [w.hex if sqlite else w for w in wanted]
    speakers: dict[Any, Any] = {}
    rows = {row.id: row for row in (_row(v, speakers) for v in _fetch(sql, [*ids, *params]))}
    hits = [RawHit(message=rows[w], score=0.0) for w in dict.fromkeys(wanted) if w in rows]
    _neighbours(hits, message_range)
    return hits


def rebuild_search_index() -> None:
    """Re-index every message for full-text search (SQLite only; PostgreSQL's stored
    vector is maintained by the database). Run after ``VACUUM``, which may renumber rowids
    (every row is indexed: the mark of rows waiting for the index moves to the end)."""
    if connection.vendor == "sqlite":
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")
            search_index_mark_all(cursor)

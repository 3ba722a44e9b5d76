"""Fact and episode search for recall, read in raw SQL (memoryapp.recall).

The same matching and ranking as memoryapp.semantic.fact_search and
memoryapp.episodic.episode_search (SQLite FTS5 ``bm25()`` over the tables of migrations
0007/0011; PostgreSQL ``ts_rank_cd`` over the stored ``search_vector`` of 0013), but
each layer is one query that returns the resource's columns, serialised here in the shape
of memoryapp.serializers (``fact_to_dict``, ``episode_to_dict``, ``entity_to_dict``).
Building model instances, a select_related and a prefetch per call cost recall ~35 ms a
question on LoCoMo; these cost one round trip each.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from memoryapp.message_search import PG_SEARCH_CONFIG, fts5_match_expression
from memoryapp.models import Project
from memoryapp.timefmt import iso_ms

FACT_FTS = "memoryapp_fact_fts"
EPISODE_FTS = "memoryapp_episode_fts"
# The stored, GIN-indexed vectors of migration 0013: ranking reads them instead of
# recomputing to_tsvector for every matching row.
PG_FACT_VECTOR = "f.search_vector"
PG_EPISODE_VECTOR = "e.search_vector"


def _fetch(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        return cursor.fetchall()


def _time(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):  # SQLite: naive UTC text
        value = datetime.fromisoformat(value).replace(tzinfo=UTC)
    return iso_ms(value)


def _id(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and len(value) == 32:  # SQLite: 32 hex digits, lower-case
        v = value.lower()
        return f"{v[:8]}-{v[8:12]}-{v[12:16]}-{v[16:20]}-{v[20:]}"
    return str(value if isinstance(value, uuid.UUID) else uuid.UUID(str(value)))


def _list(value: Any) -> list[str]:
    # Django reads JSON columns as text on both engines.
    parsed = json.loads(value) if isinstance(value, str | bytes) else value
    return [str(v) for v in parsed] if isinstance(parsed, list) else []


def _search_sql(
    *, table_fts: str, alias: str, pg_vector: str, terms: list[str]
) -> tuple[str, str, str, list[Any]]:
    """The engine's pieces for ``alias`` matching ``terms``: ``(join, condition, score,
    params)``; the params go before the query's own."""
    if connection.vendor == "sqlite":
        join = f"JOIN {table_fts} ON {table_fts}.rowid = {alias}.rowid"
        return join, f"{table_fts} MATCH %s", f"-bm25({table_fts})", [fts5_match_expression(terms)]
    tsquery = " || ".join([f"plainto_tsquery('{PG_SEARCH_CONFIG}', %s)"] * len(terms))
    join = f"CROSS JOIN (SELECT {tsquery} AS query) AS q"
    return join, f"{pg_vector} @@ q.query", f"ts_rank_cd({pg_vector}, q.query)", list(terms)


FACT_COLUMNS = (
    "f.id, f.text, s.name, f.attribute, f.value, f.episode_id, f.thread_id, "
    "f.source_message_ids, f.valid_from, f.invalidated_at, f.invalidated_by_id, f.subject_id"
)


def _fact_row(row: Sequence[Any]) -> tuple[dict[str, Any], str | None]:
    """(fact resource without "entities" filled, subject entity id) from a row that
    starts with FACT_COLUMNS."""
    fact = {
        "factId": _id(row[0]),
        "text": row[1],
        "subject": row[2],
        "attribute": row[3] or None,
        "value": row[4] or None,
        "entities": [],
        "episodeId": _id(row[5]),
        "threadId": _id(row[6]),
        "sourceMessageIds": _list(row[7]),
        "validFrom": _time(row[8]),
        "invalidatedAt": _time(row[9]),
        "invalidatedBy": _id(row[10]),
    }
    return fact, _id(row[11])


def fact_search_rows(
    *,
    project: Project,
    dataset: str,
    terms: list[str],
    limit: int,
    include_invalidated: bool = False,
    stale_limit: int = 0,
) -> list[tuple[dict[str, Any], float, str | None]]:
    """Facts of ``dataset`` matching any of ``terms``, best first, as ``(fact resource
    without "entities", score, subject entity id)``.

    ``include_invalidated``: the best ``limit`` facts, current or not. Otherwise the best
    ``limit`` current facts and, with ``stale_limit``, up to ``stale_limit`` invalidated
    ones among the best ``limit + stale_limit`` of either kind (memoryapp.recall puts
    what replaced them in their place). [] for no terms or an engine without full-text
    search."""
    if not terms or limit < 1 or connection.vendor not in ("sqlite", "postgresql"):
        return []
    join, condition, score, params = _search_sql(
        table_fts=FACT_FTS, alias="f", pg_vector=PG_FACT_VECTOR, terms=terms
    )

    def search(only_current: bool, count: int) -> list[tuple[Any, ...]]:
        sql = f"""
            SELECT {FACT_COLUMNS}, {score} AS score
            FROM memoryapp_fact AS f
            {join}
            LEFT JOIN memoryapp_entity AS s ON s.id = f.subject_id
            WHERE {condition} AND f.project_id = %s AND f.dataset = %s
              {"AND f.invalidated_at IS NULL" if only_current else ""}
            ORDER BY score DESC, f.valid_from DESC
            LIMIT %s
        """
        return _fetch(sql, [*params, project.pk, dataset, count])

    if include_invalidated or stale_limit < 1:
        rows = search(not include_invalidated, limit)
    else:
        # The best of either kind in one top-N search (as cheap as current facts alone);
        # only when invalidated facts crowded out current ones is the current-only
        # search made as well.
        rows = search(False, limit + stale_limit)
        current = [row for row in rows if row[9] is None]
        if len(current) < limit and len(rows) == limit + stale_limit:
            current = search(True, limit)
        stale = [row for row in rows if row[9] is not None][:stale_limit]
        rows = sorted(current[:limit] + stale, key=lambda row: -float(row[12]))
    out = []
    for row in rows:
        fact, subject_id = _fact_row(row)
        out.append((fact, float(row[12]), subject_id))
    return out


def current_successors(
    *, project: Project, fact_ids: Sequence[str]
) -> dict[str, tuple[dict[str, Any], float, str | None]]:
    """For each invalidated fact of ``fact_ids``, the current fact that replaced it: its
    ``invalidated_by``, followed while that one was invalidated in turn, as
    fact_search_rows's triples (score 0.0) by the invalidated fact's id. A fact whose
    chain ends nowhere current (the newer fact deleted) is left out. One query."""
    if not fact_ids:
        return {}
    sqlite = connection.vendor == "sqlite"
    ids = [uuid.UUID(i).hex if sqlite else uuid.UUID(i) for i in fact_ids]
    marks = ", ".join(["%s"] * len(ids))
    sql = f"""
        WITH RECURSIVE chain(start, id, depth) AS (
            SELECT f.id, f.invalidated_by_id, 1 FROM memoryapp_fact AS f
            WHERE f.project_id = %s AND f.id IN ({marks}) AND f.invalidated_by_id IS NOT NULL
            UNION ALL
            SELECT c.start, g.invalidated_by_id, c.depth + 1
            FROM chain AS c JOIN memoryapp_fact AS g ON g.id = c.id
            WHERE g.invalidated_at IS NOT NULL AND g.invalidated_by_id IS NOT NULL
              AND c.depth < {SUCCESSION_MAX}
        )
        SELECT {FACT_COLUMNS}, c.start
        FROM chain AS c
        JOIN memoryapp_fact AS f ON f.id = c.id
        LEFT JOIN memoryapp_entity AS s ON s.id = f.subject_id
        WHERE f.invalidated_at IS NULL
    """
    out = {}
    for row in _fetch(sql, [project.pk, *ids]):
        fact, subject_id = _fact_row(row)
        out[_id(row[12]) or ""] = (fact, 0.0, subject_id)
    return out


# How many replacements current_successors follows (a fact replaced, its replacement
# replaced, ...); a longer chain, or a cycle, ends there.
SUCCESSION_MAX = 16


def fact_entities(
    facts: list[tuple[dict[str, Any], float, str | None]],
) -> list[dict[str, Any]]:
    """Fill each fact's ``entities`` (its subject first, then the others by name) and
    return the entity resources of them all, in order of first appearance, each with its
    ``factCount`` (current facts mentioning it). One query."""
    fact_ids = [f["factId"] for f, _, _ in facts]
    if not fact_ids:
        return []
    sqlite = connection.vendor == "sqlite"
    ids = [uuid.UUID(i).hex if sqlite else uuid.UUID(i) for i in fact_ids]
    marks = ", ".join(["%s"] * len(ids))
    # Counted once per entity (not per fact-entity pair): a user's own entity is in most
    # facts. (fact, entity) is unique in the link table, so COUNT(*) counts facts.
    sql = f"""
        WITH pairs AS (
            SELECT fact_id, entity_id FROM memoryapp_fact_entities WHERE fact_id IN ({marks})
        ), counts AS (
            SELECT x.entity_id, COUNT(*) AS n
            FROM memoryapp_fact_entities AS x
            JOIN memoryapp_fact AS xf ON xf.id = x.fact_id
            WHERE x.entity_id IN (SELECT entity_id FROM pairs) AND xf.invalidated_at IS NULL
            GROUP BY x.entity_id
        )
        SELECT p.fact_id, e.id, e.name, e.kind, e.summary, COALESCE(c.n, 0)
        FROM pairs AS p
        JOIN memoryapp_entity AS e ON e.id = p.entity_id
        LEFT JOIN counts AS c ON c.entity_id = e.id
    """
    linked: dict[str, dict[str, str]] = {}  # fact id -> entity name -> entity id
    entities: dict[str, dict[str, Any]] = {}
    for fact_id, entity_id, name, kind, summary, count in _fetch(sql, ids):
        key = _id(entity_id) or ""
        linked.setdefault(_id(fact_id) or "", {})[name] = key
        entities[key] = {
            "entityId": key,
            "name": name,
            "kind": kind,
            "summary": summary,
            "factCount": int(count),
        }
    ordered: dict[str, None] = {}
    for fact, _, subject_id in facts:
        by_name = linked.get(fact["factId"], {})
        subject = fact["subject"]
        others = sorted((n for n in by_name if n != subject), key=str.casefold)
        fact["entities"] = ([subject] if subject else []) + others
        if subject_id is not None and subject_id in entities:
            ordered[subject_id] = None
        for name in others:
            ordered[by_name[name]] = None
    return [entities[i] for i in ordered]


def episode_search_rows(
    *, project: Project, dataset: str, terms: list[str], limit: int
) -> list[tuple[dict[str, Any], float]]:
    """Episodes of ``dataset`` whose title or summary matches any of ``terms``, best
    first, as ``(episode resource + "quotedMessageIds", score)``."""
    if not terms or limit < 1 or connection.vendor not in ("sqlite", "postgresql"):
        return []
    join, condition, score, params = _search_sql(
        table_fts=EPISODE_FTS, alias="e", pg_vector=PG_EPISODE_VECTOR, terms=terms
    )
    sql = f"""
        SELECT {EPISODE_COLUMNS}, {score} AS score
        FROM memoryapp_episode AS e
        {join}
        WHERE {condition} AND e.project_id = %s AND e.dataset = %s
        ORDER BY score DESC, e.started_at DESC
        LIMIT %s
    """
    return [
        (episode_row(row), float(row[-1]))
        for row in _fetch(sql, [*params, project.pk, dataset, limit])
    ]


EPISODE_COLUMNS = (
    "e.id, e.thread_id, e.dataset, e.from_sequence, e.to_sequence, e.title, e.summary, "
    "e.created, e.quoted_message_ids, e.started_at, e.ended_at"
)


def episode_row(row: Sequence[Any]) -> dict[str, Any]:
    """An episode resource (serializers.episode_to_dict) plus ``quotedMessageIds`` from a
    row of EPISODE_COLUMNS."""
    return {
        "episodeId": _id(row[0]),
        "threadId": _id(row[1]),
        "dataset": row[2],
        "fromSequence": int(row[3]),
        "toSequence": int(row[4]),
        "title": row[5],
        "summary": row[6],
        "startedAt": _time(row[9] or row[7]),
        "endedAt": _time(row[10] or row[7]),
        "createdAt": _time(row[7]),
        "quotedMessageIds": _list(row[8]),
    }


def episodes_by_id(*, project: Project, episode_ids: list[str]) -> list[dict[str, Any]]:
    """The episodes of ``episode_ids`` in ``project`` (as episode_row), in that order."""
    if not episode_ids:
        return []
    sqlite = connection.vendor == "sqlite"
    ids = [uuid.UUID(i).hex if sqlite else uuid.UUID(i) for i in episode_ids]
    sql = f"""
        SELECT {EPISODE_COLUMNS} FROM memoryapp_episode AS e
        WHERE e.project_id = %s AND e.id IN ({", ".join(["%s"] * len(ids))})
    """
    found = {item["episodeId"]: item for item in map(episode_row, _fetch(sql, [project.pk, *ids]))}
    return [found[i] for i in episode_ids if i in found]

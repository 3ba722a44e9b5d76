"""Fact and episode search for recall, read in raw SQL (memoryapp.recall).

Matching as memoryapp.semantic.fact_search and memoryapp.episodic.episode_search (SQLite
FTS5 over the tables of migrations 0007/0011; PostgreSQL's stored ``search_vector`` of
0013/0019), but ranked by BM25 computed here (memoryapp.bm25, as the raw layer), so both
engines rank alike: the engine only says which row has which query word. Each layer
reads its matches' ids and flags in one query and the chosen rows' columns in another,
serialised here in the shape of memoryapp.serializers (``fact_to_dict``,
``episode_to_dict``, ``entity_to_dict``): building model instances, a select_related and
a prefetch per call cost recall ~35 ms a question on LoCoMo."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from memoryapp import bm25
from memoryapp.message_search import PG_SEARCH_CONFIG, fts5_match_expression
from memoryapp.models import Project
from memoryapp.query_intent import SearchQuery
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


def _tsqueries(count: int) -> str:
    # One tsquery per word (w0, w1, ...) and their OR (query); plainto_tsquery ignores
    # operator characters, and a stop word's empty query matches nothing.
    words = [f"plainto_tsquery('{PG_SEARCH_CONFIG}', %s) AS w{i}" for i in range(count)]
    anyone = " || ".join(f"w{i}" for i in range(count))
    return f"SELECT *, {anyone} AS query FROM (SELECT {', '.join(words)}) AS w"


@dataclass(frozen=True, slots=True)
class _Match:
    """The engine's pieces for rows of ``alias`` matching the query words: ``join`` (after
    FROM, its params first), ``flags`` (one boolean column per word, for the SELECT list,
    its params before the join's), ``condition`` (any word, for WHERE, its params after
    the join's)."""

    join: str
    join_params: list[Any]
    flags: list[str]
    flag_params: list[Any]
    condition: str
    condition_params: list[Any]


def _match_sql(*, table_fts: str, alias: str, pg_vector: str, terms: list[str]) -> _Match:
    if connection.vendor == "sqlite":
        one = f"{alias}.rowid IN (SELECT rowid FROM {table_fts} WHERE {table_fts} MATCH %s)"
        return _Match(
            join="",
            join_params=[],
            flags=[one] * len(terms),
            flag_params=[fts5_match_expression([t]) for t in terms],
            condition=one,
            condition_params=[fts5_match_expression(terms)],
        )
    return _Match(
        join=f"CROSS JOIN ({_tsqueries(len(terms))}) AS q",
        join_params=list(terms),
        flags=[f"{pg_vector} @@ q.w{i}" for i in range(len(terms))],
        flag_params=[],
        condition=f"{pg_vector} @@ q.query",
        condition_params=[],
    )


def _sortable_time(value: Any) -> datetime:
    if isinstance(value, str):  # SQLite: naive UTC text
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    return value if isinstance(value, datetime) else datetime.min.replace(tzinfo=UTC)


def _ranked(
    pool: list[tuple[Any, ...]], size: int, query: SearchQuery, weights: Sequence[float], flags_at: int
) -> list[tuple[float, tuple[Any, ...]]]:
    """BM25 (memoryapp.bm25, as the raw layer) of pool rows ``(id, newest time, second
    time, tie text, length, flag...)``, best first. Ties, the same on every engine: the
    newer first, then the later second time, then by text and id; the engine's own
    order never decides."""
    hits = [[bool(flag) for flag in row[flags_at:]] for row in pool]
    lengths = [int(row[4] or 0) for row in pool]
    corpus = bm25.pool_corpus(hits, lengths, size)
    scores = bm25.scores(hits, lengths, corpus, weights, query.related)
    ranked = list(zip(scores, pool, strict=True))
    ranked.sort(key=lambda pair: (str(pair[1][3]), _id(pair[1][0]) or ""))
    ranked.sort(
        key=lambda pair: (_sortable_time(pair[1][1]), _sortable_time(pair[1][2])), reverse=True
    )
    ranked.sort(key=lambda pair: pair[0], reverse=True)
    return ranked


def _count(table: str, project: Project, dataset: str) -> int:
    (row,) = _fetch(
        f"SELECT COUNT(*) FROM {table} WHERE project_id = %s AND dataset = %s",
        [project.pk, dataset],
    )
    return int(row[0])


def _attribute_sql(attributes: Sequence[tuple[str, str | None]]) -> tuple[str, list[Any]]:
    """SQL true when the fact ``f``'s attribute is one of ``attributes`` (``(name,
    value)``: ``name`` ending in "%" a prefix, ``value`` None any value); "" for none."""
    clauses, params = [], []
    for name, value in attributes:
        test = "LOWER(f.attribute) LIKE %s" if name.endswith("%") else "LOWER(f.attribute) = %s"
        params.append(name)
        if value is not None:
            test += " AND LOWER(f.value) = %s"
            params.append(value)
        clauses.append(f"({test})")
    return " OR ".join(clauses), params


def _fact_pool(
    project: Project, dataset: str, query: SearchQuery
) -> list[tuple[Any, ...]]:
    """Every fact of ``dataset`` that has a query word or an asked attribute: ``(id,
    valid_from, created, text, length, invalidated, flag per word [, attribute flag])``."""
    match = _match_sql(
        table_fts=FACT_FTS, alias="f", pg_vector=PG_FACT_VECTOR, terms=list(query.terms)
    )
    flags, flag_params = list(match.flags), list(match.flag_params)
    condition, condition_params = match.condition, list(match.condition_params)
    attribute, attribute_params = _attribute_sql(query.attributes)
    if attribute:
        flags.append(f"({attribute})")
        flag_params += attribute_params
        condition = f"({condition} OR {attribute})"
        condition_params += attribute_params
    sql = f"""
        SELECT f.id, f.valid_from, f.created, f.text, length(f.text),
               f.invalidated_at IS NOT NULL, {", ".join(flags)}
        FROM memoryapp_fact AS f
        {match.join}
        WHERE {condition} AND f.project_id = %s AND f.dataset = %s
    """
    params = [*flag_params, *match.join_params, *condition_params, project.pk, dataset]
    return _fetch(sql, params)


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
    query: SearchQuery,
    limit: int,
    include_invalidated: bool = False,
    stale_limit: int = 0,
) -> list[tuple[dict[str, Any], float, str | None]]:
    """Facts of ``dataset`` matching any word of ``query`` or an attribute it asks for
    (memoryapp.query_intent), best first, as ``(fact resource without "entities", score,
    subject entity id)``.

    Scored by BM25 here (memoryapp.bm25, each word at its weight, the attributes one more
    term), so SQLite and PostgreSQL rank alike: the engines only say which fact has which
    word. Ties, the same on both: the newer ``valid_from`` first, then the later
    extracted, then by text and id.

    ``include_invalidated``: the best ``limit`` facts, current or not. Otherwise the best
    ``limit`` current facts and, with ``stale_limit``, up to ``stale_limit`` invalidated
    ones among the best ``limit + stale_limit`` of either kind (memoryapp.recall puts
    what replaced them in their place). [] for no terms or an engine without full-text
    search."""
    if not query.terms or limit < 1 or connection.vendor not in ("sqlite", "postgresql"):
        return []
    pool = _fact_pool(project, dataset, query)
    if not pool:
        return []
    ranked = _ranked(
        pool, _count("memoryapp_fact", project, dataset), query, query.fact_weights, 6
    )
    if include_invalidated:
        chosen = ranked[:limit]
    else:
        current = [pair for pair in ranked if not pair[1][5]][:limit]
        stale = [pair for pair in ranked[: limit + stale_limit] if pair[1][5]][:stale_limit]
        chosen = [pair for pair in ranked if any(pair is c for c in current + stale)]
    ids = [row[0] for _, row in chosen]
    sql = f"""
        SELECT {FACT_COLUMNS}
        FROM memoryapp_fact AS f
        LEFT JOIN memoryapp_entity AS s ON s.id = f.subject_id
        WHERE f.id IN ({", ".join(["%s"] * len(ids))})
    """
    rows = {row[0]: row for row in _fetch(sql, ids)}
    out = []
    for score, pooled in chosen:
        fact, subject_id = _fact_row(rows[pooled[0]])
        out.append((fact, score, subject_id))
    return out


def current_successors(
    *, project: Project, fact_ids: Sequence[str]
) -> dict[str, tuple[dict[str, Any], float, str | None]]:
    """For each invalidated fact of ``fact_ids``, the current fact that replaced it: its
    ``invalidated_by``, followed while that one was invalidated in turn, as
    fact_search_rows's triples (score 0.0) by the invalidated fact's id. A fact whose
    chain ends nowhere current (the newer fact deleted) is left out. A chain that ends at
    an event (Fact.event: "The user sold the car.") goes on to the newest current value
    stated since, when there is one (_value_after). One query, and one per such event."""
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
        SELECT {FACT_COLUMNS}, c.start, f.event, f.valid_from
        FROM chain AS c
        JOIN memoryapp_fact AS f ON f.id = c.id
        LEFT JOIN memoryapp_entity AS s ON s.id = f.subject_id
        WHERE f.invalidated_at IS NULL
    """
    out = {}
    for row in _fetch(sql, [project.pk, *ids]):
        fact, subject_id = _fact_row(row)
        if row[13]:  # an event: what its attribute is now, when a value came after it
            later = _value_after(project=project, event=fact, subject_id=row[11], since=row[14])
            fact, subject_id = later or (fact, subject_id)
        out[_id(row[12]) or ""] = (fact, 0.0, subject_id)
    return out


def _value_after(
    *, project: Project, event: dict[str, Any], subject_id: Any, since: Any
) -> tuple[dict[str, Any], str | None] | None:
    """The newest current value (no event) of the event fact's subject and attribute
    stated no earlier than it (``since``, its valid_from as the engine gives it), as
    _fact_row gives it, or None. An event ended the old value but is no value itself
    (Fact.event): "now" after a sold car is the car driven since. One query."""
    if not event["attribute"] or subject_id is None:
        return None
    sql = f"""
        SELECT {FACT_COLUMNS}
        FROM memoryapp_fact AS f
        LEFT JOIN memoryapp_entity AS s ON s.id = f.subject_id
        WHERE f.project_id = %s AND f.subject_id = %s AND f.attribute = %s
          AND f.invalidated_at IS NULL AND f.single_valued = %s
          AND (f.event IS NULL OR f.event = %s) AND f.valid_from >= %s
        ORDER BY f.valid_from DESC, f.created DESC, f.id DESC
        LIMIT 1
    """
    rows = _fetch(sql, [project.pk, subject_id, event["attribute"], True, False, since])
    return _fact_row(rows[0]) if rows else None


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
    *, project: Project, dataset: str, query: SearchQuery, limit: int
) -> list[tuple[dict[str, Any], float]]:
    """Episodes of ``dataset`` whose title or summary has any word of ``query``, best
    first, as ``(episode resource + "quotedMessageIds", score)``: BM25 here, each word at
    its weight, as fact_search_rows; ties the newer first (``started_at``, then
    ``created``), then by title and id."""
    if not query.terms or limit < 1 or connection.vendor not in ("sqlite", "postgresql"):
        return []
    match = _match_sql(
        table_fts=EPISODE_FTS, alias="e", pg_vector=PG_EPISODE_VECTOR, terms=list(query.terms)
    )
    sql = f"""
        SELECT e.id, COALESCE(e.started_at, e.created), e.created, e.title,
               length(e.title) + length(e.summary) + 1, {", ".join(match.flags)}
        FROM memoryapp_episode AS e
        {match.join}
        WHERE {match.condition} AND e.project_id = %s AND e.dataset = %s
    """
    params = [*match.flag_params, *match.join_params, *match.condition_params]
    pool = _fetch(sql, [*params, project.pk, dataset])
    if not pool:
        return []
    size = _count("memoryapp_episode", project, dataset)
    ranked = _ranked(pool, size, query, query.weights, 5)[:limit]
    found = {e["episodeId"]: e for e in episodes_by_id(
        project=project, episode_ids=[_id(row[0]) or "" for _, row in ranked]
    )}
    return [(found[_id(row[0]) or ""], score) for score, row in ranked]


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


def invalidated_facts(
    *, project: Project, dataset: str, episode_ids: Sequence[str], thread_ids: Sequence[str]
) -> list[dict[str, Any]]:
    """The invalidated facts of ``dataset`` drawn in one of ``episode_ids`` or from a
    message of one of ``thread_ids``, as fact resources without "entities", oldest
    ``validFrom`` first (then by creation and id). One query; [] for no ids."""
    if not episode_ids and not thread_ids:
        return []
    sqlite = connection.vendor == "sqlite"

    def ids(values: Sequence[str]) -> list[Any]:
        return [uuid.UUID(v).hex if sqlite else uuid.UUID(v) for v in values]

    wanted, params = [], []
    for column, values in (("f.episode_id", episode_ids), ("f.thread_id", thread_ids)):
        if values:
            wanted.append(f"{column} IN ({', '.join(['%s'] * len(values))})")
            params += ids(values)
    sql = f"""
        SELECT {FACT_COLUMNS}
        FROM memoryapp_fact AS f
        LEFT JOIN memoryapp_entity AS s ON s.id = f.subject_id
        WHERE f.project_id = %s AND f.dataset = %s AND f.invalidated_at IS NOT NULL
          AND ({" OR ".join(wanted)})
        ORDER BY f.valid_from, f.created, f.id
    """
    return [_fact_row(row)[0] for row in _fetch(sql, [project.pk, dataset, *params])]

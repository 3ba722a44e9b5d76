"""Read models of the dashboard's Memory and Jobs pages (issue 8 item 6; issue 7).

Each function answers one page's question with a bounded number of queries; the views in
playground.memory_views only render what these return.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from django.db.models import Count, Q

from memoryapp import jobs
from memoryapp.models import Entity, Episode, Fact, Job, Message, Project, Thread
from memoryapp.paging import keyset_page

# Rows per page of a dataset's (and an entity's) lists; "Older" links page through the
# rest with the keyset cursors of memoryapp.paging.
EPISODES_PAGE_SIZE = 50
FACTS_PAGE_SIZE = 100
JOBS_SHOWN = 100


@dataclass
class DatasetRow:
    """One dataset of a project with its counts (the Memory tab)."""

    name: str
    threads: int = 0
    episodes: int = 0
    facts: int = 0
    entities: int = 0


def dataset_rows(*, project: Project) -> list[DatasetRow]:
    """Every dataset with a thread, an episode or a fact in ``project``, by name, with its
    thread, episode, current-fact and entity counts (four grouped queries)."""
    rows: dict[str, DatasetRow] = {}

    def add(qs: object, attr: str) -> None:
        for name, count in qs:  # type: ignore[attr-defined]
            setattr(rows.setdefault(name, DatasetRow(name)), attr, count)

    grouped = "dataset"
    add(Thread.objects.filter(project=project).values_list(grouped).annotate(n=Count("id")).order_by(), "threads")
    add(Episode.objects.filter(project=project).values_list(grouped).annotate(n=Count("id")).order_by(), "episodes")
    add(
        Fact.objects.current().filter(project=project).values_list(grouped).annotate(n=Count("id")).order_by(),
        "facts",
    )
    add(Entity.objects.filter(project=project).values_list(grouped).annotate(n=Count("id")).order_by(), "entities")
    return [rows[name] for name in sorted(rows)]


@dataclass
class EntityFacts:
    """An entity with its facts: current ones and invalidated ones (each invalidated
    fact carries ``invalidated_by`` loaded)."""

    entity: Entity | None
    current: list[Fact] = field(default_factory=list)
    invalidated: list[Fact] = field(default_factory=list)


def _facts_page(project: Project, dataset: str, cursor: str | None) -> tuple[list[Fact], str | None]:
    qs = Fact.objects.filter(project=project, dataset=dataset).select_related("subject", "invalidated_by")
    return keyset_page(qs, time_field="valid_from", cursor=cursor, limit=FACTS_PAGE_SIZE)


def facts_by_entity(
    *, project: Project, dataset: str, cursor: str | None = None
) -> tuple[list[EntityFacts], str | None]:
    """One page of the dataset's facts (FACTS_PAGE_SIZE, newest ``valid_from`` first,
    from ``cursor``) grouped by subject entity (by name; facts without a subject last),
    newest first within each group; and the cursor of the older page (None on the last).
    Raises InvalidInput (path ``cursor``) for a malformed cursor."""
    facts, next_cursor = _facts_page(project, dataset, cursor)
    groups: dict[object, EntityFacts] = {}
    for fact in facts:
        group = groups.setdefault(fact.subject_id, EntityFacts(fact.subject))
        (group.invalidated if fact.invalidated_at else group.current).append(fact)
    ordered = sorted(
        groups.values(), key=lambda g: (g.entity is None, g.entity.name.casefold() if g.entity else "")
    )
    return ordered, next_cursor


def entity_facts(*, entity: Entity, cursor: str | None = None) -> tuple[EntityFacts, str | None]:
    """One page of the facts about ``entity`` or mentioning it (FACTS_PAGE_SIZE, newest
    first, from ``cursor``), current and invalidated, and the older page's cursor. Raises
    InvalidInput (path ``cursor``) for a malformed cursor."""
    qs = (
        Fact.objects.filter(Q(subject=entity) | Q(entities=entity))
        .distinct()
        .select_related("subject", "invalidated_by")
    )
    facts, next_cursor = keyset_page(qs, time_field="valid_from", cursor=cursor, limit=FACTS_PAGE_SIZE)
    group = EntityFacts(entity)
    for fact in facts:
        (group.invalidated if fact.invalidated_at else group.current).append(fact)
    return group, next_cursor


def episodes_timeline(
    *, project: Project, dataset: str, cursor: str | None = None
) -> tuple[list[Episode], str | None]:
    """One page of the dataset's episodes with their threads: the EPISODES_PAGE_SIZE
    newest (older than ``cursor``), shown oldest first; and the older page's cursor.
    Raises InvalidInput (path ``cursor``) for a malformed cursor."""
    qs = Episode.objects.filter(project=project, dataset=dataset).select_related("thread")
    rows, next_cursor = keyset_page(qs, time_field="started_at", cursor=cursor, limit=EPISODES_PAGE_SIZE)
    return rows[::-1], next_cursor


def sources_attach(facts: list[Fact]) -> None:
    """Give every fact ``source_rows``: the raw messages it cites that still exist, in
    citation order (one query for all of them)."""
    ids: set[uuid.UUID] = set()
    for fact in facts:
        for raw in fact.source_message_ids:
            try:
                ids.add(uuid.UUID(str(raw)))
            except ValueError:
                continue  # a stored id is always a UUID; an odd one cites nothing
    found = {str(m.pk): m for m in Message.objects.filter(pk__in=ids)}
    for fact in facts:
        fact.source_rows = [found[str(i)] for i in fact.source_message_ids if str(i) in found]  # type: ignore[attr-defined]


def project_jobs(*, project: Project, status: str = "") -> list[Job]:
    """The project's newest jobs (any thread or none), optionally of one status."""
    jobs.job_reap_lost(project=project)
    qs = Job.objects.filter(project=project).select_related("thread")
    if status:
        qs = qs.filter(status=status)
    return list(qs.order_by("-created_at")[:JOBS_SHOWN])

"""Data rights over one dataset (issue 12 item 6): export everything the service holds
for a dataset as JSON, and forget a dataset, a thread or a fact with everything derived.

A dataset is the user scope of a project (DESIGN.md section 4): its threads (with their
messages, summaries, memory notes and note versions, chat turns and jobs) plus the
episodes, facts and entities written for it. Export streams: it yields the JSON text in
pieces, reading rows with ``QuerySet.iterator`` so memory stays bounded for a dataset of
any size. Deletion runs in one transaction; the full-text indexes follow by themselves
(SQLite FTS5 tables are kept by AFTER DELETE triggers, migrations 0003/0007/0008/0011;
PostgreSQL's tsvector columns and expression indexes live on the rows themselves).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from memoryapp import events, semantic, serializers, working
from memoryapp.errors import MemoryError_
from memoryapp.models import (
    Entity,
    Episode,
    Fact,
    Job,
    MemoryNote,
    MemoryNoteVersion,
    Message,
    Project,
    RelayedEvent,
    Thread,
    Turn,
)
from memoryapp.notes import note_to_dict
from memoryapp.timefmt import iso_ms

# Rows fetched per round trip while streaming an export.
EXPORT_CHUNK = 500


class DatasetNotFound(MemoryError_):
    """The project holds nothing in that dataset (another project's alike): 404."""


@dataclass(frozen=True)
class DatasetDeleted:
    """What ``dataset_delete`` removed: row counts per kind."""

    threads: int
    messages: int
    episodes: int
    facts: int
    entities: int

    def to_dict(self) -> dict[str, int]:
        """The 200 body of DELETE /v1/memory/datasets/{dataset}, as camelCase counts."""
        return {
            "threadsDeleted": self.threads,
            "messagesDeleted": self.messages,
            "episodesDeleted": self.episodes,
            "factsDeleted": self.facts,
            "entitiesDeleted": self.entities,
        }


def dataset_exists(*, project: Project, dataset: str) -> bool:
    """Whether ``project`` holds anything in ``dataset``: a thread, episode, fact or
    entity (at most four index look-ups; another project's dataset is False)."""
    return any(
        model.objects.filter(project=project, dataset=dataset).exists()
        for model in (Thread, Episode, Fact, Entity)
    )


# --- export -------------------------------------------------------------------------------


def _array(items: Iterable[dict[str, Any]]) -> Iterator[str]:
    yield "["
    for i, item in enumerate(items):
        yield ("," if i else "") + json.dumps(item, ensure_ascii=False)
    yield "]"


def _thread_parts(thread: Thread) -> Iterator[str]:
    head = serializers.thread_to_dict(thread)
    yield json.dumps(head, ensure_ascii=False)[:-1]
    yield ',"messages":'
    rows = Message.objects.filter(thread=thread).order_by("sequence_number")
    yield from _array(serializers.message_to_dict(m) for m in rows.iterator(EXPORT_CHUNK))
    yield ',"notes":'
    notes = MemoryNote.objects.filter(thread=thread).order_by("pk")
    yield from _array(note_to_dict(n) for n in notes.iterator(EXPORT_CHUNK))
    yield ',"noteVersions":'
    versions = MemoryNoteVersion.objects.filter(thread=thread).order_by("created", "id")
    yield from _array(serializers.note_version_to_dict(v) for v in versions.iterator(EXPORT_CHUNK))
    yield ',"turns":'
    turns = Turn.objects.filter(thread=thread).order_by("created", "pk").prefetch_related("usage_lines")
    yield from _array(serializers.turn_to_dict(t) for t in turns.iterator(EXPORT_CHUNK))
    yield "}"


def dataset_export(*, project: Project, dataset: str) -> Iterator[str]:
    """The dataset as one JSON object, yielded in pieces (concatenate them):

    ``{"dataset", "exportedAt", "threads": [thread + {"messages", "notes", "noteVersions",
    "turns"}], "episodes": [...], "facts": [...], "entities": [...]}``, each item in the
    /v1 shape of its kind (summaries are messages with ``summary``; facts include
    invalidated ones). Raises DatasetNotFound (before yielding anything) when the project
    has nothing in ``dataset``. Issue 12 item 6.
    """
    if not dataset_exists(project=project, dataset=dataset):
        raise DatasetNotFound()
    return _export_parts(project, dataset)


def _export_parts(project: Project, dataset: str) -> Iterator[str]:
    yield json.dumps({"dataset": dataset, "exportedAt": iso_ms(timezone.now())}, ensure_ascii=False)[:-1]
    yield ',"threads":['
    threads = Thread.objects.filter(project=project, dataset=dataset).select_related("agent")
    for i, thread in enumerate(threads.order_by("created", "id").iterator(EXPORT_CHUNK)):
        if i:
            yield ","
        yield from _thread_parts(thread)
    yield '],"episodes":'
    episodes = Episode.objects.filter(project=project, dataset=dataset).order_by("started_at", "id")
    yield from _array(serializers.episode_to_dict(e) for e in episodes.iterator(EXPORT_CHUNK))
    yield ',"facts":'
    facts = (
        Fact.objects.filter(project=project, dataset=dataset)
        .select_related("subject", "invalidated_by")
        .prefetch_related("entities")
        .order_by("created", "id")
    )
    yield from _array(serializers.fact_to_dict(f) for f in facts.iterator(EXPORT_CHUNK))
    yield ',"entities":'
    entities = Entity.objects.filter(project=project, dataset=dataset).order_by("key", "id")
    yield from _array(serializers.entity_to_dict(e) for e in entities.iterator(EXPORT_CHUNK))
    yield "}"


# --- deletion -----------------------------------------------------------------------------


def entities_prune(*, project_id: int, datasets: Iterable[str]) -> int:
    """Delete the entities of ``datasets`` that no fact is about or mentions any more;
    return how many. Call inside the transaction that deleted the facts."""
    orphans = Entity.objects.filter(
        project_id=project_id, dataset__in=list(datasets), subject_of__isnull=True, facts__isnull=True
    )
    return Entity.objects.filter(pk__in=list(orphans.values_list("pk", flat=True))).delete()[1].get(
        "memoryapp.Entity", 0
    )


def traces_delete(*, job_ids: Iterable[uuid.UUID], thread_ids: Iterable[uuid.UUID]) -> None:
    """Delete what outlives a job or thread outside our tables: django-tasks' own result
    rows of ``job_ids`` (their arguments name the job) and relayed events still queued for
    ``thread_ids``' groups (their payloads quote messages)."""
    # memoryapp.jobs enqueues run_job(job_id, attempt): the job id is the first argument.
    ids = [str(j) for j in job_ids]
    if ids:
        DBTaskResult.objects.filter(args_kwargs__args__0__in=ids).delete()
    groups = [events.thread_group(t) for t in thread_ids]
    if groups:
        RelayedEvent.objects.filter(group__in=groups).delete()


def dataset_delete(*, project: Project, dataset: str) -> DatasetDeleted:
    """Forget ``dataset`` for good: its threads with every message, summary, note, note
    version, turn and job, and its episodes, facts and entities, in one transaction (the
    search indexes follow, see the module docstring). Subscribers of each thread get
    ``thread.deleted``. Raises DatasetNotFound when the project has nothing in it (also
    for another project's dataset). Issue 12 item 6.
    """
    with transaction.atomic():
        if not dataset_exists(project=project, dataset=dataset):
            raise DatasetNotFound()
        threads = Thread.objects.filter(project=project, dataset=dataset)
        thread_ids = list(threads.values_list("pk", flat=True))
        job_ids = list(Job.objects.filter(thread_id__in=thread_ids).values_list("pk", flat=True))
        messages = Message.objects.filter(thread_id__in=thread_ids).count()
        episodes = Episode.objects.filter(Q(project=project, dataset=dataset) | Q(thread_id__in=thread_ids))
        facts = Fact.objects.filter(Q(project=project, dataset=dataset) | Q(thread_id__in=thread_ids))
        counts = (episodes.count(), facts.count())
        semantic.invalidations_release(deleted=facts)
        facts.delete()
        episodes.delete()
        # Summaries are pointed at by their thread; clear that so the cascade is one pass.
        threads.update(active_summary=None)
        Thread.objects.filter(pk__in=thread_ids).delete()
        entities = Entity.objects.filter(project=project, dataset=dataset).delete()[1]
        traces_delete(job_ids=job_ids, thread_ids=thread_ids)
    for thread_id in thread_ids:
        events.thread_deleted(thread_id)
    return DatasetDeleted(
        threads=len(thread_ids),
        messages=messages,
        episodes=counts[0],
        facts=counts[1],
        entities=entities.get("memoryapp.Entity", 0),
    )


def thread_forget(*, thread: Thread) -> None:
    """DELETE /v1/memory/working/threads/{id}: the thread with everything derived from it
    (messages, summaries, episodes, facts, notes and versions, turns, jobs and their task
    rows), plus the entities of its dataset no remaining fact refers to; an entity
    summary that quoted one of its facts is replaced (semantic.summaries_refresh) and a
    fact of another thread one of its facts had invalidated is settled
    (semantic.invalidations_release). Raises
    ThreadNotFound if it is already gone (memoryapp.working.thread_delete)."""
    with transaction.atomic():
        job_ids = list(Job.objects.filter(thread_id=thread.pk).values_list("pk", flat=True))
        texts = list(Fact.objects.filter(thread_id=thread.pk).values_list("text", flat=True))
        semantic.invalidations_release(deleted=Fact.objects.filter(thread_id=thread.pk))
        working.thread_delete(thread=thread)
        semantic.summaries_refresh(project_id=thread.project_id, dataset=thread.dataset, texts=texts)
        entities_prune(project_id=thread.project_id, datasets=[thread.dataset])
        traces_delete(job_ids=job_ids, thread_ids=[thread.pk])


def fact_forget(*, project: Project, fact_id: str | uuid.UUID) -> None:
    """DELETE /v1/memory/semantic/facts/{id}: the fact (memoryapp.semantic.fact_delete)
    and the entities it leaves with no fact. Raises FactNotFound."""
    with transaction.atomic():
        fact = semantic.fact_get(project=project, fact_id=fact_id)
        semantic.fact_delete(project=project, fact_id=fact.pk)
        entities_prune(project_id=project.pk, datasets=[fact.dataset])


def export_filename(dataset: str) -> str:
    """A safe download file name for ``dataset``'s export (letters, digits, ``-_.``)."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in dataset)
    return f"dataset-{safe[:80] or '_'}.json"

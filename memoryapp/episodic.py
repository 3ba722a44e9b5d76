"""Episodic memory: end(), the episode job, and reading episodes.

Spec 000 ("Relationship to the other layers"): messages -> episode summary -> facts +
entities; episodes record the sequence range they cover and extraction reads the raw
message rows of that range, never the compaction summary. Issue 8 items 1-2.

- ``thread_end`` (POST .../threads/{id}/end) claims the thread's raw messages after the
  previous claim (``Thread.episode_through``, under the thread's row lock) and queues one
  episode job for that range. The thread stays writable.
- ``episode_build`` is the job: one model call (``extract_episode``) outside any
  transaction, then one transaction that writes the Episode, its entities and facts
  (memoryapp.semantic.facts_store). It is idempotent: an episode already starting at
  the range's first sequence number means the work is done, and the unique constraint
  (thread, from_sequence) holds that under concurrency. A failure (model or database)
  writes nothing, so a retry starts from scratch.
- ``threads_end_idle`` ends threads silent for the project's idle time (off by default).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Max, Min, QuerySet
from django.utils import timezone

from memoryapp import events, jobs, llm, semantic
from memoryapp.errors import EpisodeNotFound, ThreadNotFound
from memoryapp.llm.port import EpisodeExtraction, ModelError, TranscriptMessage
from memoryapp.models import Episode, Message, Project, Thread
from memoryapp.paging import keyset_page
from memoryapp.results import EndResult, EpisodeBuilt
from memoryapp.validation import IDLE_MINUTES_MAX, path_id
from memoryapp.working import thread_pk

EPISODE_FTS = "memoryapp_episode_fts"
#: The job kind end() queues (registered in memoryapp.tasks).
EPISODE_JOB = "episode"
# PostgreSQL's 'english' with accents folded (migration 0019), like SQLite's FTS5 tables.
PG_SEARCH_CONFIG = "memoryapp_english"
MAX_TITLE_CHARS = 200
MAX_SUMMARY_CHARS = 20_000


class EpisodeJobFailed(Exception):
    """The episode job could not make its episode (the model call failed or answered
    something unusable). Nothing was written; the job records the message."""


# --- end() ---------------------------------------------------------------------------------


def thread_end(*, project: Project, thread_id: str | uuid.UUID) -> EndResult | None:
    """End the current chunk of a thread: queue an episode job for its raw messages after
    the previous end() (issue 8 item 1). Returns None when there is nothing new
    (serializers.NOTHING_TO_EXTRACT is the 200 body). Summary rows are never part of a range.

    Raises ThreadNotFound for a malformed id, a missing thread or another project's.
    """
    pk = thread_pk(thread_id)
    with transaction.atomic():
        thread = Thread.objects.select_for_update().filter(pk=pk, project=project).first()
        if thread is None:
            raise ThreadNotFound()
        bounds = Message.objects.filter(
            thread=thread, is_summary=False, sequence_number__gt=thread.episode_through
        ).aggregate(first=Min("sequence_number"), last=Max("sequence_number"))
        if bounds["first"] is None:
            # Only summary rows (or nothing) since the last end(): skip past them so the
            # idle check does not look at this thread again.
            if thread.next_sequence - 1 > thread.episode_through:
                thread.episode_through = thread.next_sequence - 1
                thread.save(update_fields=["episode_through"])
            return None
        first, last = int(bounds["first"]), int(bounds["last"])
        thread.episode_through = last
        thread.save(update_fields=["episode_through"])
        job = jobs.job_enqueue(
            project=project,
            kind=EPISODE_JOB,
            thread=thread,
            args={"fromSequence": first, "toSequence": last},
        )
    return EndResult(
        job_id=str(job.pk),
        thread_id=str(thread.pk),
        from_sequence=first,
        to_sequence=last,
        status=str(job.status),
    )


def threads_end_idle(*, now: datetime | None = None) -> list[EndResult]:
    """End every thread silent for its project's idle time (``Project.auto_end_idle_minutes``,
    set on the dashboard's project settings, or MEMORY_AUTO_END_IDLE_MINUTES when that is
    null; 0 = off, the default; at most IDLE_MINUTES_MAX) that has raw messages after its
    last end(). Returns what was queued. Run periodically by ``manage.py
    end_idle_threads`` (``./dev serve`` runs it every minute beside the worker)."""
    now = now or timezone.now()
    default = int(getattr(settings, "MEMORY_AUTO_END_IDLE_MINUTES", 0) or 0)
    ended: list[EndResult] = []
    for project in Project.objects.all():
        minutes = project.auto_end_idle_minutes
        minutes = min(default if minutes is None else minutes, IDLE_MINUTES_MAX)
        if minutes <= 0:
            continue
        idle = Thread.objects.filter(
            project=project,
            last_message_at__lt=now - timedelta(minutes=minutes),
            next_sequence__gt=F("episode_through") + 1,
        ).values_list("pk", flat=True)
        for pk in list(idle):
            try:
                result = thread_end(project=project, thread_id=pk)
            except ThreadNotFound:  # deleted meanwhile
                continue
            if result is not None:
                ended.append(result)
    return ended



# --- the job ------------------------------------------------------------------------------


def participants(metadata: Any) -> dict[str, str]:
    """Speaker names a thread's metadata gives per role: ``{"participants": {"user":
    "Caroline", "assistant": "Melanie"}}`` for a conversation between two people (a
    transcript) rather than a person and an AI assistant. Anything else is ignored."""
    given = metadata.get("participants") if isinstance(metadata, dict) else None
    if not isinstance(given, dict):
        return {}
    names: dict[str, str] = {}
    for role, name in given.items():
        if role in Message.Role.values and isinstance(name, str):
            name = " ".join(name.split())[:100]
            if name and ":" not in name:
                names[role] = name
    return names


def _transcript(rows: Sequence[Message], speakers: dict[str, str]) -> list[TranscriptMessage]:
    out = []
    for m in rows:
        content = m.content
        name = speakers.get(m.role)
        # A named speaker is written as a transcript label, the form every adapter reads
        # as "this person is speaking" (an unnamed assistant's "I" is the AI itself).
        if name and not content.startswith(f"{name}:"):
            content = f"{name}: {content}"
        out.append(
            TranscriptMessage(
                sequence_number=m.sequence_number,
                role=m.role,
                content=content,
                created_at=m.created_at,
            )
        )
    return out


def _extract(rows: Sequence[Message], speakers: dict[str, str]) -> EpisodeExtraction:
    transcript = _transcript(rows, speakers)
    try:
        extraction = llm.get_model().extract_episode(messages=transcript)
    except ModelError as exc:  # the registry's GuardedModel made any failure a ModelError
        raise EpisodeJobFailed(f"Model call failed ({exc.kind}): {exc}") from exc
    if not isinstance(extraction, EpisodeExtraction):
        raise EpisodeJobFailed("Model call failed: the adapter returned no episode")
    return extraction


def _title(extraction: EpisodeExtraction, rows: Sequence[Message]) -> str:
    title = " ".join(extraction.title.split())[:MAX_TITLE_CHARS]
    if title:
        return title
    return f"Messages {rows[0].sequence_number}-{rows[-1].sequence_number}"


def episode_build(
    *, thread_id: str | uuid.UUID, from_sequence: int, to_sequence: int
) -> EpisodeBuilt:
    """The episode job (issue 8 item 2): write the Episode for ``from_sequence``..
    ``to_sequence`` of the thread and the facts and entities of its raw rows.

    Idempotent: if the episode exists, returns it with ``created=False`` and writes
    nothing. All-or-nothing: everything is written in one transaction after the model
    call. Raises EpisodeJobFailed (model call failed or unusable answer: nothing written)
    and ThreadNotFound (the thread was deleted).
    """
    pk = thread_pk(thread_id)
    existing = Episode.objects.filter(thread_id=pk, from_sequence=from_sequence).first()
    if existing is not None:
        return EpisodeBuilt(episode=existing, created=False)
    rows = list(
        Message.objects.filter(
            thread_id=pk,
            is_summary=False,
            sequence_number__gte=from_sequence,
            sequence_number__lte=to_sequence,
        ).order_by("sequence_number")
    )
    thread = Thread.objects.filter(pk=pk).only("metadata").first()
    if thread is None:
        raise ThreadNotFound()
    if not rows:
        return EpisodeBuilt(episode=None, created=False)
    extraction = _extract(rows, participants(thread.metadata))
    try:
        return _episode_write(pk, from_sequence, to_sequence, rows, extraction)
    except IntegrityError:
        # Another run of the same range committed first (the unique constraint).
        done = Episode.objects.filter(thread_id=pk, from_sequence=from_sequence).first()
        if done is None:
            raise
        return EpisodeBuilt(episode=done, created=False)


def _episode_write(
    pk: uuid.UUID,
    from_sequence: int,
    to_sequence: int,
    rows: list[Message],
    extraction: EpisodeExtraction,
) -> EpisodeBuilt:
    by_sequence = {m.sequence_number: m for m in rows}
    with transaction.atomic():
        thread = Thread.objects.select_for_update().select_related("project").filter(pk=pk).first()
        if thread is None:
            raise ThreadNotFound()
        done = Episode.objects.filter(thread=thread, from_sequence=from_sequence).first()
        if done is not None:
            return EpisodeBuilt(episode=done, created=False)
        quoted = [str(by_sequence[s].id) for s in extraction.quoted_sequences if s in by_sequence]
        episode = Episode.objects.create(
            project=thread.project,
            thread=thread,
            dataset=thread.dataset,
            from_sequence=from_sequence,
            to_sequence=to_sequence,
            title=_title(extraction, rows),
            summary=extraction.summary.strip()[:MAX_SUMMARY_CHARS],
            quoted_message_ids=list(dict.fromkeys(quoted)),
            model=extraction.model[:200],
            started_at=rows[0].created_at,
            ended_at=rows[-1].created_at,
            created=timezone.now(),
        )
        stored = semantic.facts_store(
            episode=episode,
            facts=extraction.facts,
            entities=extraction.entities,
            messages=by_sequence,
        )
        # Its dashboard page refreshes once this commits.
        events.dataset_changed(
            project_id=thread.project_id, dataset=thread.dataset, thread_id=thread.pk
        )
    return EpisodeBuilt(
        episode=episode,
        created=True,
        facts_created=len(stored.created),
        facts_merged=len(stored.merged),
        facts_invalidated=len(stored.invalidated),
    )


# --- reading ------------------------------------------------------------------------------


def episode_list(
    *,
    project: Project,
    dataset: str | None = None,
    thread_id: uuid.UUID | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> tuple[list[Episode], str | None]:
    """``(episodes, next_cursor)`` of ``project``, newest conversation first (by
    ``started_at``, when its first message was written), optionally of one dataset
    and one thread. Raises ThreadNotFound when ``thread_id`` is not the project's thread,
    InvalidInput for a malformed cursor."""
    qs: QuerySet[Episode] = Episode.objects.filter(project=project)
    if dataset is not None:
        qs = qs.filter(dataset=dataset)
    if thread_id is not None:
        if not Thread.objects.filter(pk=thread_id, project=project).exists():
            raise ThreadNotFound()
        qs = qs.filter(thread_id=thread_id)
    return keyset_page(qs, time_field="started_at", cursor=cursor, limit=limit)


def episode_get(*, project: Project, episode_id: str | uuid.UUID) -> Episode:
    """The project's episode ``episode_id``. Raises EpisodeNotFound for a malformed id, a
    missing episode or another project's alike."""
    pk = path_id(episode_id, EpisodeNotFound)
    episode = Episode.objects.filter(project=project, pk=pk).first()
    if episode is None:
        raise EpisodeNotFound()
    return episode


def episode_search(
    *, project: Project, dataset: str, terms: Sequence[str], limit: int = 10
) -> list[tuple[Episode, float]]:
    """Episodes of ``dataset`` whose title or summary matches any of ``terms`` (plain
    words), best first, as ``(episode, score)``, higher-is-better. SQLite: FTS5 bm25;
    PostgreSQL: ts_rank_cd over the GIN index of migration 0007; else []."""
    terms = [t for t in terms if t.strip()]
    if not terms or limit < 1:
        return []
    if connection.vendor == "sqlite":
        sql = f"""
            SELECT e.id, -bm25({EPISODE_FTS}) FROM {EPISODE_FTS}
            JOIN memoryapp_episode AS e ON e.rowid = {EPISODE_FTS}.rowid
            WHERE {EPISODE_FTS} MATCH %s AND e.project_id = %s AND e.dataset = %s
            ORDER BY bm25({EPISODE_FTS}), e.started_at DESC LIMIT %s
        """
        expression = " OR ".join('"' + re.sub('"', '""', t) + '"' for t in terms)
        with connection.cursor() as cursor:
            cursor.execute(sql, [expression, project.pk, dataset, limit])
            ranked = [(uuid.UUID(str(r[0])), float(r[1])) for r in cursor.fetchall()]
    elif connection.vendor == "postgresql":
        ranked = _episode_search_postgresql(project, dataset, terms, limit)
    else:
        return []
    episodes = Episode.objects.in_bulk([pk for pk, _ in ranked])
    return [(episodes[pk], score) for pk, score in ranked if pk in episodes]


def _episode_search_postgresql(
    project: Project, dataset: str, terms: Sequence[str], limit: int
) -> list[tuple[uuid.UUID, float]]:
    from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

    vector = SearchVector("title", "summary", config=PG_SEARCH_CONFIG)
    search: SearchQuery | None = None
    for term in terms:
        one = SearchQuery(term, config=PG_SEARCH_CONFIG, search_type="plain")
        search = one if search is None else search | one
    assert search is not None  # terms is not empty
    rows = (
        Episode.objects.filter(project=project, dataset=dataset)
        .alias(document=vector)
        .filter(document=search)
        .annotate(score=SearchRank(vector, search, cover_density=True))
        .order_by("-score", "-started_at")
        .values_list("id", "score")[:limit]
    )
    return [(pk, float(score)) for pk, score in rows]

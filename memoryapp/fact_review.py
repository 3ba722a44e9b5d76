"""The contradictions inbox: a person confirms an invalidation or restores the older fact
(issue 8 item 6; docs/decisions.md, "Contradictions inbox").

An entry is a fact invalidated by another fact (``invalidated_by`` set) whose
invalidation was found (``invalidation_found_at``: the job, delete or restore that set it)
within the last ``MEMORY_CONTRADICTION_DAYS`` days, and whose pair has no FactReview yet.
Found, not stopped being true (``invalidated_at``, the messages' time): a contradiction in
history imported today is news today.

- confirm: records that the newer fact stands; nothing else changes.
- restore: the older fact is current again (``invalidated_at``/``invalidated_by``
  cleared) and the newer one is invalidated by it at the moment of the restore; both
  directions of the pair are recorded as ``restored``, so neither shows in the inbox
  again. A restored fact of a single-valued attribute is that attribute's current value:
  any other current fact of its subject and attribute (one that had replaced the newer
  fact meanwhile: Boston restored over Denver while Chicago had replaced Denver) is
  invalidated by it at that moment too, found then and not reviewed, so the inbox shows
  it as a contradiction of its own (docs/decisions.md, "Contradictions inbox"). Recall
  reads ``invalidated_at``, so it follows at once; an entity summary that quoted a fact
  invalidated here is replaced (memoryapp.semantic.summaries_refresh).

Both tell the dataset's open dashboard pages (events.dataset_changed) once they commit,
as semantic.fact_delete does for a deleted fact.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from memoryapp import events, semantic
from memoryapp.errors import FactNotFound
from memoryapp.models import Fact, FactReview, Project


@dataclass(frozen=True)
class Contradiction:
    """One inbox entry: ``older`` was invalidated by ``newer`` at ``older.invalidated_at``
    (found at ``older.invalidation_found_at``)."""

    older: Fact
    newer: Fact


def _unreviewed(qs: QuerySet[Fact]) -> QuerySet[Fact]:
    reviewed = FactReview.objects.filter(fact=OuterRef("pk"), replaced_by=OuterRef("invalidated_by"))
    return qs.filter(invalidated_by__isnull=False).exclude(Exists(reviewed))


def contradiction_list(
    *, project: Project, dataset: str, now: datetime | None = None, limit: int = 100
) -> list[Contradiction]:
    """The dataset's unreviewed invalidations found in the last
    ``MEMORY_CONTRADICTION_DAYS`` days (``invalidation_found_at``), the latest found first
    (then by ``invalidated_at``, newest first), at most ``limit``; both facts come with
    subject and entities."""
    since = (now or timezone.now()) - timedelta(days=settings.MEMORY_CONTRADICTION_DAYS)
    qs = _unreviewed(
        Fact.objects.filter(project=project, dataset=dataset, invalidation_found_at__gte=since)
    )
    rows = list(
        qs.select_related("subject", "invalidated_by", "invalidated_by__subject")
        .order_by("-invalidation_found_at", "-invalidated_at", "-id")[:limit]
    )
    return [Contradiction(older=f, newer=f.invalidated_by) for f in rows if f.invalidated_by]


def _pending(project: Project, fact_id: uuid.UUID) -> Fact:
    fact = (
        _unreviewed(Fact.objects.select_for_update().filter(project=project, pk=fact_id))
        .select_related("invalidated_by")
        .first()
    )
    if fact is None or fact.invalidated_by is None:
        raise FactNotFound()
    return fact


def _newer(fact: Fact) -> Fact:
    newer = fact.invalidated_by
    assert newer is not None  # _pending returns only invalidated facts
    return newer


def contradiction_confirm(*, project: Project, fact_id: uuid.UUID, reviewer: User | None) -> Fact:
    """Mark the invalidation of fact ``fact_id`` (the older fact) as right; return it.
    Raises FactNotFound when the fact is not the project's, or not an unreviewed
    invalidated fact."""
    with transaction.atomic():
        fact = _pending(project, fact_id)
        FactReview.objects.create(
            project=project, fact=fact, replaced_by=_newer(fact),
            action=FactReview.Action.CONFIRMED, reviewer=reviewer,
        )
        events.dataset_changed(project_id=project.pk, dataset=fact.dataset)  # the inbox shrank
    return fact


def _rivals(fact: Fact, newer: Fact) -> list[Fact]:
    """The current facts, locked, that the restored ``fact`` replaces besides ``newer``:
    same dataset, subject and single-valued attribute, not events (something that
    happened is no value, semantic._Ledger.add); none when ``fact`` is no single value."""
    if not (fact.attribute and fact.single_valued and not fact.event):
        return []
    return list(
        Fact.objects.current()
        .select_for_update()
        .filter(
            project_id=fact.project_id, dataset=fact.dataset, subject_id=fact.subject_id,
            attribute=fact.attribute, single_valued=True,
        )
        .exclude(event=True)
        .exclude(pk__in=[fact.pk, newer.pk])
        .order_by("valid_from", "id")
    )


def contradiction_restore(*, project: Project, fact_id: uuid.UUID, reviewer: User | None) -> Fact:
    """Make the older fact ``fact_id`` current again and invalidate its replacement by it
    now, and every other current value of its single-valued attribute (see the module
    docstring); return the restored fact. Raises FactNotFound as contradiction_confirm
    does."""
    with transaction.atomic():
        fact = _pending(project, fact_id)
        newer = Fact.objects.select_for_update().get(pk=_newer(fact).pk)
        rivals = _rivals(fact, newer)
        moment = timezone.now()
        for older, younger in ((fact, newer), (newer, fact)):
            FactReview.objects.create(
                project=project, fact=older, replaced_by=younger,
                action=FactReview.Action.RESTORED, reviewer=reviewer, created=moment,
            )
        fact.invalidated_at = fact.invalidated_by = fact.invalidation_found_at = None
        fact.save(update_fields=["invalidated_at", "invalidated_by", "invalidation_found_at"])
        newer.invalidated_at, newer.invalidated_by = moment, fact
        newer.invalidation_found_at = moment
        newer.save(update_fields=["invalidated_at", "invalidated_by", "invalidation_found_at"])
        for rival in rivals:
            rival.invalidated_at, rival.invalidated_by = moment, fact
            rival.invalidation_found_at = moment
        Fact.objects.bulk_update(
            rivals, ["invalidated_at", "invalidated_by", "invalidation_found_at"]
        )
        semantic.summaries_refresh(
            project_id=project.pk, dataset=fact.dataset, texts=[newer.text, *(r.text for r in rivals)]
        )
        events.dataset_changed(project_id=project.pk, dataset=fact.dataset)
    return fact

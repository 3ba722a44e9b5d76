"""Facts and entities: semantic memory drawn from the raw rows of an episode's range
(spec 000, "Relationship to the other layers"; DESIGN.md section 4, "Fact", "Entity").

A fact is one statement about a subject entity, split into ``attribute`` and ``value`` so
that a newer statement can be seen to contradict an older one: when a newer fact has the
same subject and a single-valued attribute with another value, the older one gets
``invalidated_at`` and ``invalidated_by`` and stays for audit (memoryapp.semantic).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from memoryapp.models.episodes import Episode
from memoryapp.models.projects import Project
from memoryapp.models.threads import Thread


class Entity(models.Model):
    """A person, place, organisation, product or other thing facts are about or mention.

    One row per (project, dataset, ``key``), ``key`` being the case-folded name, so the
    same name in two user scopes is two entities. ``kind``: person, place, organisation,
    product, event, thing (whatever the extraction said, lower-cased).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="entities")
    dataset = models.CharField(max_length=200)
    name = models.CharField(max_length=200)
    key = models.CharField(max_length=200)
    kind = models.CharField(max_length=50, default="thing")
    summary = models.TextField(blank=True, default="")
    created = models.DateTimeField(default=timezone.now)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "dataset", "key"], name="entity_dataset_key_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class FactQuerySet(models.QuerySet["Fact"]):
    def current(self) -> FactQuerySet:
        """Facts nothing has invalidated: the only ones recall may return as current."""
        return self.filter(invalidated_at__isnull=True)


class Fact(models.Model):
    """One fact: text, subject entity, attribute and value, and its lineage.

    ``source_message_ids`` are the ids (strings) of the raw messages that state it, all
    inside ``episode``'s range; ``valid_from`` is the time of the newest of them.
    ``single_valued``: the attribute admits one value at a time (a car one drives, a city
    one lives in), so another value for it invalidates this fact. ``value_key`` is the
    normalised value used to tell a reworded duplicate from a contradiction.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="facts")
    dataset = models.CharField(max_length=200)
    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="facts")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="facts")
    text = models.TextField()
    subject = models.ForeignKey(
        Entity, null=True, blank=True, on_delete=models.SET_NULL, related_name="subject_of"
    )
    attribute = models.CharField(max_length=100, blank=True, default="")
    value = models.CharField(max_length=500, blank=True, default="")
    value_key = models.CharField(max_length=500, blank=True, default="")
    single_valued = models.BooleanField(default=False)
    # Something that happened (ExtractedFact.event): ends older values, never itself
    # invalidated by a later one (docs/decisions.md "A change of state is an event").
    # None: stored before events were told apart (migration 0024), read as a state.
    # Nullable so SQLite adds it in place (NOT NULL rebuilds the table and its
    # full-text views), as migration 0018 did.
    event = models.BooleanField(null=True)
    entities: models.ManyToManyField[Any, Any] = models.ManyToManyField(
        Entity, related_name="facts", blank=True
    )
    source_message_ids = models.JSONField(default=list)
    valid_from = models.DateTimeField()
    invalidated_at = models.DateTimeField(null=True, blank=True)
    invalidated_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="invalidated"
    )
    # When the invalidation was found (the job, delete or restore that set invalidated_by),
    # by the server's clock; invalidated_at is when the statement stopped being true, by
    # the messages' (docs/decisions.md "Contradictions inbox").
    invalidation_found_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(default=timezone.now)

    objects = FactQuerySet.as_manager()

    class Meta:
        ordering = ["-valid_from", "-id"]
        indexes = [
            models.Index(fields=["project", "dataset", "-valid_from"], name="fact_dataset_idx"),
            # Contradiction checks: the current facts of one subject and attribute.
            models.Index(
                fields=["subject", "attribute"],
                condition=Q(invalidated_at__isnull=True),
                name="fact_current_subject_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.text[:80]


class FactReview(models.Model):
    """A person's verdict on one invalidation: ``fact`` was invalidated by ``replaced_by``
    (issue 8 item 6, the contradictions inbox; docs/decisions.md).

    ``confirmed``: the newer fact stands. ``restored``: the older fact was made current
    again and the newer one invalidated by it; the restore writes two rows, one for each
    direction of the pair, so neither shows in the inbox again. Keyed on the pair, so a
    fact invalidated again later by a third fact is a new entry of the inbox.
    """

    class Action(models.TextChoices):
        CONFIRMED = "confirmed"
        RESTORED = "restored"

    id = models.BigAutoField(primary_key=True)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="fact_reviews")
    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="reviews")
    replaced_by = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="+")
    action = models.CharField(max_length=16, choices=Action.choices)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["fact", "replaced_by"], name="fact_review_pair_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.fact_id} / {self.replaced_by_id}"

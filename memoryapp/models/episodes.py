"""Episodes: the summary of one finished chunk of a thread (spec 000, "Relationship to the
other layers"; DESIGN.md section 4, "Episode").

An episode covers the sequence range ``from_sequence``..``to_sequence`` of one thread
(summary rows inside the range are not part of it). It is written by the extraction job
that ``end()`` queues (memoryapp.episodic), together with the facts and entities drawn
from the raw rows of the same range (memoryapp.models.semantic).
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from memoryapp.models.projects import Project
from memoryapp.models.threads import Thread


class Episode(models.Model):
    """One episode of a thread: its range, a title and a summary.

    ``dataset`` is copied from the thread when the episode is written; a thread with an
    episode cannot change dataset (working.thread_update), so they stay equal. At most one
    episode starts at a given sequence number of a thread (the job's idempotence rests on
    that constraint).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="episodes")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="episodes")
    dataset = models.CharField(max_length=200)
    from_sequence = models.PositiveBigIntegerField()
    to_sequence = models.PositiveBigIntegerField()
    title = models.CharField(max_length=200)
    summary = models.TextField()
    # Ids (strings) of the raw messages the summary quotes or paraphrases, in range order:
    # what an episode cites as its evidence (recall), never its whole range.
    quoted_message_ids = models.JSONField(default=list)
    # The adapter's model that wrote the summary and extraction ("offline-extractive", ...).
    model = models.CharField(max_length=200, blank=True, default="")
    # When the conversation happened: the createdAt of the first and last raw message of
    # the range (imported messages keep their own time), not when the job ran (created).
    # Always set (the job writes them, migration 0018 backfilled them); nullable only so
    # SQLite adds the columns in place: a NOT NULL column makes Django rebuild the table,
    # which drops the full-text triggers of migration 0007.
    started_at = models.DateTimeField(null=True)
    ended_at = models.DateTimeField(null=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["thread", "from_sequence"], name="episode_thread_from_unique"
            ),
        ]
        indexes = [
            models.Index(
                fields=["project", "dataset", "-started_at"], name="episode_dataset_started_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"episode {self.from_sequence}-{self.to_sequence} of {self.thread_id}"

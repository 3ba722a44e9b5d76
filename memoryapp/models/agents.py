"""Agents and their memory notes (spec 004 "Agent memory"; DESIGN.md section 4).

An Agent is a named configuration in a project. Its notes live with the thread it talks
in (MemoryNote.thread), so one user's notes never reach another user's thread. Every
write of a note is kept as a MemoryNoteVersion saying who wrote it.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from memoryapp.models.projects import Project
from memoryapp.models.threads import Message, Thread


class Agent(models.Model):
    """A named agent of a project: system prompt, memory option, compaction budget.

    ``max_open_tokens`` None means the agent has no memory (no tools); a number is the
    ``memory.maxOpenTokens`` budget, always below ``compaction_max_tokens / 2``
    (checked by memoryapp.agents.agent_define).
    """

    class CompactionType(models.TextChoices):
        SUMMARIZE = "summarize"
        SLIDING_WINDOW = "sliding-window"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=64)
    system_prompt = models.TextField(blank=True, default="")
    max_open_tokens = models.PositiveIntegerField(null=True, blank=True)
    compaction_type = models.CharField(
        max_length=20, choices=CompactionType.choices, default=CompactionType.SUMMARIZE
    )
    compaction_max_tokens = models.PositiveIntegerField()
    created = models.DateTimeField(default=timezone.now)
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="agent_project_name_unique")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def has_memory(self) -> bool:
        """Whether the agent was given the memory tools (``memory`` set)."""
        return self.max_open_tokens is not None


class MemoryNote(models.Model):
    """One named note in a thread's store. ``tokens`` (memoryapp.tokens of the content)
    and ``bytes`` (UTF-8 bytes of name, description and content) are kept with the row so
    budgets and the store cap are sums, not re-counts."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="memory_notes")
    name = models.CharField(max_length=64)
    description = models.TextField()
    content = models.TextField()
    is_open = models.BooleanField(default=False)
    tokens = models.PositiveIntegerField(default=0)
    bytes = models.PositiveIntegerField(default=0)
    version = models.PositiveIntegerField(default=1)
    created = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created", "id"]
        constraints = [
            models.UniqueConstraint(fields=["thread", "name"], name="memory_note_thread_name_unique")
        ]

    def __str__(self) -> str:
        return self.name


class MemoryNoteVersion(models.Model):
    """One write of a note: what it held afterwards and who wrote it.

    ``author`` is ``agent`` (its close_memory / delete_memory tool) or ``compactor`` (a
    summarize compaction rewriting an open note). A delete is a version with
    ``action="deleted"`` and the content the note had, so the history outlives the note.
    ``message`` is the recorded tool call (agent) or the checkpoint row (compactor).
    """

    class Author(models.TextChoices):
        AGENT = "agent"
        COMPACTOR = "compactor"

    class Action(models.TextChoices):
        CREATED = "created"
        UPDATED = "updated"
        DELETED = "deleted"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="memory_versions")
    note = models.ForeignKey(
        MemoryNote, null=True, blank=True, on_delete=models.SET_NULL, related_name="versions"
    )
    name = models.CharField(max_length=64)
    version = models.PositiveIntegerField()
    description = models.TextField()
    content = models.TextField()
    author = models.CharField(max_length=10, choices=Author.choices)
    action = models.CharField(max_length=10, choices=Action.choices)
    message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created", "id"]
        indexes = [models.Index(fields=["thread", "name"], name="memory_version_name_idx")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version} ({self.author})"

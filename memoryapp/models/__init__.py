"""The memory domain's models (DESIGN.md section 4)."""

from memoryapp.models.agents import Agent, MemoryNote, MemoryNoteVersion
from memoryapp.models.compaction import CompactionRun
from memoryapp.models.episodes import Episode
from memoryapp.models.events import RelayedEvent
from memoryapp.models.jobs import Job
from memoryapp.models.projects import ApiKey, Membership, Project
from memoryapp.models.semantic import Entity, Fact, FactReview
from memoryapp.models.threads import Message, Thread, ThreadTag
from memoryapp.models.usage import Turn, UsageLine

__all__ = [
    "Agent",
    "ApiKey",
    "CompactionRun",
    "Entity",
    "Episode",
    "Fact",
    "FactReview",
    "Job",
    "Membership",
    "MemoryNote",
    "MemoryNoteVersion",
    "Message",
    "Project",
    "RelayedEvent",
    "Thread",
    "ThreadTag",
    "Turn",
    "UsageLine",
]

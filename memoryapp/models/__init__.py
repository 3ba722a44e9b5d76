"""The memory domain's models (DESIGN.md section 4)."""

from memoryapp.models.projects import ApiKey, Membership, Project
from memoryapp.models.threads import Message, Thread, ThreadTag
from memoryapp.models.usage import Turn, UsageLine

__all__ = [
    "ApiKey",
    "Membership",
    "Message",
    "Project",
    "Thread",
    "ThreadTag",
    "Turn",
    "UsageLine",
]

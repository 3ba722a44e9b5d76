"""App config for the memory domain."""

from __future__ import annotations

from django.apps import AppConfig


class MemoryAppConfig(AppConfig):
    """The memory domain: projects, keys, threads, messages."""

    name = "memoryapp"
    verbose_name = "Memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Register the background job kinds in every process: the server enqueues them,
        # the db worker runs them (memoryapp.jobs).
        from memoryapp import tasks  # noqa: F401

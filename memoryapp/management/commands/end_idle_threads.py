"""``manage.py end_idle_threads [--every SECONDS]``: end threads that went silent.

A thread whose last message is older than its project's idle time
(``Project.auto_end_idle_minutes``, else ``MEMORY_AUTO_END_IDLE_MINUTES``; 0 = off, the
default) and that has raw messages since its last end() gets an episode job queued, as
POST .../end would (memoryapp.episodic.threads_end_idle). Run it from cron, or with
``--every`` as a long-running process next to the db worker.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import DatabaseError, close_old_connections

from memoryapp import episodic

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Queue episode jobs for threads silent longer than their idle time."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--every",
            type=int,
            default=0,
            help="Keep checking every SECONDS (0, the default: check once and exit).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        every = max(int(options["every"]), 0)
        if not every:
            self._check()
            return
        while True:
            # A long-running check outlives a database hiccup (a locked SQLite file, a
            # dropped connection): it is logged and the next round tries again, so the
            # server ./dev serve runs beside it is not stopped by it.
            try:
                self._check()
            except DatabaseError:
                logger.exception("end_idle_threads: this round failed; retrying in %s s", every)
            finally:
                close_old_connections()
            time.sleep(every)

    def _check(self) -> None:
        for result in episodic.threads_end_idle():
            self.stdout.write(
                f"ended thread {result.thread_id}: messages {result.from_sequence}-"
                f"{result.to_sequence}, job {result.job_id}"
            )

"""The thread's automatic-compaction lease (DESIGN.md section 6 item 2): while one
automatic run holds it, appends that trip compaction on the same thread do not start
(and pay for) a model call of their own. One definition for both compactors
(memoryapp.compaction, memoryapp.agent_compaction).

The lease is ``Thread.compaction_lease_until``: taken by a conditional UPDATE (free, or
expired), given back by clearing it only if it still holds this run's expiry. It expires
on its own after MEMORY_COMPACTION_LEASE_SECONDS, so a crashed worker cannot block
compaction for good.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from memoryapp.models import Thread


@contextmanager
def compaction_lease(thread_id: uuid.UUID) -> Iterator[bool]:
    """Hold thread ``thread_id``'s compaction lease for the ``with`` block.

    Yields True when this caller took it (it is given back when the block ends, by an
    exception too), False when another run holds it (the block should then not compact).
    """
    now = timezone.now()
    until = now + timedelta(seconds=int(settings.MEMORY_COMPACTION_LEASE_SECONDS))
    claimed = (
        Thread.objects.filter(pk=thread_id)
        .filter(Q(compaction_lease_until__isnull=True) | Q(compaction_lease_until__lt=now))
        .update(compaction_lease_until=until)
    )
    try:
        yield bool(claimed)
    finally:
        if claimed:
            Thread.objects.filter(pk=thread_id, compaction_lease_until=until).update(
                compaction_lease_until=None
            )

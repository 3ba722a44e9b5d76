"""Ends live updates when access ends, whichever code path ended it (issue 7 item 1).

A session row is deleted by logout, by a flush, by ``clearsessions`` and by the admin; a
user is saved by a password change (which makes their other sessions' hashes stale) or
deactivation; a membership is deleted by the members page, the admin, or the deletion
of its project or user. Signals are the one hook all of these share, so each only asks
memoryapp.events to make the sockets concerned re-check (playground.consumers).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.db.models.signals import post_delete, post_save

from memoryapp import events
from memoryapp.models import Membership


def _session_deleted(sender: Any, instance: Session, **kwargs: Any) -> None:
    events.access_changed(session_key=instance.session_key)


def _user_saved(
    sender: Any, instance: Any, created: bool, update_fields: Any = None, **kwargs: Any
) -> None:
    # A login saves last_login only; that changes nobody's access.
    if not created and set(update_fields or ()) != {"last_login"}:
        events.access_changed(user_id=instance.pk)


def _membership_deleted(sender: Any, instance: Membership, **kwargs: Any) -> None:
    events.access_changed(user_id=instance.user_id)


def connect() -> None:
    """Connect the receivers (PlaygroundConfig.ready)."""
    post_delete.connect(_session_deleted, sender=Session, dispatch_uid="live-session-deleted")
    post_save.connect(_user_saved, sender=get_user_model(), dispatch_uid="live-user-saved")
    post_delete.connect(
        _membership_deleted, sender=Membership, dispatch_uid="live-membership-deleted"
    )

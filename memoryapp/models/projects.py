"""Tenancy: projects, their members, and the API keys that act for them."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

KEY_PREFIX = "mk_"
# How stale ApiKey.last_used may get before a request writes it again; keeps the hot
# read paths (prepare) from paying a write on every call.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class Project(models.Model):
    """A tenant: every thread and key belongs to exactly one project."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    created = models.DateTimeField(default=timezone.now)
    # Minutes of silence after which a thread is ended automatically (an episode job is
    # queued for its new messages); None follows MEMORY_AUTO_END_IDLE_MINUTES, 0 is off
    # (memoryapp.episodic.threads_end_idle).
    auto_end_idle_minutes = models.PositiveIntegerField(null=True, blank=True)
    members: models.ManyToManyField[Any, Any] = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's role in a project: ``owner`` manages keys and members, ``member`` reads and chats."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        MEMBER = "member", "Member"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    project = models.ForeignKey(Project, on_delete=models.CASCADE)
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"


def hash_secret(secret: str) -> str:
    """Return the hex SHA-256 of a full API key string, the only form stored."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def active(self) -> ApiKeyQuerySet:
        return self.filter(revoked__isnull=True)


class ApiKey(models.Model):
    """An API key of a project. The secret is shown once; only its SHA-256 is kept.

    A key looks like ``mk_<prefix>_<secret>``; ``prefix`` (8 hex characters) is stored in
    clear so people can tell keys apart in the dashboard.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, db_index=True)
    hash = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(default=timezone.now)
    last_used = models.DateTimeField(null=True, blank=True)
    revoked = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.name} ({KEY_PREFIX}{self.prefix}_…)"

    @classmethod
    def issue(cls, *, project: Project, name: str) -> tuple[ApiKey, str]:
        """Create a key for ``project`` and return ``(key, secret)``.

        The secret is returned exactly once and never stored; callers must show it to the
        person now.
        """
        prefix = secrets.token_hex(4)
        secret = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(24)}"
        key = cls.objects.create(
            project=project, name=name, prefix=prefix, hash=hash_secret(secret)
        )
        return key, secret

    @classmethod
    def authenticate(cls, secret: str) -> ApiKey | None:
        """Return the active key for ``secret`` (with its project loaded), else None.

        Costs one query, plus a write at most once per LAST_USED_RESOLUTION per key.
        Constant time in the secret: the database is searched by the secret's SHA-256, so
        how long the index look-up takes depends on the hash, which tells a guesser nothing
        about the secret; the stored hash is then compared with hmac.compare_digest.
        """
        if not secret.startswith(KEY_PREFIX) or len(secret) > 200:
            return None
        digest = hash_secret(secret)
        try:
            # get() on the unique hash: no ORDER BY (Meta.ordering), as first() would add.
            key = cls.objects.active().select_related("project").get(hash=digest)
        except cls.DoesNotExist:
            return None
        if not hmac.compare_digest(key.hash, digest):
            return None
        now = timezone.now()
        if key.last_used is None or now - key.last_used > LAST_USED_RESOLUTION:
            cls.objects.filter(pk=key.pk).update(last_used=now)
            key.last_used = now
        return key

    def revoke(self) -> None:
        """Revoke the key now; later requests with it get 401."""
        if self.revoked is None:
            self.revoked = timezone.now()
            self.save(update_fields=["revoked"])

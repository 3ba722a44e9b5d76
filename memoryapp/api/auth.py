"""API-key authentication for /v1: ``Authorization: Bearer <key>`` (DESIGN.md section 5).

Resolved keys are kept in a small per-process cache for KEY_CACHE_SECONDS, so a request
costs no key query on the hot paths (a prepare is then two statements). A revocation or
deletion in this process drops the entry at once (the model signals below); another
process keeps honouring a revoked key for at most KEY_CACHE_SECONDS
(docs/decisions.md, "API keys").
"""

from __future__ import annotations

import threading
import time
from typing import Any

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.http import HttpRequest
from ninja.security import HttpBearer

from memoryapp.models import ApiKey, Project
from memoryapp.models.projects import hash_secret
from memoryapp.ratelimit import RateLimited, api_key_rate_check

# The WSGI environ key (request.META) under which ApiKeyAuth notes that this request was
# counted against its key's rate limit: ``(secret hash, retry_after or None)``. Not an
# HTTP_ key, so no client can send it; memoryapp.fastpath leaves it for Django's pass
# when it declines a request it already counted.
RATE_COUNTED = "memory.rate_counted"
# How long a resolved key is trusted without asking the database again.
KEY_CACHE_SECONDS = 5.0
# Entries kept at most; past that the cache starts over (a flood of distinct valid keys
# is not a case worth an LRU).
KEY_CACHE_SIZE = 1024
# Where the WSGI environ (request.META) holds the Authorization header.
_AUTHORIZATION = "HTTP_AUTHORIZATION"


class KeyCache:
    """secret hash -> (ApiKey, monotonic expiry), shared by the process's threads."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[ApiKey, float]] = {}
        self._lock = threading.Lock()

    def get(self, digest: str) -> ApiKey | None:
        """The cached key for ``digest``, if still fresh."""
        entry = self._entries.get(digest)
        if entry is None or entry[1] < time.monotonic():
            return None
        return entry[0]

    def put(self, digest: str, key: ApiKey) -> None:
        """Remember ``key`` for KEY_CACHE_SECONDS."""
        with self._lock:
            if len(self._entries) >= KEY_CACHE_SIZE:
                self._entries.clear()
            self._entries[digest] = (key, time.monotonic() + KEY_CACHE_SECONDS)

    def drop(self, digest: str) -> None:
        """Forget ``digest`` (its key was revoked or deleted)."""
        with self._lock:
            self._entries.pop(digest, None)

    def clear(self) -> None:
        """Forget every key (tests)."""
        with self._lock:
            self._entries.clear()


key_cache = KeyCache()


@receiver(post_save, sender=ApiKey)
@receiver(post_delete, sender=ApiKey)
def _forget_changed_key(sender: Any, instance: ApiKey, **kwargs: Any) -> None:
    # Any change to a key row (revoked above all) or its deletion, also by a project's
    # cascade, takes effect on this process's next request.
    key_cache.drop(instance.hash)


class ApiKeyAuth(HttpBearer):
    """Resolves the bearer token to an active ApiKey; ``request.auth`` is that key.

    A missing, malformed, unknown or revoked key makes ninja raise AuthenticationError,
    which memoryapp.api turns into 401 ``{"error": "Unauthorized"}``. Only active keys
    are cached, so an unknown key always asks the database. A key past its rate limit
    raises memoryapp.ratelimit.RateLimited (429), cached or not. A request is counted
    once: the outcome is noted in ``request.META[RATE_COUNTED]`` and a second pass
    over the same request (memoryapp.fastpath declined it to Django) reuses it.
    """

    def __call__(self, request: HttpRequest) -> ApiKey | None:
        """HttpBearer's header parsing (scheme any case, the rest is the token) without
        its DEBUG log line, which wrote the whole header, a key sent without "Bearer "
        included, to the server's output.

        The header is read from ``request.META`` (``HTTP_AUTHORIZATION``, the one key
        ``request.headers`` maps to Authorization): ``request.headers`` would first build
        a mapping of every header of the request, which nothing else on the hot paths
        reads (issue 11)."""
        scheme, _, token = request.META.get(_AUTHORIZATION, "").partition(" ")
        if scheme.lower() != self.openapi_scheme:
            return None
        return self.authenticate(request, token)

    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        secret = token.strip()
        digest = hash_secret(secret)
        key = key_cache.get(digest)
        if key is None:
            key = ApiKey.authenticate(secret)
            if key is None:
                return None
            key_cache.put(digest, key)
        counted = request.META.get(RATE_COUNTED)
        if counted is not None and counted[0] == digest:
            # memoryapp.fastpath counted this request, then handed it to Django: its
            # outcome stands (each request is counted once).
            if counted[1] is not None:
                raise RateLimited(counted[1])
            return key
        try:
            api_key_rate_check(request=request, key=key)
        except RateLimited as exc:
            request.META[RATE_COUNTED] = (digest, exc.retry_after)
            raise
        request.META[RATE_COUNTED] = (digest, None)
        return key


def request_project(request: HttpRequest) -> Project:
    """The project of the API key that authenticated ``request`` (ApiKeyAuth made it
    ``request.auth``; every /v1 route but the docs requires it)."""
    key = request.auth  # type: ignore[attr-defined]
    assert isinstance(key, ApiKey)
    return key.project

"""Rate limits on Django's cache (django-ratelimit): per API key on /v1, and failed logins.

Both count in fixed windows in the ``default`` cache, which is Redis when REDIS_URL is set
(so every server process shares one count) and a per-process local-memory cache
otherwise. A cache that cannot be reached lets requests through (RATELIMIT_FAIL_OPEN):
the limit protects the service, it is not what keeps tenants apart.

Settings: ``MEMORY_API_RATE_LIMIT`` (e.g. ``"6000/m"``; empty turns it off),
``MEMORY_LOGIN_FAILURE_LIMIT`` (failed logins per username) and
``MEMORY_LOGIN_FAILURE_LIMIT_PER_ADDRESS`` (per client address, as client_ip finds it).
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import math
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django_ratelimit.core import get_usage as _get_usage
from redis.exceptions import RedisError

from memoryapp.models import ApiKey

API_GROUP = "v1-key"
# group -> (the setting holding its rate, what is counted): per username (case-folded, as
# people type it) and per client address.
LOGIN_GROUPS: dict[str, tuple[str, Any]] = {
    "login-username": (
        "MEMORY_LOGIN_FAILURE_LIMIT",
        lambda group, request: request.POST.get("username", "").casefold(),
    ),
    "login-ip": ("MEMORY_LOGIN_FAILURE_LIMIT_PER_ADDRESS", "ip"),
}


def client_ip(request: HttpRequest) -> str:
    """The client's address (RATELIMIT_IP_META_KEY): REMOTE_ADDR, or behind
    ``MEMORY_TRUSTED_PROXIES`` proxies the X-Forwarded-For entry the outermost one added
    (entries further left are the client's own say and could be forged)."""
    proxies = settings.MEMORY_TRUSTED_PROXIES
    forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    forwarded = [a for a in forwarded if a]
    candidates = [str(request.META.get("REMOTE_ADDR", ""))]
    if proxies > 0 and forwarded:
        candidates.insert(0, forwarded[-min(proxies, len(forwarded))])
    for candidate in candidates:
        try:
            return str(ipaddress.ip_address(candidate))
        except ValueError:
            continue
    return "0.0.0.0"  # no usable address (a Unix socket): all such clients count as one


logger = logging.getLogger(__name__)


def get_usage(request: HttpRequest, **kwargs: Any) -> dict[str, Any] | None:
    """django-ratelimit's get_usage, with an unreachable cache counted as no limit.

    The library fails open only for a failed count (RATELIMIT_FAIL_OPEN); a Redis that is
    down raises instead, which would turn every request into a 500.
    """
    try:
        return _get_usage(request, **kwargs)
    except (OSError, RedisError) as exc:
        logger.warning("rate limit not applied, the cache is unreachable: %s", exc)
        return None


class RateLimited(Exception):
    """The caller spent its allowance; ``retry_after`` is whole seconds until the next window."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"Too many requests; retry after {retry_after} s")
        self.retry_after = retry_after


def _retry_after(usage: dict[str, Any]) -> int:
    # time_left is the seconds left in the current window; 0 near its edge.
    return max(1, math.ceil(usage["time_left"]))


def api_key_rate_check(*, request: HttpRequest, key: ApiKey) -> None:
    """Count one request of ``key`` and raise RateLimited once its window's allowance is spent.

    The count is per key (its hash, which no other key shares), over every /v1 route,
    at ``settings.MEMORY_API_RATE_LIMIT``; nothing is counted when that setting is empty.
    """
    rate = settings.MEMORY_API_RATE_LIMIT
    if not rate:
        return
    usage = get_usage(
        request, group=API_GROUP, key=lambda group, req: key.hash, rate=rate, increment=True
    )
    if usage is not None and usage["should_limit"]:
        raise RateLimited(_retry_after(usage))


def too_many_requests(retry_after: int, body: str, content_type: str) -> HttpResponse:
    """A 429 response carrying ``Retry-After`` (seconds)."""
    response = HttpResponse(body, status=429, content_type=content_type)
    response["Retry-After"] = str(retry_after)
    return response


def login_throttle(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Wrap the login view: after ``MEMORY_LOGIN_FAILURE_LIMIT`` failed POSTs for one
    username, or ``MEMORY_LOGIN_FAILURE_LIMIT_PER_ADDRESS`` from one client address, in a
    window, answer 429 with Retry-After until the
    window ends (the password is not even checked). Only failures count (a POST that does
    not redirect), so people who log in often are never slowed down.
    """

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if request.method != "POST":
            return view(request, *args, **kwargs)
        limits = [
            (group, key, getattr(settings, setting))
            for group, (setting, key) in LOGIN_GROUPS.items()
            if getattr(settings, setting)
        ]
        for group, key, rate in limits:
            usage = get_usage(request, group=group, key=key, rate=rate)
            if usage is not None and usage["count"] >= usage["limit"]:
                return too_many_requests(
                    _retry_after(usage),
                    "Too many failed logins. Try again later.",
                    "text/plain; charset=utf-8",
                )
        response = view(request, *args, **kwargs)
        if response.status_code != 302:
            for group, key, rate in limits:
                get_usage(request, group=group, key=key, rate=rate, increment=True)
        return response

    return wrapper

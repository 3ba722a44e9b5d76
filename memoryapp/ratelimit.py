"""Rate limits on Django's cache (django-ratelimit): per API key on /v1, and failed logins.

Both count in fixed windows in the ``default`` cache, which is Redis when REDIS_URL is set
(so every server process shares one count) and a per-process local-memory cache
otherwise. A cache that cannot be reached lets requests through (RATELIMIT_FAIL_OPEN):
the limit protects the service, it is not what keeps tenants apart.

Settings: ``MEMORY_API_RATE_LIMIT`` (e.g. ``"6000/m"``; empty turns it off) and
``MEMORY_LOGIN_FAILURE_LIMIT`` (failed logins per username and per client address).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django_ratelimit.core import get_usage

from memoryapp.models import ApiKey

API_GROUP = "v1-key"
LOGIN_GROUPS = {
    # Per username (case-folded, as people type it) and per client address.
    "login-username": lambda group, request: request.POST.get("username", "").casefold(),
    "login-ip": "ip",
}


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
    username or from one client address in a window, answer 429 with Retry-After until the
    window ends (the password is not even checked). Only failures count (a POST that does
    not redirect), so people who log in often are never slowed down.
    """

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        rate = settings.MEMORY_LOGIN_FAILURE_LIMIT
        if request.method != "POST" or not rate:
            return view(request, *args, **kwargs)
        for group, key in LOGIN_GROUPS.items():
            usage = get_usage(request, group=group, key=key, rate=rate)
            if usage is not None and usage["count"] >= usage["limit"]:
                return too_many_requests(
                    _retry_after(usage),
                    "Too many failed logins. Try again later.",
                    "text/plain; charset=utf-8",
                )
        response = view(request, *args, **kwargs)
        if response.status_code != 302:
            for group, key in LOGIN_GROUPS.items():
                get_usage(request, group=group, key=key, rate=rate, increment=True)
        return response

    return wrapper

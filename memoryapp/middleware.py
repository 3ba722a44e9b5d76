"""Middleware of the memory service."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


class SyncChainMiddleware:
    """A pass-through that is sync-only, placed last in MIDDLEWARE, on purpose.

    Under ASGI, Django adapts between async and sync at every middleware whose mode differs
    from its neighbour's; with our mix (async-capable Django middleware around sync views)
    that was about 30 thread hand-offs per request, ~5 ms of CPU before any view ran. One
    sync-only middleware at the innermost position makes Django run the whole chain in sync
    mode and adapt once, at the top (bench/bench_working.py prints the 401 "floor").
    """

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

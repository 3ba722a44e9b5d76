"""Middleware of the memory service."""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django.urls import reverse

from memoryapp.errors import error_json

logger = logging.getLogger(__name__)


class ApiJsonErrorsMiddleware:
    """Makes every /v1 (and chat route) error JSON, including the ones Django answers
    before ninja runs.

    An unknown path under /v1/ (Django's 404), a method a route does not take (ninja's
    plain-text 405, whose ``Allow`` header is kept), and an unhandled exception (500)
    would otherwise be HTML or text; API clients get ``{"error": ...}`` like every other
    error (DESIGN.md section 5). The 500 body never carries a traceback.
    """

    # Routes outside /v1 whose caller is fetch() and expects JSON (playground.chat_api).
    JSON_VIEWS = frozenset({"playground:chat"})

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        # The API's root path, from the URL conf (its ninja root view is "v1:api-root").
        self.prefix = reverse("v1:api-root")

    def _answers_json(self, request: HttpRequest) -> bool:
        match = request.resolver_match
        return request.path.startswith(self.prefix) or (
            match is not None and match.view_name in self.JSON_VIEWS
        )

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not self._answers_json(request) or response.status_code not in (404, 405):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        error = "Not found" if response.status_code == 404 else "Method not allowed"
        body = error_json(response.status_code, error)
        if "Allow" in response:
            body["Allow"] = response["Allow"]
        return body

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(self.prefix) or isinstance(exception, Http404):
            # Http404 from a view outside ninja (its root, /v1/) is Django's 404, made JSON
            # in __call__; not a 500.
            return None
        logger.exception("unhandled error on %s %s", request.method, request.path)
        return error_json(500, "Internal server error")


class HtmxSignedOutMiddleware:
    """Answers an htmx request that would be sent to the login page with 401 instead.

    A page whose session ended (logout in another tab, expiry) still refreshes parts of
    itself with htmx; the browser would follow ``login_required``'s redirect and htmx
    would swap the login page into the message list and the stats panel. A 401 is not
    swapped; its ``HX-Trigger: memory:signed-out`` lets the page say it is signed out
    (static/js/app.js).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.headers.get("HX-Request") != "true" or response.status_code != 302:
            return response
        login = resolve_url(settings.LOGIN_URL)
        if urlsplit(response["Location"]).path != login:
            return response
        signed_out = HttpResponse("Signed out", status=401, content_type="text/plain")
        signed_out["HX-Trigger"] = "memory:signed-out"
        return signed_out

"""Middleware of the memory service."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.handlers.base import BaseHandler
from django.core.handlers.exception import convert_exception_to_response
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import resolve_url
from django.urls import reverse
from django.utils.module_loading import import_string

from memoryapp.errors import error_json

logger = logging.getLogger(__name__)

# What a JSON answer of /v1 may do in a browser: nothing (no script, style, frame or
# fetch; never framed). The site's own policy (settings.CONTENT_SECURITY_POLICY) is for
# the dashboard's HTML.
API_CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'"


class _ChainHandler(BaseHandler):
    """Django's request handling (URL resolution, views, process_view/exception hooks,
    ATOMIC_REQUESTS) behind the middleware classes ``middleware`` names, outermost first.

    BaseHandler.load_middleware with a list other than settings.MIDDLEWARE, for
    synchronous middleware only (every one of this service's is).
    """

    def __init__(self, middleware: list[str]) -> None:
        self._view_middleware: list[Callable[..., Any]] = []
        self._template_response_middleware: list[Callable[..., Any]] = []
        self._exception_middleware: list[Callable[..., Any]] = []
        handler = convert_exception_to_response(self._get_response)  # type: ignore[attr-defined]
        for path in reversed(middleware):
            instance = import_string(path)(handler)
            if hasattr(instance, "process_view"):
                self._view_middleware.insert(0, instance.process_view)
            if hasattr(instance, "process_template_response"):
                self._template_response_middleware.append(instance.process_template_response)
            if hasattr(instance, "process_exception"):
                self._exception_middleware.append(instance.process_exception)
            handler = convert_exception_to_response(instance)
        self._middleware_chain = handler


class ApiChainMiddleware:
    """First in MIDDLEWARE: a /v1 request (but the docs page) goes through
    settings.API_MIDDLEWARE instead of the rest of MIDDLEWARE.

    A /v1 call is JSON for a program holding an API key: it has no session, CSRF token,
    flash messages, htmx or static file to serve, yet the browser middleware cost about
    as much per call as a prepare itself (docs/decisions.md, "Hot paths"). The split is
    made inside Django's handler, so the test client runs exactly the chain the server
    runs. /v1/docs is an HTML page (Swagger UI) and keeps the full chain and the site's
    Content-Security-Policy.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.browser = get_response
        self.api = _ChainHandler(list(settings.API_MIDDLEWARE))._middleware_chain
        root = reverse("v1:api-root")  # "/v1/"
        self.prefixes = (root, root.rstrip("/"))
        self.docs = reverse("v1:openapi-view")

    def is_api(self, path: str) -> bool:
        """Whether ``path`` (a request's path) takes the /v1 chain."""
        return (path.startswith(self.prefixes[0]) or path == self.prefixes[1]) and path != self.docs

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_api(request.path):
            return self.api(request)
        return self.browser(request)


class ApiHeadMiddleware:
    """HEAD on /v1 answers as GET would, without the body (RFC 9110 section 9.3.2): the
    same status and headers, Content-Length that of the GET body.

    django-ninja routes only the methods an operation names, so HEAD was 405 on every GET
    route. Outermost in settings.API_MIDDLEWARE: everything inside (auth, rate limit, the
    route, ApiHeadersMiddleware's Content-Length) sees a GET; the body is dropped on the
    way out. A 405 whose ``Allow`` offers GET offers HEAD too.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.method != "HEAD":
            return self._allow_head(self.get_response(request))
        request.method = "GET"
        try:
            response = self._allow_head(self.get_response(request))
        finally:
            request.method = "HEAD"
        if isinstance(response, StreamingHttpResponse):
            # No length to give (GET sends it chunked); the body's iterator is closed with
            # the response, by the closers it registered.
            response.streaming_content = []
        elif isinstance(response, HttpResponse):
            length = response.get("Content-Length", str(len(response.content)))
            response.content = b""
            response["Content-Length"] = length
        return response

    @staticmethod
    def _allow_head(response: HttpResponseBase) -> HttpResponseBase:
        if response.status_code == 405 and response.has_header("Allow"):
            allow = [m.strip() for m in response["Allow"].split(",") if m.strip()]
            if "GET" in allow and "HEAD" not in allow:
                response["Allow"] = ", ".join([*allow, "HEAD"])
        return response


class ApiHeadersMiddleware:
    """The headers a /v1 response gets beside SecurityMiddleware's: Content-Length (as
    CommonMiddleware adds it), ``X-Frame-Options: DENY`` (as XFrameOptionsMiddleware)
    and API_CONTENT_SECURITY_POLICY, unless the response set them itself."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not response.streaming and not response.has_header("Content-Length"):
            response["Content-Length"] = str(len(response.content))
        response.setdefault("X-Frame-Options", "DENY")
        response.setdefault("Content-Security-Policy", API_CONTENT_SECURITY_POLICY)
        return response


class ApiJsonErrorsMiddleware:
    """Makes every /v1 (and chat route) error JSON, including the ones Django answers
    before ninja runs.

    An unknown path under /v1/ (Django's 404), a method a route does not take (ninja's
    plain-text 405, whose ``Allow`` header is kept), a failed CSRF check of a JSON_VIEWS
    route (Django's 403 page), and an unhandled exception (500) would otherwise be HTML
    or text; API clients get ``{"error": ...}`` like every other
    error (DESIGN.md section 5). The 500 body never carries a traceback.
    """

    # Routes outside /v1 whose caller is a script that expects JSON errors: the chat
    # route (fetch(), playground.chat_api) and the X-ray's replay (htmx,
    # playground.xray_views.turn_replay).
    JSON_VIEWS = frozenset({"playground:chat", "playground:turn-replay"})

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
        if not self._answers_json(request) or response.status_code not in (403, 404, 405):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        # A 403 that is not JSON is Django's CSRF failure page: the views themselves
        # answer JSON (ninja's CSRF check says the same words).
        error = {403: "CSRF check failed", 404: "Not found"}.get(response.status_code, "Method not allowed")
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

"""Middleware of the dashboard."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.shortcuts import render
from django.urls import reverse

from memoryapp.validation import RAW_PATH_INFO, undecodable_path, undecodable_query
from playground.pages import bad_request, not_found


class _ViewHook:
    """A middleware whose work is all in ``process_view``: the request passes through."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)


class CanonicalIdsMiddleware(_ViewHook):
    """A dashboard GET (or HEAD) whose path writes an id in capitals
    (playground.converters.PathIdConverter takes either case, as /v1 does) is sent, 301,
    to the same URL with the id in lower case, the query string kept: one URL per page,
    the one every link, paging control and live refresh of the page uses. Other methods
    are served as they are (a redirect would lose a POST's body)."""

    def process_view(
        self, request: HttpRequest, view: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> HttpResponse | None:
        match = request.resolver_match
        if (
            request.method not in ("GET", "HEAD")
            or match is None
            or "playground" not in match.namespaces
            or not any(isinstance(value, uuid.UUID) for value in kwargs.values())
        ):
            return None
        canonical = reverse(match.view_name, args=match.args, kwargs=match.kwargs)
        if canonical == request.path:
            return None
        query = request.META.get("QUERY_STRING", "")
        return HttpResponsePermanentRedirect(f"{canonical}?{query}" if query else canonical)


class MethodNotAllowedPageMiddleware:
    """A dashboard address opened in the browser that only takes a form's POST (creating
    a thread, editing one, a retry) answered 405 with an empty body: a blank page. A GET
    or HEAD that gets such an empty 405 from a dashboard view gets the 405.html page
    instead (status and Allow header kept). JSON routes answer their own 405 bodies and
    are left alone, as is every non-empty response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        match = request.resolver_match
        if (
            response.status_code != 405
            or request.method not in ("GET", "HEAD")
            or match is None
            or "playground" not in match.namespaces
            or getattr(response, "streaming", False)
            or response.content
        ):
            return response
        page = render(request, "405.html", status=405)
        if response.has_header("Allow"):
            page["Allow"] = response["Allow"]
        return page


class UndecodableUrlMiddleware(_ViewHook):
    """A dashboard URL whose path or query string percent-decodes to bytes that are not
    UTF-8 (``/dashboard/datasets/%FF/export/``, ``?dataset=%E9``) is answered 400 (the
    400.html page naming the parameter: "dataset is not valid UTF-8"). Django decodes such
    a URL with U+FFFD (or percent-encodes the path's bad bytes again), so it addressed the
    dataset "\ufffd" or "%FF"; /v1 refuses the same URLs with ``invalid_unicode``
    (memoryapp.api.params). The path is checked first, then the query string."""

    def process_view(
        self, request: HttpRequest, view: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> HttpResponse | None:
        match = request.resolver_match
        if match is None or "playground" not in match.namespaces:
            return None
        path_info = request.META.get(RAW_PATH_INFO, "")
        query = request.META.get("QUERY_STRING", "")
        names = undecodable_path(path_info) or (undecodable_query(query) if query else [])
        if not names:
            return None
        return bad_request(request, f"{names[0]} is not valid UTF-8")


class NotFoundPageMiddleware:
    """A dashboard page's 404 is the site's 404.html page (playground.pages.not_found),
    whatever DEBUG says: with DEBUG on, Django answered a view's Http404
    (``?projectId=999``, an unknown dataset or turn) and an address no route takes
    (``/dashboard/memory/entities/zzz/``, an id that is not a UUID) with its technical
    404 page, listing the project's URL patterns.

    Left alone: the admin (its own pages), /v1 (which never comes through this chain)
    and every 404 a view returns rather than raises. The dashboard's JSON routes (the
    chat route, the X-ray's replay) stay JSON: memoryapp.middleware.ApiJsonErrorsMiddleware,
    after this in MIDDLEWARE, turns any HTML 404 of theirs into ``{"error": ...}``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # No route took the path: with DEBUG on, Django answered the technical 404 of URL
        # resolution, before any view or process_exception (with it off, handler404's
        # 404.html page).
        if (
            settings.DEBUG
            and response.status_code == 404
            and request.resolver_match is None
            and not request.path.startswith(reverse("admin:index"))
        ):
            return not_found(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        match = request.resolver_match
        if (
            not isinstance(exception, Http404)
            or match is None
            or "playground" not in match.namespaces
        ):
            return None
        return not_found(request)

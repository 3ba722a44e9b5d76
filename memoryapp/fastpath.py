"""The HTTP fast path of the two hot routes: append and prepare, before Django (issue 11).

POST /v1/memory/working/threads/{id}/messages and .../prepare are most of what an agent
sends. Over HTTP, Django's WSGI handler, its URL resolution and ninja's dispatch cost
more than the domain call itself (docs/decisions.md, "Hot paths"). PooledWsgi
(memoryapp.wsgipool) calls ``FastPath`` first, in the same pool thread, with the
request's environ and body: it serves the happy path of those two routes only and
returns the response, or returns None and Django serves the request as it always did.

What runs is Django's and ninja's own code, minus the routing between them: the same
WSGIRequest, request_started / request_finished signals, ApiKeyAuth (key cache, rate
limit), ninja's body model (the API's JSON parser and the schemas of memoryapp.api.schemas),
the functions the views call (memoryapp.api.working), ninja's response rendering and
the middleware of settings.API_MIDDLEWARE, so status, headers and body are Django's byte
for byte (tests/test_fastpath.py compares them).

Declined (None), so Django answers with its own error format: another method, path or
route; SCRIPT_NAME or FORCE_SCRIPT_NAME set; ATOMIC_REQUESTS; a Host that ALLOWED_HOSTS
refuses; an insecure request under SECURE_SSL_REDIRECT; a malformed thread id, body or
Idempotency-Key; no, an unknown or a revoked key; a key past its rate limit; and the
errors the domain raises before writing anything (ThreadNotFound, IdempotencyConflict,
InvalidInput for createdAt). A request already counted against its key's rate limit
carries that count to Django (memoryapp.api.auth.RATE_COUNTED), so it counts once.
After an append committed nothing is declined: an error then is answered by ninja's
exception handlers as the view's would be, never by running the append again.

``HTTP_FAST_PATH`` (env MEMORY_HTTP_FAST_PATH, on by default) turns it off.
"""

from __future__ import annotations

import inspect
import logging
import re
import threading
import uuid
from collections.abc import Callable
from typing import Any, cast

from django.conf import settings
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest
from django.db import connections
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.urls import get_script_prefix, resolve, reverse
from django.utils.log import log_response
from ninja.operation import Operation
from ninja.params.models import BodyModel, PathModel

from memoryapp.api import api
from memoryapp.api import working as views
from memoryapp.api.auth import request_project
from memoryapp.errors import IdempotencyConflict, InvalidInput, ThreadNotFound
from memoryapp.middleware import _ChainHandler
from memoryapp.validation import path_id

logger = logging.getLogger(__name__)

# Status, headers as WSGI's start_response gets them, body (memoryapp.wsgipool encodes them).
Answer = tuple[int, list[tuple[str, str]], bytes]

# What the domain raises before it writes anything: Django then answers it.
_BEFORE_ANY_WRITE = (ThreadNotFound, IdempotencyConflict, InvalidInput)


class _Declined(Exception):
    """Not the happy path: Django serves the request."""


class _ResponseChain(_ChainHandler):
    """settings.API_MIDDLEWARE around a response made already: the headers Django's /v1
    chain adds (SecurityMiddleware's, Content-Length, X-Frame-Options, the API's CSP),
    by the same middleware instances' own code."""

    def _get_response(self, request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase = request._fast_response  # type: ignore[attr-defined]
        return response


class _Routes:
    """The two routes as the URL conf and ninja have them, found once."""

    def __init__(self) -> None:
        placeholder = str(uuid.UUID(int=0))
        prefix = get_script_prefix()
        paths = {}
        self.operations: dict[str, Operation] = {}
        self.bodies: dict[str, type[BodyModel]] = {}
        for kind, name, view in (
            ("messages", "v1:append_message", views.append_message),
            ("prepare", "v1:prepare", views.prepare),
        ):
            path = "/" + reverse(name, kwargs={"thread_id": placeholder})[len(prefix):]
            paths[kind] = path
            self.operations[kind] = _operation(path, view)
            self.bodies[kind] = _body_model(self.operations[kind])
        head, _, tail = paths["messages"].partition(placeholder)
        if not (head and tail == "/messages" and paths["prepare"] == f"{head}{placeholder}/prepare"):
            raise LookupError(f"unexpected routes {paths}")
        # A path segment, as Django's <thread_id> (str converter) takes it.
        self.pattern = re.compile(re.escape(head) + "([^/]+)/(messages|prepare)")
        self.chain = _ResponseChain(list(settings.API_MIDDLEWARE))._middleware_chain


def _body_model(operation: Operation) -> type[BodyModel]:
    """ninja's model of ``operation``'s body, checked to be all it reads besides the
    ``thread_id: str`` path parameter (_happy_request parses only the body)."""
    path, body = operation.models
    field = path.model_fields.get("thread_id")
    if not (
        issubclass(path, PathModel)
        and list(path.model_fields) == ["thread_id"]
        and field is not None
        and field.annotation is str
        and not field.metadata
        and issubclass(body, BodyModel)
        and list(body.model_fields) == ["payload"]
    ):
        raise LookupError(f"unexpected parameters {operation.models}")
    return body


def _operation(path: str, view: Callable[..., Any]) -> Operation:
    """The bound ninja Operation that serves ``view`` at ``path`` (POST)."""
    path_view = inspect.getclosurevars(resolve(path).func).nonlocals["self"]
    for operation in path_view.operations:
        if operation.view_func is view and "POST" in operation.methods and operation.api is api:
            return operation
    raise LookupError(f"no POST operation for {view.__name__} at {path}")


class FastPath:
    """``fast(environ, body)``: the response of a happy-path append or prepare, or None."""

    def __init__(self) -> None:
        self._routes: _Routes | None = None
        self._lock = threading.Lock()

    def routes(self) -> _Routes:
        if self._routes is None:
            with self._lock:
                if self._routes is None:
                    self._routes = _Routes()
        return self._routes

    def __call__(self, environ: dict[str, Any], body: bytes) -> Answer | None:
        # The cheap checks first: every other request passes here too.
        if environ["REQUEST_METHOD"] != "POST" or not settings.HTTP_FAST_PATH:
            return None
        if environ.get("SCRIPT_NAME") or settings.FORCE_SCRIPT_NAME is not None:
            return None
        routes = self.routes()
        match = routes.pattern.fullmatch(environ["PATH_INFO"])
        if match is None or "HTTP_AUTHORIZATION" not in environ:
            return None
        try:
            request, values = self._happy_request(routes, match[2], match[1], environ, body)
        except _Declined:
            return None
        return self._serve(routes, match[2], match[1], request, values)

    def _happy_request(
        self, routes: _Routes, kind: str, thread_id: str, environ: dict[str, Any], body: bytes
    ) -> tuple[WSGIRequest, dict[str, Any]]:
        """The request and its validated parameters; _Declined for anything but the happy
        path. Nothing here has a side effect."""
        if any(db["ATOMIC_REQUESTS"] for db in connections.settings.values()):
            raise _Declined()  # Django would run the view in a transaction
        request = WSGIRequest(environ)
        request._body = body  # the stream stays unread for Django, should it answer
        try:
            path_id(thread_id, _Declined)  # the API's rule; Django answers 404 otherwise
            # A Host ALLOWED_HOSTS refuses (DisallowedHost) is left to Django, whatever it
            # answers (its /v1 chain never asks for the host itself).
            request.get_host()
            if settings.SECURE_SSL_REDIRECT and not request.is_secure():
                raise _Declined()
            temporal = api.create_temporal_response(request)
            # ninja's own body model, resolved as Operation._get_values resolves it for the
            # view: the body parsed by the API's parser and validated ({"payload": ...}).
            # The path model's one field, thread_id: str, would give the matched str back.
            values: dict[str, Any] = dict(routes.bodies[kind].resolve(request, api, {}))
            if kind == "messages":
                values["key"] = views.idempotency_key(environ.get("HTTP_IDEMPOTENCY_KEY"))
        except Exception as exc:
            raise _Declined() from exc
        values["response"] = temporal
        return request, values

    def _serve(
        self, routes: _Routes, kind: str, thread_id: str, request: WSGIRequest, values: dict[str, Any]
    ) -> Answer | None:
        """Authenticate, call the domain and answer; None when declined before any write."""
        # As Django's WSGIHandler: request_started before any database use (a stale
        # connection is closed), request_finished once answered (PostgreSQL's pooled
        # connection goes back to the pool).
        signals.request_started.send(sender=WSGIHandler, environ=request.environ)
        try:
            answered = self._respond(routes, kind, thread_id, request, values)
            if answered is not None:
                request._fast_response = answered  # type: ignore[attr-defined]
                # The API chain's middleware, as the view's response would pass it.
                response = cast(HttpResponse, routes.chain(request))
        except BaseException:
            _finish(request)
            raise
        if answered is None:
            _finish(request)
            return None
        if response.status_code >= 400:
            log_response(
                "%s: %s", response.reason_phrase, request.path, response=response, request=request
            )
        response._handler_class = WSGIHandler  # type: ignore[attr-defined]
        response._resource_closers.append(request.close)  # type: ignore[attr-defined]
        try:
            # What WSGIHandler hands start_response, and the body it iterates.
            headers = [
                *response.items(),
                *(("Set-Cookie", c.output(header="")) for c in response.cookies.values()),
            ]
            return response.status_code, headers, b"".join(response)
        finally:
            response.close()  # sends request_finished

    def _respond(
        self, routes: _Routes, kind: str, thread_id: str, request: WSGIRequest, values: dict[str, Any]
    ) -> HttpResponseBase | None:
        operation = routes.operations[kind]
        try:
            key = operation.auth_callbacks[0](request)  # ApiKeyAuth: the key, counted
        except Exception:
            return None  # a rate-limited key, or the key look-up failed: Django says so
        if not key:
            return None
        request.auth = key  # type: ignore[attr-defined]
        temporal: HttpResponse = values["response"]
        try:
            if kind == "messages":
                try:
                    appended = views.append_store(
                        thread_id=thread_id,
                        project=request_project(request),
                        payload=values["payload"],
                        key=values["key"],
                    )
                except _BEFORE_ANY_WRITE:
                    return None
                result: Any = views.append_answer(appended, temporal)
            else:
                try:
                    result = views.prepare_answer(
                        thread_id=thread_id, project=request_project(request), payload=values["payload"]
                    )
                except ThreadNotFound:
                    return None
            return operation._result_to_response(request, result, temporal)
        except Exception as exc:
            # After the write (or a failure ninja answers itself): what the view would
            # answer, through the same exception handlers.
            return api.on_exception(request, exc)


def _finish(request: WSGIRequest) -> None:
    request.close()
    signals.request_finished.send(sender=WSGIHandler)


fast_path = FastPath()

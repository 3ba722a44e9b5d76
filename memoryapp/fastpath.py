"""The HTTP fast path of the two hot routes: append and prepare, before Django (issue 11).

POST /v1/memory/working/threads/{id}/messages and .../prepare are most of what an agent
sends. Over HTTP, Django's WSGI handler, its URL resolution and ninja's dispatch cost
more than the domain call itself (docs/decisions.md, "Hot paths"). PooledWsgi
(memoryapp.wsgipool) calls ``FastPath`` first, in the same pool thread, with the
request's environ and body: it serves the happy path of those two routes only and
returns the response, or returns None and Django serves the request as it always did.

What runs for the happy path is the lean part of what Django and ninja run, with the
same code where it decides anything: a WSGIRequest (no temporal HttpResponse), the
Host check of ``request.get_host()`` (its verdict remembered per Host value),
ApiKeyAuth (key cache, rate limit), ninja's body model (the API's JSON parser and the
schemas of memoryapp.api.schemas), the functions the views call
(memoryapp.api.working), the API's renderer (ninja's JSON encoder) on the dict those
functions return, and the headers settings.API_MIDDLEWARE adds, taken once from that
chain's own run on a response of the same status (``_Headers``) with Content-Length
filled in per response. Not run, because for these two answers they change nothing:
ninja's re-validation of the body dict through the response schema (the dicts of
memoryapp.serializers are already in the schema's shape, field order included: tests
compare the bytes), the HttpResponse objects and Django's request signals, whose
receivers are called directly when they are Django's own (``_upkeep``: the stale
connection closed, PostgreSQL's pooled connection returned; the signals are sent as
usual when anything else listens). Status, headers and body are Django's byte for byte
(tests/test_fastpath.py compares them).

Declined (None), so Django answers with its own error format: another method, path or
route; a query string (neither route takes a parameter); SCRIPT_NAME or
FORCE_SCRIPT_NAME set; ATOMIC_REQUESTS; a Host that ALLOWED_HOSTS refuses; an insecure request under SECURE_SSL_REDIRECT; a malformed thread id, body or
Idempotency-Key; no, an unknown or a revoked key; a key past its rate limit; and the
errors the domain raises before writing anything (ThreadNotFound, IdempotencyConflict,
InvalidInput for createdAt). A request already counted against its key's rate limit
carries that count to Django (memoryapp.api.auth.RATE_COUNTED), so it counts once.
After an append committed nothing is declined: an error then is answered by ninja's
exception handlers and the API middleware, as the view's would be, never by running
the append again.

``HTTP_FAST_PATH`` (env MEMORY_HTTP_FAST_PATH, on by default) turns it off.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
import threading
import uuid
from collections.abc import Callable
from typing import Any, cast

from django.conf import settings
from django.core import signals
from django.core.cache import DEFAULT_CACHE_ALIAS, caches, close_caches
from django.core.cache.backends.base import BaseCache
from django.core.handlers.base import reset_urlconf
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest
from django.db import (
    DEFAULT_DB_ALIAS,
    DatabaseError,
    close_old_connections,
    connections,
    reset_queries,
)
from django.db.backends.base.base import BaseDatabaseWrapper
from django.dispatch import Signal
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.urls import get_script_prefix, resolve, reverse
from django.utils.log import log_response
from django.utils.module_loading import import_string
from ninja.operation import Operation
from ninja.params.models import BodyModel, PathModel
from ninja.renderers import BaseRenderer, JSONRenderer

from memoryapp import sql
from memoryapp.api import api
from memoryapp.api import working as views
from memoryapp.api.auth import request_project
from memoryapp.errors import IdempotencyConflict, InvalidInput, ThreadNotFound
from memoryapp.middleware import _ChainHandler
from memoryapp.results import AppendResult
from memoryapp.validation import UUID_PATTERN

logger = logging.getLogger(__name__)

# Status, headers as the ASGI server sends them (lower-case names), body.
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]
# What an inline run leaves to a pool thread: the rest of the request, giving its answer.
Later = Callable[[], Answer]
# Runs a job on a pool thread, nobody waiting for it (memoryapp.wsgipool.PooledWsgi.later).
Defer = Callable[[Callable[[], object]], None]
# What _respond gives: (status, body dict, replayed), a response made, or None (declined).
_Responded = tuple[int, dict[str, Any], bool] | HttpResponseBase | None
_LOCAL_MEMORY_CACHE = "django.core.cache.backends.locmem.LocMemCache"

# What the domain raises before it writes anything: Django then answers it.
_BEFORE_ANY_WRITE = (ThreadNotFound, IdempotencyConflict, InvalidInput)
# Host verdicts remembered at most (a client inventing Host values cannot grow it past).
_HOSTS_MAX = 64


class _Declined(Exception):
    """Not the happy path: Django serves the request."""


class _ResponseChain(_ChainHandler):
    """settings.API_MIDDLEWARE around a response made already: the headers Django's /v1
    chain adds (SecurityMiddleware's, Content-Length, X-Frame-Options, the API's CSP),
    by the same middleware instances' own code."""

    def _get_response(self, request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase = request._fast_response  # type: ignore[attr-defined]
        return response


class _Headers:
    """The headers of a happy-path answer as Django sends them: the response's own
    (Content-Type, Idempotent-Replayed on a replay), then what settings.API_MIDDLEWARE
    adds, learnt by running that chain once per (status, replayed, secure) on an empty
    response of the same kind; only Content-Length differs between two answers.

    ``make`` raises LookupError if the chain's headers are not that (they would depend
    on something else than the body's length); the fast path then declines for good.
    """

    def __init__(self, chain: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.chain = chain
        self.known: dict[tuple[int, bool, bool], tuple[list[tuple[bytes, bytes]], int]] = {}

    def make(self, request: WSGIRequest, status: int, replayed: bool, secure: bool, length: int) -> list[tuple[bytes, bytes]]:
        """The encoded headers of a ``status`` answer whose body is ``length`` bytes."""
        known = self.known.get((status, replayed, secure))
        if known is None:
            known = self._learn(request, status, replayed)
            self.known[(status, replayed, secure)] = known
        headers, at = known
        headers = headers.copy()
        headers[at] = (b"content-length", str(length).encode("latin1"))
        return headers

    def _learn(self, request: WSGIRequest, status: int, replayed: bool) -> tuple[list[tuple[bytes, bytes]], int]:
        runs = []
        for length in (1, 12):
            response = HttpResponse(b"x" * length, status=status, content_type=api.get_content_type())
            if replayed:
                response["Idempotent-Replayed"] = "true"
            request._fast_response = response  # type: ignore[attr-defined]
            answered = self.chain(request)
            if answered is not response or answered.cookies or answered.status_code != status:
                raise LookupError("the API middleware changed the response")
            runs.append(_encode_headers(list(answered.items())))
        ones, twelves = runs
        where = [i for i, (a, b) in enumerate(zip(ones, twelves, strict=True)) if a != b]
        if len(where) != 1 or ones[where[0]] != (b"content-length", b"1"):
            raise LookupError(f"the API middleware's headers are not fixed: {ones} {twelves}")
        return ones, where[0]


def _encode_headers(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """Header pairs as memoryapp.wsgipool hands Django's to the ASGI server."""
    return [(k.strip().lower().encode("latin1"), v.strip().encode("latin1")) for k, v in headers]


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
        # The thread id segment as path_id accepts it (the API's rule: UUID_PATTERN, the
        # canonical form); any other segment is declined, and Django answers 404.
        self.pattern = re.compile(re.escape(head) + f"({UUID_PATTERN[1:-1]})/(messages|prepare)")
        # Synchronous middleware only (settings.API_MIDDLEWARE): the chain returns responses.
        self.chain = cast(
            Callable[[HttpRequest], HttpResponseBase],
            _ResponseChain(list(settings.API_MIDDLEWARE))._middleware_chain,
        )
        self.headers = _Headers(self.chain)
        self.render = _renderer(api.renderer)
        self.broken = False  # the API middleware's headers are not fixed: decline all
        # (raw Host, X-Forwarded-Host) -> whether request.get_host() accepts it, under
        # the settings get_host() reads (``hosts_under``).
        self.hosts: dict[tuple[str, str | None], bool] = {}
        self.hosts_under: tuple[Any, ...] = ()


def _renderer(renderer: BaseRenderer) -> Callable[[HttpRequest, Any, int], str]:
    """``renderer.render`` of a status and body dict, as ``_result_to_response`` calls it.

    When that is ninja's own JSONRenderer.render (``json.dumps(data, cls=encoder_class,
    **json_dumps_params)``), the encoder is built once and its ``encode`` called: the
    same text, without the encoder json.dumps builds per call (3 us of 5.5; issue 11).
    JSONEncoder.encode keeps no state between calls, so threads may share it.
    """
    if type(renderer).render is not JSONRenderer.render:
        return lambda request, data, status: renderer.render(request, data, response_status=status)
    json_renderer = cast(JSONRenderer, renderer)
    encode = json_renderer.encoder_class(**json_renderer.json_dumps_params).encode
    return lambda request, data, status: encode(data)


def _body_model(operation: Operation) -> type[BodyModel]:
    """ninja's model of ``operation``'s body, checked to be all it reads besides the
    ``thread_id: str`` path parameter (_happy_request parses only the body), and to read
    the whole body as its one field ``payload`` (what _payload relies on)."""
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
        and getattr(body, "__read_from_single_attr__", None) == "payload"
        and not getattr(body, "__ninja_flatten_map__", None)
    ):
        raise LookupError(f"unexpected parameters {operation.models}")
    return body


def _payload(model: type[BodyModel], request: WSGIRequest, body: bytes) -> Any:
    """The view's ``payload``, as ninja's ``model.resolve`` gives it to the view
    (Operation._get_values): the body parsed by the API's parser (memoryapp.http_errors)
    and validated as ``{"payload": ...}`` with the request as context; no body is the
    model's default. Raises what the parser or pydantic raises. The path model's one
    field, thread_id: str, would give the matched str back, so it is not run."""
    if not body:
        return model().payload  # type: ignore[call-arg,attr-defined]
    data = {"payload": api.parser.parse_body(request)}
    return model.model_validate(data, context={"request": request}).payload  # type: ignore[attr-defined]


def _operation(path: str, view: Callable[..., Any]) -> Operation:
    """The bound ninja Operation that serves ``view`` at ``path`` (POST)."""
    path_view = inspect.getclosurevars(resolve(path).func).nonlocals["self"]
    for operation in path_view.operations:
        if operation.view_func is view and "POST" in operation.methods and operation.api is api:
            return operation
    raise LookupError(f"no POST operation for {view.__name__} at {path}")


def _conf() -> Any:
    """The settings object behind ``django.conf.settings`` (what override_settings swaps
    in): each read through the lazy proxy runs LazyObject's __getattribute__ in Python
    first, 8 reads per request on the fast path (issue 11). Django is set up before any
    request arrives (memoryapp.asgi), so the object is there."""
    return settings._wrapped  # type: ignore[misc]


def _host_allowed(routes: _Routes, request: WSGIRequest, conf: Any) -> bool:
    """Whether ``request.get_host()`` accepts the request's Host (DisallowedHost is left
    to Django, whatever it answers); the verdict is remembered per raw Host and
    X-Forwarded-Host while the settings get_host() reads stay the same (``conf``:
    _conf())."""
    meta = request.META
    host = meta.get("HTTP_HOST")
    under = (conf.ALLOWED_HOSTS, conf.DEBUG, conf.USE_X_FORWARDED_HOST)
    if host is None:  # get_host() then builds it from SERVER_NAME: not worth a memo
        return _get_host_ok(request)
    if under != routes.hosts_under:
        routes.hosts, routes.hosts_under = {}, under
    key = (host, meta.get("HTTP_X_FORWARDED_HOST"))
    verdict = routes.hosts.get(key)
    if verdict is None:
        verdict = _get_host_ok(request)
        if len(routes.hosts) < _HOSTS_MAX:
            routes.hosts[key] = verdict
    return verdict


def _get_host_ok(request: WSGIRequest) -> bool:
    try:
        request.get_host()
    except Exception:
        return False
    return True


# Django's own receivers of its request signals (django.db, django.core.cache,
# django.core.handlers.base), as Signal.receivers keys a function connected for any
# sender: (id of the function, id of None). In any order (the test client disconnects
# and connects close_old_connections again); their work does not depend on it.
_STARTED_KEYS = frozenset((id(f), id(None)) for f in (reset_queries, close_old_connections))
_FINISHED_KEYS = frozenset((id(f), id(None)) for f in (close_old_connections, close_caches, reset_urlconf))


def _upkeep(
    signal: Signal,
    keys: frozenset[tuple[int, int]],
    finished: bool,
    environ: dict[str, Any] | None,
    conn: BaseDatabaseWrapper | None = None,
) -> BaseDatabaseWrapper | None:
    """What WSGIHandler's ``signal`` (request_started, or request_finished when
    ``finished``) does: its receivers' work, done directly when they are exactly Django's
    own (``keys``), else the signal sent as Django sends it.

    Django's: queries_log cleared (request_started), each connection this thread opened
    closed if unusable or past CONN_MAX_AGE (both; on PostgreSQL with its pool that
    returns the connection to the pool once answered), the caches closed and the
    thread's URL conf reset (request_finished). Done directly, with the one database
    alias this service configures, its connection is looked up once (not once per
    receiver, and not again by request_finished's pass: ``conn``, what request_started's
    returned); closing caches whose close() does nothing (BaseCache's: local memory,
    Redis, database) is left out, and so is the URL conf's reset: nothing here sets it,
    and Django's handler resets it at the end of each request it serves.
    """
    if {r[0] for r in signal.receivers} != keys:
        if finished:
            signal.send(sender=WSGIHandler)
        else:
            signal.send(sender=WSGIHandler, environ=environ)
        return None
    if len(connections.settings) == 1:
        if conn is None:
            conn = connections[DEFAULT_DB_ALIAS]
        if not finished:
            conn.queries_log.clear()
        conn.close_if_unusable_or_obsolete()
    else:
        conn = None
        for each in connections.all(initialized_only=True):
            if not finished:
                each.queries_log.clear()
            each.close_if_unusable_or_obsolete()
    if finished and not _caches_close_nothing():
        caches.close_all()
    return conn


class _AsARequest:
    """Around the fast path's database work, what Django's WSGIHandler does around a
    request's: request_started's work before any database use (a stale connection is
    closed), request_finished's once answered (``_upkeep``, the connection looked up
    once for both). A class rather than a @contextmanager generator: about 1 us less
    per request (issue 11)."""

    __slots__ = ("conn", "request")

    def __init__(self, request: WSGIRequest, conn: BaseDatabaseWrapper | None = None) -> None:
        self.request = request
        self.conn = conn  # the default connection, when the caller looked it up

    def __enter__(self) -> None:
        self.conn = _upkeep(signals.request_started, _STARTED_KEYS, False, self.request.environ, self.conn)

    def __exit__(self, *exc_info: object) -> None:
        _upkeep(signals.request_finished, _FINISHED_KEYS, True, None, self.conn)


_CLOSE_NOTHING: dict[int, tuple[dict[str, Any], bool]] = {}


def _caches_close_nothing() -> bool:
    """Whether every configured cache's close() is BaseCache's, which does nothing
    (remembered per settings.CACHES as the cache handler holds it)."""
    configured = caches.settings
    known = _CLOSE_NOTHING.get(0)
    if known is not None and known[0] is configured:
        return known[1]
    verdict = all(
        import_string(entry["BACKEND"]).close is BaseCache.close for entry in configured.values()
    )
    _CLOSE_NOTHING[0] = (configured, verdict)
    return verdict


class FastPath:
    """``fast(environ, body)``: the response of a happy-path append or prepare, or None."""

    def __init__(self) -> None:
        self._routes: _Routes | None = None
        self._lock = threading.Lock()

    def routes(self) -> _Routes:
        """The routes, found on first use (the URL conf and ninja are loaded by then)."""
        if self._routes is None:
            with self._lock:
                if self._routes is None:
                    self._routes = _Routes()
        return self._routes

    def __call__(self, environ: dict[str, Any], body: bytes) -> Answer | None:
        """The answer to the request ``environ`` with ``body``; None declines it."""
        found = self._happy(environ, body, _conf())
        if found is None:
            return None
        answer = self._serve(*found, defer=None)
        assert not callable(answer)  # only an inline append leaves work for later
        return answer

    def inline(self, environ: dict[str, Any], body: bytes, defer: Defer) -> Answer | Later | None:
        """The answer to ``environ`` served on the server's event loop without waiting for
        anything (memoryapp.wsgipool calls it there); None leaves the request to a pool
        thread, as it was before anything was written.

        Only where nothing on this path can wait (``inline_allowed``). Reads then run on
        the loop thread's own connection; an append runs in sql.no_waiting (a taken lock
        declines it: nothing was written) and hands its upkeep to ``defer`` (run on a pool
        thread, nobody waiting). An append that tripped its thread's auto-compaction
        returns the rest as a ``Later`` for a pool thread: the compaction (a model call),
        then the answer.
        """
        conf = _conf()
        conn = _inline_connection(conf)
        if conn is None:
            return None
        found = self._happy(environ, body, conf)
        if found is None:
            return None
        return self._serve(*found, defer=defer, conn=conn)

    def _happy(
        self, environ: dict[str, Any], body: bytes, conf: Any
    ) -> tuple[_Routes, str, uuid.UUID, WSGIRequest, dict[str, Any]] | None:
        """The route, thread id, request and parameters of a happy-path request; None
        when it is not one (``conf``: _conf()). Nothing here has a side effect."""
        # The cheap checks first: every other request passes here too.
        if environ["REQUEST_METHOD"] != "POST" or not conf.HTTP_FAST_PATH:
            return None
        if environ.get("SCRIPT_NAME") or conf.FORCE_SCRIPT_NAME is not None:
            return None
        if environ.get("QUERY_STRING"):  # neither route takes one: Django says which (400)
            return None
        routes = self.routes()
        match = routes.pattern.fullmatch(environ["PATH_INFO"])
        if match is None or "HTTP_AUTHORIZATION" not in environ or routes.broken:
            return None
        try:
            request, values = self._happy_request(routes, match[2], environ, body, conf)
        except _Declined:
            return None
        # The id as validation.path_id gives it (the pattern is its rule), so the domain
        # call does not match it against the same pattern again.
        return routes, match[2], uuid.UUID(match[1]), request, values

    def _happy_request(
        self, routes: _Routes, kind: str, environ: dict[str, Any], body: bytes, conf: Any
    ) -> tuple[WSGIRequest, dict[str, Any]]:
        """The request and its validated parameters; _Declined for anything but the happy
        path. Nothing here has a side effect."""
        if any(db["ATOMIC_REQUESTS"] for db in connections.settings.values()):
            raise _Declined()  # Django would run the view in a transaction
        request = WSGIRequest(environ)
        request._body = body  # the stream stays unread for Django, should it answer
        try:
            # A Host ALLOWED_HOSTS refuses is left to Django (its /v1 chain never asks).
            if not _host_allowed(routes, request, conf):
                raise _Declined()
            if conf.SECURE_SSL_REDIRECT and not request.is_secure():
                raise _Declined()
            values: dict[str, Any] = {"payload": _payload(routes.bodies[kind], request, body)}
            if kind == "messages":
                values["key"] = views.idempotency_key(environ.get("HTTP_IDEMPOTENCY_KEY"))
        except Exception as exc:
            raise _Declined() from exc
        return request, values

    def _serve(
        self,
        routes: _Routes,
        kind: str,
        thread_id: uuid.UUID,
        request: WSGIRequest,
        values: dict[str, Any],
        defer: Defer | None,
        conn: BaseDatabaseWrapper | None = None,
    ) -> Answer | Later | None:
        """Authenticate, call the domain and answer; None when declined before any write.
        With ``defer`` it is the inline run (``inline``), on ``conn``, the default
        connection it looked up."""
        with _AsARequest(request, conn):
            if defer is None:
                answered = self._respond(routes, kind, thread_id, request, values, inline=False)
            else:
                answered = self._respond_inline(routes, kind, thread_id, request, values, defer, conn)
            if isinstance(answered, AppendResult):
                return functools.partial(self._finish_append, routes, request, answered)
            return _answer(routes, request, answered)

    def _respond_inline(
        self,
        routes: _Routes,
        kind: str,
        thread_id: uuid.UUID,
        request: WSGIRequest,
        values: dict[str, Any],
        defer: Defer,
        conn: BaseDatabaseWrapper | None,
    ) -> _Responded | AppendResult:
        """_respond in sql.no_waiting (on ``conn``); the upkeep it left goes to ``defer``."""
        try:
            with sql.no_waiting(conn) as deferred:
                answered = self._respond(routes, kind, thread_id, request, values, inline=True)
        except DatabaseError:  # the connection could not be set up: a pool thread tries
            return None
        if deferred:
            defer(functools.partial(_run_later, deferred))
        return answered

    def _finish_append(self, routes: _Routes, request: WSGIRequest, appended: AppendResult) -> Answer:
        """On a pool thread: the auto-compaction an inline append tripped, then its answer
        (what _respond does after the append)."""
        with _AsARequest(request):
            try:
                data, replayed = views.append_body(appended)
                answered: _Responded = (201, data, replayed)
            except Exception as exc:
                answered = api.on_exception(request, exc)
            answer = _answer(routes, request, answered)
            assert answer is not None
            return answer

    def _respond(
        self,
        routes: _Routes,
        kind: str,
        thread_id: uuid.UUID,
        request: WSGIRequest,
        values: dict[str, Any],
        inline: bool,
    ) -> _Responded | AppendResult:
        """(status, body dict, replayed) of the happy path; None when declined before any
        write; ninja's error response for anything raised after it. ``inline``: a taken
        write lock or a busy read declines too, and an append that tripped the thread's
        auto-compaction is returned as it was stored, for a pool thread to finish."""
        operation = routes.operations[kind]
        try:
            key = operation.auth_callbacks[0](request)  # ApiKeyAuth: the key, counted
        except Exception:
            return None  # a rate-limited key, or the key look-up failed: Django says so
        if not key:
            return None
        request.auth = key  # type: ignore[attr-defined]
        try:
            if kind == "messages":
                try:
                    appended = views.append_store(
                        thread_id=thread_id,
                        project=request_project(request),
                        payload=values["payload"],
                        key=values["key"],
                    )
                except (*_BEFORE_ANY_WRITE, sql.WritersBusy):
                    return None
                if inline and appended.compaction_due:
                    return appended
                data, replayed = views.append_body(appended)
                return 201, data, replayed
            try:
                data = views.prepare_answer(
                    thread_id=thread_id, project=request_project(request), payload=values["payload"]
                )
            except ThreadNotFound:
                return None
            except DatabaseError:
                if inline:  # a read that found the database busy: a pool thread reads again
                    return None
                raise
            return 200, data, False
        except Exception as exc:
            # After the write (or a failure ninja answers itself): what the view would
            # answer, through the same exception handlers.
            return api.on_exception(request, exc)


def _answer(routes: _Routes, request: WSGIRequest, answered: _Responded) -> Answer | None:
    """What _respond gave, as the server sends it: the happy path's body rendered by the
    API's renderer with the headers Django would send, a response through the API
    middleware (_django_answer), or None (declined)."""
    if isinstance(answered, HttpResponseBase):
        return _django_answer(routes, request, answered)
    if answered is None:
        return None
    status, data, replayed = answered
    content = routes.render(request, data, status).encode()
    secure = request.is_secure()
    try:
        headers = routes.headers.make(request, status, replayed, secure, len(content))
    except LookupError:
        logger.exception("HTTP fast path off: the API middleware's headers are not fixed")
        routes.broken = True
        response = HttpResponse(content, status=status, content_type=api.get_content_type())
        if replayed:
            response["Idempotent-Replayed"] = "true"
        return _django_answer(routes, request, response)
    return status, headers, content


def _run_later(jobs: list[Callable[[], object]]) -> None:
    """On a pool thread: the upkeep inline appends left (each job logs its own failure),
    with the connection handling of a request around it."""
    close_old_connections()
    try:
        for job in jobs:
            job()
    finally:
        close_old_connections()


def inline_allowed() -> bool:
    """Whether requests may be served on the event loop (``FastPath.inline``): the
    setting HTTP_FAST_PATH_INLINE is on, the one database is a SQLite file (whose reads
    never wait for a writer in WAL mode, and whose append can try its lock without
    waiting), and the rate limit needs no network round trip (off, or counted in a
    local-memory cache). PostgreSQL (a network round trip, row locks) and a Redis-backed
    rate limit are served from the pool as before."""
    return _inline_connection(_conf()) is not None


def _inline_connection(conf: Any) -> BaseDatabaseWrapper | None:
    """The default connection when inline_allowed (``conf``: _conf()), else None; the
    inline run uses it rather than look it up again."""
    if not conf.HTTP_FAST_PATH_INLINE or len(connections.settings) != 1:
        return None
    db = connections[DEFAULT_DB_ALIAS]
    name = str(db.settings_dict["NAME"])
    if db.vendor != "sqlite" or name == ":memory:" or name.startswith("file:"):
        return None
    if not conf.MEMORY_API_RATE_LIMIT:
        return db
    return db if caches.settings[DEFAULT_CACHE_ALIAS]["BACKEND"] == _LOCAL_MEMORY_CACHE else None


def _django_answer(routes: _Routes, request: WSGIRequest, answered: HttpResponseBase) -> Answer:
    """``answered`` (ninja's error response, after an append committed) through the API
    middleware chain, logged as Django logs a 4xx/5xx, as WSGIHandler sends it."""
    request._fast_response = answered  # type: ignore[attr-defined]
    response = cast(HttpResponse, routes.chain(request))
    if response.status_code >= 400:
        log_response("%s: %s", response.reason_phrase, request.path, response=response, request=request)
    try:
        headers = [
            *response.items(),
            *(("Set-Cookie", c.output(header="")) for c in response.cookies.values()),
        ]
        return response.status_code, _encode_headers(headers), b"".join(response)
    finally:
        # request_finished follows in _serve; the response's own closers only.
        for closer in response._resource_closers:  # type: ignore[attr-defined]
            closer()
        request.close()


fast_path = FastPath()

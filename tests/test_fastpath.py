"""memoryapp.fastpath: the hot routes' happy path before Django, answering byte for byte
as Django does, and handing everything else to Django unchanged (issue 11).

The parity tests drive the real ASGI application (memoryapp.asgi) in-process over a
catalogue of requests, once with the fast path on and once off, on two worlds with
identical histories and a frozen clock, and compare status, every header (in order) and
the body (only the ids that necessarily differ are normalised). Django's handler is
watched, so each case also proves which side answered it.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from django.core import signals
from django.core.cache import cache
from django.db import close_old_connections, connection, reset_queries
from django.test.utils import CaptureQueriesContext, override_settings

from memoryapp import asgi, working
from memoryapp.api.auth import RATE_COUNTED, key_cache
from memoryapp.fastpath import fast_path
from memoryapp.models import ApiKey, Message, Project
from memoryapp.wsgipool import wsgi_environ
from tests.conftest import Clock

TIMEOUT = 20
BASE = "/v1/memory/working"
UUID_RE = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass
class Side:
    """One world: a project, its key and threads, another project's thread, a revoked key."""

    key: str
    revoked: str
    threads: dict[str, str]

    @classmethod
    def make(cls, label: str) -> Side:
        project = Project.objects.create(slug=f"fast-{label}", name=label)
        other = Project.objects.create(slug=f"other-{label}", name=f"other {label}")
        _, secret = ApiKey.issue(project=project, name="k")
        old, revoked = ApiKey.issue(project=project, name="old")
        old.revoke()
        threads = {
            "main": working.thread_create(project=project, dataset="d"),
            "imports": working.thread_create(project=project, dataset="d"),
            "compacting": working.thread_create(project=project, dataset="d", auto_compact_threshold=3),
            "quiet": working.thread_create(project=project, dataset="d"),
            "other": working.thread_create(project=other, dataset="d"),
        }
        for n in range(3):
            working.message_append(thread=threads["quiet"], role="user", content=f"earlier {n}")
        return cls(secret, revoked, {name: str(t.pk) for name, t in threads.items()})

    def normalise(self, body: bytes) -> bytes:
        for name, pk in self.threads.items():
            body = body.replace(pk.encode(), name.encode())
        return UUID_RE.sub(b"<id>", body)


@dataclass
class Case:
    """A request (built for a side) and whether the fast path must answer it itself."""

    name: str
    fast: bool
    build: Callable[[Side], tuple[str, str, bytes, list[tuple[bytes, bytes]]]]


def _post(
    route: str,
    body: Any = None,
    *,
    thread: str = "main",
    raw: bytes | None = None,
    auth: str | None = "key",
    headers: list[tuple[bytes, bytes]] | None = None,
    method: str = "POST",
) -> Callable[[Side], tuple[str, str, bytes, list[tuple[bytes, bytes]]]]:
    def build(side: Side) -> tuple[str, str, bytes, list[tuple[bytes, bytes]]]:
        thread_id = side.threads.get(thread, thread)
        payload = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        sent = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")]
        if auth == "key":
            sent.append((b"authorization", f"Bearer {side.key}".encode()))
        elif auth == "revoked":
            sent.append((b"authorization", f"Bearer {side.revoked}".encode()))
        elif auth is not None:
            sent.append((b"authorization", auth.encode()))
        for name, value in headers or []:  # an empty value leaves the header out
            sent = [(n, v) for n, v in sent if n != name] + ([(name, value)] if value else [])
        return method, f"{BASE}/threads/{thread_id}/{route}", payload, sent

    return build


HI = {"role": "user", "content": "hi"}
CATALOGUE = [
    # The happy path: the fast path answers.
    Case("append", True, _post("messages", HI)),
    Case(
        "append with everything",
        True,
        _post(
            "messages",
            {
                "role": "assistant",
                "content": "Sure, the Outback has room for the dog.",
                "tokens": {"input": 120, "output": 14},
                "model": "gemini-2.5-flash",
                "latencyMs": 812,
                "metadata": {"stopReason": "end_turn", "agentName": "sales", "dropped": 1},
                "unknownField": True,
            },
        ),
    ),
    Case("append tokens with total", True, _post("messages", {**HI, "tokens": {"total": 9}})),
    Case("append with createdAt", True, _post("messages", {**HI, "createdAt": "2026-08-16T08:00:00.000Z"}, thread="imports")),
    Case("append with createdAt, same ms", True, _post("messages", {**HI, "createdAt": "2026-08-16T08:00:00.000+00:00"}, thread="imports")),
    Case("first with Idempotency-Key", True, _post("messages", HI, headers=[(b"idempotency-key", b"  k-1 ")])),
    Case("replay of an Idempotency-Key", True, _post("messages", HI, headers=[(b"idempotency-key", b"k-1")])),
    Case("prepare, no body", True, _post("prepare")),
    Case("prepare, empty body", True, _post("prepare", raw=b"")),
    Case("prepare, {}", True, _post("prepare", {})),
    Case("prepare, null", True, _post("prepare", raw=b"null")),
    Case("prepare, messageLimit", True, _post("prepare", {"messageLimit": 2})),
    Case("prepare, messageLimit 2.0", True, _post("prepare", raw=b'{"messageLimit": 2.0}')),
    Case("bearer in other case", True, _post("prepare", auth="bearer KEY")),
    Case("compacting 1", True, _post("messages", {**HI, "content": "one"}, thread="compacting")),
    Case("compacting 2", True, _post("messages", {**HI, "content": "two"}, thread="compacting")),
    Case("compaction trigger reached", True, _post("messages", {**HI, "content": "three"}, thread="compacting")),
    Case("prepare after compaction", True, _post("prepare", thread="compacting")),
    Case("replay after compaction", True, _post("messages", HI, headers=[(b"idempotency-key", b"k-1")])),
    # Everything else: Django answers.
    Case("no key", False, _post("messages", HI, auth=None)),
    Case("unknown key", False, _post("messages", HI, auth="Bearer nope")),
    Case("not bearer", False, _post("messages", HI, auth="Basic dXNlcjpwYXNz")),
    Case("revoked key", False, _post("messages", HI, auth="revoked")),
    Case("malformed thread id", False, _post("messages", HI, thread="not-a-uuid")),
    Case("thread id in braces", False, _post("messages", HI, thread="{" + str(uuid.UUID(int=5)) + "}")),
    Case("thread id without hyphens", False, _post("prepare", thread=uuid.UUID(int=5).hex)),
    Case("unknown thread", False, _post("messages", HI, thread=str(uuid.UUID(int=7)))),
    Case("unknown thread, prepare", False, _post("prepare", thread=str(uuid.UUID(int=7)))),
    Case("another project's thread", False, _post("messages", HI, thread="other")),
    Case("another project's thread, prepare", False, _post("prepare", thread="other")),
    Case("invalid JSON", False, _post("messages", raw=b'{"role": "user", "content": ')),
    Case("invalid JSON, prepare", False, _post("prepare", raw=b"{messageLimit")),
    Case("a list body", False, _post("messages", [HI])),
    Case("bad role", False, _post("messages", {"role": "robot", "content": "x"})),
    Case("empty content", False, _post("messages", {"role": "user", "content": ""})),
    Case("empty tokens", False, _post("messages", {**HI, "tokens": {}})),
    Case("total below parts", False, _post("messages", {**HI, "tokens": {"input": 5, "total": 1}})),
    Case("NUL in content", False, _post("messages", {"role": "user", "content": "a\u0000b"})),
    Case("messageLimit 0", False, _post("prepare", {"messageLimit": 0})),
    Case("messageLimit text", False, _post("prepare", {"messageLimit": "5"})),
    Case("Idempotency-Key too long", False, _post("messages", HI, headers=[(b"idempotency-key", b"k" * 256)])),
    Case("Idempotency-Key blank", False, _post("messages", HI, headers=[(b"idempotency-key", b"   ")])),
    Case("Idempotency-Key sent twice (joined)", False, _post("messages", HI, headers=[(b"idempotency-key", b"k-2,k-3")])),
    Case("Idempotency-Key conflict", False, _post("messages", {**HI, "content": "other"}, headers=[(b"idempotency-key", b"k-1")])),
    Case("createdAt before the last message", False, _post("messages", {**HI, "createdAt": "2026-08-16T07:00:00.000Z"}, thread="imports")),
    Case("createdAt in the future", False, _post("messages", {**HI, "createdAt": "2026-08-17T09:00:00.000Z"})),
    Case("createdAt without offset", False, _post("messages", {**HI, "createdAt": "2026-08-16T08:00:00"})),
    Case("wrong Host", False, _post("messages", HI, headers=[(b"host", b"evil.example")])),
    Case("trailing slash", False, _post("prepare/", thread="main")),
    Case("GET messages", False, _post("messages", method="GET")),
    Case("PUT prepare", False, _post("prepare", {}, method="PUT")),
    Case("key sent twice (joined)", False, _post("prepare", auth="Bearer KEY,Bearer KEY")),
    Case("a repeated field: the last one", True, _post("messages", raw=b'{"role": "user", "content": "one", "content": "two"}')),
    Case("NaN", False, _post("messages", raw=b'{"role": "user", "content": "x", "latencyMs": NaN}')),
    Case("prepare, a list", False, _post("prepare", raw=b"[]")),
    Case("prepare, a blank body", False, _post("prepare", raw=b" ")),
    Case("no Content-Type", True, _post("messages", HI, headers=[(b"content-type", b"")])),
    Case("Content-Type with a charset", True, _post("prepare", {}, headers=[(b"content-type", b"application/json; charset=utf-8")])),
    Case("text/plain body", False, _post("messages", HI, headers=[(b"content-type", b"text/plain")])),
    Case("form body, prepare", False, _post("prepare", {}, headers=[(b"content-type", b"application/x-www-form-urlencoded")])),
    Case("text/plain, no body", True, _post("prepare", headers=[(b"content-type", b"text/plain")])),
    Case("append once more", True, _post("messages", {**HI, "content": "still served"})),
    Case("prepare at the end", True, _post("prepare", {"messageLimit": 100})),
]


def _scope(method: str, path: str, headers: list[tuple[bytes, bytes]], scheme: str = "http") -> dict[str, Any]:
    path, _, query = path.partition("?")
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": scheme,
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


async def _acall(scope: dict[str, Any], body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    communicator = ApplicationCommunicator(asgi.application, scope)
    await communicator.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await communicator.receive_output(TIMEOUT)
    end = await communicator.receive_output(TIMEOUT)
    await communicator.wait(TIMEOUT)
    return start["status"], start["headers"], end["body"]


def call(
    method: str, path: str, body: bytes, headers: list[tuple[bytes, bytes]], scheme: str = "http"
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """One request through the real ASGI application: status, headers, body."""
    return async_to_sync(_acall)(_scope(method, path, headers, scheme), body)


@pytest.fixture
def django_entered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths Django's WSGI handler was entered for (the fast path declined them)."""
    entered: list[str] = []
    pooled = asgi._pooled_http
    original = pooled.app

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        entered.append(environ["PATH_INFO"])
        return original(environ, start_response)

    monkeypatch.setattr(pooled, "app", app)
    return entered


Result = tuple[int, list[tuple[bytes, bytes]], bytes, bool]


def _run(cases: list[Case], side: Side, entered: list[str]) -> list[Result]:
    results = []
    for case in cases:
        method, path, body, headers = case.build(side)
        headers = [(n, v.replace(b"KEY", side.key.encode())) for n, v in headers]
        before = len(entered)
        status, sent, content = call(method, path, body, headers)
        results.append((status, sent, side.normalise(content), len(entered) > before))
    return results


def _compare(cases: list[Case], on: list[Result], off: list[Result]) -> None:
    for case, (s1, h1, b1, django1), (s2, h2, b2, django2) in zip(cases, on, off, strict=True):
        assert (case.name, s1, b1) == (case.name, s2, b2)
        assert (case.name, h1) == (case.name, h2)
        assert (case.name, django1) == (case.name, not case.fast), "fast path handled it" if django1 else "Django answered"
        assert (case.name, django2) == (case.name, True)


@pytest.mark.django_db(transaction=True)
def test_it_answers_exactly_as_django_and_only_the_happy_path(
    settings: Any, clock: Clock, django_entered: list[str]
) -> None:
    settings.HTTP_FAST_PATH = True
    on = _run(CATALOGUE, Side.make("on"), django_entered)
    settings.HTTP_FAST_PATH = False
    off = _run(CATALOGUE, Side.make("off"), django_entered)

    _compare(CATALOGUE, on, off)
    statuses = {case.name: result[0] for case, result in zip(CATALOGUE, on, strict=True)}
    assert statuses["append"] == 201 and statuses["prepare, no body"] == 200
    assert statuses["unknown key"] == 401 and statuses["unknown thread"] == 404
    assert statuses["Idempotency-Key conflict"] == 409
    assert statuses["Idempotency-Key sent twice (joined)"] == 400
    assert (statuses["text/plain body"], statuses["form body, prepare"]) == (415, 415)
    unsupported = on[CATALOGUE.index(next(c for c in CATALOGUE if c.name == "text/plain body"))][2]
    assert json.loads(unsupported) == {
        "error": "Unsupported media type",
        "issues": [
            {
                "path": ["Content-Type"],
                "message": "Content-Type text/plain is not supported: send the body as application/json",
                "code": "unsupported_media_type",
            }
        ],
    }
    assert b'"compacted": true' in on[CATALOGUE.index(next(c for c in CATALOGUE if c.name == "compaction trigger reached"))][2]
    replay = on[CATALOGUE.index(next(c for c in CATALOGUE if c.name == "replay of an Idempotency-Key"))]
    assert (b"idempotent-replayed", b"true") in replay[1]


@contextmanager
def middleware_settings(**changes: Any) -> Iterator[None]:
    """``changes`` in force, with Django's middleware and the fast path's built again
    under them (both read settings once, at start-up), and again after."""

    def rebuild() -> None:
        asgi.django_wsgi_app.load_middleware()
        fast_path._routes = None

    try:
        with override_settings(**changes):
            rebuild()
            yield
    finally:
        rebuild()


@pytest.mark.django_db(transaction=True)
def test_it_sends_hsts_on_a_secure_request_as_django_does(
    settings: Any, clock: Clock, django_entered: list[str]
) -> None:
    answers = []
    with middleware_settings(SECURE_HSTS_SECONDS=3600, SECURE_HSTS_PRELOAD=True):
        for fast in (True, False):
            settings.HTTP_FAST_PATH = fast
            side = Side.make(f"tls-{fast}")
            method, path, body, headers = _post("messages", HI)(side)
            status, sent, content = call(method, path, body, headers, scheme="https")
            answers.append((status, sent, side.normalise(content)))
    assert answers[0] == answers[1]
    assert answers[0][0] == 201
    assert any(name == b"strict-transport-security" for name, _ in answers[0][1])
    assert len(django_entered) == 1  # only the fast path's off run


@pytest.mark.django_db(transaction=True)
def test_it_leaves_an_insecure_request_to_the_https_redirect(
    settings: Any, clock: Clock, django_entered: list[str]
) -> None:
    side = Side.make("redirect")
    method, path, body, headers = _post("messages", HI)(side)

    with middleware_settings(SECURE_SSL_REDIRECT=True):
        status, sent, _ = call(method, path, body, headers)

    assert status == 301
    assert (b"location", f"https://127.0.0.1:8000{path}".encode()) in sent
    assert django_entered == [path]
    assert Message.objects.filter(thread_id=side.threads["main"]).count() == 0


RATE_CASES = [
    Case("counted 1: unknown thread", False, _post("messages", HI, thread=str(uuid.UUID(int=7)))),
    Case("counted 2: conflict-free append", True, _post("messages", HI)),
    Case("counted 3: createdAt before the last", False, _post("messages", {**HI, "createdAt": "2026-08-16T07:00:00.000Z"})),
    Case("counted 4: another project's thread", False, _post("prepare", thread="other")),
    Case("limited: append", False, _post("messages", HI)),
    Case("limited: prepare", False, _post("prepare")),
]


@pytest.mark.django_db(transaction=True)
def test_it_counts_each_request_against_the_rate_limit_once(
    settings: Any, clock: Clock, django_entered: list[str]
) -> None:
    settings.MEMORY_API_RATE_LIMIT = "4/m"
    cache.clear()
    settings.HTTP_FAST_PATH = True
    on = _run(RATE_CASES, Side.make("rate-on"), django_entered)
    settings.HTTP_FAST_PATH = False
    off = _run(RATE_CASES, Side.make("rate-off"), django_entered)

    def window_left(results: list[Result]) -> list[Result]:
        # Retry-After is the seconds left in the key's window, which the two runs do not share.
        out = []
        for status, headers, body, django in results:
            for name, value in headers:
                if name == b"retry-after":
                    assert 1 <= int(value) <= 60
            headers = [(n, b"N" if n == b"retry-after" else v) for n, v in headers]
            out.append((status, headers, body, django))
        return out

    _compare(RATE_CASES, window_left(on), window_left(off))
    # Counted twice, the fourth request would already have been refused.
    assert [r[0] for r in on] == [404, 201, 400, 404, 429, 429]
    assert b"retry-after" in [n for n, _ in on[-1][1]]


@pytest.mark.django_db(transaction=True)
def test_an_error_after_the_append_is_answered_not_run_again(
    settings: Any, clock: Clock, django_entered: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryapp import compaction

    def broken(appended: Any) -> Any:
        raise RuntimeError("after the commit")

    monkeypatch.setattr(compaction, "compact_appended", broken)
    answers = []
    for fast in (True, False):
        settings.HTTP_FAST_PATH = fast
        side = Side.make(f"broken-{fast}")
        method, path, body, headers = _post("messages", HI)(side)
        status, sent, content = call(method, path, body, headers)
        answers.append((status, sent, side.normalise(content)))
        assert Message.objects.filter(thread_id=side.threads["main"]).count() == 1
    assert answers[0] == answers[1]
    assert answers[0][0] == 500
    assert len(django_entered) == 1


# --- statements and the rate-limit note, the fast path called directly -------------------------


@pytest.fixture
def like_the_test_client() -> Iterator[None]:
    """Keep the test's transaction open across request_started/finished, as Django's test
    client does (close_old_connections would close the connection inside it)."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def _environ(path: str, body: bytes, key: str, **extra: str) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {key}".encode())]
    headers += [(k.encode(), v.encode()) for k, v in extra.items()]
    return wsgi_environ(_scope("POST", path, headers), body)


def _statements(work: Callable[[], Any]) -> tuple[Any, list[str]]:
    reset_queries()
    with CaptureQueriesContext(connection) as ctx:
        out = work()
    return out, [q["sql"].split()[0].upper() for q in ctx.captured_queries]


@pytest.mark.usefixtures("like_the_test_client")
def test_it_appends_in_the_same_two_statements_and_prepares_in_at_most_three(
    project: Project, api_key: str
) -> None:
    thread = str(working.thread_create(project=project, dataset="d").pk)
    append = f"{BASE}/threads/{thread}/messages"
    body = json.dumps(HI).encode()
    key_cache.clear()

    cold, cold_sql = _statements(lambda: fast_path(_environ(append, body, api_key), body))
    warm, warm_sql = _statements(lambda: fast_path(_environ(append, body, api_key), body))
    key_cache.clear()
    cold_prepare, prepare_cold_sql = _statements(
        lambda: fast_path(_environ(f"{BASE}/threads/{thread}/prepare", b"", api_key), b"")
    )
    warm_prepare, prepare_warm_sql = _statements(
        lambda: fast_path(_environ(f"{BASE}/threads/{thread}/prepare", b"", api_key), b"")
    )

    assert None not in (cold, warm, cold_prepare, warm_prepare)
    assert (cold[0], warm[0], cold_prepare[0], warm_prepare[0]) == (201, 201, 200, 200)
    # Inside the test's transaction BEGIN and COMMIT show as SAVEPOINT and RELEASE; the
    # key's look-up (and its last_used write) only when it is not cached.
    assert warm_sql == ["SAVEPOINT", "UPDATE", "INSERT", "RELEASE"]
    assert cold_sql[-4:] == warm_sql and cold_sql[0] == "SELECT"
    assert prepare_warm_sql == ["SELECT", "SELECT"]
    assert prepare_cold_sql[0] == "SELECT" and prepare_cold_sql[-2:] == ["SELECT", "SELECT"]
    assert len([s for s in prepare_cold_sql if s == "SELECT"]) <= 3


@pytest.mark.usefixtures("like_the_test_client")
def test_a_declined_request_carries_its_count_to_django(
    project: Project, api_key: str, settings: Any
) -> None:
    settings.MEMORY_API_RATE_LIMIT = "100/m"
    unknown = f"{BASE}/threads/{uuid.UUID(int=9)}/messages"
    body = json.dumps(HI).encode()
    environ = _environ(unknown, body, api_key)

    assert fast_path(environ, body) is None
    assert environ[RATE_COUNTED][1] is None  # counted, not limited
    assert not any(k.startswith("HTTP_") and "RATE" in k for k in environ)


@pytest.mark.usefixtures("like_the_test_client")
def test_it_declines_when_turned_off_or_before_looking_at_the_key(
    project: Project, api_key: str, settings: Any
) -> None:
    thread = str(working.thread_create(project=project, dataset="d").pk)
    body = json.dumps(HI).encode()
    path = f"{BASE}/threads/{thread}/messages"
    settings.HTTP_FAST_PATH = False
    assert fast_path(_environ(path, body, api_key), body) is None
    settings.HTTP_FAST_PATH = True
    bad = b'{"role": "user"}'
    environ = _environ(path, bad, api_key)
    assert fast_path(environ, bad) is None
    assert RATE_COUNTED not in environ  # refused before the key was counted: Django counts it
    assert Message.objects.count() == 0


# --- what the lean path leaves out -------------------------------------------------------------

PREPARE_BODIES = [
    {"threadId": "t", "dataset": "d", "messages": [], "messageCount": 0, "truncated": False, "compacted": False},
    {
        "threadId": "t",
        "dataset": "d é",
        "messages": [
            {"role": "system", "content": "Summary: \u2028 \"quoted\" \\ ok"},
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "",
                "toolCall": {"id": "c1", "name": "recall", "arguments": {"q": "x", "n": 2.5, "deep": [1, None]}},
            },
            {"role": "tool", "content": "[]", "toolResult": {"id": "c1", "name": "recall", "isError": False}},
        ],
        "messageCount": 3,
        "truncated": True,
        "compacted": True,
        "warning": "The thread is past its compaction threshold",
    },
]
APPEND_BODY = {
    "messageId": str(uuid.UUID(int=1)),
    "threadId": str(uuid.UUID(int=2)),
    "sequenceNumber": 7,
    "role": "user",
    "createdAt": "2026-08-16T08:00:00.000Z",
    "compacted": False,
}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "status", "body"),
    [("prepare", 200, b) for b in PREPARE_BODIES] + [("messages", 201, APPEND_BODY)],
)
def test_the_serializers_dicts_render_as_the_response_schema_does(kind: str, status: int, body: dict[str, Any]) -> None:
    """The fast path renders memoryapp.serializers' dicts without ninja's validation
    through the response schema: the bytes must be the same (field order, left-out
    optional fields, nested tool calls)."""
    from django.core.handlers.wsgi import WSGIRequest
    from django.http import HttpResponse
    from ninja import Status

    from memoryapp.api import api

    routes = fast_path.routes()
    request = WSGIRequest(_environ(f"{BASE}/threads/{uuid.UUID(int=2)}/{kind}", b"", "k"))
    temporal = api.create_temporal_response(request)
    through_schema = routes.operations[kind]._result_to_response(request, Status(status, body), temporal)
    assert isinstance(through_schema, HttpResponse)
    assert through_schema.content == api.renderer.render(request, body, response_status=status).encode()


@pytest.mark.django_db(transaction=True)
def test_it_sends_the_request_signals_when_anything_else_listens(settings: Any, clock: Clock) -> None:
    """Django's own receivers are called directly; another receiver means the signals
    are sent as Django sends them, so it hears every request the fast path serves."""
    heard: list[str] = []

    def started(sender: Any, environ: dict[str, Any], **kwargs: Any) -> None:
        heard.append(f"started {environ['PATH_INFO'].rsplit('/', 1)[1]}")

    def finished(sender: Any, **kwargs: Any) -> None:
        heard.append("finished")

    from memoryapp import fastpath

    # Alone, Django's receivers are what the fast path calls directly.
    assert {r[0] for r in signals.request_started.receivers} == fastpath._STARTED_KEYS
    assert {r[0] for r in signals.request_finished.receivers} == fastpath._FINISHED_KEYS
    side = Side.make("signals")
    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    try:
        for route in ("messages", "prepare"):
            method, path, body, headers = _post(route, HI if route == "messages" else None)(side)
            status, _, _ = call(method, path, body, headers)
            assert status in (200, 201)
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)
    assert heard == ["started messages", "finished", "started prepare", "finished"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("where", ["pool", "inline"])
def test_it_returns_the_connection_it_used_after_each_request(
    clock: Clock, django_entered: list[str], settings: Any, where: str
) -> None:
    """request_finished's work, done directly: the connection of the thread that served
    the request (a pool thread, or the event loop's inline) is closed when obsolete
    (CONN_MAX_AGE; PostgreSQL's pool takes it back), as close_old_connections does."""
    from memoryapp.wsgipool import PooledWsgi

    settings.HTTP_FAST_PATH_INLINE = where == "inline"
    side = Side.make("upkeep")
    closed: list[str] = []
    pooled: PooledWsgi = asgi._pooled_http

    @contextmanager
    def obsolete() -> Iterator[None]:
        connection.ensure_connection()  # an event loop thread may not have one yet
        connection.close_at = 0.0  # past its age: the next upkeep closes it
        original = connection.close

        def close() -> None:
            closed.append("closed")
            original()

        connection.close = close  # type: ignore[method-assign]
        try:
            yield
        finally:
            del connection.close

    def fast(environ: dict[str, Any], body: bytes) -> Any:
        with obsolete():
            return fast_path(environ, body)

    def inline(environ: dict[str, Any], body: bytes, defer: Any) -> Any:
        with obsolete():
            return fast_path.inline(environ, body, defer)

    original = pooled.fast, pooled.inline
    pooled.fast, pooled.inline = fast, inline
    try:
        method, path, body, headers = _post("prepare")(side)
        status, _, _ = call(method, path, body, headers)
    finally:
        pooled.fast, pooled.inline = original
    assert status == 200 and not django_entered
    assert closed  # request_started's check already found it past its age


QUERY_CASES = [
    ("prepare", None, "messageLimit=5"),
    ("prepare", {"messageLimit": 30}, "messageLimit=5"),
    ("messages", HI, "role=assistant"),
]


def _query_answers(side: Side, entered: list[str]) -> list[tuple[int, Any, bool]]:
    answers = []
    for route, body, query in QUERY_CASES:
        method, path, payload, headers = _post(route, body)(side)
        before = len(entered)
        status, _, content = call(method, f"{path}?{query}", payload, headers)
        answers.append((status, json.loads(content), len(entered) > before))
    return answers


@pytest.mark.django_db(transaction=True)
def test_a_query_parameter_on_the_hot_routes_is_400_through_django(
    settings: Any, clock: Clock, django_entered: list[str]
) -> None:
    """Over the real application with the fast path off: memoryapp.api.params answers
    (the two routes take no query parameters), nothing is appended."""
    settings.HTTP_FAST_PATH = False
    side = Side.make("query")
    answers = _query_answers(side, django_entered)
    assert [(status, body["issues"][0]["code"], django) for status, body, django in answers] == [
        (400, "unknown_parameter", True)
    ] * 3
    assert Message.objects.filter(thread_id=side.threads["main"]).count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_query_parameter_on_the_hot_routes_is_400_with_the_fast_path_on(
    settings: Any, clock: Clock, django_entered: list[str]
) -> None:
    settings.HTTP_FAST_PATH = True
    answers = _query_answers(Side.make("query-fast"), django_entered)
    assert [(status, django) for status, _, django in answers] == [(400, True)] * 3

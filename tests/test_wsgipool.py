"""memoryapp.wsgipool: Django on the pool, one hand-off each way, whole bodies both ways."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator

from memoryapp import wsgipool
from memoryapp.asgi import http_application
from memoryapp.models import ApiKey, Message, Project, Thread
from memoryapp.validation import RAW_PATH_INFO
from memoryapp.wsgipool import PooledWsgi, wsgi_environ
from tests.test_asgi import TIMEOUT, _scope

pytestmark = pytest.mark.django_db(transaction=True)


def _thread_and_key() -> tuple[str, str]:
    project = Project.objects.create(slug="pool", name="Pool")
    thread = Thread.objects.create(project=project, dataset="d")
    return str(thread.pk), ApiKey.issue(project=project, name="t")[1]


async def _messages(communicator: ApplicationCommunicator) -> list[dict[str, Any]]:
    out = [await communicator.receive_output(TIMEOUT)]
    while out[-1]["type"] != "http.response.body" or out[-1].get("more_body", False):
        out.append(await communicator.receive_output(TIMEOUT))
    return out


async def test_it_reads_a_chunked_body_whole_and_answers_in_two_messages() -> None:
    thread_id, secret = await sync_to_async(_thread_and_key)()
    scope = _scope(
        "POST",
        f"/v1/memory/working/threads/{thread_id}/messages",
        [
            (b"authorization", f"Bearer {secret}".encode()),
            (b"content-type", b"application/json"),
            (b"transfer-encoding", b"chunked"),  # no Content-Length, as streaming clients send
        ],
    )
    body = json.dumps({"role": "user", "content": "sent in two pieces"}).encode()
    communicator = ApplicationCommunicator(http_application, scope)
    await communicator.send_input({"type": "http.request", "body": body[:10], "more_body": True})
    await communicator.send_input({"type": "http.request", "body": body[10:], "more_body": False})

    start, end = await _messages(communicator)

    assert (start["type"], start["status"]) == ("http.response.start", 201)
    assert (b"content-type", b"application/json; charset=utf-8") in start["headers"]
    assert end["type"] == "http.response.body" and not end.get("more_body", False)
    assert json.loads(end["body"])["sequenceNumber"] == 1
    stored = await Message.objects.aget(thread_id=thread_id)
    assert stored.content == "sent in two pieces"


async def test_it_passes_status_headers_and_every_written_piece_through() -> None:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        write = start_response("418 I'm a teapot", [("X-Piece", "yes"), ("Content-Type", "text/plain")])
        write(b"written, ")
        return [environ["wsgi.input"].read(), b" (", environ["CONTENT_LENGTH"].encode(), b")"]

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await PooledWsgi(app, workers=1)(_scope("POST", "/x"), b"body", send)

    assert sent == [
        {
            "type": "http.response.start",
            "status": 418,
            "headers": [(b"x-piece", b"yes"), (b"content-type", b"text/plain")],
        },
        {"type": "http.response.body", "body": b"written, body (4)"},
    ]


def test_it_builds_the_wsgi_environ_the_asgi_spec_maps() -> None:
    scope = {
        **_scope(
            "POST",
            "/app/v1/caf\u00e9",
            [
                (b"content-type", b"application/json"),
                (b"content-length", b"999"),  # the body read is what counts
                (b"x-forwarded-for", b"10.0.0.1"),
                (b"x-forwarded-for", b"10.0.0.2"),
                (b"idempotency-key", b"k-1"),
            ],
        ),
        "root_path": "/app",
        "query_string": b"a=1&b=%C3%A9",
        "scheme": "https",
    }

    environ = wsgi_environ(scope, b"body")

    assert environ["wsgi.input"].read() == b"body"
    assert {k: v for k, v in environ.items() if k.isupper()} == {
        "REQUEST_METHOD": "POST",
        "SCRIPT_NAME": "/app",
        "PATH_INFO": "/v1/caf\u00c3\u00a9",  # UTF-8 bytes read as latin-1 (PEP 3333)
        "QUERY_STRING": "a=1&b=%C3%A9",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "CONTENT_LENGTH": "4",
        "CONTENT_TYPE": "application/json",
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": "50000",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_X_FORWARDED_FOR": "10.0.0.1,10.0.0.2",
        "HTTP_IDEMPOTENCY_KEY": "k-1",
    }
    assert environ["wsgi.url_scheme"] == "https"


async def test_it_raises_what_the_app_raised_in_the_awaiting_request() -> None:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        raise LookupError("from the pool thread")

    async def send(message: dict[str, Any]) -> None:
        raise AssertionError("nothing is sent")

    with pytest.raises(LookupError, match="from the pool thread"):
        await PooledWsgi(app, workers=1)(_scope("GET", "/x"), b"", send)


def test_header_names_are_mapped_once_and_the_memo_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wsgipool, "_ENVIRON_KEYS", {})
    names = [f"x-made-up-{n}".encode() for n in range(wsgipool._ENVIRON_KEYS_MAX + 40)]
    scope = _scope("POST", "/x", [(b"Content-Type", b"text/plain"), (b"content-length", b"9"), *((n, b"v") for n in names)])

    first, second = wsgi_environ(scope, b"ab"), wsgi_environ(scope, b"ab")

    assert first.keys() == second.keys()
    assert (first["CONTENT_TYPE"], first["CONTENT_LENGTH"], first["HTTP_X_MADE_UP_0"]) == ("text/plain", "2", "v")
    assert first[f"HTTP_X_MADE_UP_{len(names) - 1}"] == "v"
    assert "HTTP_CONTENT_LENGTH" not in first and "HTTP_CONTENT_TYPE" not in first
    assert len(wsgipool._ENVIRON_KEYS) == wsgipool._ENVIRON_KEYS_MAX
    assert wsgipool._ENVIRON_KEYS[b"content-length"] == "CONTENT_LENGTH"


async def test_sequential_requests_share_one_thread_and_concurrent_ones_at_most_workers() -> None:
    seen: list[str] = []
    release = threading.Event()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        seen.append(threading.current_thread().name)
        if environ["PATH_INFO"] == "/wait":
            release.wait(TIMEOUT)
        start_response("200 OK", [])
        return [b""]

    async def send(message: dict[str, Any]) -> None:
        pass

    pool = PooledWsgi(app, workers=2)
    for _ in range(5):
        await pool(_scope("GET", "/x"), b"", send)
    assert len(set(seen)) == 1 and len(pool.crew.threads) == 1  # an idle thread is reused

    seen.clear()
    waiting = [asyncio.ensure_future(pool(_scope("GET", "/wait"), b"", send)) for _ in range(3)]
    while len(seen) < 2:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    assert len(seen) == 2 and len(pool.crew.threads) == 2  # the third waits for a thread
    release.set()
    await asyncio.gather(*waiting)
    assert len(seen) == 3 and len(pool.crew.threads) == 2

    threads = list(pool.crew.threads)
    del pool
    gc.collect()
    for thread in threads:  # the pool gone, its threads end
        thread.join(TIMEOUT)
        assert not thread.is_alive()


@pytest.mark.parametrize("crowded", [False, True])
async def test_the_inline_handler_is_asked_first_unless_the_server_is_crowded(crowded: bool) -> None:
    """``inline`` answers on the event loop itself (no pool thread), or hands the request
    on with None; with other requests in flight (``crowded``) it is not asked at all."""
    asked: list[str] = []
    pool_threads: list[str] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        pool_threads.append(threading.current_thread().name)
        start_response("200 OK", [])
        return [b"from the pool"]

    def inline(environ: dict[str, Any], body: bytes, defer: Any) -> Any:
        asked.append(environ["PATH_INFO"])
        assert asyncio._get_running_loop() is None  # synchronous code, as Django wants it
        return (201, [], b"inline") if environ["PATH_INFO"] == "/mine" else None

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    pool = PooledWsgi(app, workers=1, inline=inline, crowded=lambda: crowded)
    await pool(_scope("POST", "/mine"), b"", send)
    await pool(_scope("POST", "/other"), b"", send)
    bodies = [m["body"] for m in sent if m["type"] == "http.response.body"]
    if crowded:
        assert (asked, bodies, len(pool_threads)) == ([], [b"from the pool", b"from the pool"], 2)
    else:
        assert (asked, bodies, len(pool_threads)) == (["/mine", "/other"], [b"inline", b"from the pool"], 1)


def test_the_environ_keeps_the_bytes_of_a_path_that_is_not_utf8() -> None:
    """uvicorn's ``path`` has ``%FF`` as U+FFFD, which addressed the dataset "\\ufffd"
    (tester item 4): PATH_INFO is the bytes of ``raw_path``, and RAW_PATH_INFO keeps them
    past Django's WSGIRequest, which replaces PATH_INFO."""
    scope = {
        **_scope("DELETE", "/app/v1/memory/datasets/\ufffd/caf\u00e9"),
        "raw_path": b"/app/v1/memory/datasets/%FF/caf%C3%A9",
        "root_path": "/app",
    }
    environ = wsgi_environ(scope, b"")
    assert (environ["SCRIPT_NAME"], environ["PATH_INFO"]) == ("/app", "/v1/memory/datasets/\u00ff/caf\u00c3\u00a9")
    assert environ[RAW_PATH_INFO] == "/v1/memory/datasets/\u00ff/caf\u00c3\u00a9"
    # A server that gives no raw_path: the decoded path, as before.
    del scope["raw_path"]
    assert wsgi_environ(scope, b"")["PATH_INFO"] == "/v1/memory/datasets/\u00ef\u00bf\u00bd/caf\u00c3\u00a9"


def test_the_wsgi_entry_point_keeps_the_path_as_the_server_gave_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from memoryapp import wsgi

    seen: dict[str, Any] = {}
    monkeypatch.setattr(wsgi, "_django", lambda environ, start_response: seen.update(environ) or [b""])
    wsgi.application({"PATH_INFO": "/v1/memory/datasets/\u00ff"}, None)
    assert seen[RAW_PATH_INFO] == "/v1/memory/datasets/\u00ff"

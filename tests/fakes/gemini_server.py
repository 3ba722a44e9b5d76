"""A fake Gemini API on loopback, so tests drive the real google-genai client offline.

It speaks the REST calls the client makes for the Gemini API (any API version prefix):

- ``POST /{version}/models/{model}:generateContent``: one JSON GenerateContentResponse;
- ``POST /{version}/models/{model}:streamGenerateContent?alt=sse``: server-sent events,
  one ``data: {json}`` GenerateContentResponse chunk each;
- ``POST /{version}/models/{model}:countTokens``: ``{"totalTokens": n}``;
- ``POST /{version}/models/{model}:batchEmbedContents``: ``{"embeddings": [{"values"}]}``
  (what the client sends for ``embed_content`` on the Gemini API);
- ``POST /{version}/models/{model}:embedContent``: ``{"embedding": {"values": [...]}}``.

Use it through the ``fake_gemini`` fixture (``tests/fakes/fixtures.py``), which starts a
server, points the settings at it and selects the gemini adapter::

    from tests.fakes.fixtures import fake_gemini_fixture  # noqa: F401  (registers it)
    from tests.fakes.gemini_server import FakeGeminiServer, FakeResponse, error, text_response

    def test_it_summarises(fake_gemini: FakeGeminiServer) -> None:
        fake_gemini.enqueue(FakeResponse(body=text_response("- the user drives a Civic")))
        ...  # code under test calls memoryapp.llm.get_model().summarize(...)
        request = fake_gemini.requests[0]
        assert request.model == "gemini-2.5-flash"
        assert request.action == "generateContent"
        assert "</transcript>" in request.user_text

Reading requests back
    ``server.requests`` is a list (a copy, oldest first) of ``RecordedRequest``: ``method``,
    ``path`` (no query), ``query`` (dict), ``headers`` (lower-case names), ``body`` (parsed
    JSON or None), ``raw`` (bytes); and the shorthands ``model``, ``action``,
    ``system_instruction`` (its text parts joined), ``contents`` and ``user_text`` (the
    text parts of every content, joined with newlines). ``server.requests_for(action)``
    filters by action. ``server.clear()`` forgets requests and scripted responses.

Scripting answers
    Each request takes the first queued response whose ``action`` matches (None matches
    any action), else asks ``server.responder`` (a function ``RecordedRequest ->
    FakeResponse | None``), else gets the default answer for its action:

    - ``server.enqueue(FakeResponse(...), ..., action=None)``: queue answers, used once each.
    - ``server.responder = lambda request: FakeResponse(...)``: build answers from requests
      (return None to fall through to the default).
    - ``server.delay = 2.0``: seconds to wait before every answer (provokes timeouts).
    - ``server.default_text``: the text of default generate/stream answers.

    Default answers: generateContent says ``default_text`` ("fake reply"; usage 10 in,
    5 out); a stream sends it word by word ("fake", " reply") with the same usage on the
    last event; countTokens counts the words of the request's text; embeddings are
    ``fake_vector(text)`` (8 floats, unit length, deterministic); other paths get 404.

    ``FakeResponse`` fields: ``status`` (200), ``body`` (a dict sent as JSON, or str/bytes
    sent as is), ``chunks`` (a list of dicts: the SSE events of a stream), ``delay``
    (seconds before answering, added to ``server.delay``), ``chunk_delay`` (seconds
    between SSE events), ``abort_after_chunks`` (drop the connection after that many
    events, to fake a broken stream), ``headers``. A stream request answered with a 200
    ``body`` and no ``chunks`` gets that body as its one SSE event; a non-200 answer is
    always a plain JSON body, as the real API sends errors.

Building bodies
    ``text_response(text, input_tokens=, output_tokens=, finish_reason=)``,
    ``function_call_response(name, args)``, ``stream_chunks(["Hel", "lo"],
    function_calls=[("open_memory", {"name": "x"})], input_tokens=, output_tokens=)``,
    ``blocked_response(reason)``, ``error(status, message)`` (a whole ``FakeResponse``
    with Google's error body), ``embeddings_response(vectors)``, ``count_tokens_response(n)``.

The server is a ``ThreadingHTTPServer`` on 127.0.0.1 with a random port; ``stop()`` also
wakes answers that are still sleeping in a delay. It speaks HTTP/1.0 (one request per
connection), which the client handles like any other server.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

_PATH = re.compile(r"^/(?:[^/]+/)?models/(?P<model>[^/:]+):(?P<action>[A-Za-z]+)$")

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

EMBEDDING_DIMENSIONS = 8


@dataclass(frozen=True)
class RecordedRequest:
    """One request the fake received, as the client sent it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    raw: bytes

    @property
    def model(self) -> str:
        """The model name in the path (``gemini-2.5-flash``), or "" for other paths."""
        match = _PATH.match(self.path)
        return match.group("model") if match else ""

    @property
    def action(self) -> str:
        """``generateContent``, ``streamGenerateContent``, ``countTokens``, ... or ""."""
        match = _PATH.match(self.path)
        return match.group("action") if match else ""

    @property
    def contents(self) -> list[dict[str, Any]]:
        """The request's ``contents`` (for countTokens too), or []."""
        if not isinstance(self.body, dict):
            return []
        contents = self.body.get("contents")
        if contents is None and isinstance(self.body.get("generateContentRequest"), dict):
            contents = self.body["generateContentRequest"].get("contents")
        return contents if isinstance(contents, list) else []

    @property
    def system_instruction(self) -> str:
        """The text parts of ``systemInstruction``, joined with newlines ("" if none)."""
        if not isinstance(self.body, dict):
            return ""
        instruction = self.body.get("systemInstruction") or {}
        return "\n".join(_texts(instruction.get("parts") or []))

    @property
    def user_text(self) -> str:
        """The text parts of every content (all roles), joined with newlines."""
        return "\n".join(t for c in self.contents for t in _texts(c.get("parts") or []))

    @property
    def generation_config(self) -> dict[str, Any]:
        """The request's ``generationConfig`` (response MIME type, schema, ...), or {}."""
        if not isinstance(self.body, dict):
            return {}
        config = self.body.get("generationConfig")
        return config if isinstance(config, dict) else {}


def _texts(parts: list[dict[str, Any]]) -> list[str]:
    return [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]


@dataclass
class FakeResponse:
    """One scripted answer; see the module docstring for each field."""

    status: int = 200
    body: Any = None
    chunks: list[dict[str, Any]] | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    abort_after_chunks: int | None = None
    headers: dict[str, str] = field(default_factory=dict)


Responder = Callable[[RecordedRequest], "FakeResponse | None"]


# --- bodies ---------------------------------------------------------------------------------


def _usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "promptTokenCount": input_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": input_tokens + output_tokens,
    }


def text_response(
    text: str,
    *,
    input_tokens: int = 10,
    output_tokens: int = 5,
    finish_reason: str = "STOP",
    model_version: str = "gemini-fake",
) -> dict[str, Any]:
    """A ``generateContent`` body whose one candidate says ``text``."""
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": finish_reason,
                "index": 0,
            }
        ],
        "usageMetadata": _usage(input_tokens, output_tokens),
        "modelVersion": model_version,
    }


def function_call_response(
    name: str, args: dict[str, Any], *, input_tokens: int = 10, output_tokens: int = 5
) -> dict[str, Any]:
    """A ``generateContent`` body whose candidate asks for one function call."""
    return {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"functionCall": {"name": name, "args": args}}],
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": _usage(input_tokens, output_tokens),
        "modelVersion": "gemini-fake",
    }


def stream_chunks(
    texts: list[str],
    *,
    function_calls: list[tuple[str, dict[str, Any]]] | None = None,
    input_tokens: int = 10,
    output_tokens: int = 5,
    finish_reason: str = "STOP",
) -> list[dict[str, Any]]:
    """SSE events of a streamed answer: one event per text delta, then one per function
    call; the last event carries ``finishReason`` and ``usageMetadata`` (as the API does)."""
    events: list[dict[str, Any]] = [
        {
            "candidates": [{"content": {"role": "model", "parts": [{"text": t}]}, "index": 0}],
            "modelVersion": "gemini-fake",
        }
        for t in texts
    ]
    for name, args in function_calls or []:
        events.append(
            {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [{"functionCall": {"name": name, "args": args}}],
                        },
                        "index": 0,
                    }
                ],
                "modelVersion": "gemini-fake",
            }
        )
    if not events:
        events.append({"candidates": [{"content": {"role": "model", "parts": []}, "index": 0}]})
    events[-1]["candidates"][0]["finishReason"] = finish_reason
    events[-1]["usageMetadata"] = _usage(input_tokens, output_tokens)
    return events


def blocked_response(reason: str = "SAFETY") -> dict[str, Any]:
    """A ``generateContent`` body for a prompt the API refused: no candidates."""
    return {
        "promptFeedback": {"blockReason": reason},
        "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10},
    }


def error(status: int, message: str | None = None) -> FakeResponse:
    """A whole error answer with Google's error body ``{"error": {code, message, status}}``."""
    return FakeResponse(
        status=status,
        body={
            "error": {
                "code": status,
                "message": message or f"fake error {status}",
                "status": _STATUS_NAMES.get(status, "UNKNOWN"),
            }
        },
    )


def embeddings_response(vectors: list[list[float]]) -> dict[str, Any]:
    """A ``batchEmbedContents`` body with one embedding per vector."""
    return {"embeddings": [{"values": v} for v in vectors]}


def count_tokens_response(total: int) -> dict[str, Any]:
    """A ``countTokens`` body."""
    return {"totalTokens": total}


def fake_vector(text: str) -> list[float]:
    """The default embedding of ``text``: deterministic, EMBEDDING_DIMENSIONS floats, unit length."""
    digest = hashlib.sha256(text.encode()).digest()
    raw = [b - 127.5 for b in digest[:EMBEDDING_DIMENSIONS]]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [v / norm for v in raw]


# --- the server -----------------------------------------------------------------------------


class FakeGeminiServer:
    """The fake: start() it, point the client's base_url at ``url``, script it, read
    ``requests``, stop() it. Thread-safe; see the module docstring."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.default_text = "fake reply"
        self.responder: Responder | None = None
        self._queue: list[tuple[str | None, FakeResponse]] = []
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> FakeGeminiServer:
        """Listen on 127.0.0.1 (random port) in a daemon thread; returns self."""
        fake = self

        class Handler(_Handler):
            server_fake = fake

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and wake answers still sleeping in a delay."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeGeminiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash)."""
        assert self._httpd is not None, "start() the fake first"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    # scripting
    def enqueue(self, *responses: FakeResponse, action: str | None = None) -> None:
        """Queue answers, each used once, in order; ``action`` limits them to requests of
        that action (``generateContent``, ``streamGenerateContent``, ...)."""
        with self._lock:
            self._queue.extend((action, r) for r in responses)

    def clear(self) -> None:
        """Forget recorded requests and queued answers."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()

    @property
    def pending(self) -> int:
        """Queued answers not used yet."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, action: str) -> list[RecordedRequest]:
        """The recorded requests of one action."""
        return [r for r in self.requests if r.action == action]

    # used by the handler
    def _record_and_choose(self, request: RecordedRequest) -> FakeResponse:
        with self._lock:
            self._requests.append(request)
            for i, (action, response) in enumerate(self._queue):
                if action is None or action == request.action:
                    del self._queue[i]
                    return response
            responder = self.responder
        if responder is not None:
            built = responder(request)
            if built is not None:
                return built
        return self._default(request)

    def _default(self, request: RecordedRequest) -> FakeResponse:
        action = request.action
        if action == "generateContent":
            return FakeResponse(body=text_response(self.default_text))
        if action == "streamGenerateContent":
            words = self.default_text.split(" ")
            return FakeResponse(
                chunks=stream_chunks([w if i == 0 else " " + w for i, w in enumerate(words)])
            )
        if action == "countTokens":
            return FakeResponse(body=count_tokens_response(len(request.user_text.split())))
        body = request.body if isinstance(request.body, dict) else {}
        if action == "batchEmbedContents":
            texts = [
                "\n".join(_texts((r.get("content") or {}).get("parts") or []))
                for r in body.get("requests") or []
            ]
            return FakeResponse(body=embeddings_response([fake_vector(t) for t in texts]))
        if action == "embedContent":
            text = "\n".join(_texts((body.get("content") or {}).get("parts") or []))
            return FakeResponse(body={"embedding": {"values": fake_vector(text)}})
        return error(404, f"the fake has no route for {request.method} {request.path}")

    def _sleep(self, seconds: float) -> bool:
        """Wait; False if the server is stopping (the answer is then abandoned)."""
        if seconds <= 0:
            return not self._stopping.is_set()
        return not self._stopping.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    server_fake: FakeGeminiServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        fake = self.server_fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        split = urlsplit(self.path)
        request = RecordedRequest(
            method=self.command,
            path=split.path,
            query=dict(parse_qsl(split.query)),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw=raw,
        )
        response = fake._record_and_choose(request)
        if not fake._sleep(fake.delay + response.delay):
            return
        try:
            if request.action == "streamGenerateContent" and response.status == 200:
                self._stream(fake, response)
            else:
                self._send(response)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to answer

    def _send(self, response: FakeResponse) -> None:
        payload = response.body
        if isinstance(payload, bytes):
            data = payload
        elif isinstance(payload, str):
            data = payload.encode()
        else:
            data = json.dumps({} if payload is None else payload).encode()
        self.send_response(response.status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, fake: FakeGeminiServer, response: FakeResponse) -> None:
        chunks = response.chunks
        if chunks is None:
            chunks = [response.body] if isinstance(response.body, dict) else []
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        for i, chunk in enumerate(chunks):
            if response.abort_after_chunks is not None and i >= response.abort_after_chunks:
                break  # HTTP/1.0: closing the connection ends the body early
            if i and not fake._sleep(response.chunk_delay):
                return
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n")
            self.wfile.flush()

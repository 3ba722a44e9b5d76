"""Django's WSGI handler on a pool of long-lived threads, one hand-off each way (issue 11).

memoryapp.asgi reads a request's whole body on the event loop, then calls PooledWsgi: the
request runs on a pool thread (which keeps its database connection), and the finished
response comes back to the loop in one piece. a2wsgi, used before, handed every step
across threads and waited for the loop each time (the body read, the status line, each
body chunk, the end): five round trips per request, which cost more than Django itself
for a small /v1 call (docs/decisions.md, "Hot paths"). No response of this service
streams over HTTP (chat replies stream over the WebSocket), so a response is gathered
whole in the pool thread.

The WSGI environ is built here from the ASGI scope (``wsgi_environ``), and the pool thread
hands the response back with one ``call_soon_threadsafe``: a2wsgi's environ builder (an
``os.environ`` look-up per request among others) and ``run_in_executor``'s pair of chained
futures cost 34 us per request against 23 us this way, on the event loop's critical path
(docs/decisions.md, "Hot paths").
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import io
import logging
import queue
import sys
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote_to_bytes

from memoryapp.validation import RAW_PATH_INFO

logger = logging.getLogger(__name__)

Response = tuple[int, list[tuple[bytes, bytes]], bytes]
# A fast handler gives a Response (headers encoded as _encode encodes WSGI's) or None.
FastHandler = Callable[[dict[str, Any], bytes], "Response | None"]
# Runs a job on a pool thread, nobody waiting for it (PooledWsgi.later).
Defer = Callable[[Callable[[], object]], None]
# An inline handler, called on the event loop with the environ, the body and ``later``:
# a Response, what gives it on a pool thread, or None (the pool serves the request).
InlineHandler = Callable[[dict[str, Any], bytes, Defer], "Response | Callable[[], Response] | None"]


class PooledWsgi:
    """Serve a WSGI ``app`` from ``workers`` threads to ASGI requests whose body is read.

    ``fast``, when given, is asked first in the same pool thread with the environ and
    the body: its answer is the response, None hands the request to ``app``
    (memoryapp.fastpath). ``inline``, when given, is asked before that on the event
    loop itself, as synchronous code (``_off_loop``): it must never wait (for a lock,
    the network, a model); its answer is sent at once, what it returns to finish on a
    pool thread is run there, and None hands the request to the pool as usual.
    ``crowded``, when given and true, skips ``inline``: with other requests in flight a
    pool thread overlaps its database work (the sqlite3 module lets go of the GIL) with
    the loop's, where inline the loop would do one request after the other.
    """

    def __init__(
        self,
        app: Callable[..., Iterable[bytes]],
        workers: int,
        fast: FastHandler | None = None,
        inline: InlineHandler | None = None,
        crowded: Callable[[], bool] | None = None,
    ) -> None:
        self.app = app
        self.fast = fast
        self.inline = inline
        self.crowded = crowded
        self.crew = _Crew(workers, "http")
        # The threads end once this pool is gone (tests make pools of their own), or at exit.
        weakref.finalize(self, self.crew.stop)

    async def __call__(self, scope: dict[str, Any], body: bytes, send: Any) -> None:
        """Run the request described by ``scope`` with ``body`` and send its response."""
        environ = wsgi_environ(scope, body)
        response: Response | None = None
        if self.inline is not None and not (self.crowded is not None and self.crowded()):
            answer = _off_loop(self.inline, environ, body, self.later)
            if callable(answer):
                response = await self._pooled(answer)
            else:
                response = answer
        if response is None:
            response = await self._pooled(functools.partial(self._respond, environ, body))
        status, headers, content = response
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    async def _pooled(self, produce: Callable[[], Response]) -> Response:
        """What ``produce`` returns (or raises), run on a pool thread."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Response] = loop.create_future()
        self.crew.submit(functools.partial(contextvars.copy_context().run, self._run, produce, loop, future))
        return await future

    def later(self, job: Callable[[], object]) -> None:
        """Run ``job`` on a pool thread; nobody waits for it (a failure is logged)."""
        self.crew.submit(functools.partial(_unawaited, job))

    def _run(
        self,
        produce: Callable[[], Response],
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Response],
    ) -> Callable[[], None]:
        """In a pool thread: the response, or what producing it raised, and what hands it
        to ``future`` (the crew calls it once this thread counts as idle again)."""
        try:
            outcome: tuple[Response | None, BaseException | None] = (produce(), None)
        except BaseException as exc:  # handed to the awaiting coroutine, raised there
            outcome = (None, exc)
        return functools.partial(_hand_back, loop, future, *outcome)

    def _respond(self, environ: dict[str, Any], body: bytes) -> Response:
        if self.fast is not None:
            answer = self.fast(environ, body)
            if answer is not None:
                return answer
        started: list[Any] = []
        written: list[bytes] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            started[:] = [status, headers]
            return written.append

        iterable = self.app(environ, start_response)
        try:
            written.extend(iterable)
        finally:
            close = getattr(iterable, "close", None)
            if close is not None:
                close()
        status, headers = started
        return int(status.split(" ", 1)[0]), _encode(headers), b"".join(written)


# A pool job: it returns what hands its outcome on (called once its thread is idle), or None.
_Job = Callable[[], "Callable[[], None] | None"]


class _Crew:
    """Up to ``size`` long-lived threads running the jobs given to ``submit``, in order.

    What ThreadPoolExecutor did here, without what it adds per job that this pool has no
    use for (a concurrent Future with its condition variable, set running and then done,
    and a Python-level semaphore taken on submit and given back after each job): a job
    goes into one C-level queue (queue.SimpleQueue) and an idle thread takes it. Like the
    executor, a new thread is started only when none is idle and fewer than ``size`` run,
    so sequential requests keep running on one thread (and its database connection): a
    job returns what hands its outcome on (PooledWsgi._run), which the thread calls only
    once it counts as idle, so the request the answer lets the client send finds it idle
    (the executor counted its thread idle after the hand-off, and a quick client made it
    start threads up to its limit). The threads are daemons: ``stop`` (once the pool is collected, or at exit) lets each
    finish the job it is running and ends it.
    """

    def __init__(self, size: int, name: str) -> None:
        self.size, self.name = size, name
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.threads: list[threading.Thread] = []
        self.idle = 0  # threads waiting for a job, less the jobs already promised to them
        self.lock = threading.Lock()

    def submit(self, job: _Job) -> None:
        """Run ``job`` on an idle thread, on a new one, or after the jobs queued before it."""
        with self.lock:
            if self.idle:
                self.idle -= 1
            elif len(self.threads) < self.size:
                thread = threading.Thread(
                    target=self._work, name=f"{self.name}_{len(self.threads)}", daemon=True
                )
                self.threads.append(thread)
                thread.start()
        self.jobs.put(job)

    def _work(self) -> None:
        get, lock = self.jobs.get, self.lock
        while True:
            job = get()
            if job is None:
                return
            try:
                hand_back: Callable[[], None] | None = job()
            except BaseException:  # PooledWsgi's jobs hand every outcome on; never here
                logger.exception("a pool job raised")
                hand_back = None
            with lock:
                self.idle += 1
            try:
                if hand_back is not None:
                    hand_back()
            except BaseException:  # the loop closed under it: nobody is waiting
                logger.exception("a pool job's answer could not be handed back")
            del job, hand_back  # nothing of the request outlives it while the thread waits

    def stop(self) -> None:
        """End every thread once it has finished its job (idempotent)."""
        with self.lock:
            threads, self.threads = self.threads, []
            self.idle = 0
        for _ in threads:
            self.jobs.put(None)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join()


def _unawaited(job: Callable[[], object]) -> None:
    """A pool job nobody awaits: run it, log what it raised, hand nothing back."""
    try:
        job()
    except Exception:
        logger.exception("a job left for the pool failed")


# One context per event loop thread for inline handlers, so what they keep in context
# variables (Django's caches) lasts from one request to the next, as on a pool thread.
_inline_contexts = threading.local()


def _off_loop(handler: InlineHandler, *args: Any) -> Response | Callable[[], Response] | None:
    """``handler(*args)`` called on the event loop's thread as synchronous code.

    While it runs no event loop counts as running in this thread, so Django's guard
    against blocking a loop (SynchronousOnlyOperation) lets its database calls through:
    the handler is one that never waits (PooledWsgi's ``inline``). It runs in this
    thread's own context (``_inline_contexts``), not the request task's copy.
    """
    context = getattr(_inline_contexts, "context", None)
    if context is None:
        context = _inline_contexts.context = contextvars.Context()
    loop = asyncio._get_running_loop()
    asyncio._set_running_loop(None)
    try:
        return context.run(handler, *args)
    finally:
        asyncio._set_running_loop(loop)


def _encode(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(k.strip().lower().encode("latin1"), v.strip().encode("latin1")) for k, v in headers]


def _hand_back(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Response],
    result: Response | None,
    exc: BaseException | None,
) -> None:
    if not loop.is_closed():  # a server shutting down has nobody to answer
        loop.call_soon_threadsafe(_settle, future, result, exc)


def _settle(future: asyncio.Future[Response], result: Response | None, exc: BaseException | None) -> None:
    if future.cancelled():  # the request's task was cancelled (server shutdown)
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)  # type: ignore[arg-type]


def wsgi_environ(scope: dict[str, Any], body: bytes) -> dict[str, Any]:
    """The PEP 3333 environ of the ASGI HTTP ``scope`` whose whole ``body`` was read.

    As the ASGI spec maps them: the path relative to ``root_path`` (SCRIPT_NAME), both as
    bytes read as latin-1; the path's bytes are those the client sent, percent-decoded from
    ``raw_path`` when the server gives it: ``path`` has them decoded as UTF-8 with
    U+FFFD for what is not UTF-8, so ``/datasets/%FF`` would address the dataset
    "\ufffd" (memoryapp.api.params.undecodable_path refuses such a path); each header as ``HTTP_<NAME>`` (repeated headers joined
    with commas), but Content-Type as CONTENT_TYPE; CONTENT_LENGTH is the length of
    ``body`` (the body is whole here, however it was sent, chunked too).
    """
    script_name = scope.get("root_path", "").encode("utf8").decode("latin1")
    raw_path = scope.get("raw_path")
    if raw_path is not None:
        path_info = unquote_to_bytes(raw_path).decode("latin1")
    else:
        path_info = scope["path"].encode("utf8").decode("latin1")
    if script_name and path_info.startswith(script_name):
        path_info = path_info[len(script_name):]
    server = scope.get("server") or ("localhost", 80)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": script_name,
        "PATH_INFO": path_info,
        RAW_PATH_INFO: path_info,
        "QUERY_STRING": scope["query_string"].decode("ascii"),
        "SERVER_PROTOCOL": f"HTTP/{scope['http_version']}",
        "SERVER_NAME": server[0],
        "SERVER_PORT": str(server[1] or 0),
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    client = scope.get("client")
    if client is not None:
        environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = client[0], str(client[1])
    for raw_name, raw_value in scope["headers"]:
        key = _ENVIRON_KEYS.get(raw_name) or _environ_key(raw_name)
        if key == "CONTENT_LENGTH":  # set from the body above
            continue
        value = raw_value.decode("latin1")
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ


# Header name as sent -> its environ key, for the names seen first (a client inventing
# names cannot grow it past _ENVIRON_KEYS_MAX).
_ENVIRON_KEYS: dict[bytes, str] = {}
_ENVIRON_KEYS_MAX = 256


def _environ_key(raw_name: bytes) -> str:
    name = raw_name.decode("latin1").lower()
    if name in ("content-length", "content-type"):
        key = name.upper().replace("-", "_")
    else:
        key = "HTTP_" + name.upper().replace("-", "_")
    if len(_ENVIRON_KEYS) < _ENVIRON_KEYS_MAX:
        _ENVIRON_KEYS[raw_name] = key
    return key

"""An ASGI app that answers every HTTP request without doing any work (bench/peers.py).

It measures what HTTP itself costs on this machine: uvicorn, loopback and the benchmark's
own http.client, with nothing of Django or this service. ``POST /inline`` is answered on
the event loop; any other path from a thread pool, handed over and back as
memoryapp.wsgipool.PooledWsgi hands a request (one ``submit``, one
``call_soon_threadsafe``). The body is read whole first and a small JSON body answered.

    uvicorn bench.hello_asgi:app   (bench/peers.py starts it; nothing else uses it)
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

ANSWER = b'{"ok":true}'
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(ANSWER)).encode())]
_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hello")


def _answer_in_pool(loop: asyncio.AbstractEventLoop, future: asyncio.Future[bytes]) -> None:
    loop.call_soon_threadsafe(future.set_result, ANSWER)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Read the request's body, answer 200 ``{"ok":true}`` (inline or from the pool)."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body", False):
        pass
    body = ANSWER
    if scope["path"] != "/inline":
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bytes] = loop.create_future()
        _pool.submit(_answer_in_pool, loop, future)
        body = await future
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": body})

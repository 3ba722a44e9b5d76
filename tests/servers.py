"""A real uvicorn server in a child process, with its own environment.

For tests of what only exists at the server's edge: settings read from the environment
at start-up (DATABASE_URL, DEBUG), HTTP framing (chunked bodies, stalled uploads) and the
server log. The child gets a fresh interpreter, so settings come from ``env`` exactly as
``./dev serve`` would read them. The listening socket is bound here (port 0) and handed
to uvicorn with ``--fd``, so no port can be taken by someone else meanwhile.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 60
#: uvicorn's options in ./dev (serve and prod), after the address; tests/test_proxy_headers.py
#: checks ./dev still passes exactly these.
DEV_SERVE_OPTIONS = (
    "--no-access-log", "--lifespan", "off", "--http", "memoryapp.server:HttpProtocol",
    "--no-proxy-headers",
)  # fmt: skip


@dataclass
class Server:
    """A running child server: its base URL and (once stopped) its log."""

    url: str
    port: int
    process: subprocess.Popen[str]
    log: str = ""


def manage(env: dict[str, str], *args: str) -> str:
    """Run ``manage.py *args`` in a child with ``env`` added; its stdout (raises on failure)."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@contextmanager
def uvicorn_server(env: dict[str, str], *extra: str) -> Iterator[Server]:
    """uvicorn serving memoryapp.asgi with ``./dev serve``'s options, with ``env`` added.

    Waits until ``/login/`` answers (any status). On exit stops the server and keeps its
    combined output in ``Server.log``.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    command = [
        sys.executable, "-m", "uvicorn", "memoryapp.asgi:application",
        "--fd", str(sock.fileno()), *DEV_SERVE_OPTIONS, *extra,
    ]  # fmt: skip
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, **env},
        pass_fds=(sock.fileno(),),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    sock.close()
    server = Server(url=f"http://127.0.0.1:{port}", port=port, process=process)
    try:
        _wait_until_up(server)
        yield server
    finally:
        process.terminate()
        try:
            server.log = process.communicate(timeout=20)[0]
        except subprocess.TimeoutExpired:
            process.kill()
            server.log = process.communicate()[0]


def _wait_until_up(server: Server) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        try:  # any answer will do (a redirect to HTTPS is not followed)
            conn.request("GET", "/login/")
            conn.getresponse().read()
            return
        except (OSError, http.client.HTTPException):
            pass
        finally:
            conn.close()
        if server.process.poll() is not None or time.monotonic() > deadline:
            server.process.kill()
            output = server.process.communicate()[0]
            raise RuntimeError(f"the server did not start:\n{output}")
        time.sleep(0.1)

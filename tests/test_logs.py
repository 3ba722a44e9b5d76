"""memoryapp.logs and settings.LOGGING: one server-log line per event, at its level."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
from django.test import Client
from websockets.sync.client import connect
from websockets.typing import Origin

from memoryapp.logs import WebSocketAccessFilter
from tests.servers import manage, uvicorn_server


def test_it_logs_each_4xx_once_and_no_websocket_lines_without_an_access_log(
    tmp_path: Path,
) -> None:
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    manage(env, "migrate", "--noinput", "-v0")
    with uvicorn_server(env) as server:
        assert httpx.get(f"{server.url}/nope").status_code == 404
        assert httpx.get(f"{server.url}/v1/nope").status_code == 404
        assert httpx.post(f"{server.url}/v1/memory/working/threads", json={}).status_code == 401
        ws_url = server.url.replace("http", "ws") + "/ws/threads/x/?projectId=1"
        with connect(ws_url, origin=Origin(server.url)) as socket, pytest.raises(Exception, match="4403"):
            socket.recv(timeout=10)

    lines = server.log.splitlines()
    assert [line for line in lines if ": /" in line] == [
        "Not Found: /nope",
        "Not Found: /v1/nope",
        "Unauthorized: /v1/memory/working/threads",
    ]
    assert [line for line in lines if "WebSocket" in line or "connection " in line] == []


def _record(msg: str, *args: object, level: int = logging.INFO) -> logging.LogRecord:
    return logging.LogRecord("uvicorn.error", level, __file__, 1, msg, args, None)


@pytest.mark.parametrize(
    ("access_log", "kept"), [(False, ["Invalid HTTP request received."]), (True, None)]
)
def test_it_keeps_websocket_lines_only_while_uvicorns_access_log_is_on(
    access_log: bool, kept: list[str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As uvicorn's CLI leaves its access logger with --no-access-log: no handlers, no
    # propagation (caplog cannot be used here: it attaches itself to such loggers).
    access = logging.getLogger("uvicorn.access")
    monkeypatch.setattr(access, "handlers", [])
    monkeypatch.setattr(access, "propagate", access_log)
    records = [
        _record('%s - "WebSocket %s" [accepted]', "127.0.0.1:1", "/ws/threads/x/"),
        _record('%s - "WebSocket %s" 403', "127.0.0.1:1", "/ws/threads/x/"),
        _record("connection open"),
        _record("connection closed"),
        _record("Invalid HTTP request received.", level=logging.WARNING),
    ]

    passed = [r.getMessage() for r in records if WebSocketAccessFilter().filter(r)]

    assert passed == (kept if kept is not None else [r.getMessage() for r in records])


def test_it_logs_a_dashboard_404_once_at_warning(
    client: Client, caplog: pytest.LogCaptureFixture, db: None
) -> None:
    with caplog.at_level(logging.INFO):
        assert client.get("/nope/").status_code == 404

    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("django.request", "WARNING", "Not Found: /nope/")
    ]
    assert logging.getLogger("django").handlers == []
    assert logging.getLogger("django.request").handlers == []

"""memoryapp.checks: a production server without collected static files refuses to start;
with them (as ``./dev prod`` runs it) pages and 404s are served, not 500s (issue 7 item 7)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.servers import manage, uvicorn_server


def _production(tmp_path: Path) -> dict[str, str]:
    return {
        "DEBUG": "false",
        "SECRET_KEY": "test-secret-key-not-for-real-use",
        "SECURE_SSL_REDIRECT": "false",  # plain HTTP here; behind TLS in a real deployment
        "STATIC_ROOT": str(tmp_path / "static"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }


def test_it_refuses_to_start_in_production_before_collectstatic(tmp_path: Path) -> None:
    env = _production(tmp_path)
    manage(env, "migrate", "--noinput", "-v0")

    with pytest.raises(RuntimeError) as failed, uvicorn_server(env):
        pass

    assert "memoryapp.E001" in str(failed.value)
    assert "collectstatic --noinput" in str(failed.value)


def test_it_serves_pages_and_404s_in_production_after_collectstatic(tmp_path: Path) -> None:
    env = _production(tmp_path)
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "collectstatic", "--noinput", "-v0")

    with uvicorn_server(env) as server, httpx.Client(base_url=server.url) as client:
        login = client.get("/login/")
        page_404 = client.get("/nope/")
        api_404 = client.get("/v1/nope")
        api_root = client.get("/v1/")
        css = client.get("/static/css/app.css")

    assert login.status_code == 200
    assert 'href="/static/css/app.' in login.text  # the hashed name from the manifest
    assert page_404.status_code == 404
    assert "<html" in page_404.text
    assert (api_404.status_code, api_404.json()) == (404, {"error": "Not found"})
    assert (api_root.status_code, api_root.json()) == (404, {"error": "Not found"})
    assert css.status_code == 200

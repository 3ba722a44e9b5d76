"""Forwarded headers are judged by our settings alone (docs/scaling.md, "Behind a proxy").

uvicorn's --proxy-headers (its default) rewrites the client address and scheme from
X-Forwarded-For/-Proto of any peer on 127.0.0.1 before the app sees the request, so a
client on the same host (or a local proxy passing the header on) chose the address the
login throttle counts, whatever MEMORY_TRUSTED_PROXIES said, and the scheme Django
trusts, whatever SECURE_PROXY_SSL_HEADER said. Every uvicorn we start passes
--no-proxy-headers; these tests start it as ./dev does and send the headers from 127.0.0.1.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.servers import DEV_SERVE_OPTIONS, ROOT, manage, uvicorn_server

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def _dev_uvicorn_options() -> list[str]:
    """The options ./dev passes uvicorn after ``--host "$1" --port "$2"``."""
    text = (ROOT / "dev").read_text()
    found = re.search(
        r'"\$VENV/bin/uvicorn" memoryapp\.asgi:application --host "\$1" --port "\$2" \\\n(.*?) &\n',
        text,
        re.S,
    )
    assert found is not None, "./dev no longer starts uvicorn as this test reads it"
    return found.group(1).split()


def test_dev_starts_uvicorn_without_proxy_headers_as_the_test_servers_do() -> None:
    assert _dev_uvicorn_options() == list(DEV_SERVE_OPTIONS)
    assert "--no-proxy-headers" in DEV_SERVE_OPTIONS


def test_every_uvicorn_we_start_is_told_no_proxy_headers() -> None:
    """Scripts and tests that build a uvicorn command line, and the documented commands."""
    missing = []
    for path in [*ROOT.glob("bench/*.py"), *ROOT.glob("tests/**/*.py")]:
        # A command list naming uvicorn, up to its closing bracket.
        for command in re.findall(r'uvicorn"\)*,\s*"memoryapp\.asgi:application"[^\]]*\]', path.read_text()):
            if '"--no-proxy-headers"' not in command and "*DEV_SERVE_OPTIONS" not in command:
                missing.append(f"{path.relative_to(ROOT)}: {command!r}")
    for path in [ROOT / "README.md", *ROOT.glob("docs/*.md")]:
        # A documented command, to the end of its line or of its `code` span.
        for command in re.findall(r"uvicorn memoryapp\.asgi:application[^&`\n]*(?:\n[^&`\n]+)?", path.read_text()):
            if "--no-proxy-headers" not in command:
                missing.append(f"{path.relative_to(ROOT)}: {command!r}")
    assert missing == []


def _failed_login(client: httpx.Client, username: str, forwarded_for: str) -> int:
    form = client.get("/login/")
    token = CSRF.search(form.text)
    assert token is not None
    resp = client.post(
        "/login/",
        data={"csrfmiddlewaretoken": token.group(1), "username": username, "password": "wrong"},
        headers={"X-Forwarded-For": forwarded_for},
    )
    return resp.status_code


@pytest.mark.parametrize(("trusted", "statuses"), [("0", [200, 200, 429]), ("1", [200, 200, 200])])
def test_an_x_forwarded_for_counts_only_behind_trusted_proxies(
    tmp_path: Path, trusted: str, statuses: list[int]
) -> None:
    """Three failed logins from 127.0.0.1, each claiming another address. With no trusted
    proxy the claim is ignored and the third is refused (2 per address); with one, each
    claimed address is its own client (the control: the header does reach the app)."""
    env = {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "MEMORY_LOGIN_FAILURE_LIMIT": "",
        "MEMORY_LOGIN_FAILURE_LIMIT_PER_ADDRESS": "2/5m",
        "MEMORY_TRUSTED_PROXIES": trusted,
    }
    manage(env, "migrate", "--noinput", "-v0")
    with uvicorn_server(env) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        got = [_failed_login(client, f"user{n}", f"203.0.113.{n}") for n in (1, 2, 3)]
    assert got == statuses


def test_an_x_forwarded_proto_counts_only_with_secure_proxy_ssl_header(tmp_path: Path) -> None:
    """DEBUG=false redirects plain HTTP to HTTPS; a peer's X-Forwarded-Proto: https makes
    the request secure only when SECURE_PROXY_SSL_HEADER says a proxy sets it."""
    env = {
        "DEBUG": "false",
        "SECRET_KEY": "test-secret-key-not-for-real-use",
        "STATIC_ROOT": str(tmp_path / "static"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "collectstatic", "--noinput", "-v0")
    https = {"X-Forwarded-Proto": "https"}
    with uvicorn_server(env) as server:
        claimed = httpx.get(f"{server.url}/login/", headers=https, timeout=60)
        assert (claimed.status_code, claimed.headers["location"]) == (
            301,
            f"https://127.0.0.1:{server.port}/login/",
        )
    with uvicorn_server({**env, "SECURE_PROXY_SSL_HEADER": "true"}) as server:
        assert httpx.get(f"{server.url}/login/", headers=https, timeout=60).status_code == 200
        assert httpx.get(f"{server.url}/login/", timeout=60).status_code == 301

"""Security of the service (issue 12 item 5): key comparison, secrets kept out of logs, the
per-key rate limit, login throttling, CSRF on every dashboard POST, the
Content-Security-Policy, and the production settings ``check --deploy`` accepts.

The script-injection browser test is tests/e2e/test_security_browser.py.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client, RequestFactory
from redis.exceptions import ConnectionError as RedisConnectionError

from memoryapp.models import ApiKey, Membership, Project
from memoryapp.ratelimit import client_ip
from tests.conftest import BASE, Api
from tests.test_isolation import PATH_PARAMETERS, Victim, _fill, _methods, _victim, http_routes

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "a-long-login-password-77"


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    """Rate-limit counters start at zero in every test."""
    cache.clear()


# --- API keys ------------------------------------------------------------------------------


def test_it_compares_the_stored_key_hash_in_constant_time(
    api_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    key = ApiKey.authenticate(api_key)
    assert key is not None
    assert compared == [(key.hash, key.hash)]


def test_it_keeps_secrets_and_passwords_out_of_the_logs(
    caplog: pytest.LogCaptureFixture, db: None
) -> None:
    caplog.set_level(logging.DEBUG)
    project = Project.objects.create(slug="acme", name="Acme")
    user = User.objects.create_user("owner", password=PASSWORD)
    Membership.objects.create(user=user, project=project, role=Membership.Role.OWNER)
    client = Client()
    # Log in through the form (a wrong password first), then create a key in the dashboard.
    client.post("/login/", {"username": "owner", "password": PASSWORD + "x"})
    client.post("/login/", {"username": "owner", "password": PASSWORD})
    resp = client.post(f"/dashboard/keys/?projectId={project.pk}", {"name": "ci"})
    assert resp.status_code == 303
    shown = client.get(resp["Location"])
    secret = re.search(rb"mk_[0-9a-f]{8}_[\w-]+", shown.content)
    assert secret is not None
    dashboard_secret = secret.group().decode()
    _, issued = ApiKey.issue(project=project, name="direct")
    for key in (dashboard_secret, issued, issued[:-1] + "x"):
        api = Api(Client(), key)
        api.post(f"{BASE}/threads", {"dataset": "d"})
        api.get(f"{BASE}/threads/not-a-thread")
    ApiKey.objects.filter(project=project).update(revoked="2026-01-01T00:00:00Z")
    Api(Client(), issued).get(f"{BASE}/threads")
    logged = caplog.text + "".join(json.dumps(r.args, default=str) for r in caplog.records)
    assert caplog.records, "nothing was logged: the test would prove nothing"
    for secret_text in (dashboard_secret, issued, issued[:-1] + "x", PASSWORD, PASSWORD + "x"):
        assert secret_text not in logged


def test_it_keeps_a_key_sent_without_the_bearer_scheme_out_of_the_debug_log(
    caplog: pytest.LogCaptureFixture, api_key: str, settings: Any
) -> None:
    """ninja's HttpBearer logs the whole Authorization header when its scheme is not
    Bearer and DEBUG is on (as under ./dev serve): a key pasted without "Bearer " ended
    up in the server's output."""
    settings.DEBUG = True
    caplog.set_level(logging.DEBUG)
    for header in (api_key, f"Token {api_key}", f"Basic {api_key}"):
        resp = Client(headers={"Authorization": header}).get(f"{BASE}/threads")
        assert (resp.status_code, resp.json()) == (401, {"error": "Unauthorized"})
    logged = caplog.text + "".join(json.dumps(r.args, default=str) for r in caplog.records)
    assert caplog.records, "nothing was logged: the test would prove nothing"
    assert api_key not in logged


# --- rate limits ------------------------------------------------------------------------------


def test_it_limits_each_key_and_answers_429_with_retry_after(
    api: Api, outsider_api: Api, settings: Any
) -> None:
    settings.MEMORY_API_RATE_LIMIT = "3/m"
    statuses = [api.get(f"{BASE}/threads").status_code for _ in range(3)]
    limited = api.post(f"{BASE}/threads", {"dataset": "d"})
    assert statuses == [200, 200, 200]
    assert (limited.status_code, limited.json()) == (429, {"error": "Too many requests"})
    assert 1 <= int(limited["Retry-After"]) <= 60
    # The count is the key's: another key is not slowed down by it.
    assert outsider_api.get(f"{BASE}/threads").status_code == 200


def test_it_lets_requests_through_when_the_cache_is_unreachable(
    api: Api, settings: Any, monkeypatch: pytest.MonkeyPatch, client: Client
) -> None:
    settings.MEMORY_API_RATE_LIMIT = "1/m"

    def down(*args: Any, **kwargs: Any) -> None:
        raise RedisConnectionError("Connection refused")

    monkeypatch.setattr(cache, "add", down)
    assert [api.get(f"{BASE}/threads").status_code for _ in range(3)] == [200, 200, 200]
    resp = client.post("/login/", {"username": "nobody", "password": "x"})
    assert resp.status_code == 200


def test_it_does_not_limit_when_the_setting_is_empty(api: Api, settings: Any) -> None:
    settings.MEMORY_API_RATE_LIMIT = ""
    assert {api.get(f"{BASE}/threads").status_code for _ in range(5)} == {200}


def test_it_throttles_failed_logins_per_username(db: None, settings: Any) -> None:
    settings.MEMORY_LOGIN_FAILURE_LIMIT = "2/5m"
    settings.MEMORY_LOGIN_FAILURE_LIMIT_PER_ADDRESS = ""
    User.objects.create_user("ann", password=PASSWORD)
    User.objects.create_user("bob", password=PASSWORD)
    client = Client(REMOTE_ADDR="10.0.0.1")
    wrong = [client.post("/login/", {"username": "ann", "password": "nope"}) for _ in range(2)]
    blocked = client.post("/login/", {"username": "Ann", "password": PASSWORD})
    assert [r.status_code for r in wrong] == [200, 200]
    assert blocked.status_code == 429
    assert 1 <= int(blocked["Retry-After"]) <= 300
    assert "_auth_user_id" not in client.session
    # Another username, from the same address, still logs in.
    assert client.post("/login/", {"username": "bob", "password": PASSWORD}).status_code == 302


def test_it_throttles_failed_logins_per_client_address(db: None, settings: Any) -> None:
    settings.MEMORY_LOGIN_FAILURE_LIMIT = ""
    settings.MEMORY_LOGIN_FAILURE_LIMIT_PER_ADDRESS = "2/5m"
    User.objects.create_user("bob", password=PASSWORD)
    client = Client(REMOTE_ADDR="10.0.0.1")
    for name in ("ann", "carl"):
        assert client.post("/login/", {"username": name, "password": "x"}).status_code == 200
    assert client.post("/login/", {"username": "bob", "password": PASSWORD}).status_code == 429
    other = Client(REMOTE_ADDR="10.0.0.2")
    assert other.post("/login/", {"username": "bob", "password": PASSWORD}).status_code == 302


@pytest.mark.parametrize(
    ("proxies", "remote", "forwarded", "expected"),
    [
        (0, "10.0.0.1", "203.0.113.9", "10.0.0.1"),  # no proxy: the header is the client's say
        (1, "10.0.0.1", "198.51.100.1, 203.0.113.9", "203.0.113.9"),  # what our proxy added
        (2, "10.0.0.1", "198.51.100.1, 203.0.113.9", "198.51.100.1"),
        (1, "10.0.0.1", "not-an-address", "10.0.0.1"),
        (0, "", "", "0.0.0.0"),
    ],
)
def test_it_finds_the_client_address_behind_trusted_proxies(
    proxies: int, remote: str, forwarded: str, expected: str, settings: Any
) -> None:
    settings.MEMORY_TRUSTED_PROXIES = proxies
    request = RequestFactory().get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_ip(request) == expected


def test_it_does_not_count_successful_logins(db: None, settings: Any) -> None:
    settings.MEMORY_LOGIN_FAILURE_LIMIT = "2/5m"
    User.objects.create_user("ann", password=PASSWORD)
    for _ in range(4):
        client = Client()
        assert client.post("/login/", {"username": "ann", "password": PASSWORD}).status_code == 302


# --- CSRF, CSP ----------------------------------------------------------------------------------


def _dashboard_post_routes(victim: Victim) -> list[str]:
    client = Client()
    client.force_login(victim.owner)
    urls = []
    for route in http_routes():
        if route.is_api or any(p not in PATH_PARAMETERS for p in route.params):
            continue
        url = _fill(route.route, victim)
        if "POST" in _methods(client, url):
            urls.append(url)
    return urls


def test_it_refuses_every_dashboard_post_without_the_csrf_token(db: None) -> None:
    victim = _victim()
    urls = _dashboard_post_routes(victim)
    assert "/logout/" not in urls  # public routes are not in the walk; checked below
    urls.append("/logout/")
    client = Client(enforce_csrf_checks=True)
    client.force_login(victim.owner)
    answers = {
        url: client.post(f"{url}?projectId={victim.project.pk}", {"name": "x"}).status_code
        for url in urls
    }
    assert len(answers) >= 6
    assert answers == dict.fromkeys(urls, 403)
    assert Client(enforce_csrf_checks=True).post("/login/", {"username": "x"}).status_code == 403


def test_it_sends_a_content_security_policy_without_inline_script(db: None) -> None:
    resp = Client().get("/login/")
    policy = dict(
        part.strip().split(" ", 1) for part in resp["Content-Security-Policy"].split(";")
    )
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self'"
    assert policy["default-src"] == "'self'"
    assert policy["object-src"] == "'none'"
    assert policy["frame-ancestors"] == "'none'"
    assert "unsafe" not in resp["Content-Security-Policy"]


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I)
INLINE_HANDLER = re.compile(r"\son[a-z]+\s*=", re.I)
INLINE_STYLE = re.compile(r"\sstyle\s*=|<style", re.I)


def test_it_has_no_inline_script_handler_or_style_in_any_template() -> None:
    found = []
    for path in sorted((ROOT / "templates").rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        for pattern in (INLINE_SCRIPT, INLINE_HANDLER, INLINE_STYLE):
            found += [f"{path.relative_to(ROOT)}: {m.group()}" for m in pattern.finditer(text)]
    assert found == []


def test_it_answers_json_404_at_the_api_root(db: None) -> None:
    resp = Client().get("/v1/")
    assert (resp.status_code, resp.json()) == (404, {"error": "Not found"})


# --- production settings ---------------------------------------------------------------------

PRODUCTION_ENV = {
    "DEBUG": "false",
    "SECRET_KEY": "k" * 20 + "-production-secret-key-for-the-deploy-check-0123456789",
    "ALLOWED_HOSTS": "memory.example.com",
}


def _production(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python *args`` in the project with the production environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECURE_")}
    env.update(PRODUCTION_ENV, DJANGO_SETTINGS_MODULE="memoryapp.settings")
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_it_passes_check_deploy_under_production_settings() -> None:
    result = _production("manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


PROBE = """
import django, json
django.setup()
from django.conf import settings
from django.test import Client, RequestFactory
url = "/v1/openapi.json"
secure = Client().get(url, secure=True, HTTP_HOST="memory.example.com")
plain = Client().get(url, HTTP_HOST="memory.example.com")
print(json.dumps({
    "hsts": secure.get("Strict-Transport-Security"),
    "status": secure.status_code,
    "plain": [plain.status_code, plain.get("Location")],
    "cookies": [settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE],
}))
"""


def test_it_sends_secure_cookies_and_hsts_when_debug_is_off() -> None:
    result = _production("-c", PROBE)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen == {
        "hsts": "max-age=31536000; includeSubDomains; preload",
        "status": 200,
        "plain": [301, "https://memory.example.com/v1/openapi.json"],
        "cookies": [True, True],
    }

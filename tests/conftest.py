"""The shared test world and fixtures.

``project`` (Acme) with an API key and ``api``, a small wrapper over Django's test client
that sends the project's bearer key and JSON bodies, so tests read like the curl
examples in the README. ``world``: Acme's owner and member, an outsider who owns another
project, a thread and a key, all built from tests.factories. Every test starts with
fresh module-wide state (fresh_process_state) and the offline model (offline_model).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import pytest
from django.contrib.auth.models import User
from django.test import Client, RequestFactory

from memoryapp import working
from memoryapp.models import ApiKey, Membership, Project, Thread
from memoryapp.validation import RAW_PATH_INFO
from tests.factories import ProjectFactory, make_membership, make_project, make_user

BASE = "/v1/memory/working"

_base_environ = RequestFactory._base_environ  # type: ignore[attr-defined]


def _server_environ(self: RequestFactory, **request: Any) -> dict[str, Any]:
    # The test client's environ as the servers' entry points (memoryapp.wsgi,
    # memoryapp.wsgipool) build it: the path's bytes kept beside Django's decoded
    # PATH_INFO, so the checks of memoryapp.validation.undecodable_path run in tests too.
    environ = _base_environ(self, **request)
    environ.setdefault(RAW_PATH_INFO, environ["PATH_INFO"])
    return dict(environ)


RequestFactory._base_environ = _server_environ  # type: ignore[attr-defined]


@dataclass
class Api:
    """JSON client for /v1 with one project's key. ``key=None`` sends no Authorization."""

    client: Client
    key: str | None

    def _headers(self, headers: dict[str, str] | None) -> dict[str, str]:
        out = dict(headers or {})
        if self.key is not None:
            out.setdefault("Authorization", f"Bearer {self.key}")
        return out

    def get(self, path: str, headers: dict[str, str] | None = None, **params: Any) -> Any:
        return self.client.get(path, params, headers=self._headers(headers))

    def post(
        self, path: str, body: Any = None, raw: str | bytes | None = None, headers: dict[str, str] | None = None
    ) -> Any:
        data = raw if raw is not None else ("" if body is None else json.dumps(body))
        return self.client.post(
            path, data=data, content_type="application/json", headers=self._headers(headers)
        )

    def patch(self, path: str, body: Any, headers: dict[str, str] | None = None) -> Any:
        return self.client.patch(
            path, data=json.dumps(body), content_type="application/json", headers=self._headers(headers)
        )

    def delete(self, path: str, headers: dict[str, str] | None = None) -> Any:
        return self.client.delete(path, headers=self._headers(headers))

    # Shorthands for the working-memory routes.
    def create_thread(self, **body: Any) -> dict[str, Any]:
        body.setdefault("dataset", "user_42")
        resp = self.post(f"{BASE}/threads", body)
        assert resp.status_code == 201, resp.content
        return resp.json()

    def append(self, thread_id: str, content: str, role: str = "user", **extra: Any) -> Any:
        return self.post(f"{BASE}/threads/{thread_id}/messages", {"role": role, "content": content, **extra})


@pytest.fixture
def project(db: None) -> Project:
    project = cast(Project, ProjectFactory(slug="acme", name="Acme"))
    return project


@pytest.fixture
def api_key(project: Project) -> str:
    _, secret = ApiKey.issue(project=project, name="test")
    return secret


@pytest.fixture
def api(api_key: str) -> Api:
    return Api(Client(), api_key)


@pytest.fixture
def outsider_api(db: None) -> Api:
    """A client whose key belongs to another project."""
    other = cast(Project, ProjectFactory(slug="other", name="Other"))
    _, secret = ApiKey.issue(project=other, name="outsider")
    return Api(Client(), secret)


@pytest.fixture
def anon_api(db: None) -> Api:
    return Api(Client(), None)


@dataclass
class World:
    """Acme (``project``) with its ``owner`` and ``member``; an ``outsider`` who owns
    ``other_project``; a thread of Acme (dataset user_42, tag web) and an API key."""

    project: Project
    owner: User
    member: User
    outsider: User
    other_project: Project
    thread: Thread
    key: ApiKey
    member_membership: Membership

    def client(self, user: User | None) -> Client:
        """A test client logged in as ``user`` (logged out for None)."""
        client = Client()
        if user is not None:
            client.force_login(user)
        return client


@pytest.fixture
def world(project: Project, settings: Any) -> World:
    # PBKDF2 at full strength costs about half a second per user; these tests are not
    # about hashing.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    owner, member, outsider = make_user("olivia"), make_user("mark"), make_user("oscar")
    make_membership(owner, project, Membership.Role.OWNER)
    member_membership = make_membership(member, project, Membership.Role.MEMBER)
    other_project = make_project("Other")
    make_membership(outsider, other_project, Membership.Role.OWNER)
    thread = working.thread_create(project=project, dataset="user_42", tags=["web"])
    key, _ = ApiKey.issue(project=project, name="ci")
    return World(project, owner, member, outsider, other_project, thread, key, member_membership)


def _reset_process_state() -> None:
    from channels.layers import channel_layers

    from memoryapp import events
    from memoryapp.api.auth import key_cache
    from memoryapp.llm import gemini

    events.loop_sender.loop = None
    events.loop_sender.queue = None
    key_cache.clear()
    with gemini._clients_lock:
        gemini._clients.clear()
    channel_layers.backends = {}


def close_sync_thread_connections() -> None:
    """Close the database connections of asgiref's sync thread, the one thread in which
    ``sync_to_async`` runs an async test's ORM calls. Nothing else ever closes them: that
    thread lives as long as the process, and unlike channels' ``database_sync_to_async``,
    ``sync_to_async`` does not close old connections. On PostgreSQL the connection stayed
    checked out of the pool, so dropping test_<name> at the end of the run found "1 other
    session using the database" and warned; closing gives it back to the pool, which
    Django closes before the drop."""
    from asgiref.sync import SyncToAsync
    from django.db import connections

    executor = SyncToAsync.single_thread_executor
    if not executor._threads:  # never used in this process: nothing to close
        return
    executor.submit(connections.close_all).result(timeout=30)


@pytest.fixture(autouse=True)
def fresh_process_state() -> Iterator[None]:
    """Module-wide state starts empty in every test and is emptied after it: the event
    sender's loop, the API key cache, the Gemini client cache, the channel layers
    (whose groups belonged to event loops that are gone); after it the connections of
    asgiref's sync thread are closed (close_sync_thread_connections)."""
    _reset_process_state()
    yield
    _reset_process_state()
    close_sync_thread_connections()


@pytest.fixture(autouse=True)
def offline_model(settings: Any) -> Iterator[None]:
    """Every test runs on the offline adapter unless it says otherwise, even with a key set."""
    settings.MEMORY_LLM_ADAPTER = "offline"
    yield


@pytest.fixture(autouse=True)
def immediate_jobs(settings: Any) -> Iterator[None]:
    """Background jobs run in the test process as soon as their enqueueing transaction
    commits (django-tasks' ImmediateBackend), and events are never relayed through the
    database (there is no db worker here): tests that need the real worker or the relay
    say so themselves."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
    settings.MEMORY_EVENT_RELAY = False
    yield


def at(iso: str) -> datetime:
    """``"2026-08-16T09:14:02.114Z"`` as an aware datetime."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


class Clock:
    """A settable stand-in for django.utils.timezone.now."""

    def __init__(self) -> None:
        self.now = at("2026-08-16T09:00:00.000Z")

    def __call__(self) -> datetime:
        return self.now

    def set(self, iso: str) -> None:
        self.now = at(iso)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    """Freeze django.utils.timezone.now at 2026-08-16T09:00:00Z; move it with .now / .set()."""
    from django.utils import timezone

    fake = Clock()
    monkeypatch.setattr(timezone, "now", fake)
    yield fake

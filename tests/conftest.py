"""Shared fixtures: a project with an API key, an outsider project, and an API client.

``api`` is a small wrapper over Django's test client that sends the project's bearer key
and JSON bodies, so tests read like the curl examples in the README.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from django.test import Client

from memoryapp.models import ApiKey, Project

BASE = "/v1/memory/working"


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
    return Project.objects.create(slug="acme", name="Acme")


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
    other = Project.objects.create(slug="other", name="Other")
    _, secret = ApiKey.issue(project=other, name="outsider")
    return Api(Client(), secret)


@pytest.fixture
def anon_api(db: None) -> Api:
    return Api(Client(), None)


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

"""Fuzzing /v1 from its own OpenAPI document with schemathesis (issue 12 item 2).

Every operation of /v1/openapi.json is called with generated requests, valid and not,
through the WSGI app: no answer may be a 500, and every answer must have a documented
status and match the documented response schema. A bounded run here (a few examples per
operation, no deadline); bench/fuzz.py runs the same checks for longer
(``FUZZ_MAX_EXAMPLES``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from memoryapp import working
from memoryapp.models import ApiKey, Project

CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]


schema = schemathesis.openapi.from_wsgi("/v1/openapi.json", get_wsgi_application())


@pytest.fixture(autouse=True)
def _keep_connection() -> Iterator[None]:
    """Like Django's test client, requests leave the test's connection open (a handler
    closing it would end the test's transaction)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def fuzz_key(db: None, settings: Any) -> str:
    """A project with a thread, and its key; no rate limit (hundreds of calls)."""
    settings.MEMORY_API_RATE_LIMIT = ""
    settings.SECURE_SSL_REDIRECT = False
    project, _ = Project.objects.get_or_create(slug="fuzz", defaults={"name": "Fuzz"})
    thread = working.thread_create(project=project, dataset="fuzz")
    working.message_append(thread=thread, role="user", content="hello fuzz")
    _, secret = ApiKey.issue(project=project, name="fuzz")
    return secret


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=int(os.environ.get("FUZZ_MAX_EXAMPLES", "2")),
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_it_answers_every_generated_request_within_its_schema(case: Any, fuzz_key: str) -> None:
    case.call_and_validate(headers={"Authorization": f"Bearer {fuzz_key}"}, checks=CHECKS)

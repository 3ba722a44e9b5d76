"""Fuzzing /v1 from its own OpenAPI document with schemathesis (issue 12 item 2).

Every operation of /v1/openapi.json is called with generated requests, valid and not,
through the WSGI app: no answer may be a 500, and every answer must have a documented
status and match the documented response schema.

Path parameters are drawn half the time from a seeded world (SEEDED: a thread with a
compacted history, an ended chunk with its episode, facts and finished job, an agent and
its thread with a note, the dataset), so operations answer with real objects instead of
404s for random ids; the other half are schemathesis' own values.

The CI run is bounded: the fuzzing phase only, FUZZ_MAX_EXAMPLES (8) cases per
operation, derandomized. ``bench/fuzz.py`` is the long run: many more cases and the
coverage phase too (``FUZZ_COVERAGE=1``: schemathesis' boundary and negative values of
every parameter and field, a few hundred requests per operation).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import override_settings
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.checks import (
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.config import SchemathesisConfig

from memoryapp import agents, compaction, datasets, episodic, jobs, notes, working
from memoryapp.models import ApiKey, Episode, Fact, Project

CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]
MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES", "8"))
COVERAGE = os.environ.get("FUZZ_COVERAGE", "") == "1"
DATASET = "fuzz"
AGENT = "fuzz-agent"

#: Real values of each path parameter, filled by the ``fuzz_key`` fixture (the schema's
#: strategies read it when they draw, after the fixture ran).
SEEDED: dict[str, list[str]] = {}

schema = schemathesis.openapi.from_wsgi(
    "/v1/openapi.json",
    get_wsgi_application(),
    config=SchemathesisConfig.from_dict(
        {"phases": {"coverage": {"enabled": COVERAGE}, "stateful": {"enabled": False}}}
    ),
)


@schema.hook
def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any]) -> Any:
    """Half the cases address a seeded object (every parameter the world has values
    for), the other half keep what schemathesis generated."""
    known = {name: SEEDED[name] for name in path_parameters or {} if SEEDED.get(name)}
    if not known:
        return st.just(path_parameters)
    real = st.fixed_dictionaries(
        {name: st.sampled_from(known[name]) if name in known else st.just(value)
         for name, value in path_parameters.items()}
    )
    return st.one_of(st.just(path_parameters), real)


@pytest.fixture(autouse=True)
def _keep_connection() -> Iterator[None]:
    """Like Django's test client, requests leave the test's connection open (a handler
    closing it would end the test's transaction)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def _seed(project: Project) -> dict[str, list[str]]:
    """One of everything the path parameters name, made through the domain functions."""
    thread = working.thread_create(project=project, dataset=DATASET, auto_compact_threshold=4)
    for text in ("I live in Lisbon.", "I drive a Honda Civic.", "ok", "My sister Mara works at Acme Inc."):
        compaction.message_append_compacting(thread=thread, role="user", content=text)
    ended = episodic.thread_end(project=project, thread_id=thread.pk)
    assert ended is not None
    jobs.job_run(job_id=uuid.UUID(ended.job_id), attempt=1)
    agent, _ = agents.agent_define(project=project, name=AGENT, memory={})
    agent_thread = working.thread_create(project=project, dataset=DATASET, agent=agent)
    arguments = {"name": "quest", "description": "the quest", "content": "find the key"}
    notes.tool_run(thread_id=agent_thread.pk, name=notes.CLOSE_MEMORY, arguments=arguments)
    return {
        "thread_id": [str(thread.pk), str(agent_thread.pk)],
        "job_id": [ended.job_id],
        "episode_id": [str(e) for e in Episode.objects.filter(project=project).values_list("pk", flat=True)],
        "fact_id": [str(f) for f in Fact.objects.filter(project=project).values_list("pk", flat=True)],
        "agent_name": [AGENT],
        "dataset": [DATASET],
    }


@pytest.fixture(scope="module")
def seeded_key(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    """The seeded world, made once for the module (committed, so every operation's test
    sees it; what a test changes is rolled back with its transaction) and deleted after
    it; its project's key. Made under the test settings the autouse fixtures would give
    (offline model, jobs run in process), which a module fixture does not get."""
    offline = override_settings(
        MEMORY_LLM_ADAPTER="offline",
        MEMORY_EVENT_RELAY=False,
        TASKS={"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}},
    )
    with django_db_blocker.unblock(), offline:
        project = Project.objects.create(slug="fuzz", name="Fuzz")
        try:
            SEEDED.update(_seed(project))
            assert all(SEEDED.values()), SEEDED  # every parameter has a real value to draw
            _, secret = ApiKey.issue(project=project, name="fuzz")
            yield secret
        finally:
            SEEDED.clear()
            datasets.dataset_delete(project=project, dataset=DATASET)
            project.delete()


@pytest.fixture
def fuzz_key(seeded_key: str, db: None, settings: Any) -> str:
    """The seeded project's key; no rate limit (hundreds of calls)."""
    settings.MEMORY_API_RATE_LIMIT = ""
    settings.SECURE_SSL_REDIRECT = False
    return seeded_key


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_it_answers_every_generated_request_within_its_schema(case: Any, fuzz_key: str) -> None:
    case.call_and_validate(headers={"Authorization": f"Bearer {fuzz_key}"}, checks=CHECKS)

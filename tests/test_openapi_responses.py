"""/v1/openapi.json lists what each operation can really answer (QA report L7).

Before: ``DELETE /datasets/{dataset}/export`` was listed (a routing rule for a dataset
name ending in ``/export``, not an operation of its own), and no operation listed 429,
503 or 415 though every route answers them.
"""

from __future__ import annotations

from typing import Any

import pytest

from memoryapp.api import api as ninja_api
from tests.conftest import Api

ERROR_BODY = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}
RETRY_AFTER = {"Retry-After": {"description": "seconds to wait before retrying", "schema": {"type": "integer", "minimum": 1}}}


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    paths = ninja_api.get_openapi_schema()["paths"]
    return [(method, path, op) for path, ops in paths.items() for method, op in ops.items()]


def test_the_export_route_lists_only_get(api: Api) -> None:
    document = api.get("/v1/openapi.json").json()
    assert list(document["paths"]["/v1/memory/datasets/{dataset}/export"]) == ["get"]
    assert "delete" in document["paths"]["/v1/memory/datasets/{dataset}"]
    # The routing it was an artefact of stays: a name ending in /export is still deleted.
    api.create_thread(dataset="acme/export")
    resp = api.delete("/v1/memory/datasets/acme/export")
    assert (resp.status_code, resp.json()["threadsDeleted"]) == (200, 1)


@pytest.mark.parametrize(("method", "path", "operation"), _operations(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_operation_lists_the_errors_any_route_answers(method: str, path: str, operation: dict[str, Any]) -> None:
    responses = operation["responses"]
    expected = {"400", "401", "429", "503"}
    if method in ("post", "put", "patch", "delete"):
        expected |= {"413", "415"}
    assert expected <= set(responses), (method, path)
    for status in expected:
        assert responses[status]["content"] == ERROR_BODY, (method, path, status)
    assert responses["429"]["headers"] == RETRY_AFTER
    assert responses["503"]["headers"] == RETRY_AFTER
    assert responses["429"]["description"].startswith("Too many requests")


def test_a_route_keeps_its_own_answers() -> None:
    compact = ninja_api.get_openapi_schema()["paths"]["/v1/memory/working/threads/{thread_id}/compact"]["post"]
    assert list(compact["responses"]) == ["200", "400", "401", "404", "413", "415", "429", "502", "503"]
    assert compact["responses"]["404"]["description"] == "Not Found"

"""/v1/memory/datasets: export and delete a dataset (issue 12 item 6, data rights).

Thin handlers over memoryapp.datasets; the export streams (StreamingHttpResponse), so its
200 schema below documents the shape without ninja building the body.

Every legal dataset name is addressable (docs/api.md): ``{dataset}`` is a ``path``
parameter, so a name holding ``/`` (sent raw or as ``%2F``; the server decodes the path
before routing either way) and ``?``, ``#``, ``%`` or spaces (percent-encoded) all reach
the handler whole. ``GET .../{dataset}/export`` takes everything before the last
``/export``; a DELETE of a name that itself ends in ``/export`` matches the export route
first, so that route answers DELETE too, for the name with its ``/export`` put back.
That DELETE is routing, not an operation of its own: the OpenAPI document leaves it out
(``DELETE /datasets/{dataset}`` documents it, a name ending in ``/export`` included).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Path, Router
from pydantic import field_validator
from pydantic_core import PydanticCustomError

from memoryapp import datasets
from memoryapp.api.auth import request_project
from memoryapp.api.schemas import ERRORS, _In, _Out
from memoryapp.validation import DATASET_MAX_LENGTH, Dataset, text_problem

router = Router(tags=["data rights"])

EXPORT_SUFFIX = "/export"


class DatasetPath(_In):
    dataset: Dataset


class ExportThreadOut(_Out):
    """A thread resource plus ``messages`` (summaries included), ``notes``,
    ``noteVersions`` and ``turns``."""

    threadId: str
    dataset: str
    messages: list[dict[str, Any]]
    notes: list[dict[str, Any]]
    noteVersions: list[dict[str, Any]]
    turns: list[dict[str, Any]]


class DatasetExportOut(_Out):
    dataset: str
    exportedAt: str
    threads: list[ExportThreadOut]
    episodes: list[dict[str, Any]]
    facts: list[dict[str, Any]]
    entities: list[dict[str, Any]]


class DatasetDeletedOut(_Out):
    threadsDeleted: int
    messagesDeleted: int
    episodesDeleted: int
    factsDeleted: int
    entitiesDeleted: int


@router.get(
    "/datasets/{path:dataset}/export",
    response={200: DatasetExportOut, **ERRORS},
    summary="Export a dataset as JSON",
)
def export_dataset(request: HttpRequest, path: Path[DatasetPath]) -> StreamingHttpResponse:
    """Everything the project holds for the dataset, streamed as one JSON object."""
    parts = datasets.dataset_export(project=request_project(request), dataset=path.dataset)
    response = StreamingHttpResponse(parts, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{datasets.export_filename(path.dataset)}"'
    return response


@router.delete(
    "/datasets/{path:dataset}",
    response={200: DatasetDeletedOut, **ERRORS},
    summary="Delete a dataset and everything derived from it",
)
def delete_dataset(request: HttpRequest, path: Path[DatasetPath]) -> dict[str, int]:
    """Threads, messages, summaries, notes, turns, jobs, episodes, facts and entities of
    the dataset, for good; recall finds nothing afterwards. ``{dataset}`` runs to the end
    of the path: a name holding ``/`` may be sent raw or as ``%2F``, and a name ending in
    ``/export`` is deleted here too."""
    return datasets.dataset_delete(project=request_project(request), dataset=path.dataset).to_dict()


class ExportSuffixPath(_In):
    """The part of a name ending in ``/export`` before that suffix; ``dataset`` is
    validated as the whole name (the rules of memoryapp.validation.Dataset)."""

    dataset: str

    @field_validator("dataset")
    @classmethod
    def _whole_name(cls, value: str) -> str:
        name = value + EXPORT_SUFFIX
        if len(name) > DATASET_MAX_LENGTH:
            raise PydanticCustomError(
                "string_too_long", f"String should have at most {DATASET_MAX_LENGTH} characters"
            )
        problem = text_problem(name)
        if problem is not None:
            raise PydanticCustomError(*problem)
        return name


@router.delete(
    "/datasets/{path:dataset}/export",
    response={200: DatasetDeletedOut, **ERRORS},
    summary="Delete a dataset whose name ends in /export",
    include_in_schema=False,
)
def delete_dataset_named_export(request: HttpRequest, path: Path[ExportSuffixPath]) -> dict[str, int]:
    """Deletes the dataset named ``{dataset}/export``, as DELETE /datasets/{dataset} would
    (that route cannot be reached with such a name: this one matches first)."""
    return datasets.dataset_delete(project=request_project(request), dataset=path.dataset).to_dict()

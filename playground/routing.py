"""WebSocket routes of the dashboard (wired in memoryapp.asgi)."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlencode

from django.urls import path, reverse

from memoryapp.models import Project
from playground.consumers import DatasetConsumer, ThreadConsumer

websocket_urlpatterns: list[Any] = [
    # <str:...>, not <uuid:...>: a malformed id must reach the consumer and be refused with
    # 4403 like any other, not fail routing with a 500 at the handshake.
    path("ws/threads/<str:thread_id>/", ThreadConsumer.as_asgi(), name="thread-socket"),
    # ?projectId=&dataset=: a dataset's dashboard page (playground.memory_views).
    path("ws/datasets/", DatasetConsumer.as_asgi(), name="dataset-socket"),
]
# Django's reverse() reads ``urlpatterns``: thread_socket_path builds paths from the routes.
urlpatterns = websocket_urlpatterns


def thread_socket_path(
    thread_id: uuid.UUID | str, project: Project, *, fragments: bool = False
) -> str:
    """The path of a thread's WebSocket for pages of ``project`` (``?projectId=``);
    ``fragments`` asks for its rendered panels too (``&fragments=1``, playground.fragments)."""
    route = reverse("thread-socket", urlconf=__name__, kwargs={"thread_id": str(thread_id)})
    query: dict[str, Any] = {"projectId": project.pk}
    if fragments:
        query["fragments"] = 1
    return f"{route}?{urlencode(query)}"


def dataset_socket_path(project: Project, dataset: str) -> str:
    """The path of the WebSocket of ``dataset`` of ``project`` (its dashboard page)."""
    route = reverse("dataset-socket", urlconf=__name__)
    return f"{route}?{urlencode({'projectId': project.pk, 'dataset': dataset})}"

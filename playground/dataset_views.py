"""Dashboard download of a dataset's export (issue 12 item 6, data rights).

Any member of the project may download what the dashboard already shows them; anyone
else gets 404 (playground.access). The body is memoryapp.datasets.dataset_export's JSON,
the same as GET /v1/memory/datasets/{dataset}/export.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_GET

from memoryapp import datasets
from memoryapp.validation import DATASET_MAX_LENGTH
from playground.access import default_project, get_project_for_user
from playground.pages import bad_request


@require_GET
@login_required
@default_project
def dataset_export(request: HttpRequest, dataset: str) -> HttpResponseBase:
    """``datasets/<dataset>/export/?projectId=``: the dataset as a JSON attachment (the
    name may hold slashes); 400 for a name over 200 characters, 404 when the project
    has nothing in it."""
    project = get_project_for_user(request)
    if len(dataset) > DATASET_MAX_LENGTH:
        return bad_request(request, "Dataset names have at most 200 characters", project=project)
    try:
        parts = datasets.dataset_export(project=project, dataset=dataset)
    except datasets.DatasetNotFound as exc:
        raise Http404("Dataset not found") from exc
    response = StreamingHttpResponse(parts, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{datasets.export_filename(dataset)}"'
    return response

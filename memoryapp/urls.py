"""URL root: the /v1 API, the dashboard and playground, the admin."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path
from django.views.decorators.common import no_append_slash
from django.views.decorators.csrf import csrf_exempt

from memoryapp.api import api
from memoryapp.errors import error_json


@no_append_slash
@csrf_exempt
def api_root(request: HttpRequest) -> JsonResponse:
    """``/v1`` and ``/v1/``: no endpoint, so 404 ``{"error": "Not found"}`` for every
    method (DESIGN.md section 5). Ahead of ninja's own root view, which is not
    CSRF-exempt (an HTML 403 for a POST), and without Django's slash redirect, which
    cannot carry a POST (a 500 with DEBUG on)."""
    return error_json(404, "Not found")


urlpatterns = [
    path("v1", api_root),
    path("v1/", api_root),
    path("v1/", api.urls),
    path("admin/", admin.site.urls),
    path("", include("playground.urls")),
]

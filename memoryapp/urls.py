"""URL root: the /v1 API, the dashboard and playground, the admin."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from memoryapp.api import api

urlpatterns = [
    path("v1/", api.urls),
    path("admin/", admin.site.urls),
    path("", include("playground.urls")),
]

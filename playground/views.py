"""Dashboard views: thin functions that look objects up through membership and render."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The dashboard's landing page."""
    return render(request, "playground/home.html", {})

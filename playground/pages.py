"""What every dashboard page shares: project-scoped URLs and rendering a full page or
one of its HTMX partials."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers

from memoryapp import llm
from memoryapp.models import Project, Thread
from playground.access import get_thread_for_user, is_owner, user_projects


def project_url(name: str, project: Project, *args: Any, **query: Any) -> str:
    """``reverse(name, args)`` plus ``?projectId=`` and any non-empty ``query`` values."""
    params = {"projectId": project.pk, **{k: v for k, v in query.items() if v not in (None, "")}}
    return f"{reverse(name, args=args)}?{urlencode(params)}"


def adapter_info() -> dict[str, Any]:
    """The model adapter in use, as the header and the playground show it: its registry
    name and display model (issue 4 item 5)."""
    provider = llm.provider()
    return {"name": provider.name, "model": provider.display_model()}


def page(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    project: Project | None = None,
    status: int = 200,
) -> HttpResponse:
    """Render a full page: adds the header's project switcher, role and adapter."""
    full = {
        "project": project,
        "projects": user_projects(request),
        "is_owner": project is not None and is_owner(request, project),
        "adapter": adapter_info(),
        **context,
    }
    response = render(request, template, full, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response


def bad_request(request: HttpRequest, message: str, *, project: Project | None = None) -> HttpResponse:
    """The dashboard's 400 for a malformed query parameter: the ``400.html`` page (the
    site's layout, like 403.html and 404.html) saying ``message``, which names the
    parameter and what it takes."""
    return page(request, "400.html", {"message": message}, project=project, status=400)


def not_found(request: HttpRequest) -> HttpResponse:
    """The dashboard's 404: the ``404.html`` page in the site's layout (no project named,
    so nothing says whether the one asked for exists)."""
    return page(request, "404.html", {}, status=404)


def partial(request: HttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    """Render ``template`` (``page.html#partial``) alone, varying on HX-Request."""
    response = render(request, template, context)
    patch_vary_headers(response, ["HX-Request"])
    return response


# The full-page titles of the thread page's panels that have a URL of their own.
PANEL_TITLES = {"stats": "Stats", "jobs": "Background jobs"}


def thread_fragment(
    request: HttpRequest,
    thread_id: uuid.UUID,
    name: str,
    extra: Callable[[Thread], dict[str, Any]],
) -> HttpResponse:
    """The partial ``name`` of the thread page (``playground/thread.html#<name>``) for
    thread ``thread_id``, with the project, the thread and ``extra(thread)`` in its
    context. That is what the page's htmx refresh asks for; any other request (the URL
    opened in the browser, a bookmark) gets the panel inside the site's layout
    (``playground/thread_panel.html``), titled PANEL_TITLES[name], with a link back to
    the thread. Http404 unless the user may see the thread (playground.access)."""
    thread = get_thread_for_user(request, thread_id)
    context = {"project": thread.project, "thread": thread, **extra(thread)}
    if wants_partial(request):
        return partial(request, f"playground/thread.html#{name}", context)
    thread_url = project_url("playground:thread", thread.project, thread.pk)
    context.update(
        {
            "panel": f"playground/thread.html#{name}",
            "panel_title": PANEL_TITLES[name],
            "thread_url": thread_url,
            # The active summary's link goes to the thread page, where that message is.
            "summary_page_url": thread_url,
            "nav": "threads",
        }
    )
    return page(request, "playground/thread_panel.html", context, project=thread.project)


def wants_partial(request: HttpRequest) -> bool:
    """True for an HTMX request that is not a history restore (which needs the page)."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.history_restore_request  # type: ignore[union-attr]

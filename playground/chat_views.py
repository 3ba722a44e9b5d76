"""The playground chat route and the per-turn context view (spec 002; issue 4 items 4-5).

``chat``: POST /dashboard/chat/threads/<uuid>/chat?projectId=<pid>, a JSON route behind
the login session (not an API key). Decisions:

- Not logged in: 401 ``{"error": "Unauthorized"}`` rather than the dashboard's redirect
  to the login page, because the caller is ``fetch()``, which would follow the redirect
  and get an HTML page where it expects JSON. CSRF is enforced by Django's
  CsrfViewMiddleware like every other POST (the page sends ``X-CSRFToken``); a request
  without the token gets Django's 403 before this view runs.
- Not a member, another project's thread, malformed ids: 404 ``{"error": "Thread not
  found"}`` (DESIGN.md section 5: never reveal that it exists).
- Bad JSON or fields: 400 ``{"error": "Validation error", "issues": [...]}``; content
  over the size limit: 413, as on /v1.
- The model failing: 502 ``{"error": "Model call failed", "kind", "detail",
  "userMessage", "turnId"}``; the user message stays stored.

``turn_context``: GET /dashboard/chat/turns/<id>/?projectId=<pid>, an HTML fragment with
what the turn's context was made of (a dashboard page: logged-out visitors are sent to
the login page).
"""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from pydantic import BaseModel, ConfigDict, StrictBool, ValidationError

from memoryapp.chat import ChatModelFailed, chat_turn
from memoryapp.errors import BODY_TOO_LARGE, INVALID_JSON, ThreadNotFound, error_json
from memoryapp.models import Turn, UsageLine
from memoryapp.validation import (
    MESSAGE_LIMIT_DEFAULT,
    MESSAGE_LIMIT_MAX,
    Content,
    MessageLimit,
    SystemPrompt,
    issues_from_pydantic,
)
from playground.access import default_project, get_project_for_user, get_thread_for_user
from playground.pages import page, project_url
from playground.views import thread_context

# Stands for the turn id in the turn-context URL handed to playground.js.
TURN_ID_PLACEHOLDER = 2147483647


class ChatIn(BaseModel):
    """The chat request body (spec 002): unknown fields are dropped, as on /v1; content
    follows the rules of an appended message (memoryapp.validation)."""

    model_config = ConfigDict(extra="ignore")

    content: Content
    systemPrompt: SystemPrompt | None = None
    messageLimit: MessageLimit = MESSAGE_LIMIT_DEFAULT
    verbose: StrictBool = False


def chat(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """Run one playground chat turn (memoryapp.chat.chat_turn) and answer 201 with its body.

    Every answer is JSON, a wrong method included (405 with ``Allow: POST``), since the
    caller is fetch().
    """
    if request.method != "POST":
        response = error_json(405, "Method not allowed")
        response["Allow"] = "POST"
        return response
    if not request.user.is_authenticated:
        return error_json(401, "Unauthorized")
    try:
        thread = get_thread_for_user(request, thread_id)
    except Http404:
        return error_json(404, "Thread not found")
    try:
        data = json.loads(request.body or b"")
    except RequestDataTooBig:
        return error_json(413, "Payload too large", BODY_TOO_LARGE)
    except (ValueError, RecursionError):
        # JSONDecodeError and UnicodeDecodeError are ValueErrors; absurdly deep nesting
        # ("[[[[...") exhausts the parser's recursion instead.
        return error_json(400, "Validation error", INVALID_JSON)
    try:
        payload = ChatIn.model_validate(data)
    except ValidationError as exc:
        issues = issues_from_pydantic([dict(e) for e in exc.errors()])
        if any(i["code"] == "content_too_large" for i in issues):
            return error_json(413, "Payload too large", issues)
        return error_json(400, "Validation error", issues)
    try:
        body = chat_turn(
            thread=thread,
            user=request.user,
            content=payload.content,
            system_prompt=payload.systemPrompt or "",
            message_limit=payload.messageLimit,
            verbose=payload.verbose,
        )
    except ChatModelFailed as exc:
        return error_json(
            502,
            "Model call failed",
            kind=exc.kind,
            detail=str(exc),
            userMessage=exc.user_message,
            turnId=exc.turn_id,
        )
    except ThreadNotFound:
        return error_json(404, "Thread not found")
    return JsonResponse(body, status=201)


@require_GET
@login_required
@default_project
def playground(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """The playground: a chat pane on a thread, its stats and the per-turn context panel.

    The messageLimit control starts at the thread's autoCompactThreshold when that is
    above the spec's default of 20 (capped at 100), so a first turn does not walk into the
    messageLimit trap (spec 000) that prepare would warn about.
    """
    thread = get_thread_for_user(request, thread_id)
    context = thread_context(thread, None)
    project = thread.project
    context["chat_url"] = project_url("playground:chat", project, thread.pk)
    context["turn_url_template"] = project_url("playground:turn-context", project, TURN_ID_PLACEHOLDER)
    context["turn_id_placeholder"] = TURN_ID_PLACEHOLDER
    context["message_limit"] = min(
        max(MESSAGE_LIMIT_DEFAULT, thread.auto_compact_threshold or 0),
        MESSAGE_LIMIT_MAX,
    )
    context["message_limit_max"] = MESSAGE_LIMIT_MAX
    return page(request, "playground/playground.html", context, project=project)


TIMING_STEPS = [
    ("appendMs", "Append user message"),
    ("prepareMs", "Prepare"),
    ("recallMs", "Recall"),
    ("firstTextMs", "Model: first text"),
    ("modelMs", "Model: whole reply"),
    ("storeMs", "Store reply and turn"),
    ("totalMs", "Total"),
]
LAYERS = [
    ("systemPrompt", "System prompt"),
    ("recallContext", "Recall context (long-term memory)"),
    ("summary", "Compaction summary"),
    ("tail", "Recent messages (tail)"),
    ("total", "Total"),
]


@login_required
@require_GET
def turn_context(request: HttpRequest, turn_id: int) -> HttpResponse:
    """The per-turn context view: prepare's summary and tail, recall's result, tokens per
    layer, latency per step, cost lines with their total, the adapter, any error."""
    project = get_project_for_user(request)
    turn = get_object_or_404(
        Turn.objects.select_related("thread", "user_message", "assistant_message"),
        pk=turn_id,
        thread__project=project,
    )
    lines: list[UsageLine] = list(turn.usage_lines.all())
    context: dict[str, Any] = turn.context or {}
    timings = context.get("timings") or {}
    layers = context.get("layers") or {}
    return render(
        request,
        "playground/_turn_context.html",
        {
            "project": project,
            "turn": turn,
            "ctx": context,
            "prepare": context.get("prepare") or {},
            "recall": context.get("recall"),
            "timings": [(label, timings[key]) for key, label in TIMING_STEPS if key in timings],
            "layers": [(label, layers[key]) for key, label in LAYERS if key in layers],
            "lines": lines,
            "total_cost": sum((line.cost for line in lines), Decimal(0)),
            "adapter": turn.adapter,
        },
    )


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: JSON for the chat route (its caller is fetch()), Django's page elsewhere."""
    match = request.resolver_match
    if match is not None and match.view_name == "playground:chat":
        return error_json(403, "CSRF check failed", detail=reason)
    from django.views.csrf import csrf_failure as default_failure

    return default_failure(request, reason=reason)

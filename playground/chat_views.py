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
from typing import Annotated, Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from memoryapp.api import issues_from_pydantic
from memoryapp.api.schemas import MessageIn
from memoryapp.chat import ChatModelFailed, chat_turn
from memoryapp.errors import ThreadNotFound
from memoryapp.models import Turn, UsageLine
from playground.access import get_project_for_user, get_thread_for_user

SYSTEM_PROMPT_MAX_CHARS = 20_000


class ChatIn(BaseModel):
    """The chat request body (spec 002): unknown fields are dropped, as on /v1."""

    model_config = ConfigDict(extra="ignore")

    content: str
    systemPrompt: Annotated[str, Field(max_length=SYSTEM_PROMPT_MAX_CHARS)] | None = None
    messageLimit: Annotated[int, Field(strict=True, ge=1, le=100)] = 20
    verbose: StrictBool = False

    @field_validator("content")
    @classmethod
    def _content_rules(cls, value: str) -> str:
        # The same rules as an appended message (DESIGN.md section 6 item 6).
        return MessageIn._content_rules(value)

    @field_validator("systemPrompt")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise PydanticCustomError("nul_character", "systemPrompt must not contain NUL characters")
        return value


def _error(status: int, error: str, issues: list[dict[str, Any]] | None = None, **extra: Any) -> JsonResponse:
    body: dict[str, Any] = {"error": error}
    if issues is not None:
        body["issues"] = issues
    body.update(extra)
    return JsonResponse(body, status=status)


def _invalid_json() -> JsonResponse:
    return _error(
        400,
        "Validation error",
        [{"path": [], "message": "Request body is not valid JSON", "code": "invalid_json"}],
    )


def chat(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """Run one playground chat turn (memoryapp.chat.chat_turn) and answer 201 with its body.

    Every answer is JSON, a wrong method included (405 with ``Allow: POST``), since the
    caller is fetch().
    """
    if request.method != "POST":
        response = _error(405, "Method not allowed")
        response["Allow"] = "POST"
        return response
    if not request.user.is_authenticated:
        return _error(401, "Unauthorized")
    try:
        thread = get_thread_for_user(request, thread_id)
    except Http404:
        return _error(404, "Thread not found")
    try:
        data = json.loads(request.body or b"")
    except RequestDataTooBig:
        return _error(
            413,
            "Payload too large",
            [{"path": [], "message": "Request body is too large", "code": "body_too_large"}],
        )
    except (ValueError, RecursionError):
        # JSONDecodeError and UnicodeDecodeError are ValueErrors; absurdly deep nesting
        # ("[[[[...") exhausts the parser's recursion instead.
        return _invalid_json()
    try:
        payload = ChatIn.model_validate(data)
    except ValidationError as exc:
        issues = issues_from_pydantic([dict(e) for e in exc.errors()])
        if any(i["code"] == "content_too_large" for i in issues):
            return _error(413, "Payload too large", issues)
        return _error(400, "Validation error", issues)
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
        return _error(
            502,
            "Model call failed",
            kind=exc.kind,
            detail=str(exc),
            userMessage=exc.user_message,
            turnId=exc.turn_id,
        )
    except ThreadNotFound:
        return _error(404, "Thread not found")
    return JsonResponse(body, status=201)


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
    if request.path.startswith("/dashboard/chat/"):
        return _error(403, "CSRF check failed", detail=reason)
    from django.views.csrf import csrf_failure as default_failure

    return default_failure(request, reason=reason)

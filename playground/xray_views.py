"""The turn X-ray pages (issue 10 item 1): a turn's context view as its own page, the
thread's turn list, and the replay of a turn's stored input on any registered adapter.

``turn_context`` (playground.chat_views) serves the X-ray as a fragment to the playground
and as a page to a plain GET; these views add the list and the replay.
"""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Sum
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from memoryapp import llm, xray
from memoryapp.errors import error_json
from memoryapp.models import Turn
from playground.access import default_project, get_project_for_user, get_thread_for_user
from playground.pages import page, project_url

XRAY_LAYERS = [
    ("recall", "Long-term memory (recall)"),
    ("agentPrompt", "Agent's system prompt"),
    ("systemPrompt", "Your system prompt"),
    ("summary", "Summary / context block"),
    ("messages", "Messages"),
    ("tools", "Tool declarations"),
]


class BadCall(ValueError):
    """A ``call`` parameter that names no model call of the turn (answered 400)."""


def call_number(turn: Turn, raw: str | None) -> int:
    """The model call a request names (``call``, 1-based; 1 when left out). Raises
    BadCall, saying the range, for anything but a call of the turn."""
    count = xray.call_count(turn.context or {})
    if raw is None or raw == "":
        return 1
    if not raw.isdigit() or not 1 <= int(raw) <= max(count, 1):
        raise BadCall(f"call must be a whole number from 1 to {max(count, 1)} (this turn's model calls)")
    return int(raw)


def invalid_field(field: str, message: str, code: str) -> JsonResponse:
    """400 ``{"error": "Validation error", "issues": [{"path": [field], "message", "code"}]}``:
    the API's answer to a bad field (memoryapp.errors.error_body; DESIGN.md section 5)."""
    return error_json(400, "Validation error", [{"path": [field], "message": message, "code": code}])


def bad_call(error: BadCall) -> JsonResponse:
    """The 400 answer naming ``call`` (code ``no_such_call``)."""
    return invalid_field("call", str(error), "no_such_call")


def _call_rows(turn: Turn, context: dict[str, Any], current: int) -> list[dict[str, Any]]:
    """The turn's model calls as the X-ray's call table lists them (tool-loop turns)."""
    return [
        {
            **call,
            "url": project_url("playground:turn-context", turn.thread.project, turn.pk, call=call["call"]),
            "current": call["call"] == current,
            "asked": ", ".join(c["name"] for c in call.get("toolCalls") or ()),
        }
        for call in context.get("calls") or ()
    ]


def xray_context(turn: Turn, call: int = 1) -> dict[str, Any]:
    """The template context of a turn's X-ray section (``_turn_context.html``) for model
    call ``call`` (1-based, a number call_number checked): that call's whole input
    ``xin`` (memoryapp.xray.call_input; None for a turn stored before the X-ray
    existed), its layers as ``(label, tokens, percent of the context window)``, its tools
    with pretty JSON parameters, the turn's calls (``xray_calls``, a tool loop's), the
    replay URL and the registry's adapters."""
    context = turn.context or {}
    if not context.get("input"):
        return {"xin": None}
    stored = xray.call_input(context, call)
    window = stored.get("contextWindow") or 1
    layers = stored.get("layers") or {}
    return {
        "xin": stored,
        "xray_call": call,
        "xray_calls": _call_rows(turn, context, call),
        "xray_added": sum(1 for m in stored["messages"] if m.get("addedInCall")),
        "xray_layers": [
            (label, layers.get(key, 0), 100 * layers.get(key, 0) / window) for key, label in XRAY_LAYERS
        ],
        "xray_tools": [
            {**tool, "parametersJson": json.dumps(tool.get("parameters"), indent=2, ensure_ascii=False)}
            for tool in stored.get("tools", ())
        ],
        "replay_url": project_url("playground:turn-replay", turn.thread.project, turn.pk),
        "adapters": list(llm.PROVIDERS),
        "current_adapter": llm.adapter_name(),
    }


def _input_tokens(context: dict[str, Any]) -> dict[str, Any]:
    """A turn's model input in tokens for the turn list: every call's input added up
    (what the cost line bills for a counting adapter), and how many calls."""
    calls = context.get("calls") or ()
    if calls:
        return {"input_tokens": sum(c["totalTokens"] for c in calls), "model_calls": len(calls)}
    return {"input_tokens": (context.get("input") or {}).get("totalTokens"), "model_calls": 1}


@require_GET
@login_required
@default_project
def thread_turns(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """The thread's chat turns, newest first: when, the user message, the adapter, the
    model's input tokens and the turn's cost, each linking to its X-ray."""
    thread = get_thread_for_user(request, thread_id)
    turns = list(
        Turn.objects.filter(thread=thread)
        .select_related("user_message")
        .annotate(cost=Sum("usage_lines__cost"))
        .order_by("-pk")
    )
    rows: list[dict[str, Any]] = [
        {
            "turn": turn,
            # Newest first: the thread's last turn is number len(turns) (as selectors.turn_number counts).
            "number": len(turns) - index,
            "xray_url": project_url("playground:turn-context", thread.project, turn.pk),
            **_input_tokens(turn.context or {}),
            "cost": turn.cost or Decimal(0),
        }
        for index, turn in enumerate(turns)
    ]
    total = sum((row["cost"] for row in rows), Decimal(0))
    return page(
        request,
        "playground/turns.html",
        {"thread": thread, "turns": rows, "total_cost": total, "nav": "threads"},
        project=thread.project,
    )


def _choices(names: list[str]) -> str:
    """``'a', 'b' or 'c'``, as pydantic words a literal's choices."""
    quoted = [f"'{name}'" for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


@require_POST
def turn_replay(request: HttpRequest, turn_id: int) -> HttpResponse:
    """POST ``adapter=<registry name>`` and ``call=<n>`` (1 when left out): run the
    stored input of the turn's model call ``n`` again on that adapter and answer the
    fragment with what that call gave (the reply, or the tool calls a tool loop's earlier
    call asked for) and the replay side by side; nothing is stored. A failed model call is
    part of that answer (the replay's outcome, beside the original), not an error.

    Errors are JSON in the API's shape and statuses (memoryapp.errors.error_body), since
    the page's script shows them (static/js/app.js): not logged in 401 ``Unauthorized``
    (with ``HX-Trigger: memory:signed-out``, as any htmx request of a signed-out page);
    a turn that does not exist, or of a project the user is not a member of, 404 ``Turn
    not found``; an unknown ``adapter`` (code ``literal_error``) or a ``call`` the turn
    did not make (code ``no_such_call``) 400 ``Validation error`` naming it; a turn
    stored without its model input 409; another method 405 and a failed CSRF check 403
    (memoryapp.middleware.ApiJsonErrorsMiddleware)."""
    if not request.user.is_authenticated:
        response = error_json(401, "Unauthorized")
        response["HX-Trigger"] = "memory:signed-out"
        return response
    try:
        project = get_project_for_user(request)
    except Http404:
        return error_json(404, "Turn not found")
    turn = (
        Turn.objects.select_related("thread", "assistant_message")
        .filter(pk=turn_id, thread__project=project)
        .first()
    )
    if turn is None:
        return error_json(404, "Turn not found")
    adapter = request.POST.get("adapter") or llm.adapter_name()
    if adapter not in llm.PROVIDERS:
        names = list(llm.PROVIDERS)
        return invalid_field("adapter", f"Input should be {_choices(names)}", "literal_error")
    context = turn.context or {}
    if not context.get("input"):
        return error_json(409, "Turn was stored without its model input")
    try:
        call = call_number(turn, request.POST.get("call"))
    except BadCall as error:
        return bad_call(error)
    result = xray.replay(stored=xray.call_input(context, call), adapter=adapter)
    calls = context.get("calls") or ()
    made = calls[call - 1] if calls else {}
    asked = made.get("toolCalls") or ()
    original = made.get("text", "") if asked else (turn.assistant_message.content if turn.assistant_message else "")
    return render(
        request,
        "playground/_replay.html",
        {
            "turn": turn, "original": original, "original_model": context.get("model"), "result": result,
            "call": call, "call_count": xray.call_count(context),
            "original_asked": [f"{c['name']}({json.dumps(c['arguments'], ensure_ascii=False)})" for c in asked],
        },
    )

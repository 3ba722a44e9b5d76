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
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from memoryapp import llm, xray
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


def xray_context(turn: Turn) -> dict[str, Any]:
    """The template context of a turn's X-ray section (``_turn_context.html``): the
    stored input ``xin`` (None for a turn stored before the X-ray existed), its layers as
    ``(label, tokens, percent of the context window)``, its tools with pretty JSON
    parameters, the replay URL and the registry's adapters."""
    stored = (turn.context or {}).get("input")
    if not stored:
        return {"xin": None}
    window = stored.get("contextWindow") or 1
    layers = stored.get("layers") or {}
    return {
        "xin": stored,
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


@require_GET
@login_required
@default_project
def thread_turns(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """The thread's chat turns, newest first: when, the user message, the adapter, the
    model's input tokens and the turn's cost, each linking to its X-ray."""
    thread = get_thread_for_user(request, thread_id)
    rows: list[dict[str, Any]] = [
        {
            "turn": turn,
            "xray_url": project_url("playground:turn-context", thread.project, turn.pk),
            "input_tokens": ((turn.context or {}).get("input") or {}).get("totalTokens"),
            "cost": turn.cost or Decimal(0),
        }
        for turn in Turn.objects.filter(thread=thread)
        .select_related("user_message")
        .annotate(cost=Sum("usage_lines__cost"))
    ]
    total = sum((row["cost"] for row in rows), Decimal(0))
    return page(
        request,
        "playground/turns.html",
        {"thread": thread, "turns": rows, "total_cost": total, "nav": "threads"},
        project=thread.project,
    )


@require_POST
@login_required
def turn_replay(request: HttpRequest, turn_id: int) -> HttpResponse:
    """POST ``adapter=<registry name>``: run the turn's stored input again on that adapter
    and answer the fragment with both replies side by side; nothing is stored. 400 JSON
    naming ``adapter`` for an unknown one, 409 for a turn stored without its input."""
    project = get_project_for_user(request)
    turn = get_object_or_404(
        Turn.objects.select_related("thread", "assistant_message"), pk=turn_id, thread__project=project
    )
    adapter = request.POST.get("adapter") or llm.adapter_name()
    if adapter not in llm.PROVIDERS:
        return JsonResponse(
            {"error": {"field": "adapter", "message": f"adapter must be one of {', '.join(llm.PROVIDERS)}"}},
            status=400,
        )
    stored = (turn.context or {}).get("input")
    if not stored:
        return JsonResponse({"error": {"message": "this turn was stored without its model input"}}, status=409)
    result = xray.replay(stored=stored, adapter=adapter)
    original = turn.assistant_message.content if turn.assistant_message else ""
    return render(
        request,
        "playground/_replay.html",
        {"turn": turn, "original": original, "original_model": (turn.context or {}).get("model"), "result": result},
    )

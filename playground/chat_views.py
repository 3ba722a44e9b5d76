"""The playground page and the per-turn context view (spec 002; issue 4 items 4-5).

``playground``: the chat pane on a thread, its stats and the per-turn context panel; the
chat route it posts to is playground.chat_api. ``turn_context``: GET
/dashboard/chat/turns/<id>/?projectId=<pid>, an HTML fragment with what the turn's
context was made of (a dashboard page: logged-out visitors are sent to the login page).
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from memoryapp import working
from memoryapp.models import Turn, UsageLine
from memoryapp.validation import (
    MESSAGE_LIMIT_DEFAULT,
    MESSAGE_LIMIT_MAX,
)
from playground import selectors, xray_views
from playground.access import default_project, get_project_for_user, get_thread_for_user
from playground.pages import page, project_url, wants_partial
from playground.views import thread_context

# Stands for the turn id in the turn-context URL handed to playground.js.
TURN_ID_PLACEHOLDER = 2147483647


@require_GET
@login_required
@default_project
def playground(request: HttpRequest, thread_id: uuid.UUID) -> HttpResponse:
    """The playground: a chat pane on a thread, its stats and the per-turn context panel.

    The messageLimit control starts at the thread's autoCompactThreshold when that is
    above the spec's default of 20 (capped at 100), so a first turn does not walk into the
    messageLimit trap (spec 000) that prepare would warn about. On an agent's thread it
    is disabled and says why: each turn gets the agent's whole window (its checkpoint and
    every message since, at most ``agent_window`` messages; spec 004), as prepare
    without messageLimit, and a limit could only cut it short.
    """
    thread = get_thread_for_user(request, thread_id)
    context = thread_context(thread, None)
    project = thread.project
    context["chat_url"] = project_url("playground:chat", project, thread.pk)
    context["turn_url_template"] = project_url("playground:turn-context", project, TURN_ID_PLACEHOLDER)
    context["turn_id_placeholder"] = TURN_ID_PLACEHOLDER
    if thread.agent_id is not None:
        context["message_limit"] = None
        context["agent_window"] = working.agent_window_limit()
    else:
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
# The layers of the exact model input, in the order the model gets them; they sum to
# the total (the X-ray's "Model input (exact)").
LAYERS = [
    ("recallContext", "Recall context (long-term memory)"),
    ("agentPrompt", "Agent's system prompt"),
    ("systemPrompt", "Your system prompt"),
    ("summary", "Compaction summary"),
    ("tail", "Recent messages (tail)"),
    ("tools", "Tool declarations"),
    ("total", "Total"),
]


@require_GET
@login_required
@default_project
def turn_context(request: HttpRequest, turn_id: int) -> HttpResponse:
    """The per-turn context view: prepare's summary and tail, recall's result, tokens per
    layer, latency per step, cost lines with their total, the adapter, any error, and the
    X-ray of model call ``?call=<n>`` (1 when left out; 400 naming ``call`` for no call
    of the turn)."""
    project = get_project_for_user(request)
    turn = get_object_or_404(
        Turn.objects.select_related("thread", "user_message", "assistant_message").annotate(
            number=selectors.turn_number()
        ),
        pk=turn_id,
        thread__project=project,
    )
    try:
        call = xray_views.call_number(turn, request.GET.get("call"))
    except xray_views.BadCall as error:
        return xray_views.bad_call(error)
    lines: list[UsageLine] = list(turn.usage_lines.all())
    context: dict[str, Any] = turn.context or {}
    timings = context.get("timings") or {}
    layers = context.get("layers") or {}
    values = {
            "project": project,
            "turn": turn,
            "ctx": context,
            "prepare": context.get("prepare") or {},
            "recall": context.get("recall"),
            "timings": [(label, timings[key]) for key, label in TIMING_STEPS if key in timings],
            "layers": [(label, layers[key]) for key, label in LAYERS if key in layers],
            "lines": lines,
            "total_cost": sum((line.cost for line in lines), Decimal(0)),
            "turn_adapter": turn.adapter,
            **xray_views.xray_context(turn, call),
    }
    if wants_partial(request):
        return render(request, "playground/_turn_context.html", values)
    # A plain GET (the X-ray link of a message): the same view as its own page.
    return page(request, "playground/turn.html", values, project=project)

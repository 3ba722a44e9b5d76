"""The playground's server-side chat turn (spec 002, POST /dashboard/chat/threads/:threadId/chat).

One turn: append the user message (stored before any model call), prepare the working
context window, recall long-term memory (include episodes, synthesis, raw; a failure is
non-fatal), call the model with the memory blocks first and the user's system prompt
after them, stream every text piece to the thread's WebSocket group, append the reply,
and record a Turn with its context view and cost lines (memoryapp.models.Turn,
UsageLine). No step runs inside a transaction that spans a model call.
"""

from __future__ import annotations

import logging
import time
from decimal import Decimal
from typing import Any

from django.conf import settings

from memoryapp import compaction, events, llm, serializers, working
from memoryapp.errors import ModelCallFailed
from memoryapp.llm.port import ModelError, Usage
from memoryapp.models import Message, Thread, Turn, UsageLine
from memoryapp.recall import recall
from memoryapp.timefmt import iso_ms
from memoryapp.tokens import count_tokens

logger = logging.getLogger(__name__)

RECALL_INCLUDE = ("episodes", "facts", "synthesis", "raw")
RECALL_LIMIT = 10
# Strings longer than this are cut in the stored context view (the messages themselves
# keep their full content); token counts are taken before cutting.
VIEW_CHARS = 4000
MILLION = Decimal(1_000_000)


class ChatModelFailed(ModelCallFailed):
    """The turn's model call failed after the user message was stored.

    ``user_message`` is the 201-style dict of the stored user message and ``turn_id`` the
    Turn that records the error; the view answers 502 with both.
    """

    def __init__(self, message: str, *, kind: str, user_message: dict[str, Any], turn_id: int) -> None:
        super().__init__(message, kind=kind)
        self.user_message = user_message
        self.turn_id = turn_id


def _ms(start: float) -> int:
    return round((time.perf_counter() - start) * 1000)


def _cut(text: str) -> str:
    return text if len(text) <= VIEW_CHARS else text[: VIEW_CHARS - 1] + "…"


def prices() -> tuple[Decimal, Decimal]:
    """USD per 1M input and output tokens for the adapter in use (0 for offline)."""
    if llm.adapter_name() == "offline":
        return Decimal(0), Decimal(0)
    return (
        Decimal(str(settings.MEMORY_PRICE_INPUT_PER_MTOK)),
        Decimal(str(settings.MEMORY_PRICE_OUTPUT_PER_MTOK)),
    )


def _cost(tokens: int, price_per_mtok: Decimal) -> Decimal:
    return (Decimal(tokens) * price_per_mtok / MILLION).quantize(Decimal("0.00000001"))


def user_message_dict(message: Message) -> dict[str, Any]:
    """``userMessage`` of the 201 body: messageId, sequenceNumber, role, createdAt."""
    return {
        "messageId": str(message.id),
        "sequenceNumber": message.sequence_number,
        "role": message.role,
        "createdAt": iso_ms(message.created_at),
    }


def assistant_message_dict(message: Message) -> dict[str, Any]:
    """``assistantMessage`` of the 201 body: the user message fields plus content."""
    return {**user_message_dict(message), "content": message.content}


def system_instruction(*, recall_context: str, system_prompt: str) -> str:
    """The memory blocks first, then the user's system prompt ("Appended after the memory
    blocks", spec 002); empty parts are left out."""
    return "\n\n".join(part for part in (recall_context.strip(), system_prompt.strip()) if part)


def _compaction_usage(thread_id: Any) -> tuple[Message | None, Thread]:
    thread = Thread.objects.select_related("active_summary").get(pk=thread_id)
    return thread.active_summary, thread


def _prepare_view(prepared: dict[str, Any], thread: Thread) -> dict[str, Any]:
    messages = prepared["messages"]
    summary = None
    tail = messages
    if prepared["compacted"] and messages:
        row = thread.active_summary
        covers = row is not None and row.content == messages[0]["content"]
        summary = {
            "content": _cut(messages[0]["content"]),
            "fromSequence": row.covers_from_sequence if covers and row else None,
            "toSequence": row.covers_to_sequence if covers and row else None,
        }
        tail = messages[1:]
    return {
        "messageCount": prepared["messageCount"],
        "truncated": prepared["truncated"],
        "compacted": prepared["compacted"],
        "warning": prepared.get("warning"),
        "summary": summary,
        "tail": [{"role": m["role"], "content": _cut(m["content"])} for m in tail],
    }


def _recall_view(result: dict[str, Any] | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return {
        **result,
        "raw": [{**item, "content": _cut(item["content"])} for item in result["raw"]],
        "context": _cut(result["context"]),
    }


def chat_turn(
    *,
    thread: Thread,
    user: Any,
    content: str,
    system_prompt: str = "",
    message_limit: int = working.MESSAGE_LIMIT_DEFAULT,
    verbose: bool = False,
) -> dict[str, Any]:
    """Run one playground chat turn on ``thread`` and return the 201 body of spec 002.

    Body: ``{"userMessage", "assistantMessage", "compacted", "prepare": {"messageCount",
    "truncated", "compacted"}, "recallSummary": {"episodeCount", "factCount",
    "hasContext", "hasSynthesis"}, "turnId"}`` plus ``"recall"`` (the full recall result,
    or None when recall failed) only when ``verbose``. ``compacted`` is true when either
    insert (user or assistant) tripped a compaction run that committed.

    Streams ``chat.delta`` ``{"turnId", "text"}`` for every piece of the reply, then
    ``chat.done`` (the body without ``recall``), through memoryapp.events.

    Recall failing is logged and recorded on the Turn; the turn goes on without long-term
    memory. Raises ChatModelFailed (a ModelCallFailed) when the model call fails: the user
    message stays stored, no assistant message is stored, the Turn records the error, and
    ``chat.error`` ``{"turnId", "error"}`` is broadcast. Raises ThreadNotFound if the
    thread was deleted meanwhile.
    """
    started = time.perf_counter()
    timings: dict[str, int] = {}
    price_in, price_out = prices()
    compaction_lines: list[UsageLine] = []

    def note_compaction(thread_id: Any) -> Thread:
        summary, fresh = _compaction_usage(thread_id)
        if summary is not None:
            tokens_in, tokens_out = summary.tokens_input or 0, summary.tokens_output or 0
            compaction_lines.append(
                UsageLine(
                    kind=UsageLine.Kind.COMPACTION,
                    quantity=tokens_in + tokens_out,
                    cost=_cost(tokens_in, price_in) + _cost(tokens_out, price_out),
                    detail=f"{summary.model or ''}: {tokens_in} in, {tokens_out} out".strip(": "),
                )
            )
        return fresh

    # 1. The user message, stored before any model call (spec 002).
    step = time.perf_counter()
    appended = compaction.message_append_compacting(thread=thread, role="user", content=content)
    timings["appendMs"] = _ms(step)
    user_message = appended.message
    turn = Turn.objects.create(
        thread_id=thread.pk,
        user=user if getattr(user, "is_authenticated", False) else None,
        user_message=user_message,
        adapter=llm.adapter_name(),
        system_prompt=system_prompt,
        message_limit=message_limit,
    )
    if appended.compacted:
        fresh = note_compaction(thread.pk)
    else:
        fresh = Thread.objects.select_related("active_summary").get(pk=thread.pk)

    # 2. The working context window.
    step = time.perf_counter()
    prepared = serializers.window_to_dict(working.prepare(thread=fresh, message_limit=message_limit))
    timings["prepareMs"] = _ms(step)

    # 3. Long-term memory; failure is non-fatal (spec 002).
    step = time.perf_counter()
    recalled: dict[str, Any] | None = None
    recall_error: str | None = None
    try:
        recalled = recall(
            project=fresh.project,
            dataset=fresh.dataset,
            query=content,
            include=RECALL_INCLUDE,
            limit=RECALL_LIMIT,
            thread_id=fresh.pk,
        )
    except Exception as exc:  # any failure: the turn proceeds without long-term memory
        logger.warning("recall failed for chat turn %s", turn.pk, exc_info=True)
        recall_error = f"{type(exc).__name__}: {exc}"[:2000]
    timings["recallMs"] = _ms(step)
    recall_context = recalled["context"] if recalled else ""
    instruction = system_instruction(recall_context=recall_context, system_prompt=system_prompt)

    messages = prepared["messages"]
    summary_tokens = (
        count_tokens(messages[0]["content"]) if prepared["compacted"] and messages else 0
    )
    tail_tokens = sum(count_tokens(m["content"]) for m in messages) - summary_tokens
    layers = {
        "systemPrompt": count_tokens(system_prompt),
        "recallContext": count_tokens(recall_context),
        "summary": summary_tokens,
        "tail": tail_tokens,
    }
    layers["total"] = sum(layers.values())
    recall_summary = {
        "episodeCount": len(recalled["episodes"]) if recalled else 0,
        "factCount": len(recalled["facts"]) if recalled else 0,
        "hasContext": bool(recalled and recalled["hasContext"]),
        "hasSynthesis": bool(recalled and recalled["synthesis"]),
    }
    context: dict[str, Any] = {
        "adapter": turn.adapter,
        "model": "",
        "prepare": _prepare_view(prepared, fresh),
        "recall": _recall_view(recalled),
        "recallError": recall_error,
        "recallSummary": recall_summary,
        "layers": layers,
        "timings": timings,
    }

    # 4. The model call, streamed; outside every transaction.
    step = time.perf_counter()
    pieces: list[str] = []
    usage: Usage | None = None
    model_name = ""
    error: ModelError | None = None
    try:
        model = llm.get_model()
        for chunk in model.reply(system_instruction=instruction, messages=messages):
            if chunk.model:
                model_name = chunk.model
            if chunk.text:
                if not pieces:
                    timings["firstTextMs"] = _ms(step)
                pieces.append(chunk.text)
                events.chat_stream(thread.pk, "chat.delta", {"turnId": turn.pk, "text": chunk.text})
            if chunk.done:
                usage = chunk.usage
        if not "".join(pieces).strip():
            error = ModelError("The model returned an empty reply", kind="bad_response")
    except ModelError as exc:
        error = exc
    except Exception as exc:  # adapters raise only ModelError; anything else is a bug there
        logger.exception("model adapter raised a non-ModelError during reply")
        error = ModelError(f"{type(exc).__name__}: {exc}", kind="bad_response")
    timings["modelMs"] = _ms(step)
    context["model"] = model_name

    if error is not None:
        message = f"{error.kind}: {error}"[:2000]
        timings["totalMs"] = _ms(started)
        turn.context = context
        turn.error = message
        turn.save(update_fields=["context", "error"])
        UsageLine.objects.bulk_create([*_with_turn(compaction_lines, turn)])
        events.chat_stream(thread.pk, "chat.error", {"turnId": turn.pk, "error": message})
        raise ChatModelFailed(
            str(error),
            kind=error.kind,
            user_message=user_message_dict(user_message),
            turn_id=turn.pk,
        )

    # 5. Store the reply and the turn's record.
    step = time.perf_counter()
    text = "".join(pieces)
    estimated = usage is None
    if usage is None:
        usage = Usage(
            input_tokens=count_tokens(instruction) + sum(count_tokens(m["content"]) for m in messages),
            output_tokens=count_tokens(text),
        )
    reply = compaction.message_append_compacting(
        thread=fresh,
        role="assistant",
        content=text,
        tokens={
            "input": usage.input_tokens,
            "output": usage.output_tokens,
            "total": usage.input_tokens + usage.output_tokens,
        },
        model=(model_name or None),
        latency_ms=timings["modelMs"],
    )
    if reply.compacted:
        note_compaction(thread.pk)
    detail = (model_name or turn.adapter) + (" (estimated with memoryapp.tokens)" if estimated else "")
    lines = [
        UsageLine(
            kind=UsageLine.Kind.MODEL_INPUT,
            quantity=usage.input_tokens,
            cost=_cost(usage.input_tokens, price_in),
            detail=detail,
        ),
        UsageLine(
            kind=UsageLine.Kind.MODEL_OUTPUT,
            quantity=usage.output_tokens,
            cost=_cost(usage.output_tokens, price_out),
            detail=detail,
        ),
        *compaction_lines,
    ]
    if recalled and recalled["synthesis"] is not None:
        # The port's synthesize() reports no usage; count what went in and came out.
        synth_in = count_tokens(content) + count_tokens(recalled["context"])
        synth_out = count_tokens(recalled["synthesis"])
        lines.append(
            UsageLine(
                kind=UsageLine.Kind.SYNTHESIS,
                quantity=synth_in + synth_out,
                cost=_cost(synth_in, price_in) + _cost(synth_out, price_out),
                detail=f"estimated with memoryapp.tokens: {synth_in} in, {synth_out} out",
            )
        )
    UsageLine.objects.bulk_create(list(_with_turn(lines, turn)))
    turn.assistant_message = reply.message
    timings["storeMs"] = _ms(step)
    timings["totalMs"] = _ms(started)
    turn.context = context
    turn.save(update_fields=["assistant_message", "context"])

    body: dict[str, Any] = {
        "userMessage": user_message_dict(user_message),
        "assistantMessage": assistant_message_dict(reply.message),
        "compacted": appended.compacted or reply.compacted,
        "prepare": {
            "messageCount": prepared["messageCount"],
            "truncated": prepared["truncated"],
            "compacted": prepared["compacted"],
        },
        "recallSummary": recall_summary,
        "turnId": turn.pk,
    }
    events.chat_stream(thread.pk, "chat.done", dict(body))
    if verbose:
        body["recall"] = recalled
    return body


def _with_turn(lines: list[UsageLine], turn: Turn) -> list[UsageLine]:
    for line in lines:
        line.turn = turn
    return lines

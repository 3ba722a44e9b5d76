"""The playground's server-side chat turn (spec 002, POST /dashboard/chat/threads/:threadId/chat).

A turn is a sequence of small named steps over one TurnRecord (TURN_STEPS): append the
user message (stored before any model call), prepare the working context window, recall
long-term memory (a failure is non-fatal), build the model input (the memory blocks
first, the user's system prompt after them), call the model (every text piece streamed
to the thread's WebSocket group), store the reply, record the cost (a Turn with its
context view and UsageLines). No step runs inside a transaction that spans a model call.
Agents' tool loops and memory notes are further steps over the same record.

A thread deleted at any point of the turn ends it with ThreadNotFound (the route's 404).

A transient send (``transient: true``, spec 004 "The tools") runs TRANSIENT_STEPS instead:
prepare, recall and the model call on the thread's context plus the unsent user message,
with no tool declarations, and nothing stored: no message, no Turn, no UsageLine, no tool
call, no note written, no event (the reply comes back in the HTTP answer only).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction

from memoryapp import agent_turn, compaction, events, llm, usage, working, xray
from memoryapp.errors import ModelCallFailed, NoMemoryAgent, ThreadNotFound
from memoryapp.llm import Prices
from memoryapp.llm.input_tokens import input_tokens
from memoryapp.llm.port import ChatMessage, ModelError, ReplyChunk, ToolCall, ToolSpec, Usage
from memoryapp.models import Agent, Message, Thread, Turn, UsageLine
from memoryapp.recall import recall
from memoryapp.results import AppendOutcome, ContextWindow
from memoryapp.timefmt import iso_ms
from memoryapp.tokens import count_tokens

logger = logging.getLogger(__name__)

RECALL_INCLUDE = ("episodes", "facts", "synthesis", "raw")
RECALL_LIMIT = 10
# Strings longer than this are cut in the stored context view (the messages themselves
# keep their full content); token counts are taken before cutting.
VIEW_CHARS = 4000


class ChatModelFailed(ModelCallFailed):
    """The turn's model call failed after the user message was stored.

    ``user_message`` is the 201-style dict of the stored user message and ``turn_id`` the
    Turn that records the error; the route answers 502 with both.
    """

    def __init__(self, message: str, *, kind: str, user_message: dict[str, Any], turn_id: int) -> None:
        super().__init__(message, kind=kind, details={"userMessage": user_message, "turnId": turn_id})
        self.user_message = user_message
        self.turn_id = turn_id


@dataclass
class TurnRecord:
    """Everything one turn has learnt so far; each step reads it and fills in its part.

    Inputs: ``thread`` (project-scoped by the caller), ``user``, ``content``,
    ``system_prompt``, ``message_limit`` (None: prepare's default window, which on an
    agent's thread is the agent's whole window), ``transient`` (nothing is stored, no
    tools).
    ``timings`` are milliseconds per step (the context view's keys), ``lines`` the unsaved
    UsageLines of the turn.
    """

    thread: Thread
    user: Any
    content: str
    system_prompt: str = ""
    message_limit: int | None = None
    transient: bool = False
    adapter: str = ""
    prices: Prices = field(default_factory=usage.prices)
    started: float = field(default_factory=time.perf_counter)
    timings: dict[str, int] = field(default_factory=dict)
    turn: Turn | None = None
    user_outcome: AppendOutcome | None = None
    window: ContextWindow | None = None
    recalled: dict[str, Any] | None = None
    recall_error: str | None = None
    instruction: str = ""
    model_input: list[ChatMessage] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)
    pieces: list[str] = field(default_factory=list)
    model_usage: Usage | None = None
    agent: Agent | None = None
    tools: list[ToolSpec] = field(default_factory=list)
    usage_estimated: bool = False
    rounds: int = 0
    calls: list[dict[str, Any]] = field(default_factory=list)
    model_name: str = ""
    reply_outcome: AppendOutcome | None = None
    lines: list[UsageLine] = field(default_factory=list)

    @property
    def stored_turn(self) -> Turn:
        """The Turn row (set by the append step)."""
        assert self.turn is not None, "the append step runs first"
        return self.turn

    @property
    def reply_text(self) -> str:
        """The reply streamed so far, joined."""
        return "".join(self.pieces)


def _ms(start: float) -> int:
    return round((time.perf_counter() - start) * 1000)


def _cut(text: str) -> str:
    return text if len(text) <= VIEW_CHARS else text[: VIEW_CHARS - 1] + "…"


@contextmanager
def _needs_thread(record: TurnRecord) -> Iterator[None]:
    """Turn a write that failed because the thread was deleted meanwhile (its Turn went
    with it: a foreign key, or an update that matched no row) into ThreadNotFound."""
    try:
        with transaction.atomic():
            yield
    except (DatabaseError, Turn.DoesNotExist) as exc:
        if Thread.objects.filter(pk=record.thread.pk).exists():
            raise
        raise ThreadNotFound() from exc


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


def _compaction_lines(record: TurnRecord, outcome: AppendOutcome) -> None:
    runs = outcome.compaction.runs if outcome.compaction is not None else ()
    record.lines.extend(usage.compaction_line(record.prices, run.summary) for run in runs)


# --- the steps ------------------------------------------------------------------------------


def step_append(record: TurnRecord) -> None:
    """Store the user message (before any model call, spec 002) and the Turn row."""
    outcome = compaction.message_append_compacting(
        thread=record.thread.pk, project=record.thread.project, role="user", content=record.content
    )
    record.user_outcome = outcome
    _compaction_lines(record, outcome)
    with _needs_thread(record):
        record.turn = Turn.objects.create(
            thread_id=record.thread.pk,
            user=record.user if getattr(record.user, "is_authenticated", False) else None,
            user_message=outcome.message,
            adapter=record.adapter,
            system_prompt=record.system_prompt,
            # The limit the turn's prepare uses, also when it is the default window's.
            message_limit=record.message_limit
            if record.message_limit is not None
            else working.default_message_limit(agent=record.thread.agent_id is not None),
        )


def step_prepare(record: TurnRecord) -> None:
    """The working context window, read after the append (and any compaction it ran)."""
    thread = working.thread_get(
        project=record.thread.project, thread_id=record.thread.pk, with_summary=True
    )
    record.window = working.prepare(thread=thread, message_limit=record.message_limit)


def step_recall(record: TurnRecord) -> None:
    """Long-term memory from the dataset's other threads; any failure is logged and
    recorded, and the turn goes on without it (spec 002)."""
    try:
        record.recalled = recall(
            project=record.thread.project,
            dataset=record.thread.dataset,
            query=record.content,
            include=RECALL_INCLUDE,
            limit=RECALL_LIMIT,
            thread_id=record.thread.pk,
        )
    except Exception as exc:  # any failure: the turn proceeds without long-term memory
        turn = record.turn.pk if record.turn is not None else "(transient)"
        logger.warning("recall failed for chat turn %s", turn, exc_info=True)
        record.recall_error = f"{type(exc).__name__}: {exc}"[:2000]


def _recall_summary(recalled: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "episodeCount": len(recalled["episodes"]) if recalled else 0,
        "factCount": len(recalled["facts"]) if recalled else 0,
        "hasContext": bool(recalled and recalled["hasContext"]),
        "hasSynthesis": bool(recalled and recalled["synthesis"]),
    }


def _window_view(window: ContextWindow) -> dict[str, Any]:
    summary = window.summary
    return {
        "messageCount": window.message_count,
        "truncated": window.truncated,
        "compacted": window.compacted,
        "warning": window.warning,
        "summary": None
        if summary is None
        else {
            "content": _cut(summary.content),
            "fromSequence": summary.from_sequence,
            "toSequence": summary.to_sequence,
        },
        "tail": [{"role": m.role, "content": _cut(m.content)} for m in window.tail],
    }


def _recall_view(result: dict[str, Any] | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return {
        **result,
        "raw": [{**item, "content": _cut(item["content"])} for item in result["raw"]],
        "context": _cut(result["context"]),
    }


def step_build_input(record: TurnRecord) -> None:
    """The system instruction, the messages for the model, and the context view with
    the tokens each layer of the exact input holds (memoryapp.xray.input_record's
    layers; ``total`` is the X-ray's ``totalTokens``)."""
    window = record.window
    assert window is not None, "the prepare step runs first"
    recall_context = record.recalled["context"] if record.recalled else ""
    record.agent = agent_turn.thread_agent(record.thread)
    record.instruction = system_instruction(
        recall_context=recall_context,
        system_prompt=agent_turn.system_prompt(record.agent, record.system_prompt),
    )
    record.model_input = [agent_turn.chat_message(m) for m in window.messages]
    if record.transient:
        # Not stored, so not in the window: the model gets it after the thread's context.
        record.model_input.append(ChatMessage(role="user", content=record.content))
    # A transient send leaves no trace in the agent's history, so it never gets the
    # memory tools (spec 004 "The tools").
    record.tools = [] if record.transient else agent_turn.tools_for(record.agent)
    exact = xray.input_record(
        window=window,
        recalled=record.recalled,
        agent_prompt=record.agent.system_prompt if record.agent else "",
        system_prompt=record.system_prompt,
        instruction=record.instruction,
        tools=record.tools,
        context_window=llm.provider().context_window(),
        agent=record.agent is not None,
    )
    # The layers of the exact input (one count, memoryapp.llm.input_tokens): they sum
    # to the X-ray's total and to what the offline adapter reports.
    by_layer = exact["layers"]
    layers = {
        "recallContext": by_layer["recall"],
        "agentPrompt": by_layer["agentPrompt"],
        "systemPrompt": by_layer["systemPrompt"],
        "summary": by_layer["summary"],
        "tail": by_layer["messages"],
        "tools": by_layer["tools"],
        "total": exact["totalTokens"],
    }
    record.context = {
        "adapter": record.adapter,
        "model": "",
        "prepare": _window_view(window),
        "recall": _recall_view(record.recalled),
        "recallError": record.recall_error,
        "recallSummary": _recall_summary(record.recalled),
        "layers": layers,
        "timings": record.timings,
        "input": exact,
    }


class DeltaBatch:
    """Streams a reply's text to ``chat.delta`` in batches (issue 10 item 5): the pieces
    gathered since the last frame go out once MEMORY_CHAT_FLUSH_MS milliseconds have
    passed since it or MEMORY_CHAT_FLUSH_CHARS characters are waiting, and whatever is
    left when the block ends (also on an error). One frame a word cost every open tab
    a message per word. A ``silent`` batch (a transient send) sends nothing."""

    def __init__(self, *, thread_id: Any, turn_id: int | None, silent: bool = False) -> None:
        self.thread_id, self.turn_id, self.silent = thread_id, turn_id, silent
        self.waiting: list[str] = []
        self.size = 0
        self.last = time.perf_counter()
        self.frames = 0

    def add(self, text: str) -> None:
        """Queue ``text``; send the batch when it is due."""
        self.waiting.append(text)
        self.size += len(text)
        due = (time.perf_counter() - self.last) * 1000 >= settings.MEMORY_CHAT_FLUSH_MS
        if due or self.size >= settings.MEMORY_CHAT_FLUSH_CHARS:
            self.flush()

    def flush(self) -> None:
        """Send what is waiting as one ``chat.delta`` ``{"turnId", "text"}``."""
        if self.waiting and not self.silent:
            text = "".join(self.waiting)
            events.chat_stream(self.thread_id, "chat.delta", {"turnId": self.turn_id, "text": text})
            self.frames += 1
        self.waiting, self.size, self.last = [], 0, time.perf_counter()

    def __enter__(self) -> DeltaBatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush()


def _stream_round(
    record: TurnRecord, start: float, tools: list[ToolSpec], added: list[dict[str, Any]]
) -> list[ToolCall]:
    """One model call: stream its text to ``chat.delta``, add its usage, record the call
    for the X-ray (memoryapp.xray's ``calls`` entry; ``added`` are the entries of the
    messages the loop added since the call before), return the tool calls it asked for.
    The entry is recorded before the stream, so a call that fails is in it too."""
    calls: list[ToolCall] = []
    turn_id = None if record.transient else record.stored_turn.pk
    batch = DeltaBatch(thread_id=record.thread.pk, turn_id=turn_id, silent=record.transient)
    call_start = time.perf_counter()
    entry = _call_entry(record, tools, added)
    record.calls.append(entry)
    if len(record.calls) > 1:  # a tool loop: every call is kept (also when this one fails)
        record.context["calls"] = record.calls
    stream = llm.get_model().reply(
        system_instruction=record.instruction, messages=record.model_input, tools=tools or None
    )
    record.rounds += 1
    text: list[str] = []
    try:
        with batch:
            for chunk in stream:
                record.model_name = chunk.model or record.model_name
                calls.extend(chunk.tool_calls)
                if chunk.text:
                    if not record.pieces:
                        record.timings["firstTextMs"] = _ms(start)
                    record.pieces.append(chunk.text)
                    text.append(chunk.text)
                    batch.add(chunk.text)
                if chunk.done and chunk.usage is not None:
                    entry["usage"] = {"inputTokens": chunk.usage.input_tokens, "outputTokens": chunk.usage.output_tokens}
                _add_usage(record, chunk)
    finally:
        entry["ms"] = _ms(call_start)
        entry["toolCalls"] = [{"name": c.name, "arguments": c.arguments} for c in calls]
        entry["text"] = _cut("".join(text)) if calls else ""
    return calls


def _call_entry(record: TurnRecord, tools: list[ToolSpec], added: list[dict[str, Any]]) -> dict[str, Any]:
    """The X-ray's entry of the model call about to be made (memoryapp.xray ``calls``)."""
    first = record.context["input"]
    before = sum(m["tokens"] for c in record.calls for m in c["added"])
    return {
        "call": len(record.calls) + 1,
        "totalTokens": input_tokens(system_instruction=record.instruction, messages=record.model_input, tools=tools),
        "layers": xray.call_layers(
            first["layers"], added_tokens=before + sum(m["tokens"] for m in added), tools=tools
        ),
        "added": added,
        "ms": 0,
        "usage": None,
        "toolCalls": [],
        "text": "",
    }


def _add_usage(record: TurnRecord, chunk: ReplyChunk) -> None:
    if chunk.done and chunk.usage is not None:
        spent = record.model_usage or Usage()
        record.model_usage = Usage(
            input_tokens=spent.input_tokens + chunk.usage.input_tokens,
            output_tokens=spent.output_tokens + chunk.usage.output_tokens,
        )


def _tool_loop(record: TurnRecord, start: float) -> None:
    """Call the model, and while it asks for memory tools (an agent with memory; spec
    004), run and record each call, hand the results back and call it again, at most
    MEMORY_AGENT_MAX_TOOL_ROUNDS rounds. Past the bound the turn stops with what the
    model said and a line saying it was stopped."""
    tools = record.tools
    views: list[dict[str, Any]] = []
    added: list[dict[str, Any]] = []
    stopped = False
    for round_number in range(agent_turn.max_rounds() + 1):
        calls = _stream_round(record, start, tools, added)
        added = []
        if not calls or not tools:
            break
        if round_number == agent_turn.max_rounds():
            stopped = True
            note = ("\n\n" if record.reply_text else "") + (
                f"[stopped: the model asked for more memory tool calls after {round_number} rounds]"
            )
            record.pieces.append(note)
            events.chat_stream(record.thread.pk, "chat.delta", {"turnId": record.stored_turn.pk, "text": note})
            break
        for call in calls:
            # Not inside a transaction: a call may compact the thread, a model call.
            # A deleted thread raises ThreadNotFound (404), as in every step.
            try:
                ran = agent_turn.run_call(thread=record.thread, call=call, prices=record.prices)
            except NoMemoryAgent:  # the agent was redefined without memory meanwhile
                tools = []
                break
            record.model_input.extend(ran.messages)
            record.lines.extend(ran.lines)
            views.append(ran.view)
            added.extend(xray.call_entries(ran.recorded))
    if tools:
        record.context["toolCalls"] = views
        record.context["toolLoopStopped"] = stopped


def step_call_model(record: TurnRecord) -> None:
    """Stream the reply outside every transaction, each text piece to ``chat.delta``
    (with an agent's memory tools, the tool loop of _tool_loop). On failure (or an empty
    reply) the Turn records the error, ``chat.error`` is sent and ChatModelFailed is
    raised; the user message (and any tool call made) stays stored."""
    start = time.perf_counter()
    try:
        _tool_loop(record, start)
        if not record.reply_text.strip():
            raise ModelError("The model returned an empty reply", kind="bad_response")
    except ModelError as error:
        record.timings["modelMs"] = _ms(start)
        _record_failure(record, error)
    record.timings["modelMs"] = _ms(start)
    record.context["model"] = record.model_name


def _record_failure(record: TurnRecord, error: ModelError) -> None:
    if record.transient:  # nothing was stored, nothing is recorded
        raise ModelCallFailed(str(error), kind=error.kind) from error
    turn = record.stored_turn
    message = f"{error.kind}: {error}"[:2000]
    record.context["model"] = record.model_name
    record.timings["totalMs"] = _ms(record.started)
    turn.context, turn.error = record.context, message
    with _needs_thread(record):
        turn.save(update_fields=["context", "error"])
        UsageLine.objects.bulk_create(_with_turn(record.lines, turn))
    events.chat_stream(record.thread.pk, "chat.error", {"turnId": turn.pk, "error": message})
    assert record.user_outcome is not None
    raise ChatModelFailed(
        str(error),
        kind=error.kind,
        user_message=user_message_dict(record.user_outcome.message),
        turn_id=turn.pk,
    ) from error


def step_store_reply(record: TurnRecord) -> None:
    """Append the assistant message with its tokens (the provider's, or counted with
    memoryapp.tokens when it gave none), model and latency."""
    if record.model_usage is None:
        record.usage_estimated = True
        record.model_usage = Usage(
            input_tokens=input_tokens(
                system_instruction=record.instruction, messages=record.model_input, tools=record.tools
            ),
            output_tokens=count_tokens(record.reply_text),
        )
    spent = record.model_usage
    record.reply_outcome = compaction.message_append_compacting(
        thread=record.thread.pk,
        project=record.thread.project,
        role="assistant",
        content=record.reply_text,
        tokens={
            "input": spent.input_tokens,
            "output": spent.output_tokens,
            "total": spent.input_tokens + spent.output_tokens,
        },
        model=record.model_name or None,
        latency_ms=record.timings["modelMs"],
    )
    _compaction_lines(record, record.reply_outcome)


_SOURCE_NOTES = {
    "estimated": " (estimated: the model reported no token counts)",
    "model": " (tokens reported by the model)",
    "counted": "",
}


def _usage_source(record: TurnRecord) -> str:
    """Where the turn's token usage comes from: ``"estimated"`` (the provider gave none;
    counted with memoryapp.llm.input_tokens), ``"model"`` (the model's usage metadata, its
    own tokenizer: a different measure from the X-ray's count) or ``"counted"`` (the
    adapter counts with memoryapp.llm.input_tokens, as the X-ray does)."""
    if record.usage_estimated:
        return "estimated"
    provider = llm.PROVIDERS.get(record.adapter)
    return "model" if provider is not None and provider.own_token_counts else "counted"


def step_record_cost(record: TurnRecord) -> None:
    """Save the turn's UsageLines (model input and output, compaction runs, recall's
    synthesis) and its context view."""
    spent = record.model_usage
    assert spent is not None and record.reply_outcome is not None
    source = _usage_source(record)
    detail = (record.model_name or record.adapter) + _SOURCE_NOTES[source]
    record.context["usage"] = {
        "inputTokens": spent.input_tokens, "outputTokens": spent.output_tokens,
        "source": source, "modelCalls": record.rounds,
    }
    lines = usage.model_lines(
        record.prices, tokens_in=spent.input_tokens, tokens_out=spent.output_tokens, detail=detail
    )
    recalled = record.recalled
    if recalled and recalled["synthesis"] is not None:
        lines.append(
            usage.synthesis_line(
                record.prices,
                query=record.content,
                context=recalled["context"],
                synthesis=recalled["synthesis"],
            )
        )
    turn = record.stored_turn
    turn.assistant_message = record.reply_outcome.message
    record.timings["totalMs"] = _ms(record.started)
    turn.context = record.context
    with _needs_thread(record):
        turn.save(update_fields=["assistant_message", "context"])
        UsageLine.objects.bulk_create(_with_turn([*lines[:2], *record.lines, *lines[2:]], turn))


def _with_turn(lines: list[UsageLine], turn: Turn) -> list[UsageLine]:
    for line in lines:
        line.turn = turn
    return lines


# The steps of a turn, in order, with the timing key each adds its milliseconds to.
TURN_STEPS: list[tuple[Callable[[TurnRecord], None], str | None]] = [
    (step_append, "appendMs"),
    (step_prepare, "prepareMs"),
    (step_recall, "recallMs"),
    (step_build_input, None),
    (step_call_model, None),  # sets modelMs and firstTextMs itself
    (step_store_reply, "storeMs"),
    (step_record_cost, "storeMs"),
]


# A transient send (spec 004): the thread's context and the model, nothing stored.
TRANSIENT_STEPS: list[tuple[Callable[[TurnRecord], None], str | None]] = [
    (step_prepare, "prepareMs"),
    (step_recall, "recallMs"),
    (step_build_input, None),
    (step_call_model, None),
]


def _prepare_summary(record: TurnRecord) -> dict[str, Any]:
    window = record.window
    assert window is not None, "the prepare step runs first"
    return {
        "messageCount": window.message_count,
        "truncated": window.truncated,
        "compacted": window.compacted,
    }


def turn_body(record: TurnRecord) -> dict[str, Any]:
    """The 201 body of spec 002 (without ``recall``) for a finished ``record``."""
    assert record.user_outcome is not None and record.reply_outcome is not None
    return {
        "userMessage": user_message_dict(record.user_outcome.message),
        "assistantMessage": assistant_message_dict(record.reply_outcome.message),
        "compacted": record.user_outcome.compacted or record.reply_outcome.compacted,
        "prepare": _prepare_summary(record),
        "recallSummary": _recall_summary(record.recalled),
        "turnId": record.stored_turn.pk,
    }


def transient_body(record: TurnRecord) -> dict[str, Any]:
    """The 200 body of a transient send (without ``recall``): ``{"transient": true,
    "assistantMessage": {"role": "assistant", "content", "model"}, "prepare":
    {"messageCount", "truncated", "compacted"}, "recallSummary": {...}, "usage":
    {"inputTokens", "outputTokens"} | null}``. No ids or sequence numbers: nothing was
    stored. ``usage`` is the provider's token counts (null when it gave none)."""
    spent = record.model_usage
    return {
        "transient": True,
        "assistantMessage": {
            "role": "assistant", "content": record.reply_text, "model": record.model_name or None,
        },
        "prepare": _prepare_summary(record),
        "recallSummary": _recall_summary(record.recalled),
        "usage": None
        if spent is None
        else {"inputTokens": spent.input_tokens, "outputTokens": spent.output_tokens},
    }


def chat_turn(
    *,
    thread: Thread,
    user: Any,
    content: str,
    system_prompt: str = "",
    message_limit: int | None = None,
    verbose: bool = False,
    transient: bool = False,
) -> dict[str, Any]:
    """Run one playground chat turn on ``thread`` (TURN_STEPS) and return the 201 body
    of spec 002.

    Body: ``{"userMessage", "assistantMessage", "compacted", "prepare": {"messageCount",
    "truncated", "compacted"}, "recallSummary": {"episodeCount", "factCount",
    "hasContext", "hasSynthesis"}, "turnId"}`` plus ``"recall"`` (the full recall result,
    or None when recall failed) only when ``verbose``. ``compacted`` is true when either
    insert (user or assistant) tripped a compaction run that committed. Streams
    ``chat.delta`` ``{"turnId", "text"}`` per piece of the reply, then ``chat.done`` (the
    body without ``recall``), through memoryapp.events.

    ``message_limit`` None (the client sent none) is prepare's default window: the
    newest 20 messages of an ordinary thread, and on an agent's thread the agent's whole
    window (its checkpoint and every message since; spec 004), as POST .../prepare
    without messageLimit.

    ``transient``: TRANSIENT_STEPS instead (no tools, nothing stored, no event); the
    body is transient_body's (plus ``recall`` when ``verbose``), and a failed model call
    raises a plain ModelCallFailed (no userMessage, no turnId).

    Raises ChatModelFailed (a ModelCallFailed) when the model call fails, and
    ThreadNotFound when the thread is deleted during any step.
    """
    record = TurnRecord(
        thread=thread,
        user=user,
        content=content,
        system_prompt=system_prompt,
        message_limit=message_limit,
        transient=transient,
        adapter=llm.adapter_name(),
    )
    for step, timing in TRANSIENT_STEPS if transient else TURN_STEPS:
        start = time.perf_counter()
        step(record)
        if timing is not None:
            record.timings[timing] = record.timings.get(timing, 0) + _ms(start)
    if transient:
        body = transient_body(record)
    else:
        body = turn_body(record)
        events.chat_stream(thread.pk, "chat.done", dict(body))
    if verbose:
        body["recall"] = record.recalled
    return body

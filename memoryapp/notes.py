"""Memory notes: the three tools, their budgets, the store cap, the context block (spec 004).

The rules (spec 004 "The tools", "Limits", DESIGN.md section 6 item 11):

- ``open_memory({name})`` reads a note and marks it open. Unknown name: an error listing
  the names that exist. Already open: reported as such (not an error). Opening past the
  agent's ``maxOpenTokens``: an error naming the open notes to close first; a note over
  it on its own (the budget was lowered after it was written) is an error saying so,
  its size and the budget, and that only raising maxOpenTokens lets it be opened.
- ``close_memory({name, description?, content?})`` writes a note and closes it: a new
  name needs both description and content; an open note is updated with the fields
  given (the others kept); a closed note is an error (open it first). Content over
  ``maxOpenTokens`` could never be opened again and is refused, also when it is an
  open note's kept content (the budget was lowered while it was open).
- ``delete_memory({name})`` removes an open note for good; a closed one is an error
  (nothing is deleted unseen, also when it is too large to open: docs/decisions.md).
- The store of one thread is capped at MEMORY_NOTES_STORE_CAP_BYTES (1 MB) of UTF-8 bytes
  of names, descriptions and contents; a refusal states the actual numbers.

A tool error is an answer for the model (``is_error``), never an exception. Every call
takes the thread's row lock first (select_for_update; SQLite's IMMEDIATE transaction),
so concurrent calls on one store run one after another: no lost update, and the cap is
checked against the store as it is at that moment.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from memoryapp import working
from memoryapp.errors import DuplicateCallId, NoMemoryAgent, ThreadNotFound
from memoryapp.llm.port import ToolSpec
from memoryapp.models import Agent, MemoryNote, MemoryNoteVersion, Message, Thread
from memoryapp.timefmt import iso_ms
from memoryapp.tokens import count_tokens
from memoryapp.validation import json_path_text, json_problem_at, storable_problem

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
NAME_RULE = "1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit"
DESCRIPTION_MAX_CHARS = 300

OPEN_MEMORY = "open_memory"
CLOSE_MEMORY = "close_memory"
DELETE_MEMORY = "delete_memory"

_NAME_PARAM = {
    "type": "string",
    "description": "The memory's short handle, e.g. quest (letters, digits, _ - .).",
}

#: The three tools as function declarations (JSON Schema parameters: valid for Gemini's
#: ``parameters_json_schema`` and OpenAI's ``tools[].function.parameters``).
TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name=OPEN_MEMORY,
        description=(
            "Read one of your memories and keep it open. The result is its full content. "
            "Open memories are shown in full at the head of your context and kept current "
            "when older conversation is summarized; closed ones are listed by description "
            "only. Opening fails if it would take your open memories over their token "
            "budget: close one first."
        ),
        parameters={
            "type": "object",
            "properties": {"name": _NAME_PARAM},
            "required": ["name"],
        },
    ),
    ToolSpec(
        name=CLOSE_MEMORY,
        description=(
            "Write a memory and close it; the only way anything is saved. A new name "
            "creates the memory and needs both description and content. A memory you have "
            "open is updated with the fields you pass (the others are kept). A closed "
            "memory cannot be written: open it first."
        ),
        parameters={
            "type": "object",
            "properties": {
                "name": _NAME_PARAM,
                "description": {
                    "type": "string",
                    "description": "One line: what the memory holds and when to open it.",
                },
                "content": {
                    "type": "string",
                    "description": "The full body of the memory (replaces the old body).",
                },
            },
            "required": ["name"],
        },
    ),
    ToolSpec(
        name=DELETE_MEMORY,
        description=(
            "Delete one of your memories for good. It must be open (open_memory first), so "
            "nothing is destroyed unseen."
        ),
        parameters={
            "type": "object",
            "properties": {"name": _NAME_PARAM},
            "required": ["name"],
        },
    ),
)
TOOL_NAMES = tuple(t.name for t in TOOL_SPECS)


def tool_to_dict(spec: ToolSpec) -> dict[str, Any]:
    """``{"name", "description", "parameters"}`` as GET /agents/{name}/tools lists it."""
    return {"name": spec.name, "description": spec.description, "parameters": spec.parameters}


def note_bytes(name: str, description: str, content: str) -> int:
    """UTF-8 bytes a note takes in the store (name + description + content)."""
    return len(name.encode("utf-8")) + len(description.encode("utf-8")) + len(content.encode("utf-8"))


def store_cap_bytes() -> int:
    """The per-thread store cap in bytes (MEMORY_NOTES_STORE_CAP_BYTES, 1 MB by default)."""
    return int(settings.MEMORY_NOTES_STORE_CAP_BYTES)


def store_bytes(thread_id: uuid.UUID) -> int:
    """The thread's store size now, in UTF-8 bytes."""
    return int(MemoryNote.objects.filter(thread_id=thread_id).aggregate(s=Sum("bytes"))["s"] or 0)


def _open_tokens(thread_id: uuid.UUID) -> int:
    agg = MemoryNote.objects.filter(thread_id=thread_id, is_open=True).aggregate(s=Sum("tokens"))
    return int(agg["s"] or 0)


def _fmt(n: int) -> str:
    return f"{n:,}"


def _tokens(n: int) -> str:
    """``n`` tokens as a tool's message says it: "1 token", "1,234 tokens"."""
    return f"{_fmt(n)} {'token' if n == 1 else 'tokens'}"


# --- the tools ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolOutcome:
    """One tool call's answer: ``result`` (text for the model), ``is_error``, and the
    note it touched (None for errors and deletes). ``changed`` says whether the store
    changed (for versions and live updates)."""

    result: str
    is_error: bool
    note: MemoryNote | None = None
    changed: str = ""  # "", "created", "updated", "opened", "closed", "deleted"


def _error(text: str) -> ToolOutcome:
    return ToolOutcome(result=text, is_error=True)


def _name_error(arguments: dict[str, Any]) -> str | None:
    name = arguments.get("name")
    if not isinstance(name, str):
        return "Error: pass the memory's name as a string in the argument 'name'."
    if not name.strip():
        return "Error: 'name' must not be empty; pass the memory's name."
    if not NAME_PATTERN.match(name):
        return f"Error: {name!r} is not a valid memory name; a name is {NAME_RULE}."
    return None


def _existing_names(thread_id: uuid.UUID) -> str:
    names = list(MemoryNote.objects.filter(thread_id=thread_id).values_list("name", flat=True))
    return ", ".join(names) if names else "(none yet)"


def _unknown(thread_id: uuid.UUID, name: str, *, then: str) -> ToolOutcome:
    return _error(
        f"Error: there is no memory named '{name}'. Memories that exist: "
        f"{_existing_names(thread_id)}. {then}"
    )


def _open(thread: Thread, agent: Agent, name: str) -> ToolOutcome:
    note = MemoryNote.objects.filter(thread=thread, name=name).first()
    if note is None:
        return _unknown(
            thread.pk, name, then="To create it, call close_memory with a description and content."
        )
    if note.is_open:
        return ToolOutcome(
            result=f"Memory '{name}' is already open. Its content:\n\n{note.content}", is_error=False, note=note
        )
    budget = int(agent.max_open_tokens or 0)
    if note.tokens > budget:
        return _error(
            f"Error: memory '{name}' is {_tokens(note.tokens)}, more than maxOpenTokens "
            f"{_fmt(budget)} on its own, so it cannot be opened: closing other memories would "
            f"not make room. {_stranded(note, budget)}"
        )
    open_notes = list(
        MemoryNote.objects.filter(thread=thread, is_open=True).values_list("name", "tokens")
    )
    held = sum(t for _, t in open_notes)
    if held + note.tokens > budget:  # so something is open: the note alone fits
        listing = ", ".join(f"{n} ({_tokens(t)})" for n, t in open_notes)
        return _error(
            f"Error: opening '{name}' ({_tokens(note.tokens)}) would bring your open "
            f"memories to {_tokens(held + note.tokens)}, over maxOpenTokens "
            f"{_fmt(budget)}. Close one of these first with close_memory: {listing}."
        )
    note.is_open = True
    note.save(update_fields=["is_open"])
    return ToolOutcome(result=note.content, is_error=False, note=note, changed="opened")


def _stranded(note: MemoryNote, budget: int) -> str:
    """What becomes of a closed note larger than maxOpenTokens on its own (the budget was
    lowered after it was written): it is kept, and since nothing is written or deleted
    unseen, it waits for the budget to be raised (docs/decisions.md, "Agents and memory
    notes")."""
    return (
        f"It is kept as it is, still listed by its description; it can be opened (and then "
        f"written or deleted) only once maxOpenTokens, set where the agent is defined, is "
        f"raised to at least {_fmt(note.tokens)}."
    )


def _write_error(arguments: dict[str, Any], *, exists: bool) -> str | None:
    """What is wrong with close_memory's description and content, or None; ``exists``:
    whether the memory exists already (an empty field's hint differs)."""
    for field in ("description", "content"):
        value = arguments.get(field)
        if value is None:
            continue
        if not isinstance(value, str):
            return f"Error: '{field}' must be a string."
        if "\x00" in value:
            return f"Error: '{field}' must not contain NUL characters."
        if not value.strip():
            hint = (
                "leave it out to keep the current one"
                if exists
                else "a new memory needs a description and content that say something"
            )
            return f"Error: '{field}' must not be empty; {hint}."
    description = arguments.get("description")
    if isinstance(description, str):
        if "\n" in description.strip():
            return "Error: 'description' must be one line; put details in the content."
        if len(description) > DESCRIPTION_MAX_CHARS:
            return (
                f"Error: 'description' is {len(description)} characters; keep it to one line "
                f"of at most {DESCRIPTION_MAX_CHARS}."
            )
    return None


def _content_error(agent: Agent, content: str) -> str | None:
    tokens = count_tokens(content)
    budget = int(agent.max_open_tokens or 0)
    if tokens > budget:
        return (
            f"Error: the content is {_tokens(tokens)}, over maxOpenTokens "
            f"{_fmt(budget)}, so it could never be opened again. Shorten it, or split it "
            "into several memories."
        )
    return None


def _cap_error(thread: Thread, *, old_bytes: int, new_bytes: int) -> str | None:
    now = store_bytes(thread.pk)
    after = now - old_bytes + new_bytes
    cap = store_cap_bytes()
    if after > cap:
        return (
            f"Error: refused, the memory store would be {_fmt(after)} bytes, over its cap "
            f"of {_fmt(cap)} bytes (it holds {_fmt(now)} bytes now; this memory would take "
            f"{_fmt(new_bytes)}). Write less, or delete a memory you no longer need with "
            "delete_memory (open it first)."
        )
    return None


def _close(thread: Thread, agent: Agent, name: str, arguments: dict[str, Any]) -> ToolOutcome:
    note = MemoryNote.objects.filter(thread=thread, name=name).first()
    problem = _write_error(arguments, exists=note is not None)
    if problem:
        return _error(problem)
    description: str | None = arguments.get("description")
    content: str | None = arguments.get("content")
    budget = int(agent.max_open_tokens or 0)
    if note is not None and not note.is_open:
        if note.tokens > budget:
            return _error(
                f"Error: memory '{name}' is closed, and a closed memory cannot be written unseen; "
                f"at {_tokens(note.tokens)} it is over maxOpenTokens {_fmt(budget)} on its own, "
                f"so it cannot be opened either. {_stranded(note, budget)}"
            )
        return _error(
            f"Error: memory '{name}' is closed, and a closed memory cannot be written unseen. "
            f"Call open_memory with name '{name}' first, then close_memory to save it."
        )
    if note is None and (description is None or content is None):
        missing = " and ".join(f for f, v in (("description", description), ("content", content)) if v is None)
        return _error(
            f"Error: there is no memory named '{name}' yet; creating one needs both description "
            f"and content (missing: {missing}). Memories that exist: {_existing_names(thread.pk)}."
        )
    new_description = description if description is not None else (note.description if note else "")
    new_content = content if content is not None else (note.content if note else "")
    problem = _content_error(agent, new_content) if content is not None else None
    if note is not None and content is None and note.tokens > budget:
        # Open when the budget was lowered under it: closed as it is, it could never be
        # opened again (nor deleted, which needs it open).
        problem = (
            f"Error: memory '{name}' is {_tokens(note.tokens)}, over maxOpenTokens "
            f"{_fmt(budget)}, so once closed it could never be opened again. Close it with a "
            f"shorter content (at most {_tokens(budget)}), or delete it with delete_memory "
            "while it is open."
        )
    new_bytes = note_bytes(name, new_description, new_content)
    problem = problem or _cap_error(thread, old_bytes=note.bytes if note else 0, new_bytes=new_bytes)
    if problem:
        return _error(problem)
    now = timezone.now()
    if note is None:
        note = MemoryNote.objects.create(
            thread=thread, name=name, description=new_description, content=new_content,
            is_open=False, tokens=count_tokens(new_content), bytes=new_bytes,
            created=now, updated_at=now,
        )
        return ToolOutcome(result=f"Saved new memory '{name}' (closed).", is_error=False, note=note, changed="created")
    written = description is not None or content is not None
    note.is_open = False
    if written:
        note.description, note.content = new_description, new_content
        note.tokens, note.bytes = count_tokens(new_content), new_bytes
        note.updated_at, note.version = now, note.version + 1
    note.save()
    kept = " and ".join(f for f, v in (("description", description), ("content", content)) if v is None)
    text = f"Saved memory '{name}' and closed it." if written else f"Closed memory '{name}' unchanged."
    if written and kept:
        text += f" Its {kept} {'was' if ' and ' not in kept else 'were'} kept."
    return ToolOutcome(result=text, is_error=False, note=note, changed="updated" if written else "closed")


def _delete(thread: Thread, agent: Agent, name: str) -> ToolOutcome:
    note = MemoryNote.objects.filter(thread=thread, name=name).first()
    if note is None:
        return _unknown(thread.pk, name, then="Nothing was deleted.")
    if not note.is_open:
        budget = int(agent.max_open_tokens or 0)
        if note.tokens > budget:
            return _error(
                f"Error: memory '{name}' is closed; nothing is deleted unseen, and at "
                f"{_tokens(note.tokens)} it is over maxOpenTokens {_fmt(budget)} on its own, "
                f"so it cannot be opened. {_stranded(note, budget)}"
            )
        return _error(
            f"Error: memory '{name}' is closed; nothing is deleted unseen. Call open_memory "
            f"with name '{name}' first, then delete_memory."
        )
    note.delete()
    return ToolOutcome(result=f"Deleted memory '{name}'.", is_error=False, note=note, changed="deleted")


def _dispatch(thread: Thread, agent: Agent, name: str, arguments: dict[str, Any]) -> ToolOutcome:
    if name not in TOOL_NAMES:
        return _error(f"Error: there is no tool named '{name}'. Memory tools: {', '.join(TOOL_NAMES)}.")
    problem = _name_error(arguments)
    if problem:
        return _error(problem)
    note_name = str(arguments["name"])
    if name == OPEN_MEMORY:
        return _open(thread, agent, note_name)
    if name == CLOSE_MEMORY:
        return _close(thread, agent, note_name, arguments)
    return _delete(thread, agent, note_name)


# --- recording ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCallRecord:
    """A tool call as run and recorded: its outcome and the two history rows (the
    assistant message carrying the call, the ``tool`` message carrying the result)."""

    call_id: str
    name: str
    arguments: dict[str, Any]  # as recorded (cut when the call was too large to store)
    outcome: ToolOutcome
    call_message: Message
    result_message: Message

    def to_dict(self) -> dict[str, Any]:
        """The 200 body of POST .../tools: ``{"result", "isError", "name", "callId",
        "callSequence", "resultSequence", "note"}`` (note: the note's resource or None)."""
        note = self.outcome.note
        return {
            "result": self.result_message.content,
            "isError": self.outcome.is_error,
            "name": self.name,
            "callId": self.call_id,
            "callSequence": self.call_message.sequence_number,
            "resultSequence": self.result_message.sequence_number,
            "note": note_to_dict(note) if note is not None and self.outcome.changed != "deleted" else None,
        }


def call_text(name: str, arguments: dict[str, Any]) -> str:
    """The readable text of a recorded call: ``open_memory({"name": "quest"})``."""
    return f"{name}({json.dumps(arguments, ensure_ascii=False)})"


# What a string argument keeps of itself in the record of a call too large to store.
RECORD_PREVIEW_CHARS = 200


def _utf8_bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _message_limit() -> int:
    """The limit of one stored message's content: an append's (MEMORY_MAX_CONTENT_BYTES)."""
    return int(settings.MEMORY_MAX_CONTENT_BYTES)


def _cut_strings(value: Any) -> Any:
    if isinstance(value, str) and len(value) > RECORD_PREVIEW_CHARS:
        return f"{value[:RECORD_PREVIEW_CHARS]}… [{_fmt(_utf8_bytes(value))} bytes, cut from this record]"
    if isinstance(value, dict):
        return {k: _cut_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut_strings(v) for v in value]
    return value


def _recordable(name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    """The arguments to record for a call, and the size of its full record when that is
    over the message limit (else None). A call too large to record keeps the first
    RECORD_PREVIEW_CHARS characters of each string (the rest said in bytes), or no
    arguments at all when even that does not fit."""
    size = _utf8_bytes(call_text(name, arguments))
    if size <= _message_limit():
        return arguments, None
    cut = _cut_strings(arguments)
    if _utf8_bytes(call_text(name, cut)) > _message_limit():
        cut = {}
    return cut, size


class _Undo(Exception):
    """Rolls back a tool's writes whose call cannot be recorded (see _dispatch_recorded)."""


def _dispatch_recorded(
    thread: Thread, agent: Agent, name: str, arguments: dict[str, Any], record_bytes: int | None
) -> ToolOutcome:
    """_dispatch, for a call whose record is ``record_bytes`` long when over the message
    limit: its own error when it has one (more useful to the model), else a refusal with
    the numbers and whatever it wrote rolled back, so a call is never carried out unless
    the history can hold it as it was made."""
    if record_bytes is None:
        return _dispatch(thread, agent, name, arguments)
    try:
        with transaction.atomic():  # a savepoint inside tool_run's transaction
            outcome = _dispatch(thread, agent, name, arguments)
            if outcome.is_error:
                return outcome
            raise _Undo()
    except _Undo:
        return _error(
            f"Error: this call is {_fmt(record_bytes)} bytes as recorded in your history, over "
            f"the limit of {_fmt(_message_limit())} bytes for one message, so nothing was done. "
            "Write less per call: split the content into several memories."
        )


def _result_text(text: str) -> str:
    """A result within the message limit: cut, saying so, in the (misconfigured) case of a
    note larger than one message (MEMORY_NOTES_STORE_CAP_BYTES over MEMORY_MAX_CONTENT_BYTES)."""
    size, limit = _utf8_bytes(text), _message_limit()
    if size <= limit:
        return text
    tail = f"\n\n[Cut: this result is {_fmt(size)} bytes, over the limit of {_fmt(limit)} bytes for one message.]"
    room = limit - _utf8_bytes(tail)
    return text.encode("utf-8")[:room].decode("utf-8", errors="ignore") + tail


def _version(thread: Thread, outcome: ToolOutcome, message: Message) -> None:
    note = outcome.note
    if note is None or outcome.changed not in ("created", "updated", "deleted"):
        return
    MemoryNoteVersion.objects.create(
        thread=thread,
        note=None if outcome.changed == "deleted" else note,
        name=note.name,
        version=note.version,
        description=note.description,
        content=note.content,
        author=MemoryNoteVersion.Author.AGENT,
        action=outcome.changed,
        message=message,
    )


def tool_run(
    *,
    thread_id: uuid.UUID,
    name: str,
    arguments: dict[str, Any],
    call_id: str | None = None,
    turn_metadata: dict[str, Any] | None = None,
    unique_call_id: bool = False,
) -> ToolCallRecord:
    """Run one memory tool on the thread's store and record it in the thread's history.

    In one transaction under the thread's row lock: run the tool (spec 004 "The tools"),
    append an ``assistant`` message carrying the call (``metadata.toolCall = {"id",
    "name", "arguments"}``) and a ``tool`` message carrying the result
    (``metadata.toolResult = {"id", "name", "isError"}``), and keep a version of a note
    written or deleted. Nothing here starts compaction (the appends' ``compaction_due`` is
    left to the caller). Concurrent calls on one thread serialize on the lock, so the call
    and its result are always adjacent and in the order the calls ran.

    ``arguments`` is the call's JSON object; a tool error (unknown note, budget, cap,
    closed note, bad argument, unknown tool) is a normal outcome with ``is_error``.
    Raises ThreadNotFound if the thread is gone, NoMemoryAgent if it has no agent with
    memory. Does not compact; memoryapp.agents.thread_tool_call does that afterwards.
    With ``unique_call_id`` (a client's call, POST .../tools) a ``call_id`` the thread
    already recorded raises DuplicateCallId, checked under the lock so two concurrent
    repeats never both run.
    """
    call_id = call_id or f"call_{uuid.uuid4().hex[:16]}"
    extra = dict(turn_metadata or {})
    bad = json_problem_at(arguments)
    if bad is not None:
        # A model's call the database could not store (NUL, unpaired surrogate, NaN): an
        # answer for the model naming the argument, recorded without the arguments.
        name, arguments = (name if not storable_problem(name) else "?"), {}
        where = f"the argument '{json_path_text(bad[0])}'" if bad[0] else "the arguments"
        refused: ToolOutcome | None = _error(f"Error: {where} cannot be stored ({bad[1][1]}).")
    else:
        refused = None
    with transaction.atomic():
        thread = (
            Thread.objects.select_for_update(of=("self",)).select_related("agent").filter(pk=thread_id).first()
        )
        if thread is None:
            raise ThreadNotFound()
        agent = thread.agent
        if agent is None or not agent.has_memory:
            raise NoMemoryAgent(agent.name if agent is not None else None)
        if unique_call_id and Message.objects.filter(thread=thread, metadata__toolCall__id=call_id).exists():
            raise DuplicateCallId(call_id)
        recorded, record_bytes = _recordable(name, arguments)
        outcome = refused or _dispatch_recorded(thread, agent, name, arguments, record_bytes)
        call = working.message_append(
            thread=thread,
            role=Message.Role.ASSISTANT,
            content=call_text(name, recorded),
            metadata={**extra, "agentName": agent.name, "toolCall": {"id": call_id, "name": name, "arguments": recorded}},
        ).message
        result = working.message_append(
            thread=thread,
            role=Message.Role.TOOL,
            content=_result_text(outcome.result),
            metadata={**extra, "agentName": agent.name, "toolResult": {"id": call_id, "name": name, "isError": outcome.is_error}},
        ).message
        _version(thread, outcome, call)
    return ToolCallRecord(
        call_id=call_id, name=name, arguments=recorded, outcome=outcome,
        call_message=call, result_message=result,
    )


# --- reading ------------------------------------------------------------------------------


def note_to_dict(note: MemoryNote) -> dict[str, Any]:
    """``{"name", "description", "content", "isOpen", "tokens", "bytes", "updatedAt"}``."""
    return {
        "name": note.name,
        "description": note.description,
        "content": note.content,
        "isOpen": note.is_open,
        "tokens": note.tokens,
        "bytes": note.bytes,
        "updatedAt": iso_ms(note.updated_at),
    }


def notes_view(*, thread: Thread) -> dict[str, Any]:
    """GET .../threads/{threadId}/notes: ``{"notes": [...], "openTokens", "maxOpenTokens",
    "storeBytes", "storeCapBytes", "memoryEnabled"}`` (notes in creation order). An agent
    whose memory was turned off keeps its notes (only the tools go), so they stay readable:
    ``memoryEnabled`` false and ``maxOpenTokens`` null then. Raises NoMemoryAgent for a
    thread without an agent (it can hold no notes)."""
    agent = thread.agent
    if agent is None:
        raise NoMemoryAgent()
    notes = list(MemoryNote.objects.filter(thread=thread).order_by("pk"))
    return {
        "notes": [note_to_dict(n) for n in notes],
        "openTokens": sum(n.tokens for n in notes if n.is_open),
        "maxOpenTokens": agent.max_open_tokens,
        "memoryEnabled": agent.has_memory,
        "storeBytes": sum(n.bytes for n in notes),
        "storeCapBytes": store_cap_bytes(),
    }


def note_versions(*, thread: Thread) -> list[MemoryNoteVersion]:
    """Every version of every note of the thread, oldest first (the Memories surface)."""
    return list(MemoryNoteVersion.objects.filter(thread=thread))


# --- the compactor's write-back -----------------------------------------------------------


def note_write_back(
    *, thread: Thread, agent: Agent, name: str, content: str, read_version: int, checkpoint: Message
) -> str | None:
    """Write the compactor's new ``content`` into the open note ``name`` (spec 004 "Who
    writes what": the compactor rewrites open memories only). Call under the thread's
    row lock. Returns None when written (or unchanged), else why it was refused: the note
    was closed, deleted or written by the agent since the compactor read it, the content
    is over maxOpenTokens, or the store would pass its cap. A refused write-back leaves
    the note exactly as it was."""
    note = MemoryNote.objects.filter(thread=thread, name=name).first()
    if note is None or not note.is_open:
        return f"'{name}' is no longer open"
    if note.version != read_version:
        return f"'{name}' was written by the agent meanwhile"
    if content == note.content:
        return None
    problem = _content_error(agent, content) or _cap_error(
        thread, old_bytes=note.bytes, new_bytes=note_bytes(name, note.description, content)
    )
    if problem:
        return problem.removeprefix("Error: ")
    note.content, note.tokens = content, count_tokens(content)
    note.bytes = note_bytes(name, note.description, content)
    note.version += 1
    note.updated_at = timezone.now()
    note.save()
    MemoryNoteVersion.objects.create(
        thread=thread, note=note, name=name, version=note.version, description=note.description,
        content=content, author=MemoryNoteVersion.Author.COMPACTOR,
        action=MemoryNoteVersion.Action.UPDATED, message=checkpoint,
    )
    return None


# --- the context block --------------------------------------------------------------------

BLOCK_OPENING = (
    "[Context — written by the platform, not said by anyone. "
    "Play continues from the messages after this one.]"
)
BLOCK_CLOSING = "[End of context]"
DROPPED_ONLY = "Earlier messages of this conversation were dropped from the context."


SUMMARY_TITLE = "Summary of earlier conversation"


def _without_title(summary: str) -> str:
    """``summary`` less a first line that only repeats the section's title (a summariser
    that heads its text "Summary of earlier conversation (...):" would say it twice)."""
    first, _, rest = summary.strip().partition("\n")
    if first.lower().startswith(SUMMARY_TITLE.lower()) and first.rstrip().endswith(":"):
        return rest.strip()
    return summary.strip()


def context_block(*, summary: str | None, notes: list[MemoryNote]) -> str:
    """The platform-written block at the head of an agent's context (spec 004 "What the
    agent sees"), exactly in the spec's format: the opening line, then "## Summary of
    earlier conversation", "## Open memories — current as of this point" (each open note
    as ``### name — description`` and its content), "## Closed memories — call
    open_memory to read one" (``- name — description``), then "[End of context]".
    Sections with nothing in them are left out (no summary under sliding-window; no
    notes yet); with none at all the block says the earlier messages were dropped."""
    sections: list[str] = []
    summary = _without_title(summary or "")
    if summary:
        sections.append(f"## {SUMMARY_TITLE}\n\n{summary}")
    opened = [n for n in notes if n.is_open]
    closed = [n for n in notes if not n.is_open]
    if opened:
        body = "\n\n".join(f"### {n.name} — {n.description}\n{n.content}" for n in opened)
        sections.append(f"## Open memories — current as of this point\n\n{body}")
    if closed:
        body = "\n".join(f"- {n.name} — {n.description}" for n in closed)
        sections.append(f"## Closed memories — call open_memory to read one\n\n{body}")
    if not sections:
        sections.append(DROPPED_ONLY)
    return "\n\n".join([BLOCK_OPENING, *sections, BLOCK_CLOSING])

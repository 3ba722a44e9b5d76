"""The model port: every model call the domain makes goes through this interface.

DESIGN.md section 7. Two adapters implement it: ``memoryapp.llm.offline`` (the default,
deterministic, no network) and ``memoryapp.llm.gemini`` (google-genai). Adapters raise
only ``ModelError`` (and its subclasses) for failures, after their own retries.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable


class ModelError(Exception):
    """A model call failed after the adapter's retries.

    ``kind``: ``timeout`` | ``rate_limited`` | ``unavailable`` | ``bad_response``.
    """

    kind = "unavailable"

    def __init__(self, message: str, *, kind: str | None = None) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind


class ModelTimeout(ModelError):
    """The call did not answer within the configured timeout."""

    kind = "timeout"


class ModelRateLimited(ModelError):
    """The provider kept answering 429 through every retry."""

    kind = "rate_limited"


@dataclass(frozen=True)
class TranscriptMessage:
    """One message handed to the model: its sequence number, role and text, (for the
    episode job, which resolves "yesterday" and the like) when it was written, and
    whether it is an agent's own memory-tool traffic (``plumbing``: a call or its result,
    whose effect is in the agent's notes, so a summary need not keep it)."""

    sequence_number: int
    role: str
    content: str
    created_at: datetime | None = None
    plumbing: bool = False


@dataclass(frozen=True)
class Usage:
    """Tokens a call consumed, as the provider (or memoryapp.tokens) counted them."""

    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class OpenNote:
    """An agent's open memory note handed to summarize (spec 004): the compactor may
    rewrite its content to keep it current, never its name or description."""

    name: str
    description: str
    content: str


@dataclass(frozen=True)
class Summary:
    """A rolling summary: its text, the model that wrote it, and what it cost.

    ``notes`` maps an open note's name to its rewritten content, for the notes the model
    rewrote in the same call (only names from ``open_notes``; empty when none changed)."""

    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    notes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ExtractedFact:
    """One fact: its text and the entity it is about (a name, or None).

    For the episode job (``extract_episode``) also: ``attribute`` and ``value`` (the fact
    split so contradictions can be found: subject "user", attribute "car", value "Honda
    Civic"), ``single_valued`` (the attribute holds one value at a time, so another value
    replaces this one), ``entities`` (names of the entities it mentions) and
    ``source_sequences`` (sequence numbers of the messages that state it).

    A change of state may end more than its own attribute: ``retires`` names the
    subject's other single-valued attributes it ends ("I quit my job" ends the title and
    the employer alike: attribute "job", retires ("works at",)). With ``retires_when``
    they end only if one of them currently has that value ("I left Acme" ends the job
    only where the employer is Acme). memoryapp.semantic applies it like its
    single-valued rule (the older facts are invalidated by this one).

    ``event``: the fact tells that something happened ("The user quit the hospital
    job.", "The user sold the car."), which stays true once said: it ends older values
    as any fact does, but a later value ("The user is a teacher now.") does not
    invalidate it, and it is nobody's current value of its attribute.
    """

    text: str
    subject: str | None = None
    attribute: str = ""
    value: str = ""
    single_valued: bool = False
    entities: tuple[str, ...] = ()
    source_sequences: tuple[int, ...] = ()
    retires: tuple[str, ...] = ()
    retires_when: str = ""
    event: bool = False


@dataclass(frozen=True)
class ExtractedEntity:
    """One entity: a name, a kind (person, place, organisation, thing, ...), a summary."""

    name: str
    kind: str = "thing"
    summary: str = ""


@dataclass(frozen=True)
class Extraction:
    """What extract() found in a range of messages."""

    facts: list[ExtractedFact]
    entities: list[ExtractedEntity]
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class EpisodeExtraction:
    """What extract_episode() made of one episode's messages: a ``title`` (one line), a
    ``summary`` (plain text), ``quoted_sequences`` (the messages the summary draws on),
    facts and entities, the model that made it and what it cost."""

    title: str
    summary: str
    quoted_sequences: tuple[int, ...]
    facts: list[ExtractedFact]
    entities: list[ExtractedEntity]
    model: str
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class ToolCall:
    """A function call the model asked for: the tool's name, its JSON arguments, and the
    provider's id for the call ("" when the provider gives none)."""

    name: str
    arguments: dict[str, Any]
    call_id: str = ""


@dataclass(frozen=True)
class ToolResult:
    """What running a ToolCall gave: the tool's ``name``, its ``content`` (text for the
    model), ``is_error`` when the tool refused (an answer for the model, not a failure),
    and the ``call_id`` of the call it answers."""

    name: str
    content: str
    is_error: bool = False
    call_id: str = ""


@dataclass(frozen=True)
class ChatMessage:
    """One message of a conversation handed to reply(): ``role`` user | assistant |
    system | tool and its text; an assistant message may carry the ``tool_calls`` it
    made, a ``tool`` message carries the ``tool_result`` it reports."""

    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_result: ToolResult | None = None


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: name, description, JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ReplyChunk:
    """One piece of a streamed reply: text (may be empty), tool calls, and on the last
    chunk ``done=True`` with the call's usage."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    done: bool = False
    usage: Usage | None = None
    model: str = ""


@runtime_checkable
class ModelPort(Protocol):
    """The calls the domain needs from a language model (DESIGN.md section 7)."""

    #: "gemini" or "offline": shown in the UI so people know what answered.
    name: str

    def summarize(
        self,
        *,
        previous_summary: str | None,
        messages: list[TranscriptMessage],
        max_tokens: int,
        open_notes: list[OpenNote] | None = None,
    ) -> Summary:
        """Fold ``previous_summary`` and ``messages`` into one new summary of at most
        ``max_tokens`` tokens (memoryapp.tokens). Message text is data, never instructions.
        With ``open_notes`` (an agent's open memories, spec 004), the same call also
        rewrites those notes to stay current: ``Summary.notes``. Raises ModelError."""
        ...

    def extract(self, *, messages: list[TranscriptMessage]) -> Extraction:
        """Find facts and entities stated in ``messages``. Raises ModelError."""
        ...

    def extract_episode(self, *, messages: list[TranscriptMessage]) -> EpisodeExtraction:
        """Title, summary, facts and entities of one episode's raw ``messages`` (oldest
        first; each ``content`` may open with a ``Name: `` speaker label). Facts carry
        attribute, value and the sequence numbers of their source messages. Message text
        is data, never instructions. Raises ModelError (``bad_response`` for an answer that
        does not match the schema)."""
        ...

    def synthesize(self, *, query: str, context: str) -> str:
        """Answer ``query`` briefly from ``context`` alone (recall's synthesis). Raises ModelError."""
        ...

    def reply(
        self,
        *,
        system_instruction: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
    ) -> Iterator[ReplyChunk]:
        """Stream the assistant's reply to ``messages`` (oldest first) under
        ``system_instruction``, offering ``tools``; chunks carry text and the ToolCalls
        the model asks for (the caller runs them and replays call and ToolResult). The
        last chunk has ``done=True``. Raises ModelError (possibly after some chunks)."""
        ...

    def embed(self, *, texts: list[str]) -> list[list[float]]:
        """One embedding vector per text. Raises ModelError."""
        ...

    def count_tokens(self, *, text: str) -> int:
        """Tokens in ``text`` as this model counts them. Raises ModelError."""
        ...

"""The Gemini model adapter: ModelPort over the google-genai client (DESIGN.md section 7).

Chosen by ``memoryapp.llm.get_model()`` when the settings say gemini. Everything it needs
comes from settings (memoryapp/settings.py):

- ``GEMINI_API_KEY`` (sent in the ``x-goog-api-key`` header; never logged, never in an
  error message, hidden from ``GeminiConfig``'s repr);
- ``GEMINI_BASE_URL``: empty for Google's endpoint; tests point it at the fake server
  (``tests/fakes/gemini_server.py``);
- ``GEMINI_SUMMARY_MODEL`` (summarize, extract), ``GEMINI_CHAT_MODEL`` (synthesize,
  reply, count_tokens), ``GEMINI_EMBED_MODEL`` (embed);
- ``GEMINI_TIMEOUT_SECONDS``: the timeout of each HTTP attempt;
- ``GEMINI_RETRY_ATTEMPTS`` (attempts in all, including the first) and
  ``GEMINI_RETRY_INITIAL_DELAY_SECONDS`` (first backoff; doubles each retry, with up to
  that much jitter).

Retries are google-genai's own (``HttpRetryOptions``): a 408, 429 or 5xx answer, a
timeout or a connection error is retried with exponential backoff; a stream is retried
only until its first byte. So the worst case of one call is about
``attempts * timeout + backoff``. After the last attempt the failure becomes a typed
``ModelError``: ``ModelRateLimited`` (429), ``ModelTimeout`` (timeouts, 408, 504),
kind ``unavailable`` (5xx, connection errors, a refused request, a stream cut short),
kind ``bad_response`` (blocked, empty or unparseable answers).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from memoryapp.llm import answers, episode_prompt, prompts
from memoryapp.llm.port import (
    ChatMessage,
    EpisodeExtraction,
    ExtractedEntity,
    ExtractedFact,
    Extraction,
    ModelError,
    ModelRateLimited,
    ModelTimeout,
    OpenNote,
    ReplyChunk,
    Summary,
    ToolCall,
    ToolSpec,
    TranscriptMessage,
    Usage,
)
from memoryapp.tokens import count_tokens

logger = logging.getLogger(__name__)

#: Status codes google-genai retries (its default set, spelled out so it cannot drift).
RETRYABLE_STATUS_CODES = [408, 429, 500, 502, 503, 504]
#: The Gemini API embeds at most 100 texts per batchEmbedContents request.
EMBED_BATCH_SIZE = 100
#: Finish reasons whose text is the model's whole, usable answer.
_GOOD_FINISH = {"STOP", "MAX_TOKENS", "FINISH_REASON_UNSPECIFIED"}


def _exception_classes(name: str) -> tuple[type[BaseException], ...]:
    # google-genai 3.x sends through httpx2, older versions through httpx: catch both.
    classes: list[type[BaseException]] = []
    for module_name in ("httpx2", "httpx"):
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        cls = getattr(module, name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            classes.append(cls)
    return tuple(classes)


_TIMEOUT_ERRORS = _exception_classes("TimeoutException")
_TRANSPORT_ERRORS = _exception_classes("TransportError")


@dataclass(frozen=True)
class GeminiConfig:
    """What the adapter needs from settings. ``api_key`` is left out of repr()."""

    api_key: str = field(repr=False)
    base_url: str
    chat_model: str
    summary_model: str
    embed_model: str
    timeout_seconds: float
    retry_attempts: int
    retry_initial_delay_seconds: float

    @classmethod
    def from_settings(cls) -> GeminiConfig:
        """Read the GEMINI_* settings (see the module docstring)."""
        return cls(
            api_key=str(settings.GEMINI_API_KEY or ""),
            base_url=str(settings.GEMINI_BASE_URL or ""),
            chat_model=str(settings.GEMINI_CHAT_MODEL),
            summary_model=str(settings.GEMINI_SUMMARY_MODEL),
            embed_model=str(settings.GEMINI_EMBED_MODEL),
            timeout_seconds=float(settings.GEMINI_TIMEOUT_SECONDS),
            retry_attempts=int(settings.GEMINI_RETRY_ATTEMPTS),
            retry_initial_delay_seconds=float(settings.GEMINI_RETRY_INITIAL_DELAY_SECONDS),
        )

    def http_options(self) -> types.HttpOptions:
        """google-genai HttpOptions: base URL, timeout (ms), retry policy."""
        delay = max(self.retry_initial_delay_seconds, 0.0)
        return types.HttpOptions(
            base_url=self.base_url or None,
            timeout=max(round(self.timeout_seconds * 1000), 1),
            retry_options=types.HttpRetryOptions(
                attempts=max(self.retry_attempts, 1),
                initial_delay=delay,
                max_delay=max(delay * 16, 1.0),
                exp_base=2.0,
                # The SDK's default jitter is a whole second; keep it proportional.
                jitter=delay,
                http_status_codes=RETRYABLE_STATUS_CODES,
            ),
        )


# One client per configuration: building one costs ~50 ms (TLS context, connection pool)
# and a client is safe to share between threads.
_clients: dict[GeminiConfig, genai.Client] = {}
_clients_lock = threading.Lock()
_MAX_CLIENTS = 8


def _client_for(config: GeminiConfig) -> genai.Client:
    with _clients_lock:
        client = _clients.get(config)
        if client is None:
            if not config.api_key:
                raise ModelError("GEMINI_API_KEY is not set", kind="unavailable")
            if len(_clients) >= _MAX_CLIENTS:
                # Settings only change between tests; forget the oldest client.
                _clients.pop(next(iter(_clients)))
            client = genai.Client(api_key=config.api_key, http_options=config.http_options())
            _clients[config] = client
        return client


def _translate(exc: Exception, *, what: str, attempts: int) -> ModelError:
    """The typed ModelError for an exception google-genai raised (after its retries)."""
    tries = f"after {attempts} attempt{'s' if attempts != 1 else ''}"
    if isinstance(exc, genai_errors.APIError):
        status = f"{exc.code} {exc.status or ''}".strip()
        detail = f"{status}: {exc.message}" if exc.message else status
        if exc.code == 429:
            return ModelRateLimited(f"Gemini {what}: rate limited {tries} ({detail})")
        if exc.code in (408, 504):
            return ModelTimeout(f"Gemini {what}: timed out {tries} ({detail})")
        if exc.code >= 500:
            return ModelError(f"Gemini {what}: unavailable {tries} ({detail})", kind="unavailable")
        return ModelError(f"Gemini {what}: request refused ({detail})", kind="unavailable")
    if isinstance(exc, _TIMEOUT_ERRORS):
        return ModelTimeout(f"Gemini {what}: no answer within the timeout, {tries}")
    if isinstance(exc, _TRANSPORT_ERRORS):
        return ModelError(
            f"Gemini {what}: connection failed {tries} ({type(exc).__name__})", kind="unavailable"
        )
    return ModelError(f"Gemini {what}: unusable answer ({type(exc).__name__})", kind="bad_response")


def _usage(metadata: types.GenerateContentResponseUsageMetadata | None) -> Usage:
    """Usage from ``usage_metadata``: input = prompt tokens; output = answer tokens plus
    thinking tokens (both are billed as output)."""
    if metadata is None:
        return Usage()
    return Usage(
        input_tokens=metadata.prompt_token_count or 0,
        output_tokens=(metadata.candidates_token_count or 0) + (metadata.thoughts_token_count or 0),
    )


def _finish_reason(candidate: types.Candidate) -> str | None:
    reason = candidate.finish_reason
    if reason is None:
        return None
    return str(getattr(reason, "value", reason))


def _answer_text(response: types.GenerateContentResponse, *, what: str) -> str:
    """The text of the first candidate (thoughts left out). Raises ModelError
    (``bad_response``) when the prompt was blocked, the answer was stopped for safety and
    the like, or nothing came back."""
    if not response.candidates:
        feedback = response.prompt_feedback
        reason = feedback.block_reason if feedback is not None else None
        if reason is not None:
            raise ModelError(
                f"Gemini {what}: the prompt was blocked ({getattr(reason, 'value', reason)})",
                kind="bad_response",
            )
        raise ModelError(f"Gemini {what}: the answer had no candidates", kind="bad_response")
    candidate = response.candidates[0]
    finish = _finish_reason(candidate)
    if finish is not None and finish not in _GOOD_FINISH:
        raise ModelError(f"Gemini {what}: the answer was stopped ({finish})", kind="bad_response")
    parts = candidate.content.parts if candidate.content and candidate.content.parts else []
    text = "".join(p.text for p in parts if p.text and not p.thought)
    if not text.strip():
        raise ModelError(f"Gemini {what}: the answer was empty", kind="bad_response")
    return text


def fit_to_budget(text: str, max_tokens: int) -> str:
    """``text`` cut to at most ``max_tokens`` (memoryapp.tokens): whole lines first, then
    whole words of the line that overflows. A model that overshoots the budget it was
    asked for must not overshoot what the context window reserved for the summary."""
    text = text.strip()
    if count_tokens(text) <= max_tokens:
        return text
    kept: list[str] = []
    for line in text.splitlines():
        candidate = "\n".join([*kept, line])
        if count_tokens(candidate) <= max_tokens:
            kept.append(line)
            continue
        words: list[str] = []
        for word in line.split(" "):
            if count_tokens("\n".join([*kept, " ".join([*words, word])])) > max_tokens:
                break
            words.append(word)
        if words:
            kept.append(" ".join(words))
        break
    return "\n".join(kept).strip()


def parse_extraction(text: str) -> tuple[list[ExtractedFact], list[ExtractedEntity]]:
    """Facts and entities from the model's JSON (EXTRACTION_SCHEMA), defensively: a code
    fence is stripped, malformed items are skipped, strings are trimmed and capped, a fact
    may be a bare string, entities are de-duplicated by name (case-insensitive;
    memoryapp.llm.answers). Raises ModelError (``bad_response``) when the text is not a
    JSON object."""
    data = answers.json_object(text, what="Gemini extract")
    facts: list[ExtractedFact] = []
    raw_facts = data.get("facts")
    for item in raw_facts if isinstance(raw_facts, list) else []:
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict):
            continue
        fact_text = answers.clean(item.get("text"), 2000)
        if fact_text:
            facts.append(
                ExtractedFact(text=fact_text, subject=answers.clean(item.get("subject"), 200) or None)
            )
    return facts, answers.entities(data.get("entities"))


def _reply_parts(message: ChatMessage) -> tuple[list[types.Part], str]:
    """The parts of one message and the Gemini role of their turn ("user" or "model")."""
    role, content = message.role, message.content
    if role == "assistant" and message.tool_calls:
        parts = [types.Part(text=content)] if content.strip() else []
        parts += [
            types.Part(function_call=types.FunctionCall(name=c.name, args=dict(c.arguments)))
            for c in message.tool_calls
        ]
        return parts, "model"
    if role == "tool" and message.tool_result is not None:
        result = message.tool_result
        answer = {"error": result.content} if result.is_error else {"result": result.content}
        return [
            types.Part(function_response=types.FunctionResponse(name=result.name, response=answer))
        ], "user"
    if not content.strip():
        return [], "user"  # the API refuses empty text parts; an empty turn says nothing
    if role == "assistant":
        return [types.Part(text=content)], "model"
    if role == "user":
        return [types.Part(text=content)], "user"
    return [types.Part(text=prompts.reply_history_text(role, content))], "user"


def _reply_config(
    system_instruction: str, tools: Sequence[ToolSpec] | None
) -> types.GenerateContentConfig:
    """The system instruction and the tools as function declarations; the client never
    runs a tool itself."""
    declarations = [
        types.FunctionDeclaration(
            name=t.name, description=t.description, parameters_json_schema=t.parameters
        )
        for t in tools or ()
    ]
    return types.GenerateContentConfig(
        system_instruction=system_instruction or None,
        tools=[types.Tool(function_declarations=declarations)] if declarations else None,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def reply_contents(messages: Sequence[ChatMessage]) -> list[types.Content]:
    """Chat history as Gemini contents, oldest first (see GeminiModel.reply for the
    message shapes). Consecutive turns of one role are merged into one content."""
    contents: list[types.Content] = []
    for message in messages:
        parts, turn = _reply_parts(message)
        if not parts:
            continue
        if contents and contents[-1].role == turn and contents[-1].parts is not None:
            contents[-1].parts.extend(parts)
        else:
            contents.append(types.Content(role=turn, parts=parts))
    return contents


class GeminiModel:
    """ModelPort over google-genai (memoryapp.llm.port; DESIGN.md section 7).

    Every method raises ModelError (or ModelTimeout / ModelRateLimited) for any failure,
    after the client's retries; see the module docstring for the mapping.
    """

    name = "gemini"

    def __init__(self, config: GeminiConfig) -> None:
        self.config = config

    @classmethod
    def from_settings(cls) -> GeminiModel:
        """The adapter for the current GEMINI_* settings. Cheap: clients are shared, and
        a missing key surfaces as a ModelError on the first call, not here."""
        return cls(GeminiConfig.from_settings())

    @property
    def model_name(self) -> str:
        """The chat model's name, for the UI."""
        return self.config.chat_model

    # --- plumbing ---------------------------------------------------------------------

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except ModelError:
            raise
        except Exception as exc:
            error = _translate(exc, what=what, attempts=max(self.config.retry_attempts, 1))
            logger.warning("%s", error, exc_info=error.kind == "bad_response")
            raise error from exc

    def _generate(
        self, *, what: str, model: str, prompt: prompts.Prompt, **config: Any
    ) -> types.GenerateContentResponse:
        with self._errors(what):
            return _client_for(self.config).models.generate_content(
                model=model,
                contents=[types.Content(role="user", parts=[types.Part(text=prompt.user)])],
                config=types.GenerateContentConfig(
                    system_instruction=prompt.system,
                    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
                    **config,
                ),
            )

    def _generate_json(
        self, *, what: str, prompt: prompts.Prompt, schema: dict[str, Any]
    ) -> types.GenerateContentResponse:
        """generateContent on GEMINI_SUMMARY_MODEL asking for JSON of ``schema``."""
        return self._generate(
            what=what,
            model=self.config.summary_model,
            prompt=prompt,
            temperature=0.0,
            response_mime_type="application/json",
            response_json_schema=schema,
        )

    # --- ModelPort --------------------------------------------------------------------

    def summarize(
        self,
        *,
        previous_summary: str | None,
        messages: list[TranscriptMessage],
        max_tokens: int,
        open_notes: list[OpenNote] | None = None,
    ) -> Summary:
        """One generateContent call on GEMINI_SUMMARY_MODEL with the compaction prompt
        (memoryapp.llm.prompts.compaction_prompt); the answer is cut to ``max_tokens``.
        With ``open_notes`` the prompt is prompts.notes_compaction_prompt and the answer
        JSON (summary + rewritten notes; see _summarize_with_notes).

        No ``max_output_tokens`` is sent: on thinking models it also caps the thinking,
        which would cut the summary short; the prompt states the budget instead.
        """
        if open_notes:
            return self._summarize_with_notes(previous_summary, messages, max_tokens, open_notes)
        prompt = prompts.compaction_prompt(
            previous_summary=previous_summary, messages=messages, max_tokens=max_tokens
        )
        response = self._generate(
            what="summarize", model=self.config.summary_model, prompt=prompt, temperature=0.2
        )
        with self._errors("summarize"):
            text = fit_to_budget(_answer_text(response, what="summarize"), max_tokens)
        if not text:
            raise ModelError("Gemini summarize: the answer was empty", kind="bad_response")
        return Summary(
            text=text, model=self.config.summary_model, usage=_usage(response.usage_metadata)
        )

    def _summarize_with_notes(
        self,
        previous_summary: str | None,
        messages: list[TranscriptMessage],
        max_tokens: int,
        open_notes: list[OpenNote],
    ) -> Summary:
        prompt = prompts.notes_compaction_prompt(
            previous_summary=previous_summary,
            messages=messages,
            max_tokens=max_tokens,
            open_notes=open_notes,
        )
        response = self._generate(
            what="summarize",
            model=self.config.summary_model,
            prompt=prompt,
            temperature=0.2,
            response_mime_type="application/json",
            response_json_schema=prompts.NOTES_SUMMARY_SCHEMA,
        )
        with self._errors("summarize"):
            data = json.loads(_answer_text(response, what="summarize"))
            text = fit_to_budget(str(data.get("summary") or ""), max_tokens)
            known = {n.name for n in open_notes}
            notes = {
                str(item["name"]): str(item["content"])
                for item in data.get("notes") or []
                if isinstance(item, dict) and item.get("name") in known and isinstance(item.get("content"), str)
            }
        if not text:
            raise ModelError("Gemini summarize: the answer was empty", kind="bad_response")
        return Summary(
            text=text,
            model=self.config.summary_model,
            usage=_usage(response.usage_metadata),
            notes=notes,
        )

    def extract(self, *, messages: list[TranscriptMessage]) -> Extraction:
        """One generateContent call on GEMINI_SUMMARY_MODEL asking for JSON
        (``response_mime_type`` application/json, ``response_json_schema``
        prompts.EXTRACTION_SCHEMA), parsed by parse_extraction."""
        response = self._generate_json(
            what="extract",
            prompt=prompts.extraction_prompt(messages=messages),
            schema=prompts.EXTRACTION_SCHEMA,
        )
        with self._errors("extract"):
            facts, entities = parse_extraction(_answer_text(response, what="extract"))
        return Extraction(facts=facts, entities=entities, usage=_usage(response.usage_metadata))

    def extract_episode(self, *, messages: list[TranscriptMessage]) -> EpisodeExtraction:
        """One generateContent call on GEMINI_SUMMARY_MODEL asking for JSON
        (``response_mime_type`` application/json, ``response_json_schema``
        episode_prompt.EPISODE_SCHEMA), parsed by episode_prompt.parse_episode: an answer
        that is not JSON of that shape raises ModelError (``bad_response``)."""
        response = self._generate_json(
            what="extract_episode",
            prompt=episode_prompt.episode_prompt(messages=messages),
            schema=episode_prompt.EPISODE_SCHEMA,
        )
        with self._errors("extract_episode"):
            return episode_prompt.parse_episode(
                _answer_text(response, what="extract_episode"),
                model=self.config.summary_model,
                usage=_usage(response.usage_metadata),
            )

    def synthesize(self, *, query: str, context: str) -> str:
        """One generateContent call on GEMINI_CHAT_MODEL with the synthesis prompt; ""
        when the model says the context holds no answer (as the offline adapter does)."""
        prompt = prompts.synthesis_prompt(query=query, context=context)
        response = self._generate(
            what="synthesize", model=self.config.chat_model, prompt=prompt, temperature=0.2
        )
        with self._errors("synthesize"):
            text = _answer_text(response, what="synthesize").strip()
        return "" if text.startswith(prompts.NO_ANSWER) else text

    def reply(
        self,
        *,
        system_instruction: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
    ) -> Iterator[ReplyChunk]:
        """Stream the reply (streamGenerateContent on GEMINI_CHAT_MODEL).

        ``messages`` (oldest first): ``user`` and ``assistant`` become user and model
        turns; ``system`` (e.g. the compaction summary) and other roles become labelled
        user turns (prompts.reply_history_text). For a tool-use loop, an assistant
        message's ``tool_calls`` become function calls and a ``tool`` message's
        ``tool_result`` a function response (``{"result"}``, or ``{"error"}`` when
        ``is_error``). ``tools`` are offered as function declarations (JSON-schema
        parameters); the client never runs them itself.

        Yields a chunk per streamed event with its text delta and the function calls it
        asked for (``ToolCall``), then a last chunk with ``done=True`` and the usage.
        Raises ModelError before or between chunks: a refused or failed request, a
        blocked or stopped answer, an empty answer, or a stream cut off before its
        finish reason.
        """
        config = _reply_config(system_instruction, tools)
        model = self.config.chat_model
        usage: Usage | None = None
        finish: str | None = None
        blocked: str | None = None
        produced = False
        with self._errors("reply"):
            stream = _client_for(self.config).models.generate_content_stream(
                model=model, contents=list(reply_contents(messages)), config=config
            )
            for response in stream:
                if response.usage_metadata is not None:
                    usage = _usage(response.usage_metadata)
                feedback = response.prompt_feedback
                if feedback is not None and feedback.block_reason is not None:
                    blocked = str(getattr(feedback.block_reason, "value", feedback.block_reason))
                if not response.candidates:
                    continue
                candidate = response.candidates[0]
                finish = _finish_reason(candidate) or finish
                parts = (
                    candidate.content.parts if candidate.content and candidate.content.parts else []
                )
                text = "".join(p.text for p in parts if p.text and not p.thought)
                calls = tuple(
                    ToolCall(
                        name=p.function_call.name or "", arguments=dict(p.function_call.args or {})
                    )
                    for p in parts
                    if p.function_call is not None
                )
                if text or calls:
                    produced = True
                    yield ReplyChunk(text=text, tool_calls=calls, model=model)
        if blocked is not None:
            raise ModelError(
                f"Gemini reply: the prompt was blocked ({blocked})", kind="bad_response"
            )
        if finish is None:
            raise ModelError("Gemini reply: the stream ended before the answer finished")
        if finish not in _GOOD_FINISH:
            raise ModelError(
                f"Gemini reply: the answer was stopped ({finish})", kind="bad_response"
            )
        if not produced:
            raise ModelError("Gemini reply: the answer was empty", kind="bad_response")
        yield ReplyChunk(done=True, usage=usage or Usage(), model=model)

    def embed(self, *, texts: list[str]) -> list[list[float]]:
        """batchEmbedContents on GEMINI_EMBED_MODEL, EMBED_BATCH_SIZE texts per request;
        one vector per text, in order. Raises ModelError (``bad_response`` when the count
        of vectors does not match)."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH_SIZE):
            batch = texts[start : start + EMBED_BATCH_SIZE]
            with self._errors("embed"):
                # One Content per text: given bare strings, the client folds them into
                # one multi-part content (one vector) for multimodal embedding models.
                response = _client_for(self.config).models.embed_content(
                    model=self.config.embed_model,
                    contents=[
                        types.Content(role="user", parts=[types.Part(text=t)]) for t in batch
                    ],
                )
            embeddings = response.embeddings or []
            if len(embeddings) != len(batch) or any(not e.values for e in embeddings):
                raise ModelError(
                    f"Gemini embed: {len(embeddings)} vectors for {len(batch)} texts",
                    kind="bad_response",
                )
            vectors.extend([float(v) for v in e.values or []] for e in embeddings)
        return vectors

    def count_tokens(self, *, text: str) -> int:
        """The countTokens endpoint on GEMINI_CHAT_MODEL (0 for "" without a call).
        Raises ModelError."""
        if not text:
            return 0
        with self._errors("count_tokens"):
            response = _client_for(self.config).models.count_tokens(
                model=self.config.chat_model, contents=text
            )
        if response.total_tokens is None:
            raise ModelError(
                "Gemini count_tokens: no totalTokens in the answer", kind="bad_response"
            )
        return int(response.total_tokens)

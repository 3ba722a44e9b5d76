"""The model providers, by name: how to build each adapter, its display model, its prices.

DESIGN.md section 7 ("Adapters are found through one registry"). ``MEMORY_LLM_ADAPTER``
names one (``offline`` | ``gemini``), or ``auto``: gemini when GEMINI_API_KEY (or
GOOGLE_API_KEY) is set, else offline. Every adapter is handed out wrapped in
GuardedModel, the one place where an exception other than ModelError leaving an adapter
becomes a ModelError (``bad_response``), so callers handle ModelError only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeVar

from django.conf import settings

from memoryapp.llm.port import (
    ChatMessage,
    EpisodeExtraction,
    Extraction,
    ModelError,
    ModelPort,
    OpenNote,
    ReplyChunk,
    Summary,
    ToolSpec,
    TranscriptMessage,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Prices:
    """USD per one million input and output tokens."""

    input_per_mtok: Decimal
    output_per_mtok: Decimal


def _offline() -> ModelPort:
    from memoryapp.llm.offline import OfflineModel

    return OfflineModel()


def _gemini() -> ModelPort:
    from memoryapp.llm.gemini import GeminiModel

    return GeminiModel.from_settings()


def _settings_prices() -> Prices:
    return Prices(
        Decimal(str(settings.MEMORY_PRICE_INPUT_PER_MTOK)),
        Decimal(str(settings.MEMORY_PRICE_OUTPUT_PER_MTOK)),
    )


@dataclass(frozen=True)
class Provider:
    """One model provider: ``build`` makes its adapter, ``display_model`` names the chat
    model the UI shows (None when there is none to name), ``prices`` what it charges,
    ``context_window`` how many input tokens its chat model takes (the X-ray's gauge),
    ``own_token_counts`` True when its usage comes from the model's own tokenizer (its
    usage metadata) rather than memoryapp.llm.input_tokens."""

    name: str
    build: Callable[[], ModelPort]
    display_model: Callable[[], str | None]
    prices: Callable[[], Prices]
    context_window: Callable[[], int]
    own_token_counts: bool = False


PROVIDERS: dict[str, Provider] = {
    "offline": Provider(
        name="offline",
        build=_offline,
        display_model=lambda: None,
        prices=lambda: Prices(Decimal(0), Decimal(0)),
        context_window=lambda: int(settings.MEMORY_OFFLINE_CONTEXT_WINDOW),
    ),
    "gemini": Provider(
        name="gemini",
        build=_gemini,
        display_model=lambda: str(settings.GEMINI_CHAT_MODEL),
        prices=_settings_prices,
        context_window=lambda: int(settings.GEMINI_CONTEXT_WINDOW),
        own_token_counts=True,
    ),
}


def provider_name() -> str:
    """The name of the provider the settings choose (a key of PROVIDERS)."""
    choice = str(settings.MEMORY_LLM_ADAPTER).lower()
    if choice in PROVIDERS:
        return choice
    return "gemini" if settings.GEMINI_API_KEY else "offline"


def provider() -> Provider:
    """The Provider the settings choose."""
    return PROVIDERS[provider_name()]


def get_model() -> ModelPort:
    """The chosen provider's adapter, wrapped in GuardedModel (a fresh, cheap object)."""
    return GuardedModel(provider().build())


class GuardedModel:
    """A ModelPort that forwards to ``inner`` and turns any exception other than
    ModelError into ModelError(kind ``bad_response``), logged with its traceback once."""

    def __init__(self, inner: ModelPort) -> None:
        self.inner = inner
        self.name = inner.name

    def _guard(self, what: str, call: Callable[[], T]) -> T:
        try:
            return call()
        except ModelError:
            raise
        except Exception as exc:
            logger.exception("model adapter %s raised a non-ModelError during %s", self.name, what)
            raise ModelError(f"{type(exc).__name__}: {exc}", kind="bad_response") from exc

    def summarize(
        self,
        *,
        previous_summary: str | None,
        messages: list[TranscriptMessage],
        max_tokens: int,
        open_notes: list[OpenNote] | None = None,
    ) -> Summary:
        """ModelPort.summarize, guarded."""
        return self._guard(
            "summarize",
            lambda: self.inner.summarize(
                previous_summary=previous_summary,
                messages=messages,
                max_tokens=max_tokens,
                open_notes=open_notes,
            ),
        )

    def extract(self, *, messages: list[TranscriptMessage]) -> Extraction:
        """ModelPort.extract, guarded."""
        return self._guard("extract", lambda: self.inner.extract(messages=messages))

    def extract_episode(self, *, messages: list[TranscriptMessage]) -> EpisodeExtraction:
        """ModelPort.extract_episode, guarded."""
        return self._guard("extract_episode", lambda: self.inner.extract_episode(messages=messages))

    def synthesize(self, *, query: str, context: str) -> str:
        """ModelPort.synthesize, guarded."""
        return self._guard("synthesize", lambda: self.inner.synthesize(query=query, context=context))

    def reply(
        self,
        *,
        system_instruction: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
    ) -> Iterator[ReplyChunk]:
        """ModelPort.reply, guarded on every step of the stream."""
        stream = self._guard(
            "reply",
            lambda: iter(
                self.inner.reply(
                    system_instruction=system_instruction, messages=messages, tools=tools
                )
            ),
        )
        while True:
            chunk: Any = self._guard("reply", lambda: next(stream, None))
            if chunk is None:
                return
            yield chunk

    def embed(self, *, texts: list[str]) -> list[list[float]]:
        """ModelPort.embed, guarded."""
        return self._guard("embed", lambda: self.inner.embed(texts=texts))

    def count_tokens(self, *, text: str) -> int:
        """ModelPort.count_tokens, guarded."""
        return self._guard("count_tokens", lambda: self.inner.count_tokens(text=text))

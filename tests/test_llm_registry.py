"""memoryapp.llm.registry: providers by name, and the one wrapping of stray adapter errors."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from memoryapp import llm, usage
from memoryapp.llm.offline import OfflineModel
from memoryapp.llm.port import ChatMessage, ModelError, ReplyChunk
from memoryapp.llm.registry import GuardedModel, Prices


def test_it_chooses_the_provider_from_the_settings(settings: Any) -> None:
    settings.MEMORY_LLM_ADAPTER = "auto"
    settings.GEMINI_API_KEY = ""
    offline = llm.provider()
    settings.GEMINI_API_KEY = "k"
    settings.GEMINI_CHAT_MODEL = "gemini-x"
    settings.MEMORY_PRICE_INPUT_PER_MTOK = 0.30
    settings.MEMORY_PRICE_OUTPUT_PER_MTOK = 2.5
    gemini = llm.provider()

    assert (offline.name, offline.display_model(), offline.prices()) == (
        "offline",
        None,
        Prices(Decimal(0), Decimal(0)),
    )
    assert (gemini.name, gemini.display_model(), gemini.prices()) == (
        "gemini",
        "gemini-x",
        Prices(Decimal("0.3"), Decimal("2.5")),
    )


def test_it_prices_tokens_per_million() -> None:
    assert usage.tokens_cost(Prices(Decimal("0.30"), Decimal("2.50")), 1200, 40) == Decimal(
        "0.00046000"
    )


class _Broken(OfflineModel):
    def summarize(self, **kwargs: Any) -> Any:
        raise KeyError("candidates")

    def reply(self, **kwargs: Any) -> Iterator[ReplyChunk]:
        yield ReplyChunk(text="half")
        raise AttributeError("no parts")


def test_it_wraps_a_stray_adapter_error_once_as_a_model_error() -> None:
    model = GuardedModel(_Broken())

    with pytest.raises(ModelError) as summarize:
        model.summarize(previous_summary=None, messages=[], max_tokens=10)
    chunks: list[ReplyChunk] = []
    with pytest.raises(ModelError) as reply:
        for chunk in model.reply(system_instruction="", messages=[ChatMessage("user", "hi")]):
            chunks.append(chunk)

    assert (summarize.value.kind, str(summarize.value)) == ("bad_response", "KeyError: 'candidates'")
    assert (reply.value.kind, str(reply.value), chunks) == (
        "bad_response",
        "AttributeError: no parts",
        [ReplyChunk(text="half")],
    )
    assert type(reply.value.__cause__) is AttributeError


def test_it_hands_out_guarded_adapters() -> None:
    model = llm.get_model()

    assert (type(model), model.name) == (GuardedModel, "offline")

"""Prices and cost lines: what a turn's model calls cost (DESIGN.md section 4, UsageLine).

Prices come from the provider registry (memoryapp.llm.registry: USD per one million
tokens); the offline provider costs nothing. Costs are Decimal USD with 8 places.
"""

from __future__ import annotations

from decimal import Decimal

from memoryapp import llm
from memoryapp.llm import Prices
from memoryapp.models import Message, UsageLine
from memoryapp.tokens import count_tokens

MILLION = Decimal(1_000_000)
COST_PLACES = Decimal("0.00000001")


def prices() -> Prices:
    """The chosen provider's prices."""
    return llm.provider().prices()


def cost(tokens: int, price_per_mtok: Decimal) -> Decimal:
    """USD for ``tokens`` at ``price_per_mtok`` (USD per 1M tokens), 8 decimal places."""
    return (Decimal(tokens) * price_per_mtok / MILLION).quantize(COST_PLACES)


def tokens_cost(price: Prices, tokens_in: int, tokens_out: int) -> Decimal:
    """USD for ``tokens_in`` input and ``tokens_out`` output tokens at ``price``."""
    return cost(tokens_in, price.input_per_mtok) + cost(tokens_out, price.output_per_mtok)


def model_lines(price: Prices, *, tokens_in: int, tokens_out: int, detail: str) -> list[UsageLine]:
    """The model input and output lines of one reply (unsaved, no turn set)."""
    return [
        UsageLine(
            kind=UsageLine.Kind.MODEL_INPUT,
            quantity=tokens_in,
            cost=cost(tokens_in, price.input_per_mtok),
            detail=detail,
        ),
        UsageLine(
            kind=UsageLine.Kind.MODEL_OUTPUT,
            quantity=tokens_out,
            cost=cost(tokens_out, price.output_per_mtok),
            detail=detail,
        ),
    ]


def compaction_line(price: Prices, summary: Message) -> UsageLine:
    """The line of one compaction run, from the tokens its summary row records."""
    tokens_in, tokens_out = summary.tokens_input or 0, summary.tokens_output or 0
    return UsageLine(
        kind=UsageLine.Kind.COMPACTION,
        quantity=tokens_in + tokens_out,
        cost=tokens_cost(price, tokens_in, tokens_out),
        detail=f"{summary.model or ''}: {tokens_in} in, {tokens_out} out".strip(": "),
    )


def synthesis_line(price: Prices, *, query: str, context: str, synthesis: str) -> UsageLine:
    """The line of recall's synthesis, estimated with memoryapp.tokens (the port's
    synthesize() reports no usage): the query and context in, the synthesis out."""
    synth_in = count_tokens(query) + count_tokens(context)
    synth_out = count_tokens(synthesis)
    return UsageLine(
        kind=UsageLine.Kind.SYNTHESIS,
        quantity=synth_in + synth_out,
        cost=tokens_cost(price, synth_in, synth_out),
        detail=f"estimated (the model reports no token counts): {synth_in} in, {synth_out} out",
    )

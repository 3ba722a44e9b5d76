"""memoryapp.usage: the cost lines a turn records (their quantity, cost and wording)."""

from __future__ import annotations

from decimal import Decimal

from memoryapp import usage
from memoryapp.llm import Prices
from memoryapp.models import UsageLine
from memoryapp.tokens import count_tokens


def test_the_synthesis_line_says_its_tokens_were_estimated_in_plain_words() -> None:
    price = Prices(input_per_mtok=Decimal("1"), output_per_mtok=Decimal("4"))
    line = usage.synthesis_line(price, query="where?", context="York, since May.", synthesis="York.")
    tokens_in = count_tokens("where?") + count_tokens("York, since May.")
    tokens_out = count_tokens("York.")
    assert (line.kind, line.quantity, line.cost, line.detail) == (
        UsageLine.Kind.SYNTHESIS,
        tokens_in + tokens_out,
        usage.cost(tokens_in, Decimal("1")) + usage.cost(tokens_out, Decimal("4")),
        f"estimated (the model reports no token counts): {tokens_in} in, {tokens_out} out",
    )

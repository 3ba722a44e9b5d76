"""Every dashboard page writes a cost the same way (playground.templatetags.dashboard.usd):
the thread page's stats, its stats panel, the turn list, the X-ray and the compaction
history. They used 6 or 8 decimals and "USD" after the number, page by page."""

from __future__ import annotations

from decimal import Decimal

from memoryapp import working
from memoryapp.models import CompactionRun, Turn, UsageLine
from tests.conftest import World
from tests.test_dashboard_views import tree, url


def _priced_turn(world: World) -> Turn:
    """A turn whose three cost lines add up to $0.00123816."""
    user = working.message_append(thread=world.thread, role="user", content="hello").message
    reply = working.message_append(thread=world.thread, role="assistant", content="hi").message
    turn = Turn.objects.create(
        thread=world.thread, user_message=user, assistant_message=reply, adapter="gemini"
    )
    for kind, quantity, cost in (
        (UsageLine.Kind.MODEL_INPUT, 3000, "0.00100000"),
        (UsageLine.Kind.MODEL_OUTPUT, 94, "0.00023456"),
        (UsageLine.Kind.COMPACTION, 12, "0.00000360"),
    ):
        UsageLine.objects.create(turn=turn, kind=kind, quantity=quantity, cost=Decimal(cost))
    return turn


def _text(node: object) -> str:
    return " ".join(node.full_text().split())  # type: ignore[attr-defined]


def test_every_page_writes_a_cost_in_dollars_with_four_decimals(world: World) -> None:
    turn = _priced_turn(world)
    CompactionRun.objects.create(
        thread=world.thread, trigger="manual", outcome="succeeded", from_sequence=1,
        to_sequence=2, tokens_input=2000, tokens_output=300, cost=Decimal("0.00123456"),
        adapter="gemini", model="gemini-2.5-flash",
    )  # fmt: skip
    client = world.client(world.member)
    thread_id = world.thread.pk

    thread_page = tree(client.get(url("playground:thread", world.project, thread_id)))
    stats = tree(client.get(url("playground:thread-stats", world.project, thread_id), headers={"HX-Request": "true"}))
    turns = tree(client.get(url("playground:thread-turns", world.project, thread_id)))
    xray = tree(client.get(url("playground:turn-context", world.project, turn.pk)))
    history = tree(client.get(url("playground:thread-compactions", world.project, thread_id)))

    assert _text(thread_page.by_testid("stat-cost")[0]) == "$0.0012"
    assert _text(stats.by_testid("stat-cost")[0]) == "$0.0012"
    (row,) = turns.by_testid("turn-row")
    assert _text(row.all(lambda n: n.tag == "td")[-1]) == "$0.0012"
    assert "1 turn · total cost $0.0012" in _text(turns)
    costs = xray.by_testid("context-costs")[0]
    assert [_text(cells[-1]) for cells in (r.all(lambda n: n.tag == "td") for r in costs.all(lambda n: n.tag == "tr")) if cells] == [
        "$0.0010", "$0.0002", "<$0.0001", "$0.0012",
    ]  # fmt: skip
    assert _text(xray.by_testid("context-cost-total")[0]) == "$0.0012"
    assert _text(history.by_testid("run-cost")[0]) == "2000 tokens in · 300 out · $0.0012 · gemini gemini-2.5-flash"
    assert _text(history.by_testid("history-totals")[0]) == "1 run · 2300 tokens · $0.0012"

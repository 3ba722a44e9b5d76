"""The compaction history page (issue 10 item 2; playground.views.thread_compactions):
each run with its range linking to the messages, tokens and cost, the escaped line diff
of the summary before and after with the dropped terms marked, and paging."""

from __future__ import annotations

from typing import Any

import pytest

from memoryapp import compaction, llm, working
from memoryapp.llm.registry import GuardedModel
from memoryapp.models import CompactionRun, Thread
from playground import history_selectors
from tests.conftest import World
from tests.test_compaction_history import ScriptedSummarizer
from tests.test_dashboard_views import tree, url


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch, settings: Any) -> ScriptedSummarizer:
    # The model writes every summary here, short folds included (memoryapp.summary_rules).
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    fake = ScriptedSummarizer()
    monkeypatch.setattr(llm, "get_model", lambda: GuardedModel(fake))
    return fake


def two_runs(world: World, model: ScriptedSummarizer) -> Thread:
    thread = working.thread_create(project=world.project, dataset="d")
    model.texts = [
        "- Trip to Lisbon with Marta on May 12.\n- Budget <b>$4,000</b>.",
        "- Trip to Lisbon on May 12.\n- Budget <b>$4,000</b>.\n- Paulo joins on Friday.",
    ]
    working.message_append(
        thread=thread, role="user", content="We fly to Lisbon with Marta on May 12."
    )
    working.message_append(thread=thread, role="user", content="Budget is $4,000.")
    compaction.compact(thread_id=thread.pk)  # #1-#2 into summary #3
    working.message_append(thread=thread, role="user", content="Paulo joins us on Friday.")
    compaction.compact(thread_id=thread.pk)  # #4 and summary #3 into summary #5
    return thread


def test_it_shows_each_run_with_its_range_cost_diff_and_what_it_dropped(
    world: World, model: ScriptedSummarizer
) -> None:
    thread = two_runs(world, model)
    client = world.client(world.member)

    page = tree(client.get(url("playground:thread-compactions", world.project, thread.pk)))

    newest, oldest = page.by_testid("compaction-run")
    assert (newest.attrs["data-from"], newest.attrs["data-to"], newest.attrs["data-outcome"]) == (
        "4",
        "4",
        "succeeded",
    )
    link = newest.by_testid("run-messages")[0]
    assert (
        link.attrs["href"]
        == url("playground:thread", world.project, thread.pk, before=6) + "#msg-5"
    )
    assert " ".join(newest.by_testid("run-range")[0].full_text().split()) == (
        "Folded message #4 (1 row and summary #3) into summary #5."
    )
    assert " ".join(newest.by_testid("run-cost")[0].full_text().split()) == (
        "1000 tokens in · 200 out · $0.0000 · offline scripted-1"
    )
    assert [m.full_text() for m in newest.by_testid("dropped-term")] == ["Marta"]
    lines = [(n.attrs["data-kind"], n.full_text()) for n in newest.by_testid("diff-line")]
    assert lines == [
        ("removed", "- - Trip to Lisbon with Marta on May 12."),
        ("added", "+ - Trip to Lisbon on May 12."),
        ("same", "  - Budget <b>$4,000</b>."),
        ("added", "+ - Paulo joins on Friday."),
    ]
    # The dropped name is marked inside the removed line.
    removed = newest.by_testid("diff-line")[0]
    assert [m.full_text() for m in removed.all(lambda n: n.tag == "mark")] == ["Marta"]
    assert oldest.by_testid("run-dropped")[0].full_text().strip() == (
        "Nothing dropped: every name, date and number is still in the summary."
    )
    assert (
        " ".join(page.by_testid("history-totals")[0].full_text().split())
        == "2 runs · 2400 tokens · $0.0000"
    )


def test_it_escapes_the_summaries_and_links_the_history_from_the_thread_page(
    world: World, model: ScriptedSummarizer
) -> None:
    thread = two_runs(world, model)
    client = world.client(world.member)

    body = client.get(
        url("playground:thread-compactions", world.project, thread.pk)
    ).content.decode()
    thread_page = tree(client.get(url("playground:thread", world.project, thread.pk)))

    assert "Budget &lt;b&gt;$4,000&lt;/b&gt;." in body and "<b>$4,000" not in body
    history = url("playground:thread-compactions", world.project, thread.pk)
    assert thread_page.by_testid("open-compaction-history")[0].attrs["href"] == history
    assert thread_page.by_testid("compaction-history-link")[0].attrs["href"] == history


def test_it_shows_a_failed_run_with_its_error_and_no_diff(
    world: World, model: ScriptedSummarizer
) -> None:
    thread = working.thread_create(project=world.project, dataset="d")
    working.message_append(thread=thread, role="user", content="hello")
    model.error = RuntimeError("adapter bug")
    with pytest.raises(Exception, match="adapter bug"):
        compaction.compact(thread_id=thread.pk)

    page = tree(
        world.client(world.member).get(
            url("playground:thread-compactions", world.project, thread.pk)
        )
    )

    (run,) = page.by_testid("compaction-run")
    assert run.attrs["data-outcome"] == "failed"
    assert "adapter bug" in run.by_testid("run-error")[0].full_text()
    assert run.by_testid("run-diff") == [] and run.by_testid("run-dropped") == []


def test_it_pages_back_through_the_runs(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history_selectors, "HISTORY_PAGE_SIZE", 2)
    thread = working.thread_create(project=world.project, dataset="d")
    other = working.thread_create(project=world.project, dataset="d")
    for i in range(3):
        # Another thread's runs in between: ids jump, the numbers on this thread do not.
        for t in (other, thread):
            working.message_append(thread=t, role="user", content=f"m{i}")
            compaction.compact(thread_id=t.pk)
    ids = list(
        CompactionRun.objects.filter(thread=thread).order_by("pk").values_list("pk", flat=True)
    )
    assert ids[1] - ids[0] == 2
    client = world.client(world.member)
    path = url("playground:thread-compactions", world.project, thread.pk)

    first = tree(client.get(path))
    older = first.by_testid("older-runs")[0].attrs["href"]
    second = tree(client.get(older))

    assert [r.attrs["id"] for r in first.by_testid("compaction-run")] == ["run-3", "run-2"]
    assert [n.full_text() for n in first.by_testid("run-number")] == ["Run 3", "Run 2"]
    assert [r.attrs["data-from"] for r in first.by_testid("compaction-run")] == ["5", "3"]
    assert older == f"{path}&before=2"
    assert [n.full_text() for n in second.by_testid("run-number")] == ["Run 1"]
    assert [r.attrs["data-from"] for r in second.by_testid("compaction-run")] == ["1"]
    assert "Showing runs before run 2." in second.full_text()
    assert second.by_testid("older-runs") == []
    assert [n.full_text() for n in tree(client.get(f"{path}&before=9")).by_testid("run-number")] == [
        "Run 3", "Run 2",
    ]  # fmt: skip
    assert client.get(f"{path}&before=x").status_code == 400


def test_line_diff_marks_dropped_terms_only_as_whole_words() -> None:
    diff = history_selectors.line_diff(
        "Ann met Anna in New York.\nsame", "same\nAnna", ["Ann", "New York"]
    )

    assert [(d.kind, d.segments) for d in diff] == [
        ("removed", [("Ann", True), (" met Anna in ", False), ("New York", True), (".", False)]),
        ("same", [("same", False)]),
        ("added", [("Anna", False)]),
    ]


def test_the_thread_page_never_shows_a_reply_above_the_summary_before_it(
    world: World, settings: Any
) -> None:
    thread = working.thread_create(project=world.project, dataset="d", auto_compact_threshold=3)
    for i, role in enumerate(["user", "assistant", "user"], start=1):
        compaction.message_append_compacting(thread=thread, role=role, content=f"m{i}")
    # #3 tripped: #1-#2 folded into summary #4; the reply to #3 is #5.
    compaction.message_append_compacting(thread=thread, role="assistant", content="m5")

    page = tree(world.client(world.member).get(url("playground:thread", world.project, thread.pk)))
    ol = page.by_testid("messages")[0].all(lambda n: n.tag == "ol")[0]
    order = [(n.attrs["data-testid"], n.attrs["data-seq"]) for n in ol.children if n.tag == "li"]

    assert order == [("summary", "4"), ("message", "3"), ("message", "5")]

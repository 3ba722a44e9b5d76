"""Compaction history (issue 10 item 2): every compaction path writes exactly one
CompactionRun with the right range, trigger, summaries and cost; a failed model call
writes a failed run and no summary; a run whose summary lost a race is kept as
discarded; and what a summary dropped (memoryapp.salient) has exact values."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from memoryapp import compaction, compaction_history, llm, salient, tasks
from memoryapp.compaction_history import RunStart
from memoryapp.llm.port import ModelError, OpenNote, Summary, TranscriptMessage, Usage
from memoryapp.llm.registry import GuardedModel
from memoryapp.models import CompactionRun, Job, Message, Project, Thread
from tests.conftest import BASE, Api
from tests.test_notes import make_thread


class ScriptedSummarizer:
    """summarize() returns the next scripted text (or raises ``error``); ``during`` runs
    inside the call, before it returns (to make another run win a race)."""

    name = "scripted"

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.error: Exception | None = None
        self.during: Callable[[], object] | None = None
        self.calls = 0

    def summarize(
        self,
        *,
        previous_summary: str | None,
        messages: list[TranscriptMessage],
        max_tokens: int,
        open_notes: list[OpenNote] | None = None,
    ) -> Summary:
        self.calls += 1
        if self.error is not None:
            raise self.error
        during, self.during = self.during, None
        if during is not None:
            during()
        text = self.texts.pop(0) if self.texts else f"summary {self.calls}"
        return Summary(
            text=text, model="scripted-1", usage=Usage(input_tokens=1000, output_tokens=200)
        )

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"compaction must not call model.{name}")


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch, settings: Any) -> ScriptedSummarizer:
    fake = ScriptedSummarizer()
    monkeypatch.setattr(llm, "get_model", lambda: GuardedModel(fake))
    # Priced as the gemini provider is: 1.25 USD per 1M in, 10 USD per 1M out.
    settings.MEMORY_LLM_ADAPTER = "gemini"
    settings.MEMORY_PRICE_INPUT_PER_MTOK = "1.25"
    settings.MEMORY_PRICE_OUTPUT_PER_MTOK = "10"
    # These tests drive the model call; a fold short enough to be kept word for word
    # (memoryapp.summary_rules) is tested in tests/test_short_folds.py.
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    return fake


# 1000 tokens at 1.25/M + 200 at 10/M.
CALL_COST = Decimal("0.00325000")


def runs(thread_id: Any) -> list[CompactionRun]:
    return list(CompactionRun.objects.filter(thread_id=thread_id).order_by("created_at", "pk"))


def summary_rows(thread_id: Any) -> list[Message]:
    return list(
        Message.objects.filter(thread_id=thread_id, is_summary=True).order_by("sequence_number")
    )


def fill(api: Api, thread_id: str, contents: list[str]) -> None:
    for content in contents:
        assert api.append(thread_id, content).status_code == 201


def test_a_manual_compact_writes_one_run_with_its_range_summaries_and_cost(
    api: Api, model: ScriptedSummarizer
) -> None:
    thread_id = api.create_thread()["threadId"]
    fill(api, thread_id, ["one", "two", "three"])
    assert api.post(f"{BASE}/threads/{thread_id}/compact").status_code == 200
    fill(api, thread_id, ["five", "six"])
    assert api.post(f"{BASE}/threads/{thread_id}/compact").status_code == 200

    first, second = runs(thread_id)
    s4, s7 = summary_rows(thread_id)
    assert [
        (
            r.trigger,
            r.mode,
            r.outcome,
            r.from_sequence,
            r.to_sequence,
            r.folded_count,
            r.previous_summary_id,
            r.summary_id,
        )
        for r in (first, second)
    ] == [
        ("manual", "summary", "succeeded", 1, 3, 3, None, s4.pk),
        ("manual", "summary", "succeeded", 5, 6, 2, s4.pk, s7.pk),
    ]
    assert (
        first.adapter,
        first.model,
        first.model_called,
        first.tokens_input,
        first.tokens_output,
        first.cost,
    ) == (
        "gemini",
        "scripted-1",
        True,
        1000,
        200,
        CALL_COST,
    )
    assert (first.error, first.created_at) == ("", s4.created_at)


def test_an_automatic_run_records_the_range_it_folded_keeping_the_tripping_message(
    api: Api, model: ScriptedSummarizer
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=3)["threadId"]
    fill(api, thread_id, ["one", "two", "three"])

    (run,) = runs(thread_id)
    assert (run.trigger, run.outcome, run.from_sequence, run.to_sequence, run.folded_count) == (
        "auto",
        "succeeded",
        1,
        2,
        2,
    )


def test_a_dashboard_job_run_is_recorded_as_a_job(
    project: Project, model: ScriptedSummarizer
) -> None:
    thread = Thread.objects.create(project=project, dataset="user_42")
    for text in ("one", "two", "three"):
        compaction.message_append_compacting(thread=thread, role="user", content=text)

    result = tasks.compaction_job(
        Job(project=project, thread=thread, kind="compaction", args={"throughSequence": 2})
    )

    assert result is not None and result["compactedCount"] == 2
    (run,) = runs(thread.pk)
    assert (run.trigger, run.outcome, run.from_sequence, run.to_sequence) == (
        "job",
        "succeeded",
        1,
        2,
    )


def test_an_agent_compaction_is_recorded_with_the_agents_mode(project: Project) -> None:
    thread = make_thread(project, kind="sliding-window", max_tokens=1_000_000)
    for text in ("one", "two", "three"):
        compaction.message_append_compacting(thread=thread, role="user", content=text)

    result = compaction.compact(thread_id=thread.pk)

    assert result is not None
    (run,) = runs(thread.pk)
    assert (
        run.trigger,
        run.mode,
        run.outcome,
        run.from_sequence,
        run.to_sequence,
        run.summary_id,
    ) == (
        "manual",
        "sliding-window",
        "succeeded",
        1,
        3,
        result.summary.pk,
    )
    # A sliding window calls no model: nothing spent.
    assert (run.model_called, run.tokens_input, run.tokens_output, run.cost) == (
        False,
        0,
        0,
        Decimal(0),
    )


def test_an_agent_summarize_run_records_the_model_call(project: Project, settings: Any) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0  # summarised, not kept word for word
    thread = make_thread(project, max_tokens=1_000_000)
    compaction.message_append_compacting(
        thread=thread, role="user", content="We sail for Tortuga at dawn."
    )

    result = compaction.compact(thread_id=thread.pk)

    assert result is not None
    (run,) = runs(thread.pk)
    assert (run.trigger, run.mode, run.outcome, run.model_called, run.summary_id) == (
        "manual",
        "summarize",
        "succeeded",
        True,
        result.summary.pk,
    )
    assert run.tokens_input == result.summary.tokens_input and run.tokens_input > 0


def test_a_failed_model_call_records_a_failed_run_and_no_summary(
    api: Api, model: ScriptedSummarizer
) -> None:
    thread_id = api.create_thread()["threadId"]
    fill(api, thread_id, ["one", "two"])
    model.error = ModelError("summarizer down", kind="unavailable")

    assert api.post(f"{BASE}/threads/{thread_id}/compact").status_code == 502

    (run,) = runs(thread_id)
    assert (
        run.trigger,
        run.outcome,
        run.error,
        run.from_sequence,
        run.to_sequence,
        run.folded_count,
    ) == (
        "manual",
        "failed",
        "unavailable: summarizer down",
        1,
        2,
        0,
    )
    assert (run.summary_id, run.previous_summary_id, run.tokens_input, run.cost, run.dropped) == (
        None,
        None,
        0,
        Decimal(0),
        {},
    )
    assert summary_rows(thread_id) == []
    assert Message.objects.filter(thread_id=thread_id, compacted_at__isnull=False).count() == 0


def test_a_failed_automatic_run_is_recorded_and_the_append_still_succeeds(
    api: Api, model: ScriptedSummarizer
) -> None:
    thread_id = api.create_thread(autoCompactThreshold=2)["threadId"]
    model.error = ModelError("quota", kind="rate_limited")

    fill(api, thread_id, ["one", "two"])

    assert [
        (r.trigger, r.outcome, r.error, r.from_sequence, r.to_sequence) for r in runs(thread_id)
    ] == [("auto", "failed", "rate_limited: quota", 1, 1)]
    assert summary_rows(thread_id) == []


def test_a_run_that_lost_the_race_is_kept_as_discarded_with_what_it_spent(
    api: Api, model: ScriptedSummarizer
) -> None:
    thread_id = api.create_thread()["threadId"]
    fill(api, thread_id, ["one", "two"])
    # While the first call runs, another compaction commits: the first one's summary loses.
    model.during = lambda: compaction.compact(thread_id=Thread.objects.get(pk=thread_id).pk)

    compaction.compact(thread_id=Thread.objects.get(pk=thread_id).pk)

    (winner,) = summary_rows(thread_id)
    assert [
        (r.outcome, r.from_sequence, r.to_sequence, r.summary_id, r.tokens_input, r.cost)
        for r in runs(thread_id)
    ] == [
        ("succeeded", 1, 2, winner.pk, 1000, CALL_COST),
        ("discarded", 1, 2, None, 1000, CALL_COST),
    ]


def test_a_run_stores_the_names_dates_and_numbers_the_new_summary_dropped(
    api: Api, model: ScriptedSummarizer
) -> None:
    thread_id = api.create_thread()["threadId"]
    fill(
        api,
        thread_id,
        [
            "We fly to Lisbon with Marta on May 12.",
            "The budget is $4,000 and the hotel costs 120 per night.",
        ],
    )
    model.texts = [
        "- Trip to Lisbon with Marta on May 12, budget $4,000, hotel 120 per night.",
        "- Trip to Lisbon on May 12, budget $4,000.\n- Paulo joins on Friday.",
    ]
    api.post(f"{BASE}/threads/{thread_id}/compact")
    fill(api, thread_id, ["Paulo joins us on Friday, flight TP1350 at 10:30."])
    api.post(f"{BASE}/threads/{thread_id}/compact")

    first, second = runs(thread_id)
    assert first.dropped == {"names": [], "dates": [], "numbers": []}
    # Marta and 120 came from the previous summary, 10:30 from the folded message.
    assert second.dropped == {
        "names": ["Marta"],
        "dates": [],
        "numbers": ["10:30", "120", "TP1350"],
    }
    assert second.dropped_count == 4


def test_dropped_terms_reads_the_folded_messages_and_the_previous_summary() -> None:
    previous = Message(content="- Priya lives in Lyon since 2019.")
    fold = [
        Message(sequence_number=5, content="Dr. Ana Costa and Priya met on 3 March."),
        Message(sequence_number=6, content="Ana paid $1,200, i.e. 15% of it, on 2025-04-01."),
    ]
    start = RunStart(thread_id=None, trigger="manual", mode="summary", fold=fold, previous=previous)  # type: ignore[arg-type]

    assert compaction_history.dropped_terms(
        start, "- Priya met Ana Costa in Lyon; Ana paid $1,200."
    ) == {
        # "Ana" opens its sentence but is written inside one elsewhere, so it is a name.
        "names": [],
        "dates": ["2025-04-01", "3 March"],
        "numbers": ["15%", "2019"],
    }
    assert compaction_history.dropped_terms(start, "Nothing kept.") == {
        "names": ["Ana", "Ana Costa", "Lyon", "Priya"],
        "dates": ["2025-04-01", "3 March"],
        "numbers": ["$1,200", "15%", "2019"],
    }


@pytest.mark.parametrize(
    ("text", "names", "numbers", "dates"),
    [
        # Commas separate names; a title is not part of one.
        (
            "We met Caroline, Melanie and Dr. Smith in New York.",
            ["Caroline", "Melanie", "New York", "Smith"],
            [],
            [],
        ),
        # A bullet, a colon or a quote opens a clause: its capital says nothing.
        ('- The plan: Book it. She said "Great" to Anna\'s team.', ["Anna"], [], []),
        # The opening word counts once the text writes it inside a sentence too.
        (
            "Caroline called. Thanks, Caroline! The Eiffel Tower is tall.",
            ["Caroline", "Eiffel Tower"],
            [],
            [],
        ),
        # The digits of a date are not numbers of their own; a year beside it is.
        (
            "On March 3, 2025 we pay $30,000 (12.5%) at 10:30 on 2025-04-01.",
            [],
            ["$30,000", "10:30", "12.5%", "2025"],
            ["2025-04-01", "March 3"],
        ),
        # A code of capitals and digits is one number; digits inside a word are none.
        ("Flight TP1350 leaves at 9 from gate B2b.", [], ["9", "TP1350"], []),
        (
            "I'm OK with June 2025 and the 4th of July; we leave Tuesday.",
            [],
            ["4"],
            ["July", "June 2025", "Tuesday"],
        ),
    ],
)
def test_salient_terms(text: str, names: list[str], numbers: list[str], dates: list[str]) -> None:
    found = salient.terms(text)

    assert (sorted(found.names), sorted(found.numbers), sorted(found.dates)) == (
        names,
        numbers,
        dates,
    )


def test_a_sentence_opening_name_counts_when_another_text_writes_it_inside_a_sentence() -> None:
    texts = ["Marta booked the flights.", "Thanks, Marta."]

    assert salient.terms(texts[0]).names == frozenset()
    assert salient.terms(texts[0], known=salient.name_words(texts)).names == frozenset({"Marta"})
    assert salient.dropped_by_kind(before=texts, after="Flights booked.")["names"] == ["Marta"]


@pytest.mark.parametrize(
    ("before", "after", "dropped"),
    [
        # A summary that keeps the school keeps its name, abbreviation and possessive too.
        (
            "My daughter goes to St. Mary's Primary School.",
            "- The user's daughter goes to St. Mary's Primary School.",
            [],
        ),
        ("My daughter goes to St Mary\u2019s Primary School.", "- Daughter: St Mary's Primary School.", []),
        ("We hiked Mt. Rainier with Anna's team.", "- Hiked Mt. Rainier with Anna.", []),
        # A name it lost is still reported, as written.
        ("My daughter goes to St. Mary's Primary School.", "- The user has a daughter.", ["Mary's Primary School"]),
    ],
)
def test_a_name_with_an_abbreviation_or_a_possessive_survives_as_written(
    before: str, after: str, dropped: list[str]
) -> None:
    assert salient.dropped_by_kind(before=[before], after=after)["names"] == dropped


@pytest.mark.parametrize(
    ("text", "names"),
    [
        # Tester item 7b: the offline reply's sentence after its bracketed label.
        ("[offline model] No language model is set up, so this reply is canned.", []),
        # Common words open sentences and clauses without naming anything, even when the
        # same word is written capitalised inside a sentence elsewhere.
        ("No. So it goes. Yes: Then we left. I said No to that.", ["No"]),
        ("Yesterday Karen called. Later, Karen left. Thanks, Karen!", ["Karen"]),
        ('He said "Maybe" and we walked down Well Street.', ["Well Street"]),
        # A name opening a sentence counts once it is written inside one too.
        ("Karen called. I phoned Karen back.", ["Karen"]),
        ("Will called. I met Will at noon.", ["Will"]),
        # Inside a sentence a capitalised common word is a name; after a label, a name
        # that is not a common word still is.
        ("[note] Karen called about the car. We met Karen.", ["Karen"]),
    ],
)
def test_a_common_word_opening_a_sentence_is_not_a_name(text: str, names: list[str]) -> None:
    assert sorted(salient.terms(text).names) == names


def test_the_offline_reply_drops_no_name_when_folded() -> None:
    """What the compaction history showed as "Dropped 1: No": the offline reply's "No"
    read as a name. Karen, who opens her sentence, is still reported when a summary loses
    her (another message writes her inside a sentence)."""
    before = [
        "Karen called about the car.",
        "[offline model] No language model is set up. Ask the operator to set one.",
        "Did you call Karen back?",
    ]
    assert salient.dropped_by_kind(before=before, after="- A call about a car.") == {
        "names": ["Karen"],
        "dates": [],
        "numbers": [],
    }
    assert salient.dropped_by_kind(before=before, after="- Karen called about the car.")["names"] == []

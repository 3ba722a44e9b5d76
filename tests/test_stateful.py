"""Hypothesis stateful tests over the memory domain (issue 12 item 2).

A RuleBasedStateMachine drives the domain functions the API and the chat turn call, in
any order Hypothesis finds: appends of every role (memoryapp.compaction.
message_append_compacting, which runs the automatic compaction an append trips),
manual compactions, end() with its episode job run at once, the three memory tools on
an agent's thread (open, close, delete; recorded as a tool-call row and a tool-result
row), and deletes of threads, facts and datasets. A model port that fails on demand
makes compactions and extractions fail as well as succeed; a failed job is retried.

After every step the invariants hold (memoryapp.audit): sequence numbers 1..N without
gaps, exactly one active summary, every compacted row inside its summary's range,
prepare's window equal to the un-compacted tail with no tool call split from its result,
the note store under its cap, no current fact invalidated without a successor. Beside
them the machine keeps its own record of every acknowledged message and checks that the
thread holds each exactly once, in order, and nothing else.

Bounded for CI: STATEFUL_EXAMPLES (8) runs of at most STATEFUL_STEPS (30) steps, fresh
randomness each time (a failure prints the program that broke an invariant, shrunk);
``bench/stateful.py`` runs it longer. ``-s`` prints how often each outcome happened.
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, event
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from memoryapp import agents, audit, compaction, datasets, episodic, jobs, llm, notes
from memoryapp.episodic import EpisodeJobFailed
from memoryapp.errors import ModelCallFailed, NoMemoryAgent, ThreadNotFound
from memoryapp.llm.offline import OfflineModel
from memoryapp.llm.port import (
    EpisodeExtraction,
    ModelError,
    OpenNote,
    Summary,
    TranscriptMessage,
)
from memoryapp.llm.registry import GuardedModel
from memoryapp.models import Episode, Fact, Job, MemoryNote, Message, Project, Thread
from memoryapp.tokens import count_tokens
from memoryapp.working import thread_create
from tests.factories import make_project

EXAMPLES = int(os.environ.get("STATEFUL_EXAMPLES", "8"))
STEPS = int(os.environ.get("STATEFUL_STEPS", "30"))
REPEATABLE = os.environ.get("STATEFUL_DERANDOMIZE", "") == "1"

DATASETS = ("ds-a", "ds-b")
# Statements the offline extractor turns into facts, single-valued ones contradicting
# each other (where one lives, what one drives), and plain chatter.
SENTENCES = (
    "I live in Lisbon.",
    "I live in Berlin now.",
    "I drive a Honda Civic.",
    "I drive a Tesla these days.",
    "My sister Mara works at Acme Inc.",
    "I like hiking in the mountains.",
    "What about resale value?",
    "Hybrids hold their value well.",
    "ok",
)
# A name the tools refuse now and then (duplicates weight the draw towards valid ones).
NOTE_NAMES = ("quest", "map", "lore", "quest", "map", "lore", "bad name!")
INTENTS = ("create", "open", "update", "close", "delete")
# What an agent does with one note (open_memory before writing or deleting it).
NOTE_PLANS = (
    ("create",),
    ("open",),
    ("open", "update"),
    ("open", "close"),
    ("open", "delete"),
    ("create", "open", "update"),
)
# Sizes (in the agent's budget below) from small to over maxOpenTokens.
NOTE_CONTENTS = ("gold key", "the dragon sleeps under the hill " * 4, "long saga " * 40)
MAX_OPEN_TOKENS = 60
AGENT_MAX_TOKENS = 300
STORE_CAP_BYTES = 400
# Deletes wipe what the other rules built up: at most one every DELETE_EVERY steps.
DELETE_EVERY = 6
SHORT_WINDOW = 3  # a prepare window shorter than the tail, so its head can cut a pair


class FlakyModel(OfflineModel):
    """The offline model, whose summarize and extract_episode fail while ``failing``."""

    failing = False

    def summarize(
        self,
        *,
        previous_summary: str | None,
        messages: list[TranscriptMessage],
        max_tokens: int,
        open_notes: list[OpenNote] | None = None,
    ) -> Summary:
        if self.failing:
            raise ModelError("injected summarize failure", kind="unavailable")
        return super().summarize(
            previous_summary=previous_summary,
            messages=messages,
            max_tokens=max_tokens,
            open_notes=open_notes,
        )

    def extract_episode(self, *, messages: list[TranscriptMessage]) -> EpisodeExtraction:
        if self.failing:
            raise ModelError("injected extraction failure", kind="timeout")
        return super().extract_episode(messages=messages)


MODEL = FlakyModel()
#: How often each outcome happened over the whole run (printed at its end: run with -s).
OUTCOMES: collections.Counter[str] = collections.Counter()


def _outcome(label: str) -> None:
    event(label)
    OUTCOMES[label] += 1
_projects = itertools.count(1)


def _rows(thread_id: uuid.UUID) -> list[tuple[int, str, str, bool, Any]]:
    return list(
        Message.objects.filter(thread_id=thread_id)
        .order_by("sequence_number")
        .values_list("sequence_number", "role", "content", "is_summary", "compacted_at")
    )


def _refusal(before: dict[str, MemoryNote], intent: str, name: str, content: str) -> str:
    """Why spec 004's rules refuse this call on a store holding ``before``, or "" when
    they allow it (the store cap and token budget as in memoryapp.notes)."""
    note = before.get(name)
    if not notes.NAME_PATTERN.match(name):
        return "bad name"
    if note is None and intent != "create":
        return "no such note"
    if note is not None and not note.is_open and intent in ("create", "update", "close", "delete"):
        return "closed"
    if intent == "open" and note is not None and not note.is_open:
        held = sum(n.tokens for n in before.values() if n.is_open)
        return "over maxOpenTokens" if held + note.tokens > MAX_OPEN_TOKENS else ""
    if intent in ("create", "update"):
        if count_tokens(content) > MAX_OPEN_TOKENS:
            return "content over maxOpenTokens"
        description = note.description if note is not None else "found"
        size = sum(n.bytes for n in before.values()) - (note.bytes if note else 0)
        if size + notes.note_bytes(name, description, content) > STORE_CAP_BYTES:
            return "store cap"
    return ""


class MemoryMachine(RuleBasedStateMachine):
    """One project per run; threads (plain, or an agent's with memory under either
    compaction type) in two datasets; the record of what each thread must hold."""

    threads = Bundle("threads")

    def __init__(self) -> None:
        super().__init__()
        MODEL.failing = False
        self.project: Project = make_project(f"Stateful {next(_projects)}")
        self.summarizer, _ = agents.agent_define(
            project=self.project,
            name="keeper",
            memory={"maxOpenTokens": MAX_OPEN_TOKENS},
            compaction={"type": "summarize", "maxTokens": AGENT_MAX_TOKENS},
        )
        self.slider, _ = agents.agent_define(
            project=self.project,
            name="slider",
            memory={"maxOpenTokens": MAX_OPEN_TOKENS},
            compaction={"type": "sliding-window", "maxTokens": AGENT_MAX_TOKENS},
        )
        # Per live thread: (role, content) of every acknowledged message, in order.
        self.expected: dict[uuid.UUID, list[tuple[str, str]]] = {}
        self.failed_jobs: list[uuid.UUID] = []
        # Facts whose successor was deleted: invalidated for good with no successor.
        self.forgotten: set[uuid.UUID] = set()
        self.steps = self.last_delete = 0

    # --- threads ----------------------------------------------------------------------

    @initialize(target=threads)
    def plain_thread(self) -> uuid.UUID:
        return self._create("plain", DATASETS[0], 3)

    @initialize(target=threads)
    def agent_thread(self) -> uuid.UUID:
        return self._create("keeper", DATASETS[1], None)

    @rule(
        target=threads,
        kind=st.sampled_from(["plain", "keeper", "slider"]),
        dataset=st.sampled_from(DATASETS),
        threshold=st.sampled_from([2, 3, 5, None]),
    )
    def create_thread(self, kind: str, dataset: str, threshold: int | None) -> uuid.UUID:
        return self._create(kind, dataset, threshold)

    def _create(self, kind: str, dataset: str, threshold: int | None) -> uuid.UUID:
        agent = {"plain": None, "keeper": self.summarizer, "slider": self.slider}[kind]
        thread = thread_create(
            project=self.project,
            dataset=dataset,
            auto_compact_threshold=None if agent else threshold,
            agent=agent,
        )
        self.expected[thread.pk] = []
        return thread.pk

    # --- appends and compaction -------------------------------------------------------

    # Two arguments only: Hypothesis orders rules by their number of arguments and falls
    # back on the first one when its draw lands on rules it disabled for the run, so the
    # rule with the fewest arguments runs most. That should be the append.
    @rule(
        thread_id=threads,
        batch=st.tuples(
            st.booleans(),
            st.lists(
                st.tuples(
                    st.sampled_from(["user", "assistant", "system", "tool"]),
                    st.sampled_from(SENTENCES),
                ),
                min_size=1,
                max_size=6,
            ),
        ),
    )
    def append(self, thread_id: uuid.UUID, batch: tuple[bool, list[tuple[str, str]]]) -> None:
        """Append a few messages, the model failing (``batch[0]``) or not."""
        MODEL.failing, messages = batch
        for role, content in messages:
            self._append(thread_id, role, content)

    def _append(self, thread_id: uuid.UUID, role: str, content: str) -> None:
        if thread_id not in self.expected:
            with pytest.raises(ThreadNotFound):
                compaction.message_append_compacting(thread=thread_id, role=role, content=content)
            return
        before = Thread.objects.get(pk=thread_id)
        outcome = compaction.message_append_compacting(thread=thread_id, role=role, content=content)
        assert outcome.message.sequence_number == before.next_sequence
        self.expected[thread_id].append((role, content))
        after = Thread.objects.get(pk=thread_id)
        due = before.auto_compact_threshold is not None and (
            before.uncompacted_count + 1 >= before.auto_compact_threshold
        )
        if before.agent_id is None:
            assert (outcome.compaction is not None) == due
        kind = "agent" if before.agent_id else "plain"
        if outcome.compaction is None:
            return
        _outcome(f"append ({kind}): {'compacted' if outcome.compacted else (outcome.compaction.error and 'compaction failed') or 'not compacted'}")
        if outcome.compaction.error is not None:
            assert MODEL.failing and not outcome.compacted
            assert after.last_compaction_error == outcome.compaction.error
        if outcome.compacted and before.agent_id is None:
            # keepLast 1: everything but the tripping message folded (DESIGN.md 6.2).
            assert after.uncompacted_count == 1
        if due and before.agent_id is None and not MODEL.failing:
            assert outcome.compacted

    @rule(thread_id=threads, failing=st.booleans())
    def compact_now(self, thread_id: uuid.UUID, failing: bool) -> None:
        MODEL.failing = failing
        if thread_id not in self.expected:
            with pytest.raises(ThreadNotFound):
                compaction.compact(thread_id=thread_id)
            return
        rows = _rows(thread_id)
        live = [r for r in rows if not r[3] and r[4] is None]
        try:
            result = compaction.compact(thread_id=thread_id)
        except ModelCallFailed:
            _outcome("compact: model failed")
            assert MODEL.failing
            assert _rows(thread_id) == rows  # a failed run changes nothing
            assert Thread.objects.get(pk=thread_id).last_compaction_error != ""
            return
        _outcome(f"compact: {'nothing to fold' if result is None else 'folded'}")
        if result is None:
            assert live == []
            return
        # Manual compaction (keepLast 0) folds every live message.
        assert (result.from_sequence, result.to_sequence, result.compacted_count) == (
            live[0][0],
            live[-1][0],
            len(live),
        )
        assert Thread.objects.get(pk=thread_id).uncompacted_count == 0

    # --- the memory tools -------------------------------------------------------------

    @rule(
        thread_id=threads,
        name=st.sampled_from(NOTE_NAMES),
        plan=st.sampled_from(NOTE_PLANS) | st.lists(st.sampled_from(INTENTS), min_size=1, max_size=4),
        contents=st.lists(st.sampled_from(NOTE_CONTENTS), min_size=4, max_size=4),
        failing=st.booleans(),
    )
    def tool_calls(
        self, thread_id: uuid.UUID, name: str, plan: list[str], contents: list[str], failing: bool
    ) -> None:
        """A few calls on one note: what an agent does (NOTE_PLANS) or any sequence."""
        MODEL.failing = failing
        for intent, content in zip(plan, contents, strict=False):
            self._tool_call(thread_id, intent, name, content)

    def _tool_call(self, thread_id: uuid.UUID, intent: str, name: str, content: str) -> None:
        tool, arguments = {
            "create": (notes.CLOSE_MEMORY, {"name": name, "description": "found", "content": content}),
            "update": (notes.CLOSE_MEMORY, {"name": name, "content": content}),
            "close": (notes.CLOSE_MEMORY, {"name": name}),
            "open": (notes.OPEN_MEMORY, {"name": name}),
            "delete": (notes.DELETE_MEMORY, {"name": name}),
        }[intent]
        live = thread_id in self.expected
        if not (live and Thread.objects.filter(pk=thread_id, agent__isnull=False).exists()):
            with pytest.raises(NoMemoryAgent if live else ThreadNotFound):
                agents.thread_tool_call(
                    project=self.project, thread_id=thread_id, name=tool, arguments=arguments
                )
            return
        before = {n.name: n for n in MemoryNote.objects.filter(thread_id=thread_id)}
        refused = _refusal(before, intent, name, content)
        outcome = agents.thread_tool_call(
            project=self.project, thread_id=thread_id, name=tool, arguments=arguments
        )
        record = outcome.record
        _outcome(f"tool {intent}: {'refused (' + refused + ')' if refused else 'done'}")
        assert record.outcome.is_error is bool(refused), (intent, name, record.outcome.result)
        assert record.result_message.sequence_number == record.call_message.sequence_number + 1
        self.expected[thread_id] += [
            ("assistant", notes.call_text(tool, arguments)),
            ("tool", record.outcome.result),
        ]
        after = {n.name: n for n in MemoryNote.objects.filter(thread_id=thread_id)}
        if refused:
            # A refused call changes no note (the compaction it led to may write back).
            assert {n: a.is_open for n, a in after.items()} == {n: b.is_open for n, b in before.items()}
        elif intent == "delete":
            assert set(after) == set(before) - {name}
        else:
            assert after[name].is_open is (intent == "open")
            if intent in ("create", "update"):
                assert after[name].content == content

    # --- end() and its job ------------------------------------------------------------

    def _run_job(self, job_id: uuid.UUID, attempt: int) -> None:
        try:
            jobs.job_run(job_id=job_id, attempt=attempt)
        except EpisodeJobFailed:
            assert MODEL.failing
        job = Job.objects.get(pk=job_id)
        _outcome(f"episode job attempt {attempt}: {job.status}")
        args = job.args
        built = Episode.objects.filter(thread=job.thread, from_sequence=args["fromSequence"])
        if MODEL.failing:
            assert (job.status, built.exists()) == (Job.Status.FAILED, False)
            self.failed_jobs.append(job_id)
        else:
            assert (job.status, built.count()) == (Job.Status.SUCCEEDED, 1)
            assert built.get().to_sequence == args["toSequence"]

    @rule(thread_id=threads, failing=st.booleans())
    def end(self, thread_id: uuid.UUID, failing: bool) -> None:
        MODEL.failing = failing
        if thread_id not in self.expected:
            with pytest.raises(ThreadNotFound):
                episodic.thread_end(project=self.project, thread_id=thread_id)
            return
        ended = episodic.thread_end(project=self.project, thread_id=thread_id)
        _outcome(f"end: {'nothing new' if ended is None else 'job queued'}")
        if ended is None:
            return
        job = Job.objects.get(pk=ended.job_id)
        assert job.status == Job.Status.QUEUED
        self._run_job(job.pk, attempt=1)

    @precondition(lambda self: bool(self.failed_jobs))
    @rule(data=st.data(), failing=st.booleans())
    def retry_job(self, data: st.DataObject, failing: bool) -> None:
        MODEL.failing = failing
        job_id = data.draw(st.sampled_from(self.failed_jobs))
        self.failed_jobs.remove(job_id)
        job = Job.objects.filter(pk=job_id).first()
        if job is None:  # its thread was deleted, and the job with it
            return
        retried = jobs.job_retry(job=job)
        assert (retried.pk, retried.status) == (job_id, Job.Status.QUEUED)
        self._run_job(job_id, attempt=job.attempts + 1)

    # --- deletes ----------------------------------------------------------------------

    def _forgetting(self, doomed: Any) -> None:
        """Note the facts whose successor is among ``doomed`` (a Fact queryset)."""
        self.forgotten.update(
            Fact.objects.filter(invalidated_by__in=doomed).values_list("pk", flat=True)
        )

    @precondition(lambda self: self.steps - self.last_delete >= DELETE_EVERY)
    @rule(
        kind=st.sampled_from(["thread", "fact", "dataset"]),
        thread_id=threads,
        dataset=st.sampled_from(DATASETS),
        data=st.data(),
    )
    def delete(self, kind: str, thread_id: uuid.UUID, dataset: str, data: st.DataObject) -> None:
        _outcome(f"delete {kind}")
        self.last_delete = self.steps
        if kind == "thread":
            self._delete_thread(thread_id)
        elif kind == "dataset":
            self._delete_dataset(dataset)
        else:
            ids = sorted(Fact.objects.filter(project=self.project).values_list("pk", flat=True))
            if ids:
                self._delete_fact(data.draw(st.sampled_from(ids)))

    def _delete_thread(self, thread_id: uuid.UUID) -> None:
        thread = Thread.objects.filter(pk=thread_id).first()
        if thread is None:
            assert thread_id not in self.expected
            return
        self._forgetting(Fact.objects.filter(thread_id=thread_id))
        datasets.thread_forget(thread=thread)
        del self.expected[thread_id]
        assert not Message.objects.filter(thread_id=thread_id).exists()
        assert not Fact.objects.filter(thread_id=thread_id).exists()

    def _delete_fact(self, fact_id: uuid.UUID) -> None:
        self._forgetting(Fact.objects.filter(pk=fact_id))
        datasets.fact_forget(project=self.project, fact_id=fact_id)
        assert not Fact.objects.filter(pk=fact_id).exists()
        assert not Fact.objects.filter(invalidated_by=fact_id).exists()

    def _delete_dataset(self, dataset: str) -> None:
        threads = set(
            Thread.objects.filter(project=self.project, dataset=dataset).values_list("pk", flat=True)
        )
        try:
            deleted = datasets.dataset_delete(project=self.project, dataset=dataset)
        except datasets.DatasetNotFound:
            assert threads == set()
            return
        assert deleted.threads == len(threads)
        for thread_id in threads:
            del self.expected[thread_id]
        assert not Fact.objects.filter(project=self.project, dataset=dataset).exists()

    # --- invariants -------------------------------------------------------------------

    @invariant()
    def every_thread_is_well_formed(self) -> None:
        self.steps += 1
        problems = [
            p
            for t in self.expected
            for limit in (audit.PREPARE_LIMIT, SHORT_WINDOW)
            for p in audit.thread_audit(thread_id=t, message_limit=limit)
        ]
        assert problems == []

    @invariant()
    def every_acknowledged_message_is_stored_once(self) -> None:
        for thread_id, expected in self.expected.items():
            stored = [(r[1], r[2]) for r in _rows(thread_id) if not r[3]]
            assert stored == expected

    @invariant()
    def every_fact_has_its_lineage(self) -> None:
        problems = [
            p
            for d in DATASETS
            for p in audit.fact_audit(
                project_id=self.project.pk, dataset=d, successors_forgotten=self.forgotten
            )
        ]
        assert problems == []

    @invariant()
    def the_note_stores_stay_under_their_cap(self) -> None:
        for thread_id in self.expected:
            assert notes.store_bytes(thread_id) <= STORE_CAP_BYTES


@pytest.mark.django_db
def test_it_keeps_every_invariant_whatever_the_sequence_of_operations(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.MEMORY_NOTES_STORE_CAP_BYTES = STORE_CAP_BYTES
    settings.MEMORY_AGENT_MAX_VERBATIM_MESSAGES = 8
    monkeypatch.setattr(llm, "get_model", lambda: GuardedModel(MODEL))
    # Each injected failure is logged with its traceback; hundreds of them say nothing.
    for name in ("memoryapp.compaction", "memoryapp.agent_compaction"):
        logger = logging.getLogger(name)
        monkeypatch.setattr(logger, "disabled", True)
    OUTCOMES.clear()
    run_state_machine_as_test(MemoryMachine, settings=settings_for_ci())
    print("\n".join(f"{n:6} {label}" for label, n in sorted(OUTCOMES.items())))


def settings_for_ci() -> hypothesis_settings:
    """EXAMPLES runs of STEPS steps, no deadline, no example database (nothing written
    into the checkout). Fresh randomness each run (a derandomized run keeps replaying
    the same few short programs); STATEFUL_DERANDOMIZE=1 makes a run repeatable."""
    return hypothesis_settings(
        max_examples=EXAMPLES,
        stateful_step_count=STEPS,
        deadline=None,
        derandomize=REPEATABLE,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )

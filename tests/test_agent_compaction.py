"""Compaction of an agent's thread (memoryapp/agent_compaction.py; spec 004)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from memoryapp import agent_compaction, agents, compaction, llm, notes, serializers, working
from memoryapp.llm.offline import OfflineModel
from memoryapp.llm.registry import GuardedModel
from memoryapp.models import Job, MemoryNote, MemoryNoteVersion, Message, Project, Thread
from memoryapp.results import AutoCompaction, CompactionResult
from tests.test_compaction import WAIT_SECONDS, Gate, finish, run_in_thread_fixture, wait  # noqa: F401
from tests.test_notes import call, make_thread


class SpyModel(OfflineModel):
    """The offline model, counting summarize calls and the open notes each received."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def summarize(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return super().summarize(**kwargs)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> SpyModel:
    model = SpyModel()
    # Handed out as the registry hands out every adapter, so open_notes goes through it.
    monkeypatch.setattr(llm, "get_model", lambda: GuardedModel(model))
    return model


def checkpoint_of(result: CompactionResult) -> dict[str, Any]:
    return dict((result.summary.metadata or {})["checkpoint"])


def quest_thread(project: Project) -> Thread:
    thread = make_thread(project, max_open=1000, max_tokens=1_000_000)
    call(thread, "close_memory", name="quest", description="What the player is trying to do right now, and why",
         content="Find the silver key.")
    call(thread, "open_memory", name="quest")
    return thread


def test_it_rewrites_an_open_note_in_the_summarize_call(project: Project, spy: SpyModel) -> None:
    thread = quest_thread(project)
    call(thread, "close_memory", name="npcs", description="Everyone the player has met", content="Ferryman.")
    compaction.message_append_compacting(thread=thread, role="user", content="The player now wants the golden crown instead.")
    result = compaction.compact(thread_id=thread.pk)
    assert result is not None
    assert (checkpoint_of(result)["modelCalled"], checkpoint_of(result)["writeBacksRefused"], result.compacted_count) == (True, [], 7)
    assert [n.name for n in spy.calls[0]["open_notes"]] == ["quest"]
    quest = MemoryNote.objects.get(name="quest")
    assert quest.content == "Find the silver key.\n- user: The player now wants the golden crown instead."
    assert MemoryNote.objects.get(name="npcs").content == "Ferryman."  # closed: never touched
    last = MemoryNoteVersion.objects.last()
    assert last is not None
    assert (last.author, last.name, last.version, last.message_id) == ("compactor", "quest", 2, result.summary.pk)
    thread.refresh_from_db()
    summary = (result.summary.metadata or {})["checkpoint"]["summary"]
    assert result.summary.content == notes.context_block(summary=summary, notes=list(MemoryNote.objects.filter(thread=thread)))
    assert "### quest — What the player is trying to do right now, and why\nFind the silver key.\n- user: The player" in result.summary.content
    prepared = serializers.window_to_dict(
        working.prepare(thread=working.thread_get(project=project, thread_id=thread.pk, with_summary=True))
    )
    assert prepared["messages"] == [{"role": "system", "content": result.summary.content}]
    assert (prepared["compacted"], prepared["messageCount"]) == (True, 0)


def test_it_refuses_a_write_back_over_the_cap_and_keeps_the_note(project: Project, spy: SpyModel, settings: Any) -> None:
    thread = quest_thread(project)
    size = notes.store_bytes(thread.pk)
    settings.MEMORY_NOTES_STORE_CAP_BYTES = size + 10
    compaction.message_append_compacting(thread=thread, role="user", content="The player now wants the golden crown instead.")
    result = compaction.compact(thread_id=thread.pk)
    assert result is not None and checkpoint_of(result)["modelCalled"]
    assert checkpoint_of(result)["writeBacksRefused"] == [{
        "name": "quest",
        "reason": f"refused, the memory store would be {size + 55} bytes, over its cap of {size + 10} bytes "
        f"(it holds {size} bytes now; this memory would take {size + 55}). Write less, or delete a "
        "memory you no longer need with delete_memory (open it first).",
    }]
    quest = MemoryNote.objects.get(name="quest")
    assert (quest.content, quest.version, quest.is_open) == ("Find the silver key.", 1, True)
    assert "### quest — What the player is trying to do right now, and why\nFind the silver key.\n\n" in result.summary.content


def test_it_refuses_a_write_back_to_a_note_the_agent_wrote_meanwhile(project: Project) -> None:
    thread = quest_thread(project)
    note = MemoryNote.objects.get(name="quest")
    checkpoint = Message.objects.create(thread=thread, sequence_number=99, role="system", content="x", is_summary=True)
    call(thread, "close_memory", name="quest", content="Agent's newer text.")
    call(thread, "open_memory", name="quest")
    reason = notes.note_write_back(
        thread=thread, agent=thread.agent, name="quest", content="old view", read_version=note.version,  # type: ignore[arg-type]
        checkpoint=checkpoint,
    )
    assert reason == "'quest' was written by the agent meanwhile"
    assert MemoryNote.objects.get(name="quest").content == "Agent's newer text."


def test_it_forces_a_checkpoint_at_200_without_a_model_call_when_nothing_is_new(project: Project, spy: SpyModel) -> None:
    thread = quest_thread(project)  # 4 messages, all tool calls and results
    compaction.message_append_compacting(thread=thread, role="user", content="The player now wants the golden crown instead.")
    first = compaction.compact(thread_id=thread.pk)
    assert first is not None and len(spy.calls) == 1
    summary = (first.summary.metadata or {})["checkpoint"]["summary"]
    for _ in range(99):
        agents.thread_tool_call(project=project, thread_id=thread.pk, name="open_memory", arguments={"name": "quest"})
    thread.refresh_from_db()
    assert (thread.uncompacted_count, thread.compaction_count) == (198, 1)
    agents.thread_tool_call(project=project, thread_id=thread.pk, name="open_memory", arguments={"name": "quest"})
    thread.refresh_from_db()
    assert (thread.uncompacted_count, thread.compaction_count) == (0, 2)
    assert len(spy.calls) == 1  # no model call for the forced checkpoint
    checkpoint = thread.active_summary
    assert checkpoint is not None and checkpoint.metadata is not None
    assert checkpoint.metadata["checkpoint"] == {
        "kind": "summarize", "forced": True, "summary": summary, "modelCalled": False, "writeBacksRefused": [],
    }
    assert (checkpoint.covers_to_sequence, checkpoint.tokens_total) == (first.summary.sequence_number + 200, None)


def test_it_forces_a_checkpoint_with_a_model_call_when_messages_are_new(project: Project, spy: SpyModel, settings: Any) -> None:
    settings.MEMORY_AGENT_MAX_VERBATIM_MESSAGES = 10
    thread = quest_thread(project)
    for i in range(6):
        compaction.message_append_compacting(thread=thread, role="user", content=f"Line {i} of the story.")
    thread.refresh_from_db()
    assert (thread.uncompacted_count, thread.compaction_count, len(spy.calls)) == (1, 1, 1)
    assert (thread.active_summary.metadata or {})["checkpoint"]["forced"] is True  # type: ignore[union-attr]


def test_it_slides_the_window_with_no_summary_and_no_model_call(project: Project, spy: SpyModel) -> None:
    thread = make_thread(project, max_open=None, max_tokens=1000, kind="sliding-window")
    for i in range(11):
        compaction.message_append_compacting(thread=thread, role="user", content=f"{i:03d}" + "x" * 397)  # 100 tokens each
    thread.refresh_from_db()
    assert spy.calls == []
    assert (thread.compaction_count, thread.uncompacted_count) == (1, 5)
    live = list(Message.objects.filter(thread=thread, compacted_at__isnull=True, is_summary=False))
    assert [m.content[:3] for m in live] == ["006", "007", "008", "009", "010"]
    checkpoint = thread.active_summary
    assert checkpoint is not None
    assert checkpoint.content == notes.context_block(summary=None, notes=[])
    assert (checkpoint.metadata or {})["checkpoint"]["modelCalled"] is False


def test_it_compacts_by_the_agent_budget_keeping_half_of_it_verbatim(project: Project, spy: SpyModel) -> None:
    thread = make_thread(project, max_open=None, max_tokens=1000)
    for i in range(11):
        compaction.message_append_compacting(thread=thread, role="user", content=f"{i:03d}" + "x" * 397)
    thread.refresh_from_db()
    assert (thread.compaction_count, thread.uncompacted_count, len(spy.calls)) == (1, 5, 1)
    assert spy.calls[0]["open_notes"] == []


def msg(seq: int, tokens: int, meta: dict[str, Any] | None = None) -> Message:
    return Message(sequence_number=seq, role="tool" if meta and "toolResult" in meta else "assistant",
                   content="x" * (4 * tokens), metadata=meta)


def test_it_never_splits_a_tool_call_from_its_result_at_the_boundary(project: Project) -> None:
    thread = make_thread(project, max_open=100, max_tokens=1000)
    agent = thread.agent
    assert agent is not None
    live = [
        msg(1, 400),
        msg(2, 300, {"toolCall": {"id": "c1"}}),
        msg(3, 200, {"toolResult": {"id": "c1"}}),
        msg(4, 200),
    ]
    # 1100 tokens > 1000: half (500) keeps #3 and #4, which would split #2 from #3.
    fold, forced = agent_compaction._plan(thread, agent, live, manual=False)
    assert ([m.sequence_number for m in fold], forced) == ([1, 2, 3], False)


def test_it_waits_for_the_verbatim_half_when_the_checkpoint_is_large(project: Project) -> None:
    thread = make_thread(project, max_open=100, max_tokens=1000)
    agent = thread.agent
    assert agent is not None
    thread.active_summary = Message(content="x" * 4 * 700)  # a 700-token checkpoint
    # 700 + 400 passes 1000, but 400 verbatim tokens are within half: no run.
    assert agent_compaction._plan(thread, agent, [msg(1, 200), msg(2, 200)], manual=False) == ([], False)
    fold, _ = agent_compaction._plan(thread, agent, [msg(1, 300), msg(2, 300)], manual=False)
    assert [m.sequence_number for m in fold] == [1]


# --- appends made during an agent's run (the catch-up of memoryapp.compaction) ------------------


def hundred_tokens(i: int) -> str:
    return f"{i:03d}" + "x" * 397


def live_numbers(thread: Thread) -> list[int]:
    return list(
        Message.objects.filter(thread=thread, compacted_at__isnull=True, is_summary=False)
        .order_by("sequence_number").values_list("sequence_number", flat=True)
    )


@pytest.fixture
def held_run(monkeypatch: pytest.MonkeyPatch) -> Gate:
    """Hold the run made on the thread named ``writer`` between its read and its commit
    (where a summarize call would be), until the gate is released."""
    gate = Gate()
    summarize = agent_compaction._summarize

    def held(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "writer" and not gate.entered.is_set():
            gate.entered.set()
            assert gate.release.wait(WAIT_SECONDS), "the run was never released"
        return summarize(*args, **kwargs)

    monkeypatch.setattr(agent_compaction, "_summarize", held)
    return gate


def race_appends_with_a_run(project: Project, held_run: Gate, run_in_thread: Any, kind: str) -> tuple[Thread, Any]:
    """An agent (maxTokens 1000, 100-token messages) whose 11th append trips a run that
    folds #1-#6; while it is held, #12-#17 are appended, each finding the lease taken."""
    thread = make_thread(project, max_open=None, max_tokens=1000, kind=kind)
    for i in range(1, 11):
        compaction.message_append_compacting(thread=thread, role="user", content=hundred_tokens(i))
    assert (live_numbers(thread), Thread.objects.get(pk=thread.pk).compaction_count) == (list(range(1, 11)), 0)
    box = run_in_thread(
        "writer",
        lambda: compaction.message_append_compacting(thread=thread.pk, role="user", content=hundred_tokens(11)),
    )
    wait(held_run.entered)
    turned_away = [
        compaction.message_append_compacting(thread=thread, role="user", content=hundred_tokens(i)).compaction
        for i in range(12, 18)
    ]
    assert turned_away == [AutoCompaction()] * 6  # the lease was taken: no run, no error
    held_run.release.set()
    return thread, finish(box)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["sliding-window", "summarize"])
def test_it_catches_up_with_appends_made_during_an_agents_run(
    project: Project, held_run: Gate, run_in_thread: Any, kind: str, settings: Any
) -> None:
    # The run folded #1-#6 and kept #7-#11; #12-#17 arrived meanwhile, so at its commit
    # 11 messages (1100 tokens) were verbatim again, over the budget of 1000. The same
    # call looks again after letting go of the lease and runs once more, keeping the
    # newest 500 tokens (#13-#17). It used to stop after its run and leave the thread
    # over budget until the next append.
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    thread, outcome = race_appends_with_a_run(project, held_run, run_in_thread, kind)
    assert [(r.from_sequence, r.to_sequence, r.compacted_count) for r in outcome.compaction.runs] == [
        (1, 6, 6), (7, 12, 6),
    ]
    assert (outcome.message.sequence_number, outcome.compacted, outcome.compaction.error) == (11, True, None)
    thread.refresh_from_db()
    assert live_numbers(thread) == [13, 14, 15, 16, 17]
    checkpoint = thread.active_summary
    assert checkpoint is not None
    assert (checkpoint.sequence_number, checkpoint.covers_from_sequence, checkpoint.covers_to_sequence) == (19, 1, 12)
    assert (thread.compaction_count, thread.uncompacted_count, thread.next_sequence) == (2, 5, 20)
    assert thread.compaction_lease_until is None
    assert agent_compaction.is_due(thread_id=thread.pk) is False
    window = working.prepare(thread=thread.pk)
    assert [m.content for m in window.messages] == [checkpoint.content] + [hundred_tokens(i) for i in range(13, 18)]


@pytest.mark.django_db(transaction=True)
def test_it_queues_an_agents_catch_up_when_appends_outlast_its_runs(
    project: Project, held_run: Gate, run_in_thread: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One call makes at most MAX_CATCH_UP_RUNS runs (1 here); the rest is handed to a
    # job, as on an ordinary thread (tests run jobs at once).
    monkeypatch.setattr(compaction, "MAX_CATCH_UP_RUNS", 1)
    thread, outcome = race_appends_with_a_run(project, held_run, run_in_thread, "sliding-window")
    assert [(r.from_sequence, r.to_sequence) for r in outcome.compaction.runs] == [(1, 6)]
    job = Job.objects.get(kind=compaction.AUTO_COMPACTION_JOB)
    assert (job.status, job.args, job.result, job.thread_id) == (
        Job.Status.SUCCEEDED, {"keepFromSequence": 17}, {"runs": 1, "error": None}, thread.pk,
    )
    thread.refresh_from_db()
    assert live_numbers(thread) == [13, 14, 15, 16, 17]
    assert (thread.compaction_count, thread.uncompacted_count) == (2, 5)


def test_it_reads_an_agents_plan_again_only_when_something_was_appended_during_its_run(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Looking again costs a read of every verbatim message; with no append racing the
    # run (the usual case) the newest message's number is enough to know nothing is due.
    looks: list[object] = []
    is_due = agent_compaction.is_due

    def counted(**kwargs: Any) -> bool:
        looks.append(kwargs["thread_id"])
        return is_due(**kwargs)

    monkeypatch.setattr(agent_compaction, "is_due", counted)
    thread = make_thread(project, max_open=None, max_tokens=1000, kind="sliding-window")
    outcomes = [
        compaction.message_append_compacting(thread=thread, role="user", content=hundred_tokens(i))
        for i in range(1, 12)
    ]
    assert [o.compacted for o in outcomes] == [False] * 10 + [True]
    assert looks == []
    assert live_numbers(thread) == [7, 8, 9, 10, 11]
    # A message appended while the run held the lease (here: before it looked again) is
    # what makes it read the plan afresh.
    outcome = compaction.auto_compact(thread_id=thread.pk, keep_from_sequence=5)
    assert (outcome, looks) == (AutoCompaction(), [thread.pk])


def test_an_open_note_over_a_lowered_budget_stays_open_and_in_full_in_the_context(project: Project) -> None:
    # Spec 004: only the agent opens and closes, so lowering maxOpenTokens under an open
    # note closes nothing; the compactor may not write it past the budget, so it is kept
    # as it was until the agent shortens (or deletes) it.
    thread = make_thread(project, max_open=1000, max_tokens=8000)
    call(thread, "close_memory", name="a", description="Ferry plans", content="x" * 3240)
    call(thread, "close_memory", name="b", description="Beta", content="y" * 3240)
    call(thread, "open_memory", name="a")
    agents.agent_define(project=project, name="dm", memory={"maxOpenTokens": 100},
                        compaction={"type": "summarize", "maxTokens": 8000})
    compaction.message_append_compacting(thread=thread, role="user", content="The ferry leaves at dawn.")
    result = compaction.compact(thread_id=thread.pk)
    assert result is not None
    # The offline compactor appends "- user: The ferry leaves at dawn." (3,274 characters: 819 tokens).
    assert checkpoint_of(result)["writeBacksRefused"] == [{
        "name": "a",
        "reason": "the content is 819 tokens, over maxOpenTokens 100, so it could never be opened again. "
        "Shorten it, or split it into several memories.",
    }]
    a = MemoryNote.objects.get(name="a")
    assert (a.is_open, a.content, a.version) == (True, "x" * 3240, 1)
    assert result.summary.content == (
        f"{notes.BLOCK_OPENING}\n\n## Summary of earlier conversation\n\n- user: The ferry leaves at dawn.\n\n"
        f"## Open memories — current as of this point\n\n### a — Ferry plans\n{'x' * 3240}\n\n"
        f"## Closed memories — call open_memory to read one\n\n- b — Beta\n\n{notes.BLOCK_CLOSING}"
    )
    prepared = serializers.window_to_dict(
        working.prepare(thread=working.thread_get(project=project, thread_id=thread.pk, with_summary=True))
    )
    assert prepared["messages"] == [{"role": "system", "content": result.summary.content}]

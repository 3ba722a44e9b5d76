"""The episode job and episode reads (memoryapp/episodic.py; issue 8 items 1-2, 4)."""

from __future__ import annotations

from typing import Any

import pytest

from memoryapp import episodic, semantic, serializers, working
from memoryapp.errors import EpisodeNotFound, ThreadNotFound
from memoryapp.models import Entity, Episode, Fact, Message, Project, Thread
from tests.conftest import Clock


def _say(thread: Thread, *lines: str, role: str = "user") -> list[Message]:
    return [working.message_append(thread=thread, role=role, content=c).message for c in lines]


def _thread(project: Project, dataset: str = "user_42") -> Thread:
    return working.thread_create(project=project, dataset=dataset)


def test_it_writes_one_episode_with_facts_from_the_raw_rows(project: Project, clock: Clock) -> None:
    thread = _thread(project)
    car, sister = _say(thread, "I drive a Honda Civic", "my sister is Mara")
    _say(thread, "Nice to meet you!", role="assistant")

    built = episodic.episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=3)

    episode = built.episode
    assert episode is not None and built.created
    assert (episode.from_sequence, episode.to_sequence, episode.dataset) == (1, 3, "user_42")
    assert episode.title == "Honda Civic, Mara"
    assert episode.summary == "- The user drives a Honda Civic.\n- The user's sister is Mara."
    assert episode.quoted_message_ids == [str(car.id), str(sister.id)]
    facts = {f.attribute: f for f in Fact.objects.all()}
    assert set(facts) == {"car", "sister"}
    assert facts["car"].text == "The user drives a Honda Civic."
    assert facts["car"].source_message_ids == [str(car.id)]
    assert facts["car"].valid_from == car.created_at
    assert facts["car"].episode_id == episode.pk
    assert facts["sister"].value == "Mara"
    assert sorted(e.name for e in facts["sister"].entities.all()) == ["Mara", "user"]
    assert serializers.episode_built_to_dict(built) == {
        "episodeId": str(episode.pk),
        "created": True,
        "factsCreated": 2,
        "factsMerged": 0,
        "factsInvalidated": 0,
    }


def test_it_never_reads_the_compaction_summary(project: Project) -> None:
    thread = _thread(project)
    _say(thread, "I live in Lisbon")
    Message.objects.create(
        thread=thread,
        sequence_number=2,
        role="system",
        is_summary=True,
        content="Summary: I live in Oslo",
        covers_from_sequence=1,
        covers_to_sequence=1,
    )
    Thread.objects.filter(pk=thread.pk).update(next_sequence=3)

    episodic.episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=2)

    assert list(Fact.objects.values_list("value", flat=True)) == ["Lisbon"]


def test_it_writes_nothing_twice_when_run_again(project: Project) -> None:
    thread = _thread(project)
    _say(thread, "I drive a Honda Civic", "my sister is Mara")
    first = episodic.episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=2)

    again = episodic.episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=2)

    assert again.created is False
    assert again.episode == first.episode
    assert (Episode.objects.count(), Fact.objects.count(), Entity.objects.count()) == (1, 2, 3)


def test_it_leaves_nothing_when_the_job_fails_half_way_and_succeeds_on_retry(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread = _thread(project)
    _say(thread, "I drive a Honda Civic", "my sister is Mara")
    real = semantic._store_one
    calls: list[int] = []

    def fail_on_second(**kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        real(**kwargs)

    monkeypatch.setattr(semantic, "_store_one", fail_on_second)
    with pytest.raises(RuntimeError, match="disk full"):
        episodic.episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=2)
    assert (Episode.objects.count(), Fact.objects.count(), Entity.objects.count()) == (0, 0, 0)

    monkeypatch.setattr(semantic, "_store_one", real)
    retried = episodic.episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=2)

    assert retried.created is True
    assert (Episode.objects.count(), Fact.objects.count()) == (1, 2)


def test_it_fails_the_job_without_writing_when_the_model_call_fails(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memoryapp.llm.offline import OfflineModel
    from memoryapp.llm.port import ModelError

    def broken(self: OfflineModel, **kwargs: Any) -> None:
        raise ModelError("the answer was not JSON", kind="bad_response")

    monkeypatch.setattr(OfflineModel, "extract_episode", broken)
    thread = _thread(project)
    _say(thread, "I drive a Honda Civic")

    with pytest.raises(
        episodic.EpisodeJobFailed,
        match=r"Model call failed \(bad_response\): the answer was not JSON",
    ):
        episodic.episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=1)
    assert Episode.objects.count() == 0


def test_it_raises_thread_not_found_for_a_deleted_thread(project: Project) -> None:
    thread = _thread(project)
    _say(thread, "I drive a Honda Civic")
    working.thread_delete(thread=thread)
    with pytest.raises(ThreadNotFound):
        episodic.episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=1)


def test_it_pages_episodes_newest_first_with_a_cursor(project: Project, clock: Clock) -> None:
    thread = _thread(project)
    for n in range(3):
        clock.set(f"2026-08-16T09:0{n}:00.000Z")
        _say(thread, f"I moved to City{n} today")
        episodic.episode_build(thread_id=thread.pk, from_sequence=n + 1, to_sequence=n + 1)

    page, cursor = episodic.episode_list(project=project, dataset="user_42", limit=2)
    rest, end = episodic.episode_list(project=project, dataset="user_42", limit=2, cursor=cursor)

    assert [e.from_sequence for e in page] == [3, 2]
    assert [e.from_sequence for e in rest] == [1]
    assert end is None


def test_it_hides_another_projects_episode(project: Project) -> None:
    other = Project.objects.create(slug="other", name="Other")
    thread = _thread(other)
    _say(thread, "I drive a Honda Civic")
    built = episodic.episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=1)
    assert built.episode is not None
    with pytest.raises(EpisodeNotFound):
        episodic.episode_get(project=project, episode_id=built.episode.pk)
    with pytest.raises(ThreadNotFound):
        episodic.episode_list(project=project, thread_id=thread.pk)


def test_it_finds_episodes_by_words_of_their_summary(project: Project) -> None:
    thread = _thread(project)
    _say(thread, "I drive a Honda Civic", "my sister is Mara")
    built = episodic.episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=2)

    found = episodic.episode_search(project=project, dataset="user_42", terms=["civic"])

    assert [e for e, _ in found] == [built.episode]
    assert episodic.episode_search(project=project, dataset="other", terms=["civic"]) == []


def test_it_reads_named_participants_from_thread_metadata(project: Project) -> None:
    thread = working.thread_create(
        project=project,
        dataset="pen_pals",
        metadata={"participants": {"user": "Ines", "assistant": "Kofi"}},
    )
    _say(thread, "I adopted a puppy named Biscuit.")
    _say(thread, "I live in Accra now.", role="assistant")

    episodic.episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=2)

    facts = sorted((f.subject.name if f.subject else "", f.text) for f in Fact.objects.select_related("subject"))
    assert facts == [
        ("Ines", "Ines adopted a puppy named Biscuit."),
        ("Kofi", "Kofi lives in Accra now."),
    ]


def test_it_ignores_participants_that_are_not_names() -> None:
    assert episodic.participants({"participants": {"user": "A: B", "robot": "R", "assistant": 3}}) == {}
    assert episodic.participants({"participants": ["Ines"]}) == {}
    assert episodic.participants(None) == {}

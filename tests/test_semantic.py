"""Facts and entities: lineage, reads, deletion, search (memoryapp/semantic.py; issue 8)."""

from __future__ import annotations

from typing import Any

import pytest

from memoryapp import audit, datasets, episodic, llm, semantic, serializers, working
from memoryapp.errors import FactNotFound, InvalidInput
from memoryapp.llm.port import EpisodeExtraction, ExtractedEntity, ExtractedFact
from memoryapp.models import Entity, Fact, Message, Project, Thread
from tests.conftest import Clock


def _thread(project: Project, dataset: str = "user_42") -> Thread:
    return working.thread_create(project=project, dataset=dataset)


def _episode(thread: Thread, *lines: str) -> list[Message]:
    """Append ``lines`` as user messages and run the episode job over them."""
    rows = [working.message_append(thread=thread, role="user", content=c).message for c in lines]
    built = episodic.episode_build(
        thread_id=thread.pk,
        from_sequence=rows[0].sequence_number,
        to_sequence=rows[-1].sequence_number,
    )
    assert built.created
    return rows


def test_it_invalidates_the_older_value_of_a_single_valued_attribute(
    project: Project, clock: Clock
) -> None:
    _episode(_thread(project), "I drive a Honda Civic")
    clock.set("2026-08-20T10:00:00.000Z")
    (sold,) = _episode(_thread(project), "I sold the Civic, I drive a Prius now")

    civic = Fact.objects.get(value="Honda Civic")
    prius = Fact.objects.get(value="Prius")
    assert civic.invalidated_by == prius
    assert civic.invalidated_at == prius.valid_from == sold.created_at
    assert prius.invalidated_at is None
    current, _ = semantic.fact_list(project=project, dataset="user_42")
    assert sorted(f.text for f in current) == [
        "The user drives a Prius now.",
        "The user sold the Civic.",
    ]
    every, _ = semantic.fact_list(project=project, dataset="user_42", include_invalidated=True)
    assert civic in every


def _summaries(project: Project) -> dict[str, str]:
    return dict(Entity.objects.filter(project=project).values_list("name", "summary"))


def test_an_entity_summary_moves_on_when_its_fact_is_invalidated(
    project: Project, clock: Clock
) -> None:
    _episode(_thread(project), "I drive a Honda Civic")
    assert _summaries(project)["Honda Civic"] == "The user drives a Honda Civic."
    clock.set("2026-08-20T10:00:00.000Z")
    _episode(_thread(project), "I sold the Civic, I drive a Prius now")

    assert _summaries(project) == {
        "Honda Civic": "The user sold the Civic.",
        "Prius": "The user drives a Prius now.",
        "user": "",
    }


def test_a_deleted_fact_leaves_no_entity_summary_behind(project: Project, clock: Clock) -> None:
    _episode(_thread(project), "I drive a Honda Civic")
    clock.set("2026-08-20T10:00:00.000Z")
    _episode(_thread(project), "I sold the Civic, I drive a Prius now")
    sold = Fact.objects.get(text="The user sold the Civic.")

    datasets.fact_forget(project=project, fact_id=sold.pk)

    # Honda Civic is still named by the invalidated fact, but no current fact is left.
    assert _summaries(project) == {
        "Honda Civic": "",
        "Prius": "The user drives a Prius now.",
        "user": "",
    }


def test_a_forgotten_threads_facts_leave_no_entity_summary_behind(
    project: Project, clock: Clock
) -> None:
    _episode(_thread(project), "I drive a Honda Civic")
    clock.set("2026-08-20T10:00:00.000Z")
    second = _thread(project)
    _episode(second, "my Civic was red")
    assert _summaries(project)["Honda Civic"] == "The user's Civic was red."

    datasets.thread_forget(thread=second)

    assert _summaries(project) == {"Honda Civic": "The user drives a Honda Civic.", "user": ""}


def test_a_model_written_summary_stays_unless_it_is_the_removed_facts_text(
    project: Project, clock: Clock
) -> None:
    _episode(_thread(project), "I drive a Honda Civic", "my sister is Mara")
    # As the Gemini path records them: a summary of its own, and one quoting a fact.
    Entity.objects.filter(key="honda civic").update(summary="A compact car the user owns.")
    Entity.objects.filter(key="user").update(summary="The user's sister is Mara.")
    clock.set("2026-08-20T10:00:00.000Z")
    _episode(_thread(project), "I drive a Prius now")
    assert _summaries(project)["Honda Civic"] == "A compact car the user owns."

    semantic.fact_delete(project=project, fact_id=Fact.objects.get(value="Mara").pk)

    assert _summaries(project) == {
        "Honda Civic": "A compact car the user owns.",
        "Mara": "",
        "Prius": "The user drives a Prius now.",
        # The user's summary is never a fact's text (summaries_track): it goes empty.
        "user": "",
    }


def test_it_merges_a_reworded_duplicate_instead_of_storing_it(
    project: Project, clock: Clock
) -> None:
    """A later value whose words are the earlier one's, or fewer ("a Prius now" after
    "Toyota Prius"), restates it: one fact, both sources."""
    (first,) = _episode(_thread(project), "I drive a Toyota Prius")
    clock.set("2026-08-21T10:00:00.000Z")
    (again,) = _episode(_thread(project), "I drive a Prius now")
    clock.set("2026-08-22T10:00:00.000Z")
    (third,) = _episode(_thread(project), "I drive the Toyota Prius")

    (fact,) = Fact.objects.all()
    assert (fact.value, fact.invalidated_at) == ("Toyota Prius", None)
    assert fact.source_message_ids == [str(first.id), str(again.id), str(third.id)]
    assert Entity.objects.get(key="toyota prius").name == "Toyota Prius"
    assert not Entity.objects.filter(key="prius").exists()


@pytest.mark.parametrize(
    ("earlier", "later", "current"),
    [
        ("I am an engineer", "I am now a senior engineer", "senior engineer"),
        ("I drive a Prius", "I drive a Toyota Prius", "Toyota Prius"),
        ("I live in Portland", "I live in Portland Maine", "Portland Maine"),
    ],
)
def test_a_later_value_that_contains_the_earlier_one_replaces_it(
    project: Project, clock: Clock, earlier: str, later: str, current: str
) -> None:
    """Containment is not duplication: the later value says more (a promotion, a more
    specific name), so it is the current value and the earlier one is invalidated by
    it, as any other value of a single-valued attribute is."""
    _episode(_thread(project), earlier)
    clock.set("2026-08-21T10:00:00.000Z")
    (said,) = _episode(_thread(project), later)

    old = Fact.objects.get(invalidated_at__isnull=False)
    new = Fact.objects.current().get()
    assert new.value == current
    assert (old.invalidated_by, old.invalidated_at) == (new, said.created_at)


def test_a_shorter_later_value_restates_the_more_specific_one(
    project: Project, clock: Clock
) -> None:
    """The other direction: "engineer" after "senior engineer" adds nothing, so it is
    merged into the current "senior engineer", which stays current."""
    (first,) = _episode(_thread(project), "I'm a senior engineer")
    clock.set("2026-08-21T10:00:00.000Z")
    (again,) = _episode(_thread(project), "I'm an engineer")

    (fact,) = Fact.objects.all()
    assert (fact.value, fact.invalidated_at) == ("senior engineer", None)
    assert fact.source_message_ids == [str(first.id), str(again.id)]


def test_an_out_of_order_less_specific_statement_is_stored_invalidated(
    project: Project, clock: Clock
) -> None:
    """Extracted out of order, the earlier "engineer" arrives after the later "senior
    engineer": it is the earlier statement, so it is stored invalidated by the newer
    one, not merged into it."""
    clock.set("2026-08-21T10:00:00.000Z")
    _episode(_thread(project), "I am now a senior engineer")
    other = _thread(project)
    msg = working.message_append(thread=other, role="user", content="I am an engineer").message
    Message.objects.filter(pk=msg.pk).update(created_at=clock.now.replace(year=2025))
    episodic.episode_build(thread_id=other.pk, from_sequence=1, to_sequence=1)

    senior, plain = Fact.objects.get(value="senior engineer"), Fact.objects.get(value="engineer")
    assert (plain.invalidated_by, senior.invalidated_at) == (senior, None)


@pytest.mark.parametrize(
    ("later", "earlier", "expected"),
    [
        ("prius", "prius", True),
        ("prius", "toyota prius", True),
        ("prius toyota", "toyota prius", True),
        ("dog", "dogs", True),
        ("toyota prius", "prius", False),
        ("senior engineer", "engineer", False),
        ("engineer", "senior engineer", True),
        ("quit", "engineer", False),
        ("", "engineer", False),
    ],
)
def test_a_later_value_restates_an_earlier_one_only_with_no_word_of_its_own(
    later: str, earlier: str, expected: bool
) -> None:
    assert semantic.restates(later, earlier) is expected


def test_it_keeps_several_values_of_a_multi_valued_attribute(project: Project) -> None:
    _episode(_thread(project), "my sister is Mara", "my sister is Lena")
    assert sorted(Fact.objects.current().values_list("value", flat=True)) == ["Lena", "Mara"]


def test_it_stores_an_older_statement_already_invalidated(project: Project, clock: Clock) -> None:
    thread = _thread(project)
    clock.set("2026-08-20T10:00:00.000Z")
    _episode(thread, "I live in Berlin")
    other = _thread(project)
    msg = working.message_append(thread=other, role="user", content="I live in Paris").message
    Message.objects.filter(pk=msg.pk).update(created_at=clock.now.replace(year=2025))
    episodic.episode_build(thread_id=other.pk, from_sequence=1, to_sequence=1)

    paris = Fact.objects.get(value="Paris")
    assert paris.invalidated_by == Fact.objects.get(value="Berlin")
    assert Fact.objects.current().get().value == "Berlin"


def test_it_keeps_datasets_apart(project: Project) -> None:
    _episode(_thread(project, "alice"), "I drive a Honda Civic")
    _episode(_thread(project, "bob"), "I drive a Prius")
    assert Fact.objects.current().count() == 2
    facts, _ = semantic.fact_list(project=project, dataset="bob")
    assert [f.value for f in facts] == ["Prius"]


def test_it_lists_facts_about_or_mentioning_an_entity(project: Project) -> None:
    _episode(_thread(project), "I drive a Honda Civic", "my sister is Mara")
    facts, _ = semantic.fact_list(project=project, dataset="user_42", entity="mara")
    assert [f.text for f in facts] == ["The user's sister is Mara."]
    about_user, _ = semantic.fact_list(project=project, dataset="user_42", entity="User")
    assert len(about_user) == 2


def test_it_pages_facts_and_refuses_a_forged_cursor(project: Project, clock: Clock) -> None:
    thread = _thread(project)
    for n, city in enumerate(["Oslo", "Rome", "Kyiv"]):
        clock.set(f"2026-08-16T09:0{n}:00.000Z")
        _episode(thread, f"my friend is {city}")
    page, cursor = semantic.fact_list(project=project, limit=2)
    rest, end = semantic.fact_list(project=project, limit=2, cursor=cursor)
    assert [f.value for f in page + rest] == ["Kyiv", "Rome", "Oslo"]
    assert end is None
    with pytest.raises(InvalidInput) as err:
        semantic.fact_list(project=project, cursor="bm90LWpzb24")
    assert err.value.issues[0]["path"] == ["cursor"]


def test_it_lists_entities_with_their_current_fact_counts(project: Project, clock: Clock) -> None:
    _episode(_thread(project), "I drive a Honda Civic", "my sister is Mara")
    clock.set("2026-08-20T10:00:00.000Z")
    _episode(_thread(project), "I drive a Prius now")
    entities, cursor = semantic.entity_list(project=project, dataset="user_42")
    assert [(e.name, e.kind, serializers.entity_to_dict(e)["factCount"]) for e in entities] == [
        ("Honda Civic", "product", 0),
        ("Mara", "person", 1),
        ("Prius", "product", 1),
        ("user", "person", 2),
    ]
    assert cursor is None


def test_it_forgets_a_deleted_fact_in_search_at_once(project: Project) -> None:
    _episode(_thread(project), "I drive a Honda Civic")
    (fact,) = Fact.objects.all()
    assert [
        f for f, _ in semantic.fact_search(project=project, dataset="user_42", terms=["civic"])
    ] == [fact]

    semantic.fact_delete(project=project, fact_id=fact.pk)

    assert semantic.fact_search(project=project, dataset="user_42", terms=["civic"]) == []
    with pytest.raises(FactNotFound):
        semantic.fact_get(project=project, fact_id=fact.pk)


def test_it_searches_current_facts_unless_asked_for_invalidated_ones(
    project: Project, clock: Clock
) -> None:
    _episode(_thread(project), "I drive a Honda Civic")
    clock.set("2026-08-20T10:00:00.000Z")
    _episode(_thread(project), "I drive a Prius now")
    search = semantic.fact_search
    assert search(project=project, dataset="user_42", terms=["civic"]) == []
    assert [
        f.value
        for f, _ in search(
            project=project, dataset="user_42", terms=["civic"], include_invalidated=True
        )
    ] == ["Honda Civic"]


def test_it_hides_another_projects_fact(project: Project) -> None:
    other = Project.objects.create(slug="other", name="Other")
    _episode(_thread(other), "I drive a Honda Civic")
    (fact,) = Fact.objects.all()
    with pytest.raises(FactNotFound):
        semantic.fact_delete(project=project, fact_id=fact.pk)
    assert Fact.objects.count() == 1


def test_it_serialises_a_fact_in_the_issue_shape(project: Project, clock: Clock) -> None:
    (car,) = _episode(_thread(project), "I drive a Honda Civic")
    fact = Fact.objects.get()
    assert serializers.fact_to_dict(fact) == {
        "factId": str(fact.id),
        "text": "The user drives a Honda Civic.",
        "subject": "user",
        "attribute": "car",
        "value": "Honda Civic",
        "entities": ["user", "Honda Civic"],
        "episodeId": str(fact.episode_id),
        "threadId": str(car.thread_id),
        "sourceMessageIds": [str(car.id)],
        "validFrom": "2026-08-16T09:00:00.000Z",
        "invalidatedAt": None,
        "invalidatedBy": None,
    }


def test_it_invalidates_within_one_episode_in_message_order(project: Project, clock: Clock) -> None:
    _episode(_thread(project), "I live in Oslo", "Actually I moved to Bergen")

    oslo, bergen = Fact.objects.get(value="Oslo"), Fact.objects.get(value="Bergen")
    assert (oslo.invalidated_by, bergen.invalidated_at) == (bergen, None)
    assert list(Fact.objects.current().filter(attribute="lives in")) == [bergen]


def test_a_derived_entity_summary_follows_the_newest_fact_linked_to_it(
    project: Project, clock: Clock
) -> None:
    """Review item 5: the summary was the first fact ever linked ("relocating to Bristol
    next month" though the user lived there since); it is now the newest current fact
    linked to the entity, set in the job's transaction. The user keeps "": it is the
    subject of nearly every fact, so the newest one would be an arbitrary summary."""
    _episode(_thread(project), "I drive a Honda Civic")
    assert _summaries(project) == {"Honda Civic": "The user drives a Honda Civic.", "user": ""}
    clock.set("2026-08-20T10:00:00.000Z")
    _episode(_thread(project), "my Civic was red")
    assert _summaries(project) == {"Honda Civic": "The user's Civic was red.", "user": ""}
    clock.set("2026-08-25T10:00:00.000Z")
    _episode(_thread(project), "I sold the Civic, I drive a Prius now")
    assert _summaries(project) == {
        "Honda Civic": "The user sold the Civic.",
        "Prius": "The user drives a Prius now.",
        "user": "",
    }


class _Model:
    """An adapter whose extract_episode answers what a model (Gemini) would."""

    def __init__(self, facts: list[ExtractedFact], entities: list[ExtractedEntity]) -> None:
        self.facts, self.entities = facts, entities

    def extract_episode(self, *, messages: list[Any]) -> EpisodeExtraction:
        return EpisodeExtraction(
            title="t", summary="s", quoted_sequences=(), facts=self.facts,
            entities=self.entities, model="gemini-test",
        )


def test_a_model_written_entity_summary_is_replaced_by_the_models_next_one(
    project: Project, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    def answer(fact: str, value: str, summary: str) -> None:
        model = _Model(
            [ExtractedFact(text=fact, subject="user", attribute="car", value=value,
                           single_valued=True, entities=(value,), source_sequences=(1,))],
            [ExtractedEntity(name="Honda Civic", kind="product", summary=summary)] if summary else [],
        )
        monkeypatch.setattr(llm, "get_model", lambda: model)

    answer("The user drives a Honda Civic.", "Honda Civic", "A compact car the user drives.")
    _episode(_thread(project), "I drive a Honda Civic")
    assert _summaries(project)["Honda Civic"] == "A compact car the user drives."
    # A later job linking a fact but giving no summary keeps the model's.
    clock.set("2026-08-20T10:00:00.000Z")
    answer("The user's Honda Civic is red.", "Honda Civic", "")
    _episode(_thread(project), "my Civic is red")
    assert _summaries(project)["Honda Civic"] == "A compact car the user drives."
    # A new summary from the model for the existing entity is taken.
    clock.set("2026-08-25T10:00:00.000Z")
    answer("The user sold the Honda Civic.", "Honda Civic", "The user's former car, sold in August 2026.")
    _episode(_thread(project), "I sold the Civic")
    assert _summaries(project)["Honda Civic"] == "The user's former car, sold in August 2026."


def _state(project: Project) -> list[tuple[str, bool | None, str | None]]:
    """Every fact: (text, event, the text of the fact that invalidated it)."""
    return [
        (f.text, f.event, f.invalidated_by.text if f.invalidated_by else None)
        for f in Fact.objects.filter(project=project).order_by("valid_from", "text")
    ]


def test_a_change_of_state_that_happened_is_not_invalidated_by_a_later_value(
    project: Project, clock: Clock
) -> None:
    """"I quit the hospital job." was job = quit, invalidated by the next job and so
    shown "[no longer current ...]": the quitting stays true. It ends the nurse title
    (an event ends older values) and the teacher title does not end it."""
    clock.set("2026-03-10T10:00:00.000Z")
    _episode(_thread(project), "I work as a nurse at the hospital.")
    clock.set("2026-05-02T10:00:00.000Z")
    _episode(_thread(project), "I quit the hospital job.")
    clock.set("2026-06-15T10:00:00.000Z")
    _episode(_thread(project), "I'm a teacher now.")
    assert _state(project) == [
        ("The user works as a nurse at the hospital.", False, "The user quit the hospital job."),
        ("The user quit the hospital job.", True, None),
        ("The user is a teacher now.", False, None),
    ]
    assert audit.fact_audit(project_id=project.pk, dataset="user_42") == []


def test_an_event_stored_after_a_later_value_ends_nothing_and_stays_current(
    project: Project, clock: Clock
) -> None:
    clock.set("2026-03-10T10:00:00.000Z")
    early = _thread(project)
    said = working.message_append(thread=early, role="user", content="I sold the car.").message
    clock.set("2026-06-15T10:00:00.000Z")
    _episode(_thread(project), "I drive a Tesla now.")
    episodic.episode_build(thread_id=early.pk, from_sequence=said.sequence_number, to_sequence=said.sequence_number)
    assert _state(project) == [
        ("The user sold the car.", True, None),
        ("The user drives a Tesla now.", False, None),
    ]
    assert audit.fact_audit(project_id=project.pk, dataset="user_42") == []


def test_it_lists_entities_by_name_whatever_its_case_and_pages_the_same_way(project: Project) -> None:
    """Ordered by the raw name, capitals came before every lower-case name ("Zoe" before
    "anna" and "user")."""
    for name in ["Zoe", "anna", "user", "Bob", "carl"]:
        Entity.objects.create(project=project, dataset="d", name=name, key=semantic.entity_key(name), kind="person")
    first, cursor = semantic.entity_list(project=project, dataset="d", limit=3)
    rest, end = semantic.entity_list(project=project, dataset="d", limit=3, cursor=cursor)

    assert [e.name for e in first] + [e.name for e in rest] == ["anna", "Bob", "carl", "user", "Zoe"]
    assert end is None

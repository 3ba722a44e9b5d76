"""The Memory pages per dataset and the project's Jobs page (playground/memory_views.py,
memoryapp/fact_review.py; issue 8 item 6, issue 7)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from memoryapp import compaction, episodic, fact_review, recall, semantic, working
from memoryapp.models import Entity, Episode, Fact, FactReview, Job, Thread
from tests.conftest import World
from tests.test_dashboard_views import bad_request_text, tree, url


def say_and_end(thread: Thread, content: str) -> None:
    seq = working.message_append(thread=thread, role="user", content=content).message.sequence_number
    episodic.episode_build(thread_id=thread.pk, from_sequence=seq, to_sequence=seq)


def civic_then_prius(world: World) -> tuple[Fact, Fact]:
    """The Civic fact invalidated by the Prius fact (two episodes of the world's thread)."""
    say_and_end(world.thread, "I drive a Honda Civic")
    say_and_end(world.thread, "I sold the Civic, I drive a Prius now")
    civic = Fact.objects.get(text="The user drives a Honda Civic.")
    prius = civic.invalidated_by
    assert prius is not None
    return civic, prius


def _fact(w: World) -> tuple[Any, ...]:
    return (civic_then_prius(w)[0].pk,)


def _entity(w: World) -> tuple[Any, ...]:
    say_and_end(w.thread, "I drive a Honda Civic")
    return (Entity.objects.get(project=w.project, key="honda civic").pk,)


# (url name, args, query, methods answered, a method refused)
VIEWS: list[tuple[str, Callable[[World], tuple[Any, ...]], dict[str, str], list[str], str]] = [
    ("playground:memory", lambda w: (), {}, ["get"], "post"),
    ("playground:dataset", lambda w: (), {"dataset": "user_42"}, ["get"], "post"),
    ("playground:entity", _entity, {}, ["get"], "post"),
    ("playground:fact-delete", _fact, {}, ["post"], "get"),
    ("playground:contradiction-confirm", _fact, {}, ["post"], "get"),
    ("playground:contradiction-restore", _fact, {}, ["post"], "get"),
    ("playground:jobs", lambda w: (), {}, ["get"], "post"),
]


@pytest.mark.parametrize(("name", "args", "query", "methods", "wrong"), VIEWS, ids=[v[0] for v in VIEWS])
def test_it_answers_outsiders_404_wrong_methods_405_and_visitors_a_login(
    world: World, name: str, args: Callable[[World], tuple[Any, ...]], query: dict[str, str],
    methods: list[str], wrong: str,
) -> None:
    target = url(name, world.project, *args(world), **query)
    facts_before = list(Fact.objects.values_list("pk", "invalidated_at", "invalidated_by"))
    outsider = world.client(world.outsider)
    for method in methods:
        assert getattr(outsider, method)(target).status_code == 404
    assert getattr(world.client(world.member), wrong)(target).status_code == 405
    anonymous = getattr(world.client(None), methods[0])(target)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/login/?next=")
    assert list(Fact.objects.values_list("pk", "invalidated_at", "invalidated_by")) == facts_before
    assert FactReview.objects.count() == 0


@pytest.mark.parametrize("role", ["owner", "member"])
def test_it_lists_the_projects_datasets_with_their_counts(world: World, role: str) -> None:
    civic_then_prius(world)
    working.thread_create(project=world.project, dataset="user_7")
    response = world.client(getattr(world, role)).get(url("playground:memory", world.project))
    assert response.status_code == 200
    rows = tree(response).by_testid("dataset-row")
    assert [r.attrs["data-dataset"] for r in rows] == ["user_42", "user_7"]
    counts = [
        [r.by_testid(k)[0].full_text() for k in ("dataset-threads", "dataset-episodes", "dataset-facts")]
        for r in rows
    ]
    assert counts == [["1", "2", "2"], ["1", "0", "0"]]


def test_it_shows_episodes_facts_struck_through_and_the_inbox(world: World) -> None:
    civic, prius = civic_then_prius(world)
    response = world.client(world.member).get(url("playground:dataset", world.project, dataset="user_42"))
    assert response.status_code == 200
    page = tree(response)
    ranges = [e.full_text() for e in page.by_testid("episode-range")]
    assert ranges == ["#1", "#2"]  # one message each: not "#1-#1" (an en dash)
    first_link = page.by_testid("episode-range")[0].attrs["href"]
    assert first_link == f"/dashboard/threads/{world.thread.pk}/?projectId={world.project.pk}&before=2#msg-1"
    facts = {f.attrs["data-fact-id"]: f for f in page.by_testid("fact")}
    assert facts[str(civic.pk)].attrs["data-state"] == "invalidated"
    assert facts[str(civic.pk)].all(lambda n: n.tag == "del")[0].full_text() == civic.text
    assert facts[str(civic.pk)].by_testid("fact-replacement")[0].full_text() == prius.text
    assert facts[str(prius.pk)].attrs["data-state"] == "current"
    inbox = page.by_testid("contradiction")
    assert [c.attrs["data-fact-id"] for c in inbox] == [str(civic.pk)]
    assert inbox[0].by_testid("contradiction-newer")[0].full_text() == prius.text


def test_it_lists_every_entity_of_the_dataset_with_a_link_and_its_current_facts(world: World) -> None:
    """Entities that are no fact's subject (here the cars) are reachable too."""
    civic_then_prius(world)
    page = tree(world.client(world.member).get(url("playground:dataset", world.project, dataset="user_42")))
    by_name = {e.name: e for e in Entity.objects.filter(project=world.project)}
    rows = [
        (e.attrs["data-entity"], e.by_testid("entity-link")[0].attrs["href"], e.by_testid("entity-fact-count")[0].full_text())
        for e in page.by_testid("entity")
    ]
    assert rows == [
        (name, f"/dashboard/memory/entities/{by_name[name].pk}/?projectId={world.project.pk}", count)
        for name, count in [("Honda Civic", "1 current fact"), ("Prius", "1 current fact"), ("user", "2 current facts")]
    ]


def test_it_shows_each_line_of_an_episode_summary_on_its_own_line(world: World) -> None:
    """The offline summary is one "- fact" line per fact; the page keeps those lines apart
    (a <br> between them) instead of running them into one paragraph."""
    for content in ("I drive a Honda Civic", "my sister is Mara"):
        working.message_append(thread=world.thread, role="user", content=content)
    episodic.episode_build(thread_id=world.thread.pk, from_sequence=1, to_sequence=2)
    episode = Episode.objects.get(thread=world.thread)
    assert episode.summary == "- The user drives a Honda Civic.\n- The user's sister is Mara."
    response = world.client(world.member).get(url("playground:dataset", world.project, dataset="user_42"))
    summary = tree(response).by_testid("episode-summary")[0]
    assert [c.tag for c in summary.children] == ["#text", "br", "#text"]
    assert [c.text.strip() for c in summary.children if c.tag == "#text"] == [
        "- The user drives a Honda Civic.", "- The user's sister is Mara.",
    ]


def test_it_answers_the_live_fragment_to_htmx(world: World) -> None:
    civic_then_prius(world)
    response = world.client(world.member).get(
        url("playground:dataset", world.project, dataset="user_42"), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="memory-lists"')
    assert "<html" not in body


def test_it_answers_404_for_a_dataset_the_project_holds_nothing_in(world: World) -> None:
    civic_then_prius(world)
    client = world.client(world.member)
    assert client.get(url("playground:dataset", world.project, dataset="user_42")).status_code == 200
    for name in ("user_4", "USER_42", "nobody"):
        assert client.get(url("playground:dataset", world.project, dataset=name)).status_code == 404


def test_it_sends_a_dataset_page_without_a_dataset_to_the_memory_tab(world: World) -> None:
    response = world.client(world.member).get(url("playground:dataset", world.project))
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('playground:memory')}?projectId={world.project.pk}"


def test_it_shows_an_entity_with_its_facts(world: World) -> None:
    civic, prius = civic_then_prius(world)
    entity = Entity.objects.get(project=world.project, key="user")
    response = world.client(world.member).get(url("playground:entity", world.project, entity.pk))
    assert response.status_code == 200
    page = tree(response)
    assert page.by_testid("entity-name")[0].full_text() == "user"
    assert page.by_testid("entity-kind")[0].full_text() == "person"
    states = {f.attrs["data-fact-id"]: f.attrs["data-state"] for f in page.by_testid("fact")}
    sold = Fact.objects.get(text="The user sold the Civic.")
    assert states == {str(prius.pk): "current", str(sold.pk): "current", str(civic.pk): "invalidated"}


def test_it_answers_404_for_another_projects_entity(world: World) -> None:
    other_thread = working.thread_create(project=world.other_project, dataset="user_42")
    say_and_end(other_thread, "I drive a Honda Civic")
    entity = Entity.objects.get(project=world.other_project, key="honda civic")
    response = world.client(world.member).get(url("playground:entity", world.project, entity.pk))
    assert response.status_code == 404


def test_it_deletes_a_fact_and_recall_stops_returning_it(world: World) -> None:
    civic, prius = civic_then_prius(world)
    response = world.client(world.member).post(url("playground:fact-delete", world.project, prius.pk))
    assert response.status_code == 302
    assert response["Location"] == url("playground:dataset", world.project, dataset="user_42")
    assert not Fact.objects.filter(pk=prius.pk).exists()
    assert semantic.fact_search(project=world.project, dataset="user_42", terms=["Prius"]) == []
    civic.refresh_from_db()
    # The Prius had replaced the Civic: with it gone the Civic is current again.
    assert (civic.invalidated_by_id, civic.invalidated_at) == (None, None)


def test_it_confirms_an_invalidation(world: World) -> None:
    civic, prius = civic_then_prius(world)
    invalidated_at = civic.invalidated_at
    response = world.client(world.member).post(url("playground:contradiction-confirm", world.project, civic.pk))
    assert response.status_code == 302
    review = FactReview.objects.get()
    assert (review.fact_id, review.replaced_by_id, review.action, review.reviewer) == (
        civic.pk, prius.pk, "confirmed", world.member,
    )
    civic.refresh_from_db()
    prius.refresh_from_db()
    assert (civic.invalidated_by_id, civic.invalidated_at) == (prius.pk, invalidated_at)
    assert (prius.invalidated_by_id, prius.invalidated_at) == (None, None)
    assert fact_review.contradiction_list(project=world.project, dataset="user_42") == []
    again = world.client(world.member).post(url("playground:contradiction-confirm", world.project, civic.pk))
    assert again.status_code == 302
    assert FactReview.objects.count() == 1


def test_it_restores_the_older_fact_and_invalidates_the_newer_by_it(world: World) -> None:
    civic, prius = civic_then_prius(world)
    response = world.client(world.owner).post(url("playground:contradiction-restore", world.project, civic.pk))
    assert response.status_code == 302
    civic.refresh_from_db()
    prius.refresh_from_db()
    assert (civic.invalidated_by_id, civic.invalidated_at) == (None, None)
    assert prius.invalidated_by_id == civic.pk
    assert prius.invalidated_at is not None
    reviews = sorted(
        (r.fact_id == civic.pk, r.replaced_by_id == prius.pk or r.replaced_by_id == civic.pk, r.action)
        for r in FactReview.objects.all()
    )
    assert reviews == [(False, True, "restored"), (True, True, "restored")]
    current = Fact.objects.current().filter(project=world.project).values_list("text", flat=True)
    assert sorted(current) == ["The user drives a Honda Civic.", "The user sold the Civic."]
    assert fact_review.contradiction_list(project=world.project, dataset="user_42") == []
    # The Prius entity quoted the Prius fact, now invalidated, and no current fact names it.
    summaries = dict(Entity.objects.filter(project=world.project).values_list("name", "summary"))
    assert summaries == {"Honda Civic": "The user sold the Civic.", "Prius": "", "user": ""}


def _three_homes(world: World) -> tuple[Fact, Fact, Fact]:
    """Boston, then Denver, then Chicago, each said in a thread of its own and ended:
    Boston invalidated by Denver, Denver by Chicago."""
    for content in ["I live in Boston", "I live in Denver now", "I live in Chicago now"]:
        thread = working.thread_create(project=world.project, dataset="user_42")
        say_and_end(thread, content)
    boston, denver, chicago = (
        Fact.objects.get(attribute="lives in", value__startswith=city)
        for city in ("Boston", "Denver", "Chicago")
    )
    assert (boston.invalidated_by_id, denver.invalidated_by_id, chicago.invalidated_by_id) == (
        denver.pk, chicago.pk, None,
    )
    return boston, denver, chicago


def _states(*facts: Fact) -> list[tuple[str, str | None, bool]]:
    """Each fact's value, the value of what invalidated it, and whether its
    invalidation was found when it took effect (invalidation_found_at ==
    invalidated_at, both None for a current fact: a restore's moment)."""
    states = []
    for fact in facts:
        fact.refresh_from_db()
        by = fact.invalidated_by
        assert (fact.invalidated_at is None) == (by is None) == (fact.invalidation_found_at is None)
        states.append((fact.value, by.value if by else None, fact.invalidated_at == fact.invalidation_found_at))
    return states


def test_a_restored_fact_is_the_one_current_value_of_its_attribute(world: World) -> None:
    """Restoring Boston over Denver, which Chicago had replaced since, left Chicago
    current too: two current homes, and recall returned both. The restored fact now
    invalidates every other current value of its single-valued attribute; that
    invalidation is found then and unreviewed, so the inbox offers it as its own entry."""
    boston, denver, chicago = _three_homes(world)
    inbox = fact_review.contradiction_list(project=world.project, dataset="user_42")
    assert sorted((c.older.value, c.newer.value) for c in inbox) == [
        ("Boston", "Denver"), ("Denver", "Chicago"),
    ]

    response = world.client(world.member).post(
        url("playground:contradiction-restore", world.project, boston.pk)
    )

    assert response.status_code == 302
    assert _states(boston, denver, chicago) == [
        ("Boston", None, True),
        ("Denver", "Boston", True),
        ("Chicago", "Boston", True),
    ]
    assert chicago.invalidated_at == denver.invalidated_at
    current = Fact.objects.current().filter(project=world.project, attribute="lives in")
    assert [f.value for f in current] == ["Boston"]
    recalled = recall.recall(
        project=world.project, dataset="user_42", query="where do I live?", include=["facts"]
    )
    assert [f["value"] for f in recalled["facts"] if f["attribute"] == "lives in"] == ["Boston"]
    assert sorted(
        (r.fact.value, r.replaced_by.value, r.action) for r in FactReview.objects.all()
    ) == [("Boston", "Denver", "restored"), ("Denver", "Boston", "restored")]
    inbox = fact_review.contradiction_list(project=world.project, dataset="user_42")
    assert [(c.older.value, c.newer.value) for c in inbox] == [("Chicago", "Boston")]
    page = tree(world.client(world.member).get(url("playground:dataset", world.project, dataset="user_42")))
    assert [c.attrs["data-fact-id"] for c in page.by_testid("contradiction")] == [str(chicago.pk)]

    # That entry restores Chicago the same way: Boston goes, Denver stays replaced.
    fact_review.contradiction_restore(project=world.project, fact_id=chicago.pk, reviewer=None)
    assert _states(boston, denver, chicago) == [
        ("Boston", "Chicago", True),
        ("Denver", "Boston", True),
        ("Chicago", None, True),
    ]
    assert [f.value for f in Fact.objects.current().filter(attribute="lives in")] == ["Chicago"]
    assert fact_review.contradiction_list(project=world.project, dataset="user_42") == []


def _imported_move(world: World) -> tuple[Fact, Fact]:
    """History imported today: "I live in Boston" in March, "we moved to Denver" in
    June (messages dated by createdAt), then end(): Boston invalidated by Denver."""
    thread = working.thread_create(project=world.project, dataset="alice")
    for day, content in [("2026-03-10", "I live in Boston."), ("2026-06-15", "We moved to Denver.")]:
        compaction.message_append_compacting(
            thread=thread, role="user", content=content,
            created_at=datetime.fromisoformat(f"{day}T10:00:00+00:00"),
        )
    episodic.episode_build(thread_id=thread.pk, from_sequence=1, to_sequence=2)
    boston = Fact.objects.get(text="The user lives in Boston.")
    assert boston.invalidated_by is not None
    return boston, boston.invalidated_by


def test_the_inbox_shows_a_contradiction_of_imported_history_when_it_was_found(
    world: World,
) -> None:
    """invalidatedAt is June, months before now: by it the inbox showed nothing."""
    boston, _denver = _imported_move(world)
    assert boston.invalidated_at == datetime.fromisoformat("2026-06-15T10:00:00+00:00")
    found = boston.invalidation_found_at
    assert found is not None and timezone.now() - found < timedelta(minutes=5)
    inbox = fact_review.contradiction_list(project=world.project, dataset="alice")
    assert [(c.older.text, c.newer.text) for c in inbox] == [
        ("The user lives in Boston.", "The user and others moved to Denver.")
    ]
    page = tree(world.client(world.member).get(url("playground:dataset", world.project, dataset="alice")))
    assert [c.attrs["data-fact-id"] for c in page.by_testid("contradiction")] == [str(boston.pk)]
    later = found + timedelta(days=settings.MEMORY_CONTRADICTION_DAYS, seconds=1)
    assert fact_review.contradiction_list(project=world.project, dataset="alice", now=later) == []


def test_a_restore_and_a_delete_record_when_they_settled_the_pair(world: World) -> None:
    boston, denver = _imported_move(world)
    fact_review.contradiction_restore(project=world.project, fact_id=boston.pk, reviewer=None)
    boston.refresh_from_db()
    denver.refresh_from_db()
    assert (boston.invalidated_by_id, boston.invalidation_found_at) == (None, None)
    assert (denver.invalidated_by_id, denver.invalidation_found_at) == (boston.pk, denver.invalidated_at)
    semantic.fact_delete(project=world.project, fact_id=boston.pk)
    denver.refresh_from_db()
    assert (denver.invalidated_by_id, denver.invalidated_at, denver.invalidation_found_at) == (
        None, None, None,
    )


def test_migration_0023_dates_old_invalidations_by_the_later_facts_creation(world: World) -> None:
    boston, denver = _imported_move(world)
    Fact.objects.filter(pk=denver.pk).update(created=timezone.now() - timedelta(days=30))
    Fact.objects.update(invalidation_found_at=None)
    migration = importlib.import_module("memoryapp.migrations.0023_fact_invalidation_found_at")
    assert migration.backfill_found_at(django_apps, None) == 1
    boston.refresh_from_db()
    assert boston.invalidation_found_at == boston.created
    assert Fact.objects.get(pk=denver.pk).invalidation_found_at is None


def test_it_lists_the_projects_jobs_with_errors_retry_and_threadless_ones(world: World) -> None:
    failed = Job.objects.create(
        project=world.project, thread=None, kind="compaction", args={}, idempotency_key="k1",
        status=Job.Status.FAILED, error="ModelCallFailed: down", attempts=1,
    )
    done = Job.objects.create(
        project=world.project, thread=world.thread, kind="episode", args={}, idempotency_key="k2",
        status=Job.Status.SUCCEEDED, attempts=1,
    )
    client = world.client(world.member)
    page = tree(client.get(url("playground:jobs", world.project)))
    jobs = {j.attrs["data-job-id"]: j for j in page.by_testid("job")}
    assert set(jobs) == {str(failed.pk), str(done.pk)}
    assert jobs[str(failed.pk)].by_testid("job-error")[0].full_text() == "ModelCallFailed: down"
    assert jobs[str(done.pk)].by_testid("job-retry") == []
    only_failed = tree(client.get(url("playground:jobs", world.project, status="failed")))
    assert [j.attrs["data-job-id"] for j in only_failed.by_testid("job")] == [str(failed.pk)]
    bogus = client.get(url("playground:jobs", world.project, status="bogus"))
    assert bad_request_text(bogus) == "status: must be one of queued, running, succeeded, failed (or left out)"
    retried = client.post(url("playground:job-retry", world.project, failed.pk), {"next": "jobs"})
    assert retried["Location"] == url("playground:jobs", world.project)
    failed.refresh_from_db()
    assert (failed.status, failed.attempts) == ("queued", 1)


# --- paging the dataset and entity lists ----------------------------------------------------


def _walk(client: Any, first: str, link: str, item: str) -> list[list[str]]:
    """Follow ``link`` (an "Older" test id) from page ``first``; ``item`` ids per page."""
    pages, target = [], first
    while target:
        page = tree(client.get(target))
        pages.append([n.attrs[item] for n in page.by_testid(item.removeprefix("data-").removesuffix("-id"))])
        older = page.by_testid(link)
        target = older[0].attrs["href"] if older else ""
    return pages


def test_it_pages_a_datasets_facts_and_episodes_with_older_links(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playground import memory_selectors

    monkeypatch.setattr(memory_selectors, "FACTS_PAGE_SIZE", 1)
    monkeypatch.setattr(memory_selectors, "EPISODES_PAGE_SIZE", 1)
    civic_then_prius(world)
    facts = Fact.objects.filter(project=world.project).order_by("-valid_from", "-id")
    episodes = Episode.objects.filter(project=world.project).order_by("-created", "-id")
    assert (len(facts), len(episodes)) == (3, 2)  # the Civic, the Prius, the sale
    newest_episode = episodes[0]
    client = world.client(world.member)
    start = url("playground:dataset", world.project, dataset="user_42")

    assert _walk(client, start, "facts-older", "data-fact-id") == [[str(f.pk)] for f in facts]
    assert _walk(client, start, "episodes-older", "data-episode-id") == [[str(e.pk)] for e in episodes]
    newest = tree(client.get(start))
    assert newest.by_testid("facts-newest") == [] and newest.by_testid("episodes-newest") == []
    older_facts = newest.by_testid("facts-older")[0].attrs["href"]
    older = tree(client.get(older_facts))
    # The other list stays on its page; the live refresh re-renders the same pages.
    assert older.by_testid("facts-newest")[0].attrs["href"] == start
    assert older.by_testid("memory-lists")[0].attrs["data-live-url"] == older_facts
    assert [e.attrs["data-episode-id"] for e in older.by_testid("episode")] == [str(newest_episode.pk)]


def test_it_pages_a_datasets_entities_by_name(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from playground import memory_views

    monkeypatch.setattr(memory_views, "ENTITIES_PAGE_SIZE", 2)
    civic_then_prius(world)
    client = world.client(world.member)
    start = url("playground:dataset", world.project, dataset="user_42")
    assert _walk(client, start, "entities-more", "data-entity") == [["Honda Civic", "Prius"], ["user"]]
    second = tree(client.get(tree(client.get(start)).by_testid("entities-more")[0].attrs["href"]))
    assert second.by_testid("entities-first")[0].attrs["href"] == start


def test_it_pages_an_entitys_facts_with_older_links(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db.models import Q

    from playground import memory_selectors

    monkeypatch.setattr(memory_selectors, "FACTS_PAGE_SIZE", 1)
    civic_then_prius(world)
    entity = Entity.objects.get(project=world.project, key="honda civic")
    expected = [
        str(pk)
        for pk in Fact.objects.filter(Q(subject=entity) | Q(entities=entity))
        .distinct()
        .order_by("-valid_from", "-id")
        .values_list("pk", flat=True)
    ]
    assert len(expected) == 2
    start = url("playground:entity", world.project, entity.pk)
    pages = _walk(world.client(world.member), start, "facts-older", "data-fact-id")
    assert pages == [[pk] for pk in expected]


@pytest.mark.parametrize(
    ("name", "param"),
    [
        ("playground:dataset", "facts"), ("playground:dataset", "episodes"), ("playground:dataset", "entities"),
        ("playground:entity", "cursor"),
    ],
)
def test_it_answers_a_malformed_page_cursor_400_naming_it(world: World, name: str, param: str) -> None:
    say_and_end(world.thread, "I drive a Honda Civic")
    args = (Entity.objects.get(project=world.project, key="honda civic").pk,) if name.endswith("entity") else ()
    query = {"dataset": "user_42"} if name.endswith("dataset") else {}
    response = world.client(world.member).get(url(name, world.project, *args, **query, **{param: "garbage"}))
    assert bad_request_text(response) == f"{param}: malformed cursor (use the page's Older link)"

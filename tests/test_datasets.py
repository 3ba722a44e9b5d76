"""memoryapp.datasets and /v1/memory/datasets (issue 12 item 6, data rights): export a
dataset as JSON, and forget a dataset, a thread or a fact with everything derived from it,
search indexes included."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from memoryapp import agents, compaction, datasets, episodic, working
from memoryapp.chat import chat_turn
from memoryapp.models import (
    Entity,
    Episode,
    Fact,
    Job,
    Membership,
    MemoryNote,
    MemoryNoteVersion,
    Message,
    Project,
    RelayedEvent,
    Thread,
    Turn,
)
from memoryapp.recall import recall
from tests.conftest import Api
from tests.test_dashboard_views import bad_request_text

URL = "/v1/memory/datasets"
# The SQLite full-text tables (migrations 0003/0008 messages, 0007/0011 facts, episodes).
FTS_TABLES = ("memoryapp_message_fts", "memoryapp_fact_fts", "memoryapp_episode_fts")


@dataclass
class Built:
    thread: Thread
    agent_thread: Thread
    job: Job
    word: str


def _build(project: Project, api: Api, dataset: str, word: str) -> Built:
    """A dataset with one of everything: a compacted thread with an episode, facts and
    entities, a finished job with its django-tasks row, a chat turn, a relayed event, and
    an agent thread whose notes have versions. ``word`` is in every piece of content."""
    user, _ = User.objects.get_or_create(username="owner")
    Membership.objects.get_or_create(user=user, project=project)
    thread = working.thread_create(project=project, dataset=dataset, metadata={"w": word})
    for text in (f"I drive a {word} car", f"My sister {word.title()} lives in Lisbon", f"{word} hiking"):
        working.message_append(thread=thread, role="user", content=text)
    episodic.episode_build(thread_id=thread.id, from_sequence=1, to_sequence=3)
    compaction.compact(thread_id=thread.id)
    chat_turn(thread=thread, user=user, content=f"what about {word}?", system_prompt="",
              message_limit=20, verbose=False)
    job = Job.objects.create(project=project, thread=thread, kind="compaction",
                             args={"throughSequence": 3}, idempotency_key=f"{thread.pk}:{word}",
                             status=Job.Status.SUCCEEDED, result={"summary": f"{word} summary"})
    now = timezone.now()
    DBTaskResult.objects.create(args_kwargs={"args": [str(job.pk), 1], "kwargs": {}},
                                task_path="memoryapp.jobs.run_job", backend_name="default",
                                enqueued_at=now, run_after=now, return_value={"w": word})
    RelayedEvent.objects.create(group=f"thread.{thread.pk}", payload={"content": word})
    agent, _ = agents.agent_define(project=project, name=f"dm-{dataset}", memory={})
    agent_thread = working.thread_create(project=project, dataset=dataset, agent=agent)
    path = f"/v1/memory/working/threads/{agent_thread.pk}/tools"
    close = {"name": "quest", "description": f"the {word} quest", "content": f"{word} quest begins"}
    for name, arguments in (("close_memory", close), ("open_memory", {"name": "quest"}),
                            ("close_memory", {"name": "quest", "content": f"{word} quest ends"})):
        resp = api.post(path, {"name": name, "arguments": arguments})
        assert resp.status_code == 200, resp.content
        assert resp.json()["isError"] is False
    return Built(thread, agent_thread, job, word)


def _streamed(resp: object) -> Any:
    return json.loads(b"".join(resp.streaming_content))  # type: ignore[attr-defined]


def _rows_quoting(word: str) -> dict[str, int]:
    """Per table, the rows of any installed model (many-to-many tables included) whose
    values mention ``word`` (case-insensitive)."""
    found: dict[str, int] = {}
    for model in apps.get_models(include_auto_created=True):
        hits = sum(word in json.dumps(list(r), default=str).lower() for r in model._default_manager.values_list())
        if hits:
            found[model._meta.db_table] = hits
    return found


def _fts_rows_matching(word: str) -> dict[str, int]:
    if connection.vendor != "sqlite":
        return {}
    found = {}
    with connection.cursor() as cursor:
        for table in FTS_TABLES:
            cursor.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH %s", [f'"{word}"'])
            if count := cursor.fetchone()[0]:
                found[table] = count
    return found


def _fts_in_step() -> None:
    """Every FTS table holds exactly one row per source row (the triggers kept pace)."""
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        for table, model in zip(FTS_TABLES, (Message, Fact, Episode), strict=True):
            cursor.execute(f"SELECT count(*) FROM {table}")
            assert cursor.fetchone()[0] == model._default_manager.count(), table


@pytest.fixture
def two(api: Api, project: Project) -> tuple[Built, Built]:
    return _build(project, api, "alice", "zorblax"), _build(project, api, "bob", "quintar")


def test_it_exports_every_kind_of_row_of_the_dataset(api: Api, two: tuple[Built, Built]) -> None:
    alice, _ = two
    resp = api.get(f"{URL}/alice/export")
    assert resp.status_code == 200
    assert resp["Content-Disposition"] == 'attachment; filename="dataset-alice.json"'
    body = _streamed(resp)
    assert sorted(body) == ["dataset", "entities", "episodes", "exportedAt", "facts", "threads"]
    assert body["dataset"] == "alice"
    plain, agent = body["threads"]
    assert plain["threadId"] == str(alice.thread.pk)
    assert [m["sequenceNumber"] for m in plain["messages"]] == list(range(1, 7))
    assert plain["messages"][3]["summary"] == {"fromSequence": 1, "toSequence": 3}
    assert plain["messages"][0]["content"] == "I drive a zorblax car"
    assert [t["userMessageId"] for t in plain["turns"]] == [plain["messages"][4]["messageId"]]
    assert plain["notes"] == [] and plain["noteVersions"] == []
    assert agent["threadId"] == str(alice.agent_thread.pk)
    assert [n["content"] for n in agent["notes"]] == ["zorblax quest ends"]
    assert [(v["version"], v["action"], v["content"]) for v in agent["noteVersions"]] == [
        (1, "created", "zorblax quest begins"),
        (2, "updated", "zorblax quest ends"),
    ]
    assert [e["threadId"] for e in body["episodes"]] == [str(alice.thread.pk)]
    facts = Fact.objects.filter(dataset="alice")
    assert sorted(f["factId"] for f in body["facts"]) == sorted(str(f.pk) for f in facts)
    assert len(body["facts"]) >= 1
    names = sorted(Entity.objects.filter(dataset="alice").values_list("name", flat=True))
    assert sorted(e["name"] for e in body["entities"]) == names
    assert "quintar" not in json.dumps(body).lower()


def test_it_answers_404_for_a_dataset_the_project_does_not_hold(
    api: Api, outsider_api: Api, two: tuple[Built, Built]
) -> None:
    for client in (outsider_api, api):
        dataset = "alice" if client is outsider_api else "nobody"
        assert client.get(f"{URL}/{dataset}/export").json() == {"error": "Dataset not found"}
        resp = client.delete(f"{URL}/{dataset}")
        assert (resp.status_code, resp.json()) == (404, {"error": "Dataset not found"})
    assert Thread.objects.filter(dataset="alice").count() == 2
    long = api.delete(f"{URL}/{'x' * 201}")
    assert long.status_code == 400
    assert long.json()["issues"][0]["path"] == ["dataset"]


def test_it_deletes_a_dataset_and_everything_derived_leaving_no_row(
    api: Api, project: Project, two: tuple[Built, Built]
) -> None:
    alice, bob = two
    before = _rows_quoting("zorblax")
    assert {"memoryapp_message", "memoryapp_turn", "memoryapp_job", "memoryapp_memorynote",
            "django_tasks_database_dbtaskresult", "memoryapp_relayedevent"} <= set(before)
    assert _fts_rows_matching("zorblax") != {} if connection.vendor == "sqlite" else True
    expected = {
        "threadsDeleted": 2,
        "messagesDeleted": Message.objects.filter(thread__dataset="alice").count(),
        "episodesDeleted": 1,
        "factsDeleted": Fact.objects.filter(dataset="alice").count(),
        "entitiesDeleted": Entity.objects.filter(dataset="alice").count(),
    }
    resp = api.delete(f"{URL}/alice")
    assert (resp.status_code, resp.json()) == (200, expected)
    assert _rows_quoting("zorblax") == {}
    assert _fts_rows_matching("zorblax") == {}
    _fts_in_step()
    for model in apps.get_app_config("memoryapp").get_models():
        names = {f.name for f in model._meta.get_fields()}
        if "dataset" in names:
            assert not model._default_manager.filter(dataset="alice").exists(), model
        if "thread" in names:
            assert not model._default_manager.filter(thread_id__in=[alice.thread.pk, alice.agent_thread.pk]).exists()
    for query in ("zorblax", "Lisbon", "hiking quest"):
        found = recall(project=project, dataset="alice", query=query)
        assert (found["hasContext"], found["raw"], found["facts"], found["episodes"]) == (False, [], [], [])
    # The other dataset is whole.
    assert _fts_rows_matching("quintar") != {} if connection.vendor == "sqlite" else True
    assert recall(project=project, dataset="bob", query="quintar", include=["raw"])["raw"] != []
    assert Thread.objects.filter(dataset="bob").count() == 2
    assert MemoryNoteVersion.objects.filter(thread=bob.agent_thread).count() == 2
    assert api.get(f"{URL}/alice/export").status_code == 404


def test_it_deletes_a_thread_with_its_orphaned_entities_and_task_rows(
    api: Api, project: Project, two: tuple[Built, Built]
) -> None:
    alice, _ = two
    assert Entity.objects.filter(dataset="alice").exists()
    resp = api.delete(f"/v1/memory/working/threads/{alice.thread.pk}")
    assert resp.status_code == 204
    assert not Entity.objects.filter(dataset="alice").exists()
    assert not DBTaskResult.objects.filter(args_kwargs__args__0=str(alice.job.pk)).exists()
    assert not RelayedEvent.objects.filter(group=f"thread.{alice.thread.pk}").exists()
    assert not Turn.objects.filter(thread_id=alice.thread.pk).exists()
    # Only the dataset's other thread (the agent's, with its notes) still quotes it.
    assert set(_rows_quoting("zorblax")) == {
        "memoryapp_memorynote", "memoryapp_memorynoteversion", "memoryapp_message"
    }
    assert MemoryNote.objects.filter(thread=alice.agent_thread).count() == 1
    assert recall(project=project, dataset="alice", query="Lisbon")["hasContext"] is False


def test_it_deletes_a_fact_and_the_entities_only_it_named(
    api: Api, project: Project, two: tuple[Built, Built]
) -> None:
    thread = working.thread_create(project=project, dataset="carol")
    working.message_append(thread=thread, role="user", content="I drive a Vortigan")
    episodic.episode_build(thread_id=thread.id, from_sequence=1, to_sequence=1)
    fact = Fact.objects.get(dataset="carol")
    named = set(fact.entities.values_list("pk", flat=True)) | {fact.subject_id} - {None}
    assert named
    resp = api.delete(f"/v1/memory/semantic/facts/{fact.pk}")
    assert resp.status_code == 204
    assert not Entity.objects.filter(pk__in=named).exists()
    assert Entity.objects.filter(dataset="alice").exists()
    assert recall(project=project, dataset="carol", query="Vortigan", include=["facts"])["facts"] == []


def test_it_streams_the_export_in_pieces(project: Project, api: Api, two: tuple[Built, Built]) -> None:
    parts = list(datasets.dataset_export(project=project, dataset="bob"))
    assert len(parts) > 10
    assert json.loads("".join(parts))["dataset"] == "bob"
    with pytest.raises(datasets.DatasetNotFound):
        datasets.dataset_export(project=project, dataset="nobody")


def test_it_downloads_the_export_from_the_dashboard(client: Client, project: Project, two: tuple[Built, Built]) -> None:
    client.force_login(User.objects.get(username="owner"))
    resp = client.get("/dashboard/datasets/bob/export/", {"projectId": project.pk})
    assert resp.status_code == 200
    assert resp["Content-Disposition"] == 'attachment; filename="dataset-bob.json"'
    assert _streamed(resp)["threads"][0]["metadata"] == {"w": "quintar"}
    assert client.get("/dashboard/datasets/no/body/export/", {"projectId": project.pk}).status_code == 404
    too_long = client.get(f"/dashboard/datasets/{'x' * 201}/export/", {"projectId": project.pk})
    assert bad_request_text(too_long) == "Dataset names have at most 200 characters"
    page = client.get(f"/dashboard/threads/?projectId={project.pk}&dataset=bob")
    assert b'data-testid="dataset-export"' in page.content
    page = client.get("/dashboard/memory/dataset/", {"projectId": str(project.pk), "dataset": "bob"})
    assert b'href="/dashboard/datasets/bob/export/?projectId=' in page.content



# Legal dataset names that a URL path would otherwise cut or change: a slash (raw or
# %2F), the suffix the export route ends with, query and fragment marks, a percent sign,
# spaces and non-ASCII text.
AWKWARD = ("acme/user 42", "x/export", "x/export/export", "q?a#b%25c", "λ/ü/", "/lead")


def _seed_awkward(project: Project) -> dict[str, Thread]:
    threads = {}
    for name in ("x", *AWKWARD):
        threads[name] = working.thread_create(project=project, dataset=name)
        working.message_append(thread=threads[name], role="user", content=f"hello from {name}")
    return threads


def test_it_exports_and_deletes_every_legal_dataset_name_percent_encoded(
    project: Project, api: Api
) -> None:
    from urllib.parse import quote

    threads = _seed_awkward(project)
    for name in AWKWARD:
        resp = api.get(f"{URL}/{quote(name, safe='')}/export")
        assert resp.status_code == 200, (name, resp.status_code)
        body = _streamed(resp)
        assert (body["dataset"], [t["threadId"] for t in body["threads"]]) == (
            name,
            [str(threads[name].pk)],
        )
    for name in AWKWARD:
        resp = api.delete(f"{URL}/{quote(name, safe='')}")
        assert (resp.status_code, resp.json()["threadsDeleted"]) == (200, 1), name
        assert not Thread.objects.filter(dataset=name).exists()
    assert list(Thread.objects.filter(project=project).values_list("dataset", flat=True)) == ["x"]


def test_it_takes_a_raw_slash_in_a_dataset_name_as_part_of_the_name(project: Project, api: Api) -> None:
    threads = _seed_awkward(project)
    # GET .../{dataset}/export: everything before the last /export is the name.
    for name in ("acme/user 42", "x/export", "x"):
        body = _streamed(api.get(f"{URL}/{name}/export"))
        assert [t["threadId"] for t in body["threads"]] == [str(threads[name].pk)]
    # DELETE of "x/export" (which the export route matches first) deletes that dataset only.
    resp = api.delete(f"{URL}/x/export")
    assert (resp.status_code, resp.json()["threadsDeleted"]) == (200, 1)
    assert sorted(Thread.objects.filter(dataset__startswith="x").values_list("dataset", flat=True)) == [
        "x",
        "x/export/export",
    ]
    assert api.delete(f"{URL}/x/export").json() == {"error": "Dataset not found"}
    assert api.delete(f"{URL}/x/export/export").status_code == 200
    assert api.delete(f"{URL}/x").status_code == 200
    assert not Thread.objects.filter(dataset__startswith="x").exists()


def test_it_validates_a_dataset_name_ending_in_export_as_the_whole_name(api: Api) -> None:
    long = api.delete(f"{URL}/{'x' * 194}/export")  # 201 characters with "/export"
    assert (long.status_code, long.json()["issues"][0]["path"]) == (400, ["dataset"])
    assert api.delete(f"{URL}/{'x' * 193}/export").json() == {"error": "Dataset not found"}
    assert api.delete(f"{URL}/%00/export").json()["issues"][0]["path"] == ["dataset"]


def _export(api: Api, dataset: str) -> dict[str, Any]:
    resp = api.get(f"{URL}/{dataset}/export")
    assert resp.status_code == 200
    return dict(json.loads(b"".join(resp.streaming_content)))


def test_a_thread_moves_dataset_only_until_it_has_long_term_memory(
    api: Api, project: Project
) -> None:
    """Review item 1: moving a thread after end() split its memory: the facts and episode
    stayed in move_a while the thread and its later facts went to move_b, both cars were
    current, and DELETE /datasets/move_b deleted move_a's facts with the thread."""
    tid = api.create_thread(dataset="move_a")["threadId"]
    api.append(tid, "I drive a Volvo XC60.")
    # Before any episode the thread has no memory of its own yet: it moves freely.
    moved = api.patch(f"/v1/memory/working/threads/{tid}", {"dataset": "move_b"})
    assert (moved.status_code, moved.json()["dataset"]) == (200, "move_b")
    assert api.patch(f"/v1/memory/working/threads/{tid}", {"dataset": "move_a"}).status_code == 200
    episodic.episode_build(thread_id=tid, from_sequence=1, to_sequence=1)

    resp = api.patch(f"/v1/memory/working/threads/{tid}", {"dataset": "move_b", "tags": ["x"]})
    assert resp.status_code == 409
    assert resp.json() == {
        "error": "Thread has long-term memory in its dataset",
        "issues": [{
            "path": ["dataset"], "code": "immutable",
            "message": "dataset cannot change once the thread has long-term memory: its episodes, "
            "facts and entities were written in dataset 'move_a'; create a new thread in the "
            "other dataset",
        }],
    }
    thread = Thread.objects.get(pk=tid)
    assert (thread.dataset, thread.tags) == ("move_a", [])  # nothing of the PATCH applied
    # The same dataset again, and the other fields, are still fine.
    same = api.patch(f"/v1/memory/working/threads/{tid}", {"dataset": "move_a", "tags": ["x"]})
    assert (same.status_code, same.json()["dataset"], same.json()["tags"]) == (200, "move_a", ["x"])

    # Everything of the thread is in one dataset: export and delete agree.
    exported = _export(api, "move_a")
    assert [len(exported[k]) for k in ("threads", "episodes", "facts")] == [1, 1, 1]
    assert api.get(f"{URL}/move_b/export").status_code == 404
    assert api.delete(f"{URL}/move_a").json() == {
        "threadsDeleted": 1, "messagesDeleted": 1, "episodesDeleted": 1, "factsDeleted": 1,
        "entitiesDeleted": 2,
    }


@pytest.mark.parametrize("segment", ["%FF", "%ED%A0%80", "%E9", "caf%E9", "a%FFb/c"])
def test_a_dataset_path_that_is_not_utf8_is_refused_not_read_as_u_fffd(
    api: Api, anon_api: Api, segment: str
) -> None:
    """Tester item 4: ``%FF``, ``%ED%A0%80`` (an encoded surrogate) and Latin-1 ``%E9``
    decoded to U+FFFD and addressed the dataset "\\ufffd": DELETE deleted its thread.
    Now 400 naming ``dataset``, after the key is checked; the dataset is kept."""
    bad = api.create_thread(dataset="\ufffd")["threadId"]
    literal = api.create_thread(dataset="%FF")["threadId"]
    refused = {
        "error": "Validation error",
        "issues": [{"path": ["dataset"], "message": "dataset is not valid UTF-8", "code": "invalid_unicode"}],
    }
    for resp in (api.get(f"{URL}/{segment}/export"), api.delete(f"{URL}/{segment}"), api.delete(f"{URL}/{segment}/export")):
        assert (resp.status_code, resp.json()) == (400, refused)
    assert anon_api.delete(f"{URL}/{segment}").status_code == 401
    assert sorted(Thread.objects.values_list("dataset", flat=True)) == ["%FF", "\ufffd"]
    # The same names in UTF-8 still address their datasets.
    assert _export(api, "%EF%BF%BD")["threads"][0]["threadId"] == bad
    assert _export(api, "%25FF")["threads"][0]["threadId"] == literal


def test_an_agent_name_in_a_path_that_is_not_utf8_is_refused(api: Api) -> None:
    refused = [{"path": ["agent_name"], "message": "agent_name is not valid UTF-8", "code": "invalid_unicode"}]
    for resp in (
        api.get("/v1/memory/agents/%FF"),
        api.get("/v1/memory/agents/caf%E9/tools"),
        api.delete("/v1/memory/agents/%E9"),
        api.client.put(
            "/v1/memory/agents/%ED%A0%80", '{"systemPrompt": "x"}', "application/json", headers=api._headers(None)
        ),
    ):
        assert (resp.status_code, resp.json()["issues"]) == (400, refused)
    assert api.get("/v1/memory/agents/caf%C3%A9").json() == {"error": "Agent not found"}


def test_the_dashboard_refuses_a_url_that_is_not_utf8(client: Client, project: Project, two: tuple[Built, Built]) -> None:
    client.force_login(User.objects.get(username="owner"))
    resp = client.get("/dashboard/datasets/%FF/export/", {"projectId": project.pk})
    assert bad_request_text(resp) == "dataset is not valid UTF-8"
    resp = client.get(f"/dashboard/memory/dataset/?projectId={project.pk}&dataset=%E9")
    assert bad_request_text(resp) == "dataset is not valid UTF-8"
    resp = client.get(f"/dashboard/threads/?projectId={project.pk}&dataset=bo%FF")
    assert bad_request_text(resp) == "dataset is not valid UTF-8"
    assert client.get("/dashboard/datasets/bob/export/", {"projectId": project.pk}).status_code == 200

"""POST .../threads/{id}/end and the episode job it queues, through /v1 (issue 8 "Must
show"; memoryapp/episodic.py thread_end, memoryapp/tasks.py episode job)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from memoryapp import compaction, episodic, jobs
from memoryapp.llm import episode_prompt
from memoryapp.models import Entity, Episode, Fact, Job, Message, Project, Thread
from tests.conftest import BASE, Api, Clock, at
from tests.fakes.fixtures import fake_gemini_fixture  # noqa: F401  (registers fake_gemini)
from tests.fakes.gemini_server import FakeGeminiServer, FakeResponse, text_response

MEMORY = "/v1/memory"


@pytest.fixture
def end(django_capture_on_commit_callbacks: Any) -> Any:
    """POST .../end and run the job it queued (the immediate backend runs on commit)."""

    def call(api: Api, thread_id: str) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return api.post(f"{BASE}/threads/{thread_id}/end")

    return call


def _say(api: Api, thread_id: str, *lines: str, role: str = "user") -> list[str]:
    ids = []
    for line in lines:
        resp = api.append(thread_id, line, role=role)
        assert resp.status_code == 201, resp.content
        ids.append(resp.json()["messageId"])
    return ids


def _facts(api: Api, **params: Any) -> list[dict[str, Any]]:
    resp = api.get(f"{MEMORY}/semantic/facts", **params)
    assert resp.status_code == 200, resp.content
    return list(resp.json()["facts"])


def test_it_remembers_a_car_across_two_threads_of_one_dataset(
    api: Api, outsider_api: Api, end: Any, clock: Clock
) -> None:
    first = api.create_thread(dataset="user_42")["threadId"]
    car, _sister = _say(api, first, "I drive a Honda Civic", "my sister is Mara")
    _say(api, first, "Noted!", role="assistant")

    resp = end(api, first)

    assert resp.status_code == 202
    body = resp.json()
    assert body == {
        "jobId": body["jobId"],
        "threadId": first,
        "fromSequence": 1,
        "toSequence": 3,
        "status": "queued",
    }
    job = api.get(f"{MEMORY}/jobs/{body['jobId']}").json()
    (episode,) = api.get(f"{MEMORY}/episodic/episodes", dataset="user_42").json()["episodes"]
    assert (job["kind"], job["status"], job["error"]) == ("episode", "succeeded", None)
    assert job["result"] == {
        "episodeId": episode["episodeId"],
        "created": True,
        "factsCreated": 2,
        "factsMerged": 0,
        "factsInvalidated": 0,
    }
    second = api.create_thread(dataset="user_42")["threadId"]
    assert api.get(f"{BASE}/threads/{second}").status_code == 200
    (fact,) = _facts(api, dataset="user_42", entity="Honda Civic")
    assert (fact["text"], fact["sourceMessageIds"], fact["episodeId"], fact["threadId"]) == (
        "The user drives a Honda Civic.",
        [car],
        episode["episodeId"],
        first,
    )
    assert (episode["fromSequence"], episode["toSequence"]) == (1, 3)
    assert _facts(api, dataset="someone_else") == []
    assert api.get(f"{MEMORY}/episodic/episodes", dataset="someone_else").json()["episodes"] == []
    assert _facts(outsider_api, dataset="user_42") == []
    assert outsider_api.post(f"{BASE}/threads/{first}/end").json() == {"error": "Thread not found"}
    foreign = outsider_api.get(f"{MEMORY}/jobs/{body['jobId']}")
    assert foreign.status_code == 404


def test_it_invalidates_the_civic_by_the_prius_and_merges_a_reworded_prius(
    api: Api, end: Any, clock: Clock
) -> None:
    first = api.create_thread(dataset="user_42")["threadId"]
    _say(api, first, "I drive a Honda Civic")
    end(api, first)
    clock.set("2026-08-20T10:00:00.000Z")
    second = api.create_thread(dataset="user_42")["threadId"]
    (sold,) = _say(api, second, "I sold the Civic, I drive a Prius now")
    end(api, second)

    current = _facts(api, dataset="user_42")
    every = _facts(api, dataset="user_42", includeInvalidated="true")

    prius = next(f for f in current if f["value"] == "Prius")
    civic = next(f for f in every if f["value"] == "Honda Civic")
    assert [f["value"] for f in current if f["attribute"] == "car"] == ["Prius"]
    assert (civic["invalidatedBy"], civic["invalidatedAt"]) == (
        prius["factId"],
        "2026-08-20T10:00:00.000Z",
    )
    assert prius["sourceMessageIds"] == [sold]
    assert len(every) == len(current) + 1

    third = api.create_thread(dataset="user_42")["threadId"]
    (again,) = _say(api, third, "I still drive the Prius")
    resp = end(api, third)
    job = api.get(f"{MEMORY}/jobs/{resp.json()['jobId']}").json()

    assert (job["result"]["factsCreated"], job["result"]["factsMerged"]) == (0, 1)
    assert _facts(api, dataset="user_42", includeInvalidated="true") == [
        {**f, "sourceMessageIds": [sold, again]} if f["factId"] == prius["factId"] else f
        for f in every
    ]


def test_it_dates_imported_facts_by_their_messages_real_time(
    api: Api, end: Any, clock: Clock
) -> None:
    """An import (createdAt on append) in the past: validFrom and invalidatedAt are the
    source messages' real times, whatever the day the import ran."""
    first = api.create_thread(dataset="user_42")["threadId"]
    api.append(first, "I drive a Honda Civic", createdAt="2023-05-08T13:56:00Z")
    end(api, first)
    second = api.create_thread(dataset="user_42")["threadId"]
    api.append(second, "I sold the Civic, I drive a Prius now", createdAt="2023-06-01T08:00:00Z")
    end(api, second)

    every = _facts(api, dataset="user_42", includeInvalidated="true")

    civic = next(f for f in every if f["value"] == "Honda Civic")
    prius = next(f for f in every if f["value"] == "Prius")
    assert (civic["validFrom"], civic["invalidatedAt"], civic["invalidatedBy"]) == (
        "2023-05-08T13:56:00.000Z",
        "2023-06-01T08:00:00.000Z",
        prius["factId"],
    )
    assert (prius["validFrom"], prius["invalidatedAt"]) == ("2023-06-01T08:00:00.000Z", None)


def test_it_makes_one_episode_when_end_is_called_twice_with_nothing_new(api: Api, end: Any) -> None:
    thread = api.create_thread(dataset="user_42")["threadId"]
    _say(api, thread, "I live in Lisbon")
    assert end(api, thread).status_code == 202

    again = end(api, thread)

    assert (again.status_code, again.json()) == (
        200,
        {"ok": True, "queued": False, "message": "Nothing to extract"},
    )
    assert Episode.objects.count() == 1
    _say(api, thread, "I moved to Porto")  # the thread stays writable
    later = end(api, thread).json()
    assert (later["fromSequence"], later["toSequence"]) == (2, 2)
    assert Episode.objects.count() == 2


def test_it_leaves_compaction_summaries_out_of_every_range(api: Api, end: Any) -> None:
    thread = api.create_thread(dataset="user_42")["threadId"]
    _say(api, thread, "I live in Lisbon", "my dog is Rex")
    compaction.compact(thread_id=thread)  # the summary row is sequence 3
    assert end(api, thread).json()["toSequence"] == 2
    assert end(api, thread).json()["queued"] is False
    _say(api, thread, "I work at Acme Corp")
    assert (end(api, thread).json()["fromSequence"]) == 4
    assert Thread.objects.get(pk=thread).episode_through == 4


def test_it_answers_404_for_a_missing_or_malformed_thread(api: Api) -> None:
    for thread_id in ("00000000-0000-0000-0000-000000000000", "nope"):
        resp = api.post(f"{BASE}/threads/{thread_id}/end")
        assert (resp.status_code, resp.json()) == (404, {"error": "Thread not found"})


def test_it_records_why_a_malformed_gemini_answer_failed_and_succeeds_on_retry(
    api: Api, end: Any, fake_gemini: FakeGeminiServer, django_capture_on_commit_callbacks: Any
) -> None:
    thread = api.create_thread(dataset="user_42")["threadId"]
    _say(api, thread, "I drive a Honda Civic")
    fake_gemini.enqueue(FakeResponse(body=text_response('{"title": "x", "facts": ')))

    job_id = end(api, thread).json()["jobId"]

    job = api.get(f"{MEMORY}/jobs/{job_id}").json()
    assert job["status"] == "failed"
    assert "Model call failed (bad_response)" in job["error"]
    assert "not JSON" in job["error"]
    assert (Episode.objects.count(), Fact.objects.count(), Entity.objects.count()) == (0, 0, 0)
    (request,) = fake_gemini.requests
    assert request.generation_config["responseMimeType"] == "application/json"
    assert request.generation_config["responseJsonSchema"] == episode_prompt.EPISODE_SCHEMA

    answer = {
        "title": "Car",
        "summary": "The user drives a Honda Civic.",
        "quotedSequences": [1],
        "facts": [
            {
                "text": "The user drives a Honda Civic.",
                "subject": "user",
                "attribute": "car",
                "value": "Honda Civic",
                "singleValued": True,
                "sourceSequences": [1],
            }
        ],
        "entities": [{"name": "Honda Civic", "kind": "product"}],
    }
    fake_gemini.enqueue(FakeResponse(body=text_response(json.dumps(answer))))
    with django_capture_on_commit_callbacks(execute=True):
        jobs.job_retry(job=Job.objects.get(pk=job_id))

    assert api.get(f"{MEMORY}/jobs/{job_id}").json()["status"] == "succeeded"
    assert [f["value"] for f in _facts(api, dataset="user_42")] == ["Honda Civic"]


def test_it_ends_threads_silent_for_the_projects_idle_time(
    api: Api, project: Project, clock: Clock, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    quiet = api.create_thread(dataset="user_42")["threadId"]
    _say(api, quiet, "I live in Lisbon")
    assert episodic.threads_end_idle() == []  # off by default

    settings.MEMORY_AUTO_END_IDLE_MINUTES = 30
    clock.now += timedelta(minutes=20)
    busy = api.create_thread(dataset="user_42")["threadId"]
    _say(api, busy, "I work at Acme Corp")
    clock.now += timedelta(minutes=11)
    with django_capture_on_commit_callbacks(execute=True):
        (ended,) = episodic.threads_end_idle()

    assert (ended.thread_id, ended.from_sequence, ended.to_sequence) == (quiet, 1, 1)
    assert episodic.threads_end_idle() == []
    Project.objects.filter(pk=project.pk).update(auto_end_idle_minutes=0)
    clock.now += timedelta(hours=1)
    assert episodic.threads_end_idle() == []
    assert str(Episode.objects.get().thread_id) == quiet


def _recall(api: Api, **body: Any) -> Any:
    return api.post(f"{MEMORY}/recall", {"dataset": "user_42", **body})


def test_it_tells_the_honda_story_of_issue_8_over_http(
    api: Api, outsider_api: Api, end: Any, clock: Clock
) -> None:
    """Issue 8 "Must show", bullets 1-2, worded as the issue words them, every step over
    /v1: end() the first thread, recall from a second; then the Prius replaces the Civic
    and a reworded Prius adds nothing."""
    first = api.create_thread(dataset="user_42")["threadId"]
    car, _sister = _say(api, first, "I drive a Honda Civic", "my sister is Mara")
    end(api, first)
    second = api.create_thread(dataset="user_42")["threadId"]

    found = _recall(api, query="what car do I drive", threadId=second).json()

    (episode,) = api.get(f"{MEMORY}/episodic/episodes", dataset="user_42").json()["episodes"]
    (civic,) = [f for f in found["facts"] if f["attribute"] == "car"]
    assert (civic["text"], civic["value"], civic["sourceMessageIds"]) == (
        "The user drives a Honda Civic.",
        "Honda Civic",
        [car],
    )
    assert (civic["episodeId"], civic["threadId"], civic["invalidatedAt"]) == (
        episode["episodeId"],
        first,
        None,
    )
    assert [e["episodeId"] for e in found["episodes"]] == [episode["episodeId"]]
    assert [r["messageId"] for r in found["raw"]] == [car]
    assert found["hasContext"] is True
    assert f'<fact id="{civic["factId"]}"' in found["context"]
    assert f'<message thread="{first}" seq="1"' in found["context"]
    elsewhere = _recall(api, query="what car do I drive", dataset="user_99").json()
    assert (elsewhere["facts"], elsewhere["episodes"], elsewhere["raw"]) == ([], [], [])
    assert (elsewhere["context"], elsewhere["hasContext"]) == ("", False)
    foreign = _recall(outsider_api, query="what car do I drive", threadId=second)
    assert (foreign.status_code, foreign.json()["error"]) == (404, "Thread not found")
    assert outsider_api.delete(f"{MEMORY}/semantic/facts/{civic['factId']}").status_code == 404
    assert Fact.objects.filter(pk=civic["factId"]).exists()
    assert outsider_api.get(f"{MEMORY}/episodic/episodes/{episode['episodeId']}").status_code == 404

    clock.set("2026-08-20T10:00:00.000Z")
    (sold,) = _say(api, second, "I sold the Civic, I drive a Prius now")
    end(api, second)

    now = _recall(api, query="what car do I drive", include=["facts"]).json()["facts"]
    audit = _recall(
        api, query="what car do I drive", include=["facts"], includeInvalidated=True
    ).json()["facts"]
    assert [(f["value"], f["sourceMessageIds"]) for f in now if f["attribute"] == "car"] == [
        ("Prius", [sold])
    ]
    (prius,) = [f for f in now if f["attribute"] == "car"]
    assert sorted(
        (f["value"], f["invalidatedBy"], f["invalidatedAt"])
        for f in audit
        if f["attribute"] == "car"
    ) == [("Honda Civic", prius["factId"], "2026-08-20T10:00:00.000Z"), ("Prius", None, None)]

    before = _facts(api, dataset="user_42", includeInvalidated="true")
    third = api.create_thread(dataset="user_42")["threadId"]
    (again,) = _say(api, third, "I still drive the Prius")
    job = api.get(f"{MEMORY}/jobs/{end(api, third).json()['jobId']}").json()

    assert job["result"]["factsCreated"] == job["result"]["factsInvalidated"] == 0
    after = _facts(api, dataset="user_42", includeInvalidated="true")
    assert len(after) == len(before)
    (merged,) = [f for f in after if f["factId"] == prius["factId"]]
    assert (merged["value"], merged["sourceMessageIds"], merged["invalidatedAt"]) == (
        "Prius",
        [sold, again],
        None,
    )


def test_a_move_said_with_we_and_a_childs_birthday_replace_the_old_facts_through_v1(
    api: Api, end: Any, clock: Clock
) -> None:
    """The newcomer's report: two threads, each ended; GET /semantic/facts shows the new
    home and the new age current, the old ones invalidated by them."""
    clock.set("2026-03-02T10:00:00.000Z")
    first = api.create_thread(dataset="family")["threadId"]
    _say(api, first, "We live in a small flat in Leeds right now.", "My son Arjun is 8.")
    end(api, first)
    clock.set("2026-08-20T10:00:00.000Z")
    second = api.create_thread(dataset="family")["threadId"]
    _say(api, second, "We live in York now, in a house with a garden.", "Arjun turned 9 last week.")
    end(api, second)

    every = _facts(api, dataset="family", includeInvalidated="true")
    rows = sorted(
        (f["subject"], f["attribute"], f["value"], f["text"], f["invalidatedAt"]) for f in every
    )
    assert rows == [
        ("Arjun", "age", "8", "The user's son Arjun is 8.", "2026-08-20T10:00:00.000Z"),
        ("Arjun", "age", "9", "Arjun turned 9 last week (the week before 20 August 2026).", None),
        ("user", "lives in", "York", "The user and others live in York now, in a house with a garden.", None),
        ("user", "lives in", "small flat in Leeds", "The user and others live in a small flat in Leeds right now.", "2026-08-20T10:00:00.000Z"),
        ("user", "son", "Arjun", "The user's son is Arjun.", None),
    ]


def test_two_ages_in_one_sentence_are_two_facts_and_replacing_one_leaves_the_other(
    api: Api, end: Any, clock: Clock
) -> None:
    """Each clause of "Lily is 8 and Tom is 5." is a fact of its own text, so Lily's new
    age replaces only hers, and Tom's fact and entity still say only Tom's age."""
    clock.set("2026-03-02T10:00:00.000Z")
    first = api.create_thread(dataset="kids")["threadId"]
    _say(api, first, "Lily is 8 and Tom is 5.", "No more piano for me, I sold it.")
    end(api, first)
    clock.set("2026-08-20T10:00:00.000Z")
    second = api.create_thread(dataset="kids")["threadId"]
    _say(api, second, "Lily turned 9.")
    end(api, second)

    every = _facts(api, dataset="kids", includeInvalidated="true")
    rows = sorted(
        (f["subject"], f["attribute"] or "", f["value"] or "", f["text"], f["invalidatedAt"] or "")
        for f in every
    )
    assert rows == [
        ("Lily", "age", "8", "Lily is 8.", "2026-08-20T10:00:00.000Z"),
        ("Lily", "age", "9", "Lily turned 9.", ""),
        ("Tom", "age", "5", "Tom is 5.", ""),
        ("user", "", "", "The user sold the piano.", ""),
        ("user", "stance on piano", "stopped", "No more piano for the user.", ""),
    ]
    entities = api.get(f"{MEMORY}/semantic/entities", dataset="kids").json()["entities"]
    assert sorted((e["name"], e["summary"]) for e in entities) == [
        ("Lily", "Lily turned 9."),
        ("Tom", "Tom is 5."),
        ("user", ""),
    ]


def test_a_message_after_one_dated_ahead_is_not_dated_before_it_and_the_later_statement_wins(
    api: Api, end: Any, clock: Clock
) -> None:
    """A message dated ahead (once a client's createdAt up to 5 minutes ahead, now a
    server process whose clock runs ahead of another's); the next message, dated by a
    slower clock, took the earlier time, so "I live in Oslo now" read as older than "I
    live in Rome": the Oslo fact was stored invalidated by Rome, recall answered Rome,
    the episode started after it ended. A live append is dated max(the clock, the
    thread's latest createdAt) (docs/decisions.md, "createdAt never goes backwards in a
    thread")."""
    thread = api.create_thread(dataset="skew")["threadId"]
    clock.set("2026-08-16T09:04:00Z")
    rome = api.append(thread, "I live in Rome").json()
    clock.set("2026-08-16T09:00:01.250731Z")
    oslo = api.append(thread, "I live in Oslo now").json()
    clock.set("2026-08-16T09:04:00.000100Z")  # past it by less than a millisecond
    ok = api.append(thread, "Noted", role="assistant").json()

    assert [rome["createdAt"], oslo["createdAt"], ok["createdAt"]] == [
        "2026-08-16T09:04:00.000Z",
        "2026-08-16T09:04:00.000Z",
        "2026-08-16T09:04:00.000Z",
    ]
    stored = Message.objects.filter(thread_id=thread).order_by("sequence_number")
    assert [m.created_at.isoformat() for m in stored] == [
        "2026-08-16T09:04:00+00:00",
        "2026-08-16T09:04:00+00:00",
        "2026-08-16T09:04:00.000100+00:00",
    ]
    listed = api.get(f"{BASE}/threads/{thread}/messages").json()["messages"]
    assert [m["createdAt"] for m in listed] == [
        "2026-08-16T09:04:00.000Z", "2026-08-16T09:04:00.000Z", "2026-08-16T09:04:00.000Z",
    ]
    # Back to the clock once it is past the thread's latest.
    clock.set("2026-08-16T09:06:00.5Z")
    assert api.append(thread, "bye").json()["createdAt"] == "2026-08-16T09:06:00.500Z"
    assert Thread.objects.get(pk=thread).latest_created_at == at("2026-08-16T09:06:00.5Z")

    end(api, thread)

    lives = sorted(
        (f["value"], f["invalidatedBy"] is not None, f["validFrom"])
        for f in _facts(api, dataset="skew", includeInvalidated="true")
        if f["attribute"] == "lives in"
    )
    assert lives == [
        ("Oslo", False, "2026-08-16T09:04:00.000Z"),
        ("Rome", True, "2026-08-16T09:04:00.000Z"),
    ]
    (current,) = [f for f in _facts(api, dataset="skew") if f["attribute"] == "lives in"]
    assert (current["text"], current["sourceMessageIds"]) == (
        "The user lives in Oslo now.", [oslo["messageId"]],
    )
    found = api.post(
        f"{MEMORY}/recall", {"dataset": "skew", "query": "where do I live?", "include": ["facts"]}
    ).json()
    assert [f["value"] for f in found["facts"] if f["attribute"] == "lives in"] == ["Oslo"]
    (episode,) = api.get(f"{MEMORY}/episodic/episodes", dataset="skew").json()["episodes"]
    assert (episode["startedAt"], episode["endedAt"]) == (
        "2026-08-16T09:04:00.000Z", "2026-08-16T09:06:00.500Z",
    )

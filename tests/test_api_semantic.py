"""GET/DELETE /v1/memory/semantic/... and GET /v1/memory/episodic/... (issue 8 item 4)."""

from __future__ import annotations

from typing import Any

from django.db import connection

from memoryapp import episodic
from tests.conftest import Api, Clock, at

SEMANTIC = "/v1/memory/semantic"
EPISODIC = "/v1/memory/episodic"


def _episode(api: Api, *lines: str, dataset: str = "user_42") -> dict[str, Any]:
    thread = api.create_thread(dataset=dataset)
    ids = [api.append(thread["threadId"], line).json()["messageId"] for line in lines]
    episodic.episode_build(thread_id=thread["threadId"], from_sequence=1, to_sequence=len(lines))
    return {"threadId": thread["threadId"], "ids": ids}


def test_it_lists_facts_in_the_issue_shape(api: Api, clock: Clock) -> None:
    made = _episode(api, "I drive a Honda Civic")
    resp = api.get(f"{SEMANTIC}/facts", dataset="user_42")
    assert resp.status_code == 200
    body = resp.json()
    (fact,) = body["facts"]
    (episode,) = api.get(f"{EPISODIC}/episodes", dataset="user_42").json()["episodes"]
    assert body == {
        "facts": [
            {
                "factId": fact["factId"],
                "text": "The user drives a Honda Civic.",
                "subject": "user",
                "attribute": "car",
                "value": "Honda Civic",
                "entities": ["user", "Honda Civic"],
                "episodeId": episode["episodeId"],
                "threadId": made["threadId"],
                "sourceMessageIds": made["ids"],
                "validFrom": "2026-08-16T09:00:00.000Z",
                "invalidatedAt": None,
                "invalidatedBy": None,
            }
        ],
        "nextCursor": None,
    }


def test_it_lists_episodes_and_gets_one(api: Api, clock: Clock) -> None:
    made = _episode(api, "I drive a Honda Civic", "my sister is Mara")
    body = api.get(f"{EPISODIC}/episodes", threadId=made["threadId"]).json()
    (episode,) = body["episodes"]
    assert episode == {
        "episodeId": episode["episodeId"],
        "threadId": made["threadId"],
        "dataset": "user_42",
        "fromSequence": 1,
        "toSequence": 2,
        "title": "Honda Civic, Mara",
        "summary": "- The user drives a Honda Civic.\n- The user's sister is Mara.",
        "startedAt": "2026-08-16T09:00:00.000Z",
        "endedAt": "2026-08-16T09:00:00.000Z",
        "createdAt": "2026-08-16T09:00:00.000Z",
    }
    assert body["nextCursor"] is None
    assert api.get(f"{EPISODIC}/episodes/{episode['episodeId']}").json() == episode


def test_it_lists_entities_with_fact_counts(api: Api) -> None:
    _episode(api, "I drive a Honda Civic", "my sister is Mara")
    body = api.get(f"{SEMANTIC}/entities", dataset="user_42").json()
    assert [(e["name"], e["kind"], e["summary"], e["factCount"]) for e in body["entities"]] == [
        ("Honda Civic", "product", "The user drives a Honda Civic.", 1),
        ("Mara", "person", "The user's sister is Mara.", 1),
        ("user", "person", "", 2),
    ]
    assert set(body["entities"][0]) == {"entityId", "name", "kind", "summary", "factCount"}
    assert body["nextCursor"] is None


def test_it_pages_with_next_cursor(api: Api) -> None:
    _episode(api, "my friend is Oslo", "my friend is Rome", "my friend is Kyiv")
    first = api.get(f"{SEMANTIC}/entities", limit=2).json()
    second = api.get(f"{SEMANTIC}/entities", limit=2, cursor=first["nextCursor"]).json()
    names = [e["name"] for e in first["entities"] + second["entities"]]
    assert names == ["Kyiv", "Oslo", "Rome", "user"]
    assert second["nextCursor"] is None


def test_it_deletes_a_fact_for_good(api: Api) -> None:
    _episode(api, "I drive a Honda Civic")
    (fact,) = api.get(f"{SEMANTIC}/facts").json()["facts"]
    assert api.delete(f"{SEMANTIC}/facts/{fact['factId']}").status_code == 204
    assert api.get(f"{SEMANTIC}/facts", includeInvalidated="true").json()["facts"] == []
    again = api.delete(f"{SEMANTIC}/facts/{fact['factId']}")
    assert (again.status_code, again.json()) == (404, {"error": "Fact not found"})


def test_it_drops_a_deleted_fact_from_recall_and_its_search_index_at_once(api: Api) -> None:
    """Issue 8 item 4: recall (its own raw-SQL fact layer over the FTS table or the
    stored search vector) stops returning the fact the moment DELETE answers."""
    _episode(api, "I drive a Honda Civic", "my sister is Mara")
    body = {"dataset": "user_42", "query": "Honda Civic sister Mara", "include": ["facts"]}
    before = api.post("/v1/memory/recall", {**body, "includeInvalidated": True}).json()["facts"]
    civic = next(f for f in before if f["value"] == "Honda Civic")
    assert len(before) == 2
    assert _indexed("civic") == (1 if connection.vendor == "sqlite" else None)

    assert api.delete(f"{SEMANTIC}/facts/{civic['factId']}").status_code == 204

    for invalidated in (False, True):
        after = api.post("/v1/memory/recall", {**body, "includeInvalidated": invalidated})
        assert [f["value"] for f in after.json()["facts"]] == ["Mara"]
        assert civic["factId"] not in after.json()["context"]
    assert _indexed("civic") == (0 if connection.vendor == "sqlite" else None)


def test_it_drops_a_deleted_facts_text_from_every_entity_summary(
    api: Api, clock: Clock
) -> None:
    """An entity quoting the fact falls back to its newest current fact (issue 8 item 4)."""
    _episode(api, "I drive a Honda Civic")
    clock.set("2026-08-20T10:00:00.000Z")
    _episode(api, "I sold the Civic, I drive a Prius now")
    # Later than the sale, so "newest current fact" is one fact, not a tie broken by ids.
    clock.set("2026-08-21T10:00:00.000Z")
    _episode(api, "my Civic was red")
    body = {"dataset": "user_42", "query": "Civic", "include": ["facts"]}
    before = api.post("/v1/memory/recall", body).json()
    red = next(f for f in before["facts"] if f["text"] == "The user's Civic was red.")
    civic = next(e for e in before["entities"] if e["name"] == "Honda Civic")
    assert civic["summary"] == "The user's Civic was red."  # its newest fact

    assert api.delete(f"{SEMANTIC}/facts/{red['factId']}").status_code == 204

    entities = api.get(f"{SEMANTIC}/entities", dataset="user_42").json()["entities"]
    assert [(e["name"], e["summary"]) for e in entities] == [
        ("Honda Civic", "The user sold the Civic."),
        ("Prius", "The user drives a Prius now."),
        ("user", ""),
    ]
    after = api.post("/v1/memory/recall", body).json()
    # "The user drives a Honda Civic" matches and was invalidated: the Prius fact that
    # replaced it takes its place (recall.supersede), with its entity.
    assert [(e["name"], e["summary"]) for e in after["entities"]] == [
        ("user", ""),
        ("Honda Civic", "The user sold the Civic."),
        ("Prius", "The user drives a Prius now."),
    ]
    assert "The user's Civic was red." not in str(after)


def _indexed(word: str) -> int | None:
    """Rows of SQLite's fact FTS table matching ``word`` (None on PostgreSQL, whose
    search vector is a column of the fact row itself)."""
    if connection.vendor != "sqlite":
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM memoryapp_fact_fts WHERE memoryapp_fact_fts MATCH %s", [word]
        )
        return int(cursor.fetchone()[0])


def test_it_answers_404_to_another_project(api: Api, outsider_api: Api) -> None:
    made = _episode(api, "I drive a Honda Civic")
    (fact,) = api.get(f"{SEMANTIC}/facts").json()["facts"]
    assert outsider_api.get(f"{SEMANTIC}/facts", dataset="user_42").json()["facts"] == []
    assert outsider_api.get(f"{SEMANTIC}/entities").json()["entities"] == []
    assert outsider_api.get(f"{EPISODIC}/episodes").json()["episodes"] == []
    resp = outsider_api.delete(f"{SEMANTIC}/facts/{fact['factId']}")
    assert (resp.status_code, resp.json()) == (404, {"error": "Fact not found"})
    resp = outsider_api.get(f"{EPISODIC}/episodes/{fact['episodeId']}")
    assert (resp.status_code, resp.json()) == (404, {"error": "Episode not found"})
    resp = outsider_api.get(f"{EPISODIC}/episodes", threadId=made["threadId"])
    assert (resp.status_code, resp.json()) == (404, {"error": "Thread not found"})
    assert api.get(f"{SEMANTIC}/facts").json()["facts"] == [fact]


def test_it_names_the_offending_query_field(api: Api, anon_api: Api) -> None:
    for path, params, field in [
        (f"{SEMANTIC}/facts", {"includeInvalidated": "maybe"}, "includeInvalidated"),
        (f"{SEMANTIC}/facts", {"limit": "0"}, "limit"),
        (f"{SEMANTIC}/facts", {"cursor": "bm9wZQ"}, "cursor"),
        (f"{SEMANTIC}/facts", {"entity": " "}, "entity"),
        (f"{SEMANTIC}/entities", {"dataset": ""}, "dataset"),
        (f"{EPISODIC}/episodes", {"threadId": "not-a-uuid"}, "threadId"),
        (f"{EPISODIC}/episodes", {"limit": "500"}, "limit"),
    ]:
        resp = api.get(path, None, **params)
        assert resp.status_code == 400, (path, params)
        assert resp.json()["error"] == "Validation error"
        assert [i["path"] for i in resp.json()["issues"]] == [[field]], (path, params)
    assert anon_api.get(f"{SEMANTIC}/facts").status_code == 401
    assert api.get(f"{EPISODIC}/episodes/nope").status_code == 404


def _facts(api: Api, dataset: str = "user_42") -> list[tuple[str, str | None, str | None]]:
    """``(text, invalidatedAt, text of invalidatedBy)`` of every fact, oldest first."""
    facts = api.get(f"{SEMANTIC}/facts", dataset=dataset, includeInvalidated="true").json()["facts"]
    text = {f["factId"]: f["text"] for f in facts}
    return [
        (f["text"], f["invalidatedAt"], text.get(f["invalidatedBy"]) if f["invalidatedBy"] else None)
        for f in reversed(facts)
    ]


def test_deleting_the_newer_fact_makes_the_one_it_replaced_current_again(
    api: Api, clock: Clock
) -> None:
    """Review item 12: deleting the fact that invalidated another used to leave the older
    one invalidated by nothing (invalidatedBy null) and the user with no current car."""
    _episode(api, "I drive a Honda Civic")
    clock.set("2026-08-20T10:00:00.000Z")
    _episode(api, "I drive a Toyota Prius now")
    assert _facts(api) == [
        ("The user drives a Honda Civic.", "2026-08-20T10:00:00.000Z", "The user drives a Toyota Prius now."),
        ("The user drives a Toyota Prius now.", None, None),
    ]
    prius = api.get(f"{SEMANTIC}/facts", dataset="user_42").json()["facts"][0]
    assert api.delete(f"{SEMANTIC}/facts/{prius['factId']}").status_code == 204
    assert _facts(api) == [("The user drives a Honda Civic.", None, None)]
    found = api.post("/v1/memory/recall", {"dataset": "user_42", "query": "car drive", "include": ["facts"]})
    assert [f["text"] for f in found.json()["facts"]] == ["The user drives a Honda Civic."]


def test_deleting_a_middle_fact_hands_its_invalidation_to_the_next_newer_one(
    api: Api, clock: Clock
) -> None:
    """Civic, then Prius, then Tesla: deleting the Prius leaves the Civic replaced, now by
    the Tesla (at the Tesla's time), never current beside it."""
    _episode(api, "I drive a Honda Civic")
    clock.set("2026-08-20T10:00:00.000Z")
    _episode(api, "I drive a Toyota Prius now")
    clock.set("2026-08-25T10:00:00.000Z")
    _episode(api, "I drive a Tesla Model 3 now")
    prius = next(
        f for f in api.get(f"{SEMANTIC}/facts", includeInvalidated="true").json()["facts"]
        if "Prius" in f["text"]
    )
    assert api.delete(f"{SEMANTIC}/facts/{prius['factId']}").status_code == 204
    assert _facts(api) == [
        ("The user drives a Honda Civic.", "2026-08-25T10:00:00.000Z", "The user drives a Tesla Model 3 now."),
        ("The user drives a Tesla Model 3 now.", None, None),
    ]


def test_deleting_the_thread_of_the_newer_fact_restores_the_older_one(
    api: Api, clock: Clock
) -> None:
    _episode(api, "I drive a Honda Civic")
    clock.set("2026-08-20T10:00:00.000Z")
    newer = _episode(api, "I drive a Toyota Prius now")
    assert api.delete(f"/v1/memory/working/threads/{newer['threadId']}").status_code == 204
    assert _facts(api) == [("The user drives a Honda Civic.", None, None)]
    entities = api.get(f"{SEMANTIC}/entities", dataset="user_42").json()["entities"]
    assert [(e["name"], e["factCount"]) for e in entities] == [("Honda Civic", 1), ("user", 1)]


def _imported(api: Api, dataset: str, *lines: tuple[str, str]) -> str:
    """A thread of imported messages ``(createdAt, content)``, ended and extracted."""
    thread = api.create_thread(dataset=dataset)["threadId"]
    for when, text in lines:
        resp = api.post(
            f"/v1/memory/working/threads/{thread}/messages",
            {"role": "user", "content": text, "createdAt": when},
        )
        assert resp.status_code == 201, resp.json()
    episodic.episode_build(thread_id=thread, from_sequence=1, to_sequence=len(lines))
    return str(thread)


def test_episodes_carry_when_the_conversation_happened(api: Api, clock: Clock) -> None:
    """Review item 2: episodes were dated by when the job ran, so three imported
    conversations of January, May and October all read 2026-12-01 and listed in load
    order. They now carry startedAt / endedAt (their messages' createdAt), list newest
    conversation first, and recall's context dates them by it."""
    clock.set("2026-12-01T12:00:00.000Z")
    may = _imported(api, "u", ("2026-05-03T10:00:00Z", "I turned 31 today"), ("2026-05-04T08:30:00Z", "I am 31 years old"))
    october = _imported(api, "u", ("2026-10-02T20:17:00Z", "I turned 32 yesterday"))
    january = _imported(api, "u", ("2026-01-10T18:00:00Z", "I drive a Honda Civic"))
    body = api.get(f"{EPISODIC}/episodes", dataset="u").json()
    assert [(e["threadId"], e["startedAt"], e["endedAt"], e["createdAt"]) for e in body["episodes"]] == [
        (october, "2026-10-02T20:17:00.000Z", "2026-10-02T20:17:00.000Z", "2026-12-01T12:00:00.000Z"),
        (may, "2026-05-03T10:00:00.000Z", "2026-05-04T08:30:00.000Z", "2026-12-01T12:00:00.000Z"),
        (january, "2026-01-10T18:00:00.000Z", "2026-01-10T18:00:00.000Z", "2026-12-01T12:00:00.000Z"),
    ]
    # Paging follows the same order.
    first = api.get(f"{EPISODIC}/episodes", dataset="u", limit=2).json()
    rest = api.get(f"{EPISODIC}/episodes", dataset="u", limit=2, cursor=first["nextCursor"]).json()
    assert [e["threadId"] for e in first["episodes"] + rest["episodes"]] == [october, may, january]
    found = api.post("/v1/memory/recall", {"dataset": "u", "query": "turned", "include": ["episodes"]}).json()
    dates = {e["threadId"]: (e["startedAt"], e["endedAt"]) for e in found["episodes"]}
    assert dates == {
        october: ("2026-10-02T20:17:00.000Z", "2026-10-02T20:17:00.000Z"),
        may: ("2026-05-03T10:00:00.000Z", "2026-05-04T08:30:00.000Z"),
    }
    assert f'<episode thread="{october}" from="1" to="1" date="2026-10-02"' in found["context"]
    assert f'<episode thread="{may}" from="1" to="2" date="2026-05-03"' in found["context"]
    assert "2026-12-01" not in found["context"]


def test_migration_0018_backfills_episode_times_from_their_messages(api: Api, clock: Clock) -> None:
    import importlib

    from django.apps import apps

    from memoryapp.models import Episode

    clock.set("2026-12-01T12:00:00.000Z")
    thread = _imported(api, "u", ("2026-05-03T10:00:00Z", "I turned 31 today"), ("2026-05-04T08:30:00Z", "I am 31 years old"))
    Episode.objects.update(started_at=None, ended_at=None)
    # A range with no raw message in it (only a hand-made row: messages are never
    # deleted alone) takes the episode's own time.
    orphan = Episode.objects.create(
        project=Episode.objects.get().project, thread_id=thread, dataset="u", from_sequence=50,
        to_sequence=60, title="t", summary="s",
    )
    Episode.objects.filter(pk=orphan.pk).update(started_at=None, ended_at=None)
    importlib.import_module("memoryapp.migrations.0018_episode_started_ended").backfill(apps, None)
    rows = {e.from_sequence: (e.started_at, e.ended_at, e.created) for e in Episode.objects.all()}

    assert rows[1][:2] == (at("2026-05-03T10:00:00.000Z"), at("2026-05-04T08:30:00.000Z"))
    assert rows[50][:2] == (rows[50][2], rows[50][2])


def test_it_lists_the_facts_of_one_thread(api: Api, outsider_api: Api, clock: Clock) -> None:
    """?threadId= was ignored (every fact of the project came back); it now keeps the
    facts extracted from that thread, and refuses a thread that is not the project's as
    the episode list does."""
    civic = _episode(api, "I drive a Honda Civic")
    mara = _episode(api, "my sister is Mara")
    for made, text in ((civic, "The user drives a Honda Civic."), (mara, "The user's sister is Mara.")):
        resp = api.get(f"{SEMANTIC}/facts", threadId=made["threadId"])
        assert [(f["text"], f["threadId"]) for f in resp.json()["facts"]] == [(text, made["threadId"])]
    assert len(api.get(f"{SEMANTIC}/facts").json()["facts"]) == 2
    other = outsider_api.create_thread()["threadId"]
    resp = api.get(f"{SEMANTIC}/facts", threadId=other)
    assert (resp.status_code, resp.json()) == (404, {"error": "Thread not found"})
    resp = api.get(f"{SEMANTIC}/facts", threadId="not-a-uuid")
    assert (resp.status_code, [i["path"] for i in resp.json()["issues"]]) == (400, [["threadId"]])


def test_a_time_ahead_of_the_clock_does_not_outrank_a_later_live_message(api: Api, clock: Clock) -> None:
    """A client dated "I live in Lima" 4 minutes ahead (the skew the API allows); a
    minute later "I live in Kyiv" came live in another thread of the dataset. Lima was
    stored 4 minutes ahead, so its fact outranked Kyiv's; it is now stored at the
    server's clock, and the later Kyiv is the current fact."""
    clock.set("2026-08-16T09:00:00Z")
    lima = _imported(api, "u", ("2026-08-16T09:04:00Z", "I live in Lima"))
    clock.set("2026-08-16T09:01:00Z")
    kyiv = api.create_thread(dataset="u")["threadId"]
    assert api.append(kyiv, "I live in Kyiv").status_code == 201
    episodic.episode_build(thread_id=kyiv, from_sequence=1, to_sequence=1)

    rows = api.get(f"{SEMANTIC}/facts", dataset="u", includeInvalidated="true").json()["facts"]
    assert sorted((f["value"], f["threadId"], f["validFrom"], f["invalidatedAt"]) for f in rows) == [
        ("Kyiv", kyiv, "2026-08-16T09:01:00.000Z", None),
        ("Lima", lima, "2026-08-16T09:00:00.000Z", "2026-08-16T09:01:00.000Z"),
    ]


def test_an_old_fact_imported_late_is_ended_by_the_next_later_one(api: Api, clock: Clock) -> None:
    """Rome of 2020, then Oslo today, then Paris of 2019 imported: Paris was recorded as
    replaced by Oslo today, as if the user lived in Paris until now; it is ended by Rome
    in 2020 (as deleting Oslo already had it)."""
    clock.set("2026-08-16T09:00:00Z")
    _imported(api, "u", ("2020-05-01T00:00:00Z", "I live in Rome"))
    oslo = api.create_thread(dataset="u")["threadId"]
    assert api.append(oslo, "I live in Oslo").status_code == 201
    episodic.episode_build(thread_id=oslo, from_sequence=1, to_sequence=1)
    _imported(api, "u", ("2019-05-01T00:00:00Z", "I live in Paris"))

    assert _facts(api, dataset="u") == [
        ("The user lives in Paris.", "2020-05-01T00:00:00.000Z", "The user lives in Rome."),
        ("The user lives in Rome.", "2026-08-16T09:00:00.000Z", "The user lives in Oslo."),
        ("The user lives in Oslo.", None, None),
    ]


def test_a_fact_imported_between_two_ends_the_earlier_one_sooner(api: Api, clock: Clock) -> None:
    """Oslo today, then Paris of 2019 imported (ended by Oslo), then Rome of 2021
    imported: Paris stayed ended by Oslo today, as if both ran until now; Rome ends it."""
    clock.set("2026-08-16T09:00:00Z")
    oslo = api.create_thread(dataset="u")["threadId"]
    assert api.append(oslo, "I live in Oslo").status_code == 201
    episodic.episode_build(thread_id=oslo, from_sequence=1, to_sequence=1)
    _imported(api, "u", ("2019-05-01T10:00:00Z", "I live in Paris"))
    _imported(api, "u", ("2021-01-01T10:00:00Z", "I live in Rome"))

    assert _facts(api, dataset="u") == [
        ("The user lives in Paris.", "2021-01-01T10:00:00.000Z", "The user lives in Rome."),
        ("The user lives in Rome.", "2026-08-16T09:00:00.000Z", "The user lives in Oslo."),
        ("The user lives in Oslo.", None, None),
    ]

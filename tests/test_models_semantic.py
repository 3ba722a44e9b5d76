"""The episode, fact and entity tables and their full-text indexes (migrations 0006, 0007)."""

from __future__ import annotations

from django.db import connection

from memoryapp.models import Entity, Episode, Fact, Project, Thread


def test_it_keeps_the_fact_and_episode_search_indexes_wired_after_all_migrations(db: None) -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE tbl_name IN ('memoryapp_fact', "
                "'memoryapp_episode') AND type = 'trigger' ORDER BY name"
            )
            assert [r[0] for r in cursor.fetchall()] == [
                "memoryapp_episode_fts_ad",
                "memoryapp_episode_fts_ai",
                "memoryapp_episode_fts_au",
                "memoryapp_fact_fts_ad",
                "memoryapp_fact_fts_ai",
                "memoryapp_fact_fts_au",
            ]
        else:
            cursor.execute(
                "SELECT indexname, indexdef FROM pg_indexes "
                "WHERE indexname IN ('fact_text_fts', 'episode_text_fts') ORDER BY indexname"
            )
            rows = cursor.fetchall()
            assert [r[0] for r in rows] == ["episode_text_fts", "fact_text_fts"]
            assert all("gin" in r[1] and "to_tsvector('memoryapp_english'::regconfig" in r[1] for r in rows)


def test_it_deletes_a_threads_episodes_and_facts_with_it(project: Project) -> None:
    thread = Thread.objects.create(project=project, dataset="user_42")
    episode = Episode.objects.create(
        project=project,
        thread=thread,
        dataset="user_42",
        from_sequence=1,
        to_sequence=2,
        title="t",
        summary="s",
    )
    entity = Entity.objects.create(project=project, dataset="user_42", name="User", key="user")
    fact = Fact.objects.create(
        project=project,
        dataset="user_42",
        episode=episode,
        thread=thread,
        text="x",
        subject=entity,
        valid_from=thread.created,
    )
    fact.entities.add(entity)
    thread.delete()
    assert (Episode.objects.count(), Fact.objects.count(), Entity.objects.count()) == (0, 0, 1)

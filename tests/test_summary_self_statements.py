"""The offline rolling summary keeps what the user says about themselves over small talk
and tool traffic, through compaction as a thread runs it (memoryapp.llm.offline,
memoryapp.llm.summary_info). The three cases a tester found: POST .../compact,
auto-compaction at threshold 6, and an agent's checkpoint."""

from __future__ import annotations

from typing import Any

from memoryapp import compaction
from memoryapp.models import Message, Project
from tests.conftest import BASE, Api
from tests.test_notes import call, make_thread


def summary_of(api: Api, thread_id: str) -> str:
    rows = api.get(f"{BASE}/threads/{thread_id}/messages", limit=100).json()["messages"]
    (active,) = [r for r in rows if "summary" in r and r["compactedAt"] is None]
    return str(active["content"])


def append(api: Api, thread_id: str, turns: list[tuple[str, str]]) -> None:
    for role, content in turns:
        assert api.append(thread_id, content, role=role).status_code == 201


def test_compact_keeps_the_users_diet_and_hobby_not_the_greeting(api: Api, settings: Any) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0  # always the model's (offline) summary
    thread_id = api.create_thread()["threadId"]
    append(
        api,
        thread_id,
        [
            ("assistant", "Nice to meet you, Alex!"),
            ("user", "I'm vegetarian, and my hobby is rock climbing."),
            ("assistant", "That sounds like fun!"),
        ],
    )

    assert api.post(f"{BASE}/threads/{thread_id}/compact").status_code == 200

    summary = summary_of(api, thread_id)
    assert "- user: I'm vegetarian, and my hobby is rock climbing." in summary.splitlines()
    assert "Nice to meet you" not in summary


def test_auto_compaction_keeps_the_users_new_job_not_the_small_talk(api: Api, settings: Any) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    thread_id = api.create_thread(autoCompactThreshold=6)["threadId"]
    append(
        api,
        thread_id,
        [
            ("user", "We moved to Seattle in March, after ten years in Denver with the kids."),
            ("assistant", "How is Seattle treating you?"),
            ("user", "I now work as a nurse manager at Harborview."),
            (
                "assistant",
                "Oh nice, congratulations! That is wonderful news, and I hope the new team is"
                " welcoming and that the hours are kind to you and to the whole family.",
            ),
            ("assistant", "How is Seattle treating you?"),
            ("user", "Fine."),
        ],
    )

    summary = summary_of(api, thread_id)
    assert "- user: I now work as a nurse manager at Harborview." in summary.splitlines()
    assert "treating you" not in summary


def test_an_agents_checkpoint_keeps_the_users_turns_not_tool_errors(project: Project) -> None:
    """An agent with compaction maxTokens 400 (a 100-token summary) over 38 turns, each
    with a failed tool call: the checkpoint kept tool errors and the last turn."""
    thread = make_thread(project, max_open=100, max_tokens=400)
    facts = [
        "I'm training for the Berlin marathon in September.",
        "My left knee has been sore since the long run.",
        "I switched to a plant-based diet last month.",
        "My coach is Ingrid and she wants three runs a week.",
        "We moved closer to the river trail.",
        "I sleep badly before races.",
        "My sister Maya runs with me on Sundays.",
    ]
    for index in range(38):
        content = facts[index // 6] if index % 6 == 0 else "Go on."
        compaction.message_append_compacting(thread=thread, role="user", content=content)
        call(thread, "open_memory", name=f"plan-{index}")  # an error: there is no such memory
        compaction.message_append_compacting(thread=thread, role="assistant", content="Noted.")

    checkpoint = Message.objects.filter(thread=thread, is_summary=True).order_by("sequence_number").last()
    assert checkpoint is not None
    summary = (checkpoint.metadata or {})["checkpoint"]["summary"]
    lines = summary.splitlines()
    assert [line for line in lines if line.startswith("- tool:")] == []
    assert sum(f"- user: {fact}" in lines for fact in facts) >= 3, summary

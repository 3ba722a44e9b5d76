"""A client's tool results keep their key content in the offline rolling summary, briefly
(memoryapp.llm.tool_results, memoryapp.llm.offline); calls, errors and an agent's own
memory-tool traffic still count nothing."""

from __future__ import annotations

from typing import Any

from memoryapp import compaction
from memoryapp.llm import tool_results
from memoryapp.models import Message, Project
from tests.conftest import BASE, Api
from tests.test_notes import call, make_thread
from tests.test_summary_self_statements import append, summary_of


def test_it_briefs_a_json_result_as_its_pairs_without_links() -> None:
    content = (
        '{"flights": [{"number": "BA117", "departs": "18:25", "price": 640},'
        ' {"number": "VS3", "departs": "20:05", "price": null}], "url": "https://example.test/q",'
        ' "currency": "GBP", "direct": true}'
    )
    assert tool_results.brief(content) == (
        "flights: number: BA117, departs: 18:25, price: 640 | number: VS3, departs: 20:05;"
        " currency: GBP; direct: true"
    )


def test_it_cuts_a_long_text_result_at_a_word() -> None:
    brief = tool_results.brief("Station report: " + "northbound trains delayed " * 20)
    assert len(brief) <= tool_results.BRIEF_CHARS
    assert brief.endswith("delayed…")


def test_calls_and_errors_are_no_results() -> None:
    assert tool_results.is_plumbing('open_memory({"name": "quest"})')
    assert tool_results.is_plumbing("Error: there is no memory named 'quest'.")
    assert tool_results.is_plumbing('{"error": "rate limited", "retryAfter": 30}')
    assert not tool_results.is_plumbing('{"status": "confirmed", "booking": "HX-4410"}')


def test_auto_compaction_keeps_a_tool_results_key_content(api: Api, settings: Any) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    thread_id = api.create_thread(autoCompactThreshold=8)["threadId"]
    append(
        api,
        thread_id,
        [
            ("user", "Can you book a table for my parents' anniversary on Saturday?"),
            ("assistant", "Of course. Any preference for the restaurant?"),
            ("user", "Somewhere Italian in Bristol, for four people at 7pm."),
            ("tool", '{"status": "confirmed", "restaurant": "Casa Lina", "booking": "HX-4410", "time": "19:00", "guests": 4, "href": "https://example.test/b/HX-4410"}'),
            ("assistant", "Booked: Casa Lina at 7pm for four, reference HX-4410."),
            ("user", "Perfect, thank you!"),
            ("assistant", "Enjoy the evening!"),
            ("user", "Will do."),
        ],
    )

    lines = summary_of(api, thread_id).splitlines()
    assert (
        "- tool: status: confirmed; restaurant: Casa Lina; booking: HX-4410; time: 19:00; guests: 4"
        in lines
    )


def test_manual_compaction_keeps_a_text_result_and_drops_a_failed_call(api: Api, settings: Any) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    thread_id = api.create_thread()["threadId"]
    append(
        api,
        thread_id,
        [
            ("user", "Is my parcel coming today?"),
            ("tool", "Error: tracking service timed out."),
            ("tool", "Parcel JD014 is out for delivery with DPD, expected between 13:10 and 14:10."),
            ("assistant", "Yes, it's out for delivery."),
        ],
    )

    assert api.post(f"{BASE}/threads/{thread_id}/compact").status_code == 200

    lines = summary_of(api, thread_id).splitlines()
    assert "- tool: Parcel JD014 is out for delivery with DPD, expected between 13:10 and 14:10." in lines
    assert not [line for line in lines if "timed out" in line]


def test_an_agents_memory_tool_results_stay_out_of_its_checkpoint(project: Project) -> None:
    """Writing a memory succeeds ("Saved new memory ..."): plumbing, whose effect is the
    note itself, not a line of the summary."""
    thread = make_thread(project, max_open=100, max_tokens=400)
    for index in range(24):
        compaction.message_append_compacting(
            thread=thread, role="user", content=f"My training week {index} went to plan with Coach Ingrid."
        )
        call(thread, "close_memory", name=f"week-{index}", description="A week", content=f"Week {index}.")
        compaction.message_append_compacting(thread=thread, role="assistant", content="Noted.")

    checkpoint = Message.objects.filter(thread=thread, is_summary=True).order_by("sequence_number").last()
    assert checkpoint is not None
    summary = (checkpoint.metadata or {})["checkpoint"]["summary"]
    assert [line for line in summary.splitlines() if line.startswith("- tool:")] == []
    assert "- user: My training week" in summary

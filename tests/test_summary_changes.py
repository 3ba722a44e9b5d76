"""A statement corrected later in the same thread is not kept as current by the offline
rolling summary (memoryapp.llm.summary_changes, memoryapp.llm.offline): the corrected line
is marked or dropped, the correction kept, through compaction as a thread runs it."""

from __future__ import annotations

from typing import Any

import pytest

from memoryapp.llm import summary_changes
from memoryapp.llm.summary_changes import CHANGED_MARK, UPDATE_MARK
from tests.conftest import BASE, Api
from tests.test_summary_self_statements import append, summary_of


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Actually we land on April 5th, the flight got moved.", "We land at Kansai on April 3rd."),
        ("Change of plan: the dinner is on Friday at 8pm now.", "Dinner with the Tanakas is Thursday at 7pm."),
        ("Actually our budget is $8000.", "assistant: What's your budget? → user: $6000 total."),
        ("I'm no longer working at the shelter.", "I work at the animal shelter on weekends."),
        ("Correction: the meeting was moved to 3pm.", "The meeting starts at 10am."),
        ("We're now staying 10 days instead of two weeks.", "We're staying two weeks in Japan."),
        ("Actually we're landing at Narita instead.", "We land at Kansai on April 3rd."),
        ("Scratch that, we're switching to Postgres 16 instead.", "We're deploying on Postgres 14 on AWS."),
    ],
)
def test_it_reads_a_correction_of_the_same_thing(new: str, old: str) -> None:
    assert summary_changes.corrects(new, old)


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Actually, I went hiking with my dog yesterday.", "I love hiking in the mountains."),
        ("Actually we land on April 5th.", "Yuki is allergic to shellfish, so no seafood please."),
        ("Now I'm reading a new book.", "I read three books in May."),
        ("I'm learning German now - tough but fun.", "Hey John, I had a tough time with my English lit class."),
        ("Do we land on April 5th now?", "We land at Kansai on April 3rd."),
    ],
)
def test_it_leaves_what_is_no_correction(new: str, old: str) -> None:
    assert not summary_changes.corrects(new, old)


def current_lines(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if not line.endswith(CHANGED_MARK)]


TRIP = [
    ("user", "Hi! I'm planning a trip to Japan with my wife Yuki."),
    ("assistant", "How exciting! How long will you be going for, and what's your budget?"),
    ("user", "Two weeks, about $6000 total."),
    ("assistant", "Noted: two weeks, $6000."),
    ("user", "Yuki is allergic to shellfish, so no seafood restaurants please."),
    ("assistant", "Understood, I'll keep that in mind."),
    ("user", "We land at Kansai on April 3rd."),
    ("assistant", "Great, Kansai is a good base for Kyoto and Osaka."),
    ("user", "We'd love to see the cherry blossoms in Kyoto."),
    ("assistant", "Early April is peak season, so book early."),
    ("user", "Actually we land on April 5th, the flight got moved."),
    ("assistant", "Got it, April 5th arrival at Kansai."),
    ("user", "Any ryokan recommendations in Kyoto?"),
    ("assistant", "Tawaraya and Hiiragiya are classics, but pricey."),
    ("user", "What about Osaka food?"),
    ("assistant", "Dotonbori has great street food like takoyaki and okonomiyaki."),
    ("user", "Sounds fun, thanks!"),
]


def test_the_trip_threads_summary_keeps_the_new_landing_day_only(api: Api) -> None:
    """A newcomer's thread (threshold 8, 17 messages): "lands at Kansai on April 3rd"
    stayed in the summary after it was changed."""
    thread_id = api.create_thread(autoCompactThreshold=8)["threadId"]
    append(api, thread_id, TRIP)

    messages = api.post(f"{BASE}/threads/{thread_id}/prepare", {"messageLimit": 8}).json()["messages"]
    lines = current_lines(messages[0]["content"])
    assert "- user: We land at Kansai on April 3rd." not in lines
    assert f"- user: Actually we land on April 5th, the flight got moved.{UPDATE_MARK}" in lines
    assert "- user: Yuki is allergic to shellfish, so no seafood restaurants please." in lines


def test_manual_compaction_marks_the_old_budget_and_keeps_the_new_one(api: Api, settings: Any) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    thread_id = api.create_thread()["threadId"]
    append(
        api,
        thread_id,
        [
            ("user", "We're renovating the kitchen and our budget is $12,000."),
            ("assistant", "Good to know. Cabinets or worktops first?"),
            ("user", "Cabinets first, we like the oak ones from Hartley's."),
            ("user", "Actually the budget is now $15,000, my parents are chipping in."),
            ("assistant", "That opens up the quartz worktops too."),
        ],
    )

    assert api.post(f"{BASE}/threads/{thread_id}/compact").status_code == 200

    lines = summary_of(api, thread_id).splitlines()
    assert "- user: We're renovating the kitchen and our budget is $12,000." not in lines
    assert f"- user: Actually the budget is now $15,000, my parents are chipping in.{UPDATE_MARK}" in lines


def test_a_correction_folds_after_what_it_corrects_and_stays_through_later_folds(
    api: Api, settings: Any
) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    thread_id = api.create_thread(autoCompactThreshold=6)["threadId"]
    append(
        api,
        thread_id,
        [
            ("user", "My weekly piano lesson with Mrs. Kowalski is on Mondays at 6pm."),
            ("assistant", "Noted, Mondays at 6pm. What are you working on at the moment?"),
            ("user", "I'm preparing a Chopin nocturne and a Bach invention for a recital in May."),
            ("assistant", "A lovely pairing. The nocturne rewards a slow, singing right hand."),
            ("user", "My teacher says I rush the left hand in the middle section."),
            ("assistant", "Try practising the left hand alone with a metronome at 60."),
            ("user", "Change of plan: the piano lesson moved to Wednesdays at 5:30pm."),
            ("assistant", "Wednesdays at 5:30pm then; that leaves your Mondays free."),
            ("user", "I also practise 40 minutes every morning before work."),
            ("assistant", "That's a good routine, split it between the two pieces."),
            ("user", "The recital is at St. Cecilia's Hall on 18 May, my sister Ola is coming."),
            ("assistant", "I'll remind you the week before, and about tickets for Ola."),
            ("user", "Thanks, that's all for today."),
        ],
    )

    lines = current_lines(summary_of(api, thread_id))
    assert "- user: My weekly piano lesson with Mrs. Kowalski is on Mondays at 6pm." not in lines
    assert f"- user: Change of plan: the piano lesson moved to Wednesdays at 5:30pm.{UPDATE_MARK}" in lines


def test_a_story_told_with_actually_marks_nothing(api: Api, settings: Any) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    thread_id = api.create_thread()["threadId"]
    append(
        api,
        thread_id,
        [
            ("user", "I love hiking in the mountains near Boulder."),
            ("assistant", "Any favourite trails?"),
            ("user", "Actually, I went hiking with my dog Juno yesterday."),
        ],
    )

    assert api.post(f"{BASE}/threads/{thread_id}/compact").status_code == 200

    summary = summary_of(api, thread_id)
    assert CHANGED_MARK not in summary
    assert UPDATE_MARK not in summary
    assert "- user: I love hiking in the mountains near Boulder." in summary.splitlines()

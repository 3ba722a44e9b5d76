"""Constraints survive every fold of the offline rolling summary, above chit-chat
(memoryapp.llm.summary_constraints, memoryapp.llm.offline), through compaction as a
thread runs it: auto-compaction at a small threshold, POST .../compact, and many folds
under a small summary budget. Several people, several phrasings."""

from __future__ import annotations

from typing import Any

import pytest

from memoryapp.llm import summary_constraints
from memoryapp.llm.summary_constraints import NONE, REQUIREMENT, SAFETY
from tests.conftest import BASE, Api
from tests.test_summary_self_statements import append, summary_of


def lines_of(api: Api, thread_id: str) -> list[str]:
    return summary_of(api, thread_id).splitlines()


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Yuki is allergic to shellfish, so no seafood restaurants please.", SAFETY),
        ("My son Leo has a severe peanut allergy.", SAFETY),
        ("I'm lactose intolerant.", SAFETY),
        ("Grandma Rose uses a wheelchair, so we need step-free access everywhere.", SAFETY),
        ("Dad takes blood thinners, so no ibuprofen.", SAFETY),
        ("Please never book red-eye flights for me.", REQUIREMENT),
        ("Ben is scared of heights, so please no cable cars.", REQUIREMENT),
        ("Carlos doesn't drink alcohol.", REQUIREMENT),
        ("Sam hates crowds, so avoid peak hours.", REQUIREMENT),
        ("Our budget is strictly $2,500 for the whole week.", REQUIREMENT),
        ("The report has to be submitted by March 14.", REQUIREMENT),
        ("I can only travel on weekends.", REQUIREMENT),
        ("Window seats only.", REQUIREMENT),
        ("I can't wait to see you!", NONE),
        ("That must have been amazing.", NONE),
        ("Don't worry about it.", NONE),
        ("You must try the ramen there.", NONE),
        ("I hope your injury heals soon?", NONE),
        ("I went to the beach last weekend.", NONE),
    ],
)
def test_it_ranks_a_sentence_by_what_it_binds(sentence: str, expected: int) -> None:
    assert summary_constraints.rank("user", sentence) == expected


def test_it_reads_an_answer_with_its_question_and_never_an_assistants_echo() -> None:
    assert summary_constraints.rank("user", "About $6000 total.", question="What's your budget?") == REQUIREMENT
    assert summary_constraints.rank("assistant", "Noted: no shellfish for Yuki, she's allergic.") == NONE


DINNER = [
    ("user", "We're hosting a dinner for eight on Saturday at our place in Leeds."),
    ("assistant", "Lovely! Do you have a menu in mind, or shall I suggest a few dishes?"),
    ("user", "My brother Tom has coeliac disease, so everything must be gluten-free."),
    ("assistant", "Noted. What about the other guests?"),
    ("user", "Please never suggest anything with pork, Amira eats halal."),
    (
        "assistant",
        "How about a lamb tagine with saffron rice from the Ottolenghi book, then a"
        " Moroccan orange salad, served around 7:30?",
    ),
    ("user", "Sounds wonderful, the kids will love the orange salad."),
    ("assistant", "For starters, a spiced lentil soup or a beetroot tart from Honey & Co would work."),
    ("user", "Let's do the lentil soup."),
    ("assistant", "Perfect, I'll draft a shopping list for the Kirkgate Market on Friday."),
    ("user", "Thanks, Gemma and Raj are bringing wine and a Victoria sponge."),
    ("assistant", "Great, that covers dessert and drinks for all 8 of you."),
]


def test_auto_compaction_keeps_each_guests_rule_through_every_fold(api: Api, settings: Any) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    thread_id = api.create_thread(autoCompactThreshold=4)["threadId"]
    append(api, thread_id, DINNER)

    lines = lines_of(api, thread_id)
    assert "- user: My brother Tom has coeliac disease, so everything must be gluten-free." in lines
    assert "- user: Please never suggest anything with pork, Amira eats halal." in lines


TRIP = [
    ("user", "Hi! I'm planning a trip to Japan with my wife Yuki."),
    ("assistant", "How exciting! How long will you be going for, and what's your budget?"),
    ("user", "Two weeks, about $6000 total."),
    ("assistant", "Noted: two weeks, $6000."),
    ("user", "Yuki is allergic to shellfish, so no seafood restaurants please."),
    ("assistant", "Understood, I'll keep that in mind."),
    ("user", "We'd love to see the cherry blossoms in Kyoto."),
    ("assistant", "Early April is peak season in Kyoto, so book early."),
    ("user", "Any ryokan recommendations in Kyoto?"),
    ("assistant", "Tawaraya and Hiiragiya are classics, but pricey."),
    ("user", "What about Osaka food?"),
    ("assistant", "Dotonbori has great street food like takoyaki and okonomiyaki."),
    ("user", "Sounds fun, thanks!"),
    ("assistant", "Enjoy Dotonbori, and try Kuromon Market too."),
    ("user", "Is the JR Pass worth it for Kyoto, Osaka and Hiroshima?"),
    ("assistant", "For that route over 14 days, the 7-day JR Pass at 50,000 yen pays off."),
    ("user", "Great."),
]


def test_the_allergy_and_budget_survive_the_folds_of_the_trip_thread(api: Api) -> None:
    """A newcomer's thread (threshold 8, 17 messages): the allergy was dropped."""
    thread_id = api.create_thread(autoCompactThreshold=8)["threadId"]
    append(api, thread_id, TRIP)

    messages = api.post(f"{BASE}/threads/{thread_id}/prepare", {"messageLimit": 8}).json()["messages"]
    summary = messages[0]["content"].splitlines()
    assert "- user: Yuki is allergic to shellfish, so no seafood restaurants please." in summary
    assert (
        "- assistant: How long will you be going for, and what's your budget?"
        " → user: Two weeks, about $6000 total."
    ) in summary


CLINIC = [
    ("user", "I need to book appointments for the family this month."),
    ("assistant", "Happy to help. Who needs to be seen, and where?"),
    ("user", "Priya is diabetic and can't have anything sugary at the waiting-room cafe."),
    ("user", "Don't book anything before 10am, my husband Marco works night shifts."),
    ("user", "Our daughter Lena starts at Westfield Primary on 4 September."),
    ("user", "The paperwork for Lena has to be in by August 28."),
    ("assistant", "Dr. Okafor at the Hillside Practice has slots on Tuesday and Thursday."),
    ("assistant", "Dr. Brennan at Riverside Clinic is free on Monday at 11:15 and 14:40."),
    ("assistant", "The Riverside Clinic is at 22 Mill Lane, parking costs 3 pounds an hour."),
    ("user", "Lovely, thanks so much for checking all of that for us!"),
]


def test_manual_compaction_under_a_small_budget_keeps_the_rules_over_the_listings(
    api: Api, settings: Any
) -> None:
    settings.MEMORY_SUMMARY_VERBATIM_TOKENS = 0
    settings.MEMORY_SUMMARY_MAX_TOKENS = 110
    thread_id = api.create_thread()["threadId"]
    append(api, thread_id, CLINIC)

    assert api.post(f"{BASE}/threads/{thread_id}/compact").status_code == 200

    lines = lines_of(api, thread_id)
    for rule in (
        "- user: Priya is diabetic and can't have anything sugary at the waiting-room cafe.",
        "- user: Don't book anything before 10am, my husband Marco works night shifts.",
        "- user: The paperwork for Lena has to be in by August 28.",
    ):
        assert rule in lines
    assert not [line for line in lines if line.startswith("- assistant: Dr.")]

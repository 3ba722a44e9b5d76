"""The offline adapter's extractive summary (memoryapp/llm/offline.py).

DESIGN.md section 7 ("offline: deterministic, no network: an extractive summary") and
section 6 items 3 and 11 (a rolling run folds the previous summary in; budgets are counted
by memoryapp.tokens).
"""

from __future__ import annotations

import pytest

from memoryapp.llm.offline import SUMMARY_HEADER, OfflineModel, extractive_summary
from memoryapp.llm.port import Summary, TranscriptMessage, Usage
from memoryapp.tokens import count_tokens

CONVERSATION = [
    ("user", "Hi there!"),
    ("assistant", "Hello! How can I help you today?"),
    ("user", "I'm Priya Raman and I'm looking for a family car."),
    ("assistant", "Happy to help. What is your budget?"),
    ("user", "My budget is $30,000, and we have two kids."),
    ("assistant", "Do you prefer a hybrid or a petrol car?"),
    ("user", "Thanks. I prefer a hybrid because I commute 60 km a day."),
    ("assistant", "The Toyota Corolla Hybrid is a great fit."),
    ("user", "Ok."),
    ("user", "We decided on the Corolla Hybrid after talking it over."),
    ("assistant", "Great, thanks!"),
    ("user", "I booked a test drive at Lyon Motors for March 3, 2026 at 10:30."),
    ("user", "Should I bring anything to the test drive?"),
    ("assistant", "Bring your driving licence and proof of insurance."),
    ("user", "Can my wife Ana drive it too?"),
    ("assistant", "Yes, both drivers should bring a licence."),
    ("user", "Bye"),
]
MESSAGES = [
    TranscriptMessage(i, role, content) for i, (role, content) in enumerate(CONVERSATION, start=1)
]

KEY_LINES = [
    "- user: I'm Priya Raman and I'm looking for a family car.",
    "- user: My budget is $30,000, and we have two kids.",
    "- user: I prefer a hybrid because I commute 60 km a day.",
    "- user: We decided on the Corolla Hybrid after talking it over.",
    "- user: I booked a test drive at Lyon Motors for March 3, 2026 at 10:30.",
    "- user: Can my wife Ana drive it too?",
]
CHATTER = ["Hi there", "Hello!", "Happy to help", "Thanks.", "Ok.", "Great, thanks", "Bye"]


def summary_lines(text: str) -> list[str]:
    return text.splitlines()


def test_it_keeps_names_numbers_dates_decisions_and_questions_in_order() -> None:
    text = extractive_summary(previous_summary=None, messages=MESSAGES, max_tokens=1024)

    lines = summary_lines(text)
    assert lines[0] == SUMMARY_HEADER
    assert [line for line in lines if line in KEY_LINES] == KEY_LINES
    assert "- assistant: The Toyota Corolla Hybrid is a great fit." in lines
    assert "- assistant: What is your budget?" in lines


def test_it_leaves_out_chatter() -> None:
    text = extractive_summary(previous_summary=None, messages=MESSAGES, max_tokens=1024)

    for chatter in CHATTER:
        assert not any(line.split(": ", 1)[-1].startswith(chatter) for line in summary_lines(text))
    assert len(summary_lines(text)) == 1 + 12


def test_it_keeps_the_most_informative_lines_when_the_budget_is_tight() -> None:
    text = extractive_summary(previous_summary=None, messages=MESSAGES, max_tokens=60)

    lines = summary_lines(text)
    assert count_tokens(text) <= 60
    assert "- user: I booked a test drive at Lyon Motors for March 3, 2026 at 10:30." in lines
    assert "- assistant: Bring your driving licence and proof of insurance." not in lines
    assert len(lines) < 1 + 12


def test_it_carries_the_previous_summary_forward_before_the_new_lines() -> None:
    first = extractive_summary(previous_summary=None, messages=MESSAGES[:9], max_tokens=1024)
    second = extractive_summary(previous_summary=first, messages=MESSAGES[9:], max_tokens=1024)

    carried = summary_lines(first)[1:]
    lines = summary_lines(second)
    assert carried  # the first half has content worth keeping
    assert lines.count(SUMMARY_HEADER) == 1
    assert lines[1 : 1 + len(carried)] == carried
    assert "- user: I booked a test drive at Lyon Motors for March 3, 2026 at 10:30." in lines
    assert second == extractive_summary(previous_summary=None, messages=MESSAGES, max_tokens=1024)


def test_it_splits_a_prose_previous_summary_into_lines() -> None:
    previous = "The user is Priya Raman. She lives in Lyon and works at Airbus since 2019."

    text = extractive_summary(previous_summary=previous, messages=[MESSAGES[4]], max_tokens=1024)

    assert summary_lines(text) == [
        SUMMARY_HEADER,
        "- The user is Priya Raman.",
        "- She lives in Lyon and works at Airbus since 2019.",
        "- user: My budget is $30,000, and we have two kids.",
    ]


def test_it_keeps_room_for_new_messages_when_the_previous_summary_fills_the_budget() -> None:
    previous = "\n".join(
        f"- user: On May {day}, 2025 Priya paid invoice {day} of $1,{day:03d} to Lyon Motors."
        for day in range(1, 29)
    )
    new = [TranscriptMessage(40, "user", "I want to sell the old car soon.")]

    text = extractive_summary(previous_summary=previous, messages=new, max_tokens=150)

    assert count_tokens(text) <= 150
    assert summary_lines(text)[-1] == "- user: I want to sell the old car soon."
    assert sum(line.startswith("- user: On May") for line in summary_lines(text)) >= 3


def test_it_writes_a_repeated_sentence_once() -> None:
    repeated = "My flight to Oslo is on Friday at 09:15."
    messages = [
        TranscriptMessage(1, "user", repeated),
        TranscriptMessage(2, "user", repeated),
        TranscriptMessage(3, "user", "  my flight to  Oslo is on Friday at 09:15."),
    ]
    previous = f"- user: {repeated}"

    text = extractive_summary(previous_summary=previous, messages=messages, max_tokens=200)

    assert summary_lines(text) == [SUMMARY_HEADER, f"- user: {repeated}"]


def _huge_conversation() -> list[TranscriptMessage]:
    return [
        TranscriptMessage(
            i,
            "user" if i % 2 else "assistant",
            f"Order {i} for Priya ships to Lyon on May {i % 28 + 1}, 2026. "
            f"I decided to pay ${i * 7}. Is the tracking code TRK{i:05d} right?",
        )
        for i in range(1, 2001)
    ]


@pytest.mark.parametrize("max_tokens", [1, 2, 5, 17, 32, 33, 100, 1024, 4000])
def test_it_never_exceeds_the_budget_for_a_huge_conversation(max_tokens: int) -> None:
    text = extractive_summary(
        previous_summary=None, messages=_huge_conversation(), max_tokens=max_tokens
    )

    assert 0 < count_tokens(text) <= max_tokens
    if max_tokens >= 100:
        assert summary_lines(text)[0] == SUMMARY_HEADER


@pytest.mark.parametrize(
    "content",
    [
        "x" * (1024 * 1024),  # one mebibyte without a sentence break
        "Contract signed. " * 60_000,
        "東京で3月3日に会議があります。🚗🚗🚗 " * 20_000,
        ("Supercalifragilisticexpialidocious" * 40 + " ") * 50,
    ],
    ids=["no-breaks", "many-short", "cjk-emoji", "long-words"],
)
@pytest.mark.parametrize("max_tokens", [1, 3, 40, 1024])
def test_it_never_exceeds_the_budget_for_huge_messages(content: str, max_tokens: int) -> None:
    previous = "- user: " + "Earlier note with 12 numbers and Names Here. " * 200

    text = extractive_summary(
        previous_summary=previous,
        messages=[TranscriptMessage(1, "user", content)],
        max_tokens=max_tokens,
    )

    assert 0 < count_tokens(text) <= max_tokens


def test_it_is_deterministic() -> None:
    model = OfflineModel()
    previous = extractive_summary(previous_summary=None, messages=MESSAGES[:5], max_tokens=80)

    runs = [
        model.summarize(previous_summary=previous, messages=MESSAGES[5:], max_tokens=90)
        for _ in range(3)
    ]
    other = OfflineModel().summarize(
        previous_summary=previous, messages=MESSAGES[5:], max_tokens=90
    )

    assert runs[0] == runs[1] == runs[2] == other


def test_it_reports_the_summary_with_its_usage() -> None:
    previous = "- user: I live in Lyon since 2019."

    summary = OfflineModel().summarize(
        previous_summary=previous, messages=MESSAGES, max_tokens=1024
    )

    assert summary == Summary(
        text=summary.text,
        model="offline-extractive",
        usage=Usage(
            input_tokens=sum(count_tokens(m.content) for m in MESSAGES) + count_tokens(previous),
            output_tokens=count_tokens(summary.text),
        ),
    )
    assert summary_lines(summary.text)[1] == "- user: I live in Lyon since 2019."

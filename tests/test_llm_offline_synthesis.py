"""memoryapp.llm.offline_synthesis: the offline adapter's recall synthesis never states a
replaced statement as true and never repeats the context's framing (docs/decisions.md
"The context never states a replaced fact as true")."""

from __future__ import annotations

from memoryapp.llm.offline import OfflineModel
from memoryapp.llm.synthesis_input import STATED_HERE, entries, entry_line, stale_mark

DENVER = "The user and others moved to Denver last week."
MOVED = stale_mark("2026-06-15", DENVER)


def _synthesize(query: str, *lines: str) -> str:
    return OfflineModel().synthesize(query=query, context="\n".join(lines))


def test_it_gives_the_current_fact_where_a_message_states_the_replaced_one() -> None:
    """The message states "lives in Boston" in its own words; the mark is on the entry's
    "Stated here:" line, a line apart from the sentence that matched."""
    answer = _synthesize(
        "where do I live",
        entry_line("user", "2026-03-10", "Hi! I'm Alice, I'm 34 and I live in Boston."),
        f"{STATED_HERE}The user lives in Boston. {MOVED}",
        entry_line("user", "2026-06-15", "Big news: we moved to Denver last week!"),
    )
    assert answer == DENVER


def test_it_gives_the_current_fact_where_a_marked_line_matched() -> None:
    answer = _synthesize(
        "am I vegetarian?",
        entry_line("episode", "2026-03-10", "The user is vegetarian."),
        f"- The user is vegetarian. {stale_mark('2026-06-15', 'The user went vegan.')}",
        "- The user's brother Sam lives in Chicago.",
    )
    assert answer == "The user went vegan."


def test_it_keeps_what_the_entry_says_besides_the_replaced_statement() -> None:
    """Sam's line shares "lives" with the replaced statement, not "Boston": it is not
    the replaced statement, and the episode's title is."""
    answer = _synthesize(
        "who lives in Chicago or Boston?",
        entry_line("episode", "2026-03-10", "The user lives in Boston."),
        f"- The user lives in Boston. {MOVED}",
        "- The user's brother Sam lives in Chicago.",
    )
    assert answer == f"{DENVER} The user's brother Sam lives in Chicago."


def test_it_gives_a_replaced_statement_with_its_mark_when_nothing_is_current() -> None:
    answer = _synthesize(
        "what car do I drive?",
        entry_line("fact", "2026-01-05", f"The user drives a Ford Focus. {stale_mark('2026-04-10', None)}"),
    )
    assert answer == "The user drives a Ford Focus. [no longer current as of 2026-04-10]"


def test_it_never_gives_the_context_labels_or_bullets() -> None:
    answer = _synthesize(
        "is my job teaching?",
        entry_line("fact", "2026-06-15", "The user's job is teaching."),
        entry_line("episode", "2026-06-15", "New job"),
        "- The user's job is teaching.",
        entry_line("user", "2026-06-15", "I love the job."),
    )
    # The episode's summary line restates the fact: said once.
    assert answer == "The user's job is teaching. New job. I love the job."


def test_it_reads_when_words_as_no_topic() -> None:
    """"now" in "where do I live now?" matched "I'm a teacher now." before."""
    answer = _synthesize(
        "where do I live now?",
        entry_line("fact", "2026-06-15", "The user is a teacher now."),
        entry_line("fact", "2026-06-15", "The user lives in Denver."),
    )
    assert answer == "The user lives in Denver."


def test_it_reads_the_entries_back_as_written() -> None:
    text = "\n".join(
        [
            entry_line("user", "2026-03-10", "I live in Boston."),
            f"{STATED_HERE}The user lives in Boston. {MOVED}",
            entry_line("fact", "2026-06-15", DENVER),
        ]
    )
    assert [(e.label, e.date, [(ln.text, ln.since, ln.now, ln.stated_here) for ln in e.lines])
            for e in entries(text)] == [
        ("user", "2026-03-10", [
            ("I live in Boston.", None, None, False),
            ("The user lives in Boston.", "2026-06-15", DENVER, True),
        ]),
        ("fact", "2026-06-15", [(DENVER, None, None, False)]),
    ]


def test_a_message_saying_what_a_fact_says_is_not_given_again() -> None:
    """A fact and the message it came from say the same in the third and the first person:
    the answer gives it once (the fact, which comes first), and what the message adds
    beyond it still counts as its own sentence."""
    answer = _synthesize(
        "what car am I looking for and what do I drive?",
        entry_line("fact", "2026-03-10", "The user is looking for a family car."),
        entry_line("fact", "2026-03-10", "The user drives a Prius now."),
        entry_line("user", "2026-03-10", "I'm looking for a family car"),
    )
    assert answer == "The user is looking for a family car. The user drives a Prius now."


def test_a_negated_statement_or_another_number_is_no_repeat() -> None:
    answer = _synthesize(
        "do I eat meat?",
        entry_line("fact", "2026-03-10", "The user eats meat."),
        entry_line("user", "2026-04-10", "I don't eat meat"),
    )
    assert answer == "The user eats meat. I don't eat meat."
    ages = _synthesize(
        "how old is the user in years?",
        entry_line("fact", "2026-03-10", "The user is 34 years old."),
        entry_line("fact", "2026-03-10", "The user's sister is 38 years old."),
    )
    assert ages == "The user is 34 years old. The user's sister is 38 years old."


def test_a_sentence_without_closing_punctuation_ends_with_a_full_stop() -> None:
    answer = _synthesize(
        "which dog and which cat do I have?",
        entry_line("user", "2026-03-10", "I have a dog called Rex"),
        entry_line("user", "2026-03-11", "and a cat called Mog!"),
    )
    assert answer == "I have a dog called Rex. and a cat called Mog!"

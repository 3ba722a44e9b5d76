"""The names, numbers and dates a text states: the one extractor of salient terms.

Used to tell what a compaction summary dropped (issue 10 item 2), by the offline
summariser to keep them (memoryapp.llm.offline), and by bench/summary_retention.py to
measure how many survive. One definition, so the three agree.

- **name**: a run of capitalised words (``New York``, ``Caroline``) joined by spaces only
  (``Caroline, Melanie`` is two names), not "I" (nor "I'm"), not "OK", not a weekday or
  month, titles left out (``Dr. Smith`` is ``Smith``, ``St. Mary's Primary School`` is
  ``Mary's Primary School``); a trailing possessive ``'s`` is dropped, one inside the
  name stays as written. A sentence's (or clause's: after a colon, quote, bracket or bullet) first word
  is capitalised anyway, so it counts only when the same word is written capitalised
  inside a sentence too, in the text or in ``known`` (the rest of its run still counts),
  and never when it is a common word (memoryapp.stopwords.SENTENCE_OPENERS: "No",
  "The", "So", "Yesterday"); neither does such a word right after a closing bracket
  ("[offline model] No language model...": a label, then the sentence). Elsewhere a
  capitalised common word is a name ("I met Will").
- **number**: digits with inner ``.,:/`` (``30,000``, ``10:30``, ``3.5``), with a
  currency sign before (``$300``) or a ``%`` after, as written, or a code of capitals
  and digits (``TP1350``); not the digits of a date nor digits inside a word.
- **date**: a weekday or month name (``Tuesday``, ``March 3``, ``3 March``, ``June
  2025``; in ``May 3, 2025`` the year is a number of its own) or an ISO date (``2025-05-03``); relative days ("tomorrow") are
  left out: they mean nothing once the day has passed.

A term survives in another text when it occurs there as a whole word, case-sensitively
(numbers and dates by their digits and words as written).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memoryapp.stopwords import SENTENCE_OPENERS

# A sentence ends at . ! ? and a space, except after a title or an initial ("Dr. Smith",
# "J. Smith", "e.g. this"): used by the offline summariser too, so one sentence is never
# split into two bullets.
SENTENCE_SPLIT = re.compile(
    r"(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bvs\.)(?<!\be\.g\.)"
    r"(?<!\bi\.e\.)(?<!\b[A-Z]\.)(?<=[.!?])\s+|\n+"
)
_WEEKDAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
# Capitalised only: "may" is a verb, "March" a month.
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_MONTH_WORD = re.compile(rf"^(?:{_WEEKDAYS}|{_MONTHS})$")
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE = re.compile(
    r"(?<![\w/.-])\d{4}-\d{2}-\d{2}(?![\w/-])"
    rf"|\b(?:{_DAY}\s+(?:{_MONTHS})(?:\s+\d{{4}})?"
    rf"|(?:{_MONTHS})\s+{_DAY}(?!\d)|(?:{_MONTHS})\s+\d{{4}}|{_WEEKDAYS}|{_MONTHS}"
    r")\b"
)
# Digits inside a word are not a number of their own; a code of capitals and digits
# (``TP1350``, ``A320``) is one number.
_NUMBER = re.compile(r"(?<![\w.])(?:[A-Z]{1,4}-?\d[\dA-Z]*\b|[$€£]?\d+(?:[.,:/]\d+)*%?)")
_WORD = re.compile(r"[\w'\u2019-]+")
_CAPITAL = re.compile(r"^[A-Z][A-Za-z'\u2019-]*$")
_POSSESSIVE = re.compile(r"['\u2019]s$")
# "I", "I'm", "I'd": the speaker, not a name.
_PRONOUN = re.compile(r"^I(?:['\u2019]\w+)?$")
_NOT_NAMES = frozenset(["OK", "Ok"])
# Titles are not names of their own: "Dr. Smith" names Smith.
_TITLES = frozenset(["Mr", "Mrs", "Ms", "Dr", "Prof", "Sir", "St", "Mt", "Ft"])
# What opens a clause as a sentence does: after it a capital says nothing.
_CLAUSE_OPENER = re.compile(r"[:;\"\u201c(\[]|^\s*[-*\u2022]\s")
# A closing bracket ends a label ("[offline model] No ..."): a common word after it
# opens the sentence that follows.
_AFTER_BRACKET = re.compile(r"[)\]]\s*$")


def _is_common(word: str) -> bool:
    """True for a word that opens sentences without naming anything (SENTENCE_OPENERS)."""
    return word.lower().replace("\u2019", "'") in SENTENCE_OPENERS


@dataclass(frozen=True)
class Terms:
    """A text's salient terms, each a set of strings as written (see the module doc)."""

    names: frozenset[str]
    numbers: frozenset[str]
    dates: frozenset[str]

    def all(self) -> frozenset[str]:
        """Every term of the three kinds."""
        return self.names | self.numbers | self.dates


def _is_capital(word: str) -> bool:
    return (
        bool(_CAPITAL.match(word))
        and word not in _NOT_NAMES
        and not _PRONOUN.match(word)
        and not _MONTH_WORD.match(word)
    )


def _runs(sentence: str) -> list[tuple[bool, list[str]]]:
    """The runs of capitalised words of ``sentence``, each with whether it opens the
    sentence (or a clause: after a colon, a quote, a bracket, a bullet). Words join a run
    only when spaces alone separate them ("Caroline, Melanie" is two runs); titles are
    skipped ("Dr. Smith" is "Smith")."""
    runs: list[tuple[bool, list[str]]] = []
    run: list[str] = []
    opens, previous_end, first = False, 0, True
    for match in _WORD.finditer(sentence):
        word = match.group(0).strip("'\u2019-")
        if not word:
            continue
        gap = sentence[previous_end : match.start()]
        previous_end = match.end()
        initial = first or bool(_CLAUSE_OPENER.search(gap))
        first = False
        common = (initial or bool(_AFTER_BRACKET.search(gap))) and _is_common(word)
        if run and (gap.strip() or initial or common or not _is_capital(word)):
            runs.append((opens, _closed(run)))
            run = []
        if word in _TITLES or common or not _is_capital(word):
            continue
        if not run:
            opens = initial
        run.append(word)
    if run:
        runs.append((opens, _closed(run)))
    return runs


def _closed(run: list[str]) -> list[str]:
    """``run`` without its last word's possessive "'s" ("Anna's" -> "Anna"); one inside
    it stays ("Mary's Primary School" is the name as written)."""
    return [*run[:-1], _POSSESSIVE.sub("", run[-1])]


def terms(text: str, *, known: frozenset[str] = frozenset()) -> Terms:
    """The names, numbers and dates stated in ``text`` (module doc for each kind).

    A run of capitals that opens a sentence counts as a name only when its first word is
    also written capitalised inside a sentence somewhere in ``text``, or is in ``known``
    (words seen that way in other texts of the same conversation: see ``name_words``).
    A number that is part of a date counts only with the date.
    """
    runs = [r for sentence in SENTENCE_SPLIT.split(text) for r in _runs(sentence)]
    words = known | _inner_words(runs)
    names: set[str] = set()
    for opens, run in runs:
        if opens and _POSSESSIVE.sub("", run[0]) not in words:
            run = run[1:]  # "The Eiffel Tower": the rest of the run still counts
        if run:
            names.add(" ".join(run))
    date_matches = list(_DATE.finditer(text))
    dates = {" ".join(m.group(0).split()) for m in date_matches}
    inside = [(m.start(), m.end()) for m in date_matches]
    numbers = {
        m.group(0)
        for m in _NUMBER.finditer(text)
        if not any(start <= m.start() and m.end() <= end for start, end in inside)
    }
    return Terms(frozenset(names), frozenset(numbers), frozenset(dates))


def name_words(texts: list[str]) -> frozenset[str]:
    """The words written capitalised inside a sentence (not opening it) in ``texts``: the
    ``known`` of terms() for texts of one conversation, so "Caroline" opening one
    message still counts once another message says "thanks, Caroline"."""
    return frozenset().union(
        *(
            _inner_words(_runs(sentence))
            for text in texts
            for sentence in SENTENCE_SPLIT.split(text)
        )
    )


def _inner_words(runs: list[tuple[bool, list[str]]]) -> frozenset[str]:
    """The words of ``runs`` that do not open their sentence."""
    return frozenset(
        _POSSESSIVE.sub("", w) for opens, run in runs for w in (run[1:] if opens else run)
    )


def survives(term: str, text: str) -> bool:
    """True when ``term`` occurs in ``text`` as a whole word (case-sensitive; a curly
    apostrophe is a straight one)."""
    term, text = term.replace("\u2019", "'"), text.replace("\u2019", "'")
    return re.search(rf"(?<![\w$€£]){re.escape(term)}(?![\w%])", text) is not None


def dropped_by_kind(*, before: list[str], after: str) -> dict[str, list[str]]:
    """``{"names", "dates", "numbers"}``: the terms of the ``before`` texts (folded
    messages, previous summary) that do not survive in ``after`` (the new summary), each
    list sorted. A sentence-opening word counts as a name when any ``before`` text writes
    it capitalised inside a sentence (``name_words``)."""
    known = name_words(before)
    found = [terms(text, known=known) for text in before]
    groups = {
        "names": set().union(*(t.names for t in found)),
        "dates": set().union(*(t.dates for t in found)),
        "numbers": set().union(*(t.numbers for t in found)),
    }
    return {
        kind: sorted(t for t in group if not survives(t, after)) for kind, group in groups.items()
    }

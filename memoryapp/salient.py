"""The names, numbers and dates a text states: the one extractor of salient terms.

Used to tell what a compaction summary dropped (issue 10 item 2), by the offline
summariser to keep them (memoryapp.llm.offline), and by bench/summary_retention.py to
measure how many survive. One definition, so the three agree.

- **name**: a run of capitalised words (``New York``, ``Caroline``) that does not open its
  sentence (a sentence's first word is capitalised anyway; the rest of the run still
  counts), not "I" (nor "I'm"), not "OK", not a weekday or month; a trailing possessive ``'s`` is dropped.
- **number**: digits with inner ``.,:/`` (``30,000``, ``10:30``, ``3.5``), with a
  currency sign before (``$300``) or a ``%`` after, as written.
- **date**: a weekday or month name (``Tuesday``, ``March 3``, ``3 March``); relative
  days ("tomorrow") are left out: they mean nothing once the day has passed.

A term survives in another text when it occurs there as a whole word, case-sensitively
(numbers and dates by their digits and words as written).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
_DATE = re.compile(
    rf"\b(?:\d{{1,2}}\s+(?:{_MONTHS})|(?:{_MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?\b|{_WEEKDAYS}|{_MONTHS}"
    r")\b"
)
_NUMBER = re.compile(r"[$€£]?\d+(?:[.,:/]\d+)*%?")
_WORD = re.compile(r"[\w'\u2019-]+")
_CAPITAL = re.compile(r"^[A-Z][A-Za-z'\u2019-]*$")
_POSSESSIVE = re.compile(r"['\u2019]s$")
# "I", "I'm", "I'd": the speaker, not a name.
_PRONOUN = re.compile(r"^I(?:['\u2019]\w+)?$")
_NOT_NAMES = frozenset(["OK", "Ok"])


@dataclass(frozen=True)
class Terms:
    """A text's salient terms, each a set of strings as written (see the module doc)."""

    names: frozenset[str]
    numbers: frozenset[str]
    dates: frozenset[str]

    def all(self) -> frozenset[str]:
        """Every term of the three kinds."""
        return self.names | self.numbers | self.dates


def _names(sentence: str) -> set[str]:
    found: set[str] = set()
    run: list[str] = []
    words = [w.strip("'\u2019-") for w in _WORD.findall(sentence)]
    for position, word in enumerate([*words, ""]):
        capital = (
            position > 0
            and bool(_CAPITAL.match(word))
            and word not in _NOT_NAMES
            and not _PRONOUN.match(word)
            and not _MONTH_WORD.match(word)
        )
        if capital:
            run.append(_POSSESSIVE.sub("", word))
            continue
        if run:
            found.add(" ".join(run))
        run = []
    return found


def terms(text: str) -> Terms:
    """The names, numbers and dates stated in ``text`` (module doc for each kind)."""
    names: set[str] = set()
    for sentence in SENTENCE_SPLIT.split(text):
        names |= _names(sentence)
    dates = {" ".join(m.group(0).split()) for m in _DATE.finditer(text)}
    return Terms(frozenset(names), frozenset(_NUMBER.findall(text)), frozenset(dates))


def survives(term: str, text: str) -> bool:
    """True when ``term`` occurs in ``text`` as a whole word (case-sensitive)."""
    return re.search(rf"(?<![\w$€£]){re.escape(term)}(?![\w%])", text) is not None


def dropped(*, before: list[str], after: str) -> list[str]:
    """The terms of the ``before`` texts (folded messages, previous summary) that do not
    survive in ``after`` (the new summary), sorted: names, then dates, then numbers."""
    found = [terms(text) for text in before]
    names = set().union(*(t.names for t in found))
    dates = set().union(*(t.dates for t in found))
    numbers = set().union(*(t.numbers for t in found))
    out: list[str] = []
    for group in (names, dates, numbers):
        out.extend(sorted(t for t in group if not survives(t, after)))
    return out

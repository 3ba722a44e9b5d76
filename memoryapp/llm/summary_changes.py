"""Which lines of a conversation a later line corrects, for the offline summariser
(memoryapp.llm.offline): a summary must not keep a statement as current once the same
thread changed it.

A line **corrects** an earlier one when it says it changes something and is about the
same thing:

- it has a **mark of change**: "actually", "change of plan", "correction", "I meant",
  "make that", "instead", "moved / pushed back / rescheduled / postponed", "now",
  "turns out", "no longer", "not ... anymore", "cancelled", "not X but Y";
- it shares a **topic word** with the earlier line (a content word, memoryapp.llm.
  summary_info, compared by a rough stem: "land" / "landing", "allergic" / "allergy");
- and either it **states another value of a kind the earlier line states** (a date, a
  time, an amount of money, a quantity of the same unit, a bare number, a name: "we land
  on April 5th" after "we land at Kansai on April 3rd"), or it **retracts** (no longer,
  not anymore, cancelled) and shares two topic words or names with it.

The summariser marks the corrected line (CHANGED_MARK) rather than deleting it: what it
says besides the changed value (where, who) may still hold, and the mark tells a reader
it is not current. It marks the correcting line too (UPDATE_MARK) and keeps it first in
every later fold, as a rule: once the corrected line is gone, the mark is all that says
the correction replaced something.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memoryapp.llm import summary_info

#: Appended to a line a later line corrects.
CHANGED_MARK = " [changed later]"
#: Appended to the line that corrects it: the summary's only memory, in the next fold
#: (when the corrected line may be gone), that this line is the current word.
UPDATE_MARK = " [update]"

# Marks that say what follows replaces something; a name may only be replaced after one.
_STRONG = (
    r"change of plans?|plans? (?:have |has )?changed|correction|to correct|scratch that|"
    r"i meant|make (?:that|it)\s+(?=[$€£\d]|the\s+\d|(?:one|two|three|four|five|six|seven|"
    r"eight|nine|ten)\b)|instead|rather than|switch(?:ed|ing)? to|"
    r"pushed (?:back|forward|up|to)|rescheduled|postponed|brought forward|updated?:?"
)
_CHANGE = re.compile(
    rf"(?:\b(?:{_STRONG})|(?:^|[,;:]\s*|\b(?:yeah|oh|wait|no|so|it's|it is|we|i|they|he|she)"
    r"\s*,?\s*)actually|\b(?:changed|moved|delayed|bumped|now|turns out|my mistake|no longer|"
    r"any ?more|cancell?ed|cancel|called off))\b|\bnot\b.{1,40}\bbut\b",
    re.IGNORECASE,
)
_STRONG_CHANGE = re.compile(rf"\b(?:{_STRONG})|\bnot\b.{{1,40}}\bbut\b", re.IGNORECASE)
_CLAUSE_BREAK = re.compile(r"[,;:\u2013\u2014]\s+|\s+-\s+|\s+(?:and|but|so)\s+")
_RETRACT = re.compile(
    r"\b(?:no longer|any ?more|cancell?ed|cancel|called off|off the table)\b", re.IGNORECASE
)
_NEGATED = re.compile(r"\b(?:not|no longer|instead of|rather than)\b|n't\b", re.IGNORECASE)
# The words of the mark itself say nothing about what changed.
_MARK_WORDS = frozenset(
    [
        "actually", "change", "changed", "plan", "correction", "correct", "scratch", "meant",
        "instead", "rather", "moved", "pushed", "rescheduled", "postponed", "delayed",
        "brought", "forward", "bumped", "switch", "switched", "switching", "update", "updated",
        "turn", "turns", "mistake", "longer", "anymore", "cancel", "cancelled", "canceled",
        "called",
    ]
)
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
)
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_COUNT = (
    r"(?:\d+(?:[.,]\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"fifteen|twenty|thirty|forty|fifty|a couple of|a few)"
)
_DURATION_UNITS = frozenset(["minute", "hour", "day", "night", "week", "weekend", "month", "year"])
_PEOPLE_UNITS = frozenset(
    ["people", "person", "adult", "kid", "child", "children", "guest", "traveler", "traveller"]
)
_KINDS = (
    ("money", re.compile(
        r"[$€£¥]\s?\d[\d,.]*(?:\s?[kKmM]\b)?|\b\d[\d,.]*\s?(?:k|dollars|euros|pounds|bucks|usd|eur|"
        r"gbp|yen)\b", re.IGNORECASE)),
    ("time", re.compile(
        r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}:\d{2}\b|\b(?:noon|midnight)\b",
        re.IGNORECASE)),
    ("date", re.compile(
        rf"\b(?:{_MONTH}\s+{_DAY}\b|{_DAY}\s+(?:of\s+)?{_MONTH}|\d{{4}}-\d{{2}}-\d{{2}}|"
        rf"(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)\b|(?i:monday|tuesday|wednesday|thursday|friday|"
        rf"saturday|sunday)|{_MONTH}(?!\w))")),
    ("quantity", re.compile(
        rf"\b{_COUNT}\s+(?:more\s+|extra\s+)?([a-z]+)", re.IGNORECASE)),
    ("number", re.compile(r"\b\d[\d,.]*\b")),
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_NOT_TOPIC = summary_info.STOP | (summary_info.PHATIC - {"meet", "meeting"}) | _MARK_WORDS
_GENERIC_UNITS = ("quantity:duration", "quantity:people")
_NAME = re.compile(r"(?<=[\w,;:)]\s)[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
_SUFFIXES = ("ies", "ing", "ed", "es", "ic", "al", "y", "s", "e")


@dataclass
class _Reading:
    """What a line states: its topic stems, its names and its values by kind."""

    topic: frozenset[str]
    names: frozenset[str]
    values: dict[str, frozenset[str]]


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _unit(word: str) -> str | None:
    """The kind a quantity's unit word gives, or None when the word is no unit."""
    word = word.casefold()
    singular = word[:-1] if word.endswith("s") and not word.endswith("ss") else word
    if singular in _DURATION_UNITS:
        return "quantity:duration"
    if singular in _PEOPLE_UNITS or word in ("children", "us"):
        return "quantity:people"
    if len(singular) < 3 or singular in summary_info.STOP or singular in _MARK_WORDS:
        return None
    return f"quantity:{_stem(singular)}"


def _values(text: str) -> tuple[dict[str, set[str]], str]:
    """``text``'s values by kind, and the text left once they are taken out."""
    values: dict[str, set[str]] = {}
    for kind, pattern in _KINDS:
        rest: list[str] = []
        at = 0
        for match in pattern.finditer(text):
            name = _unit(match.group(1)) if kind == "quantity" else kind
            if name is None:
                continue
            value = re.sub(r"(?<=\d)(?:st|nd|rd|th)\b|^the\s+|[.\s]+$", "", match.group(0).casefold())
            values.setdefault(name, set()).add(" ".join(value.split()))
            # A quantity's unit stays: "3 tickets" is about tickets.
            rest += [text[at : match.start()], f" {match.group(1)} " if kind == "quantity" else " "]
            at = match.end()
        text = "".join([*rest, text[at:]])
    return values, text


def _topic_words(text: str) -> set[str]:
    """The words of ``text`` a topic is made of: not function words, words of social
    formulas, the mark's or units of time and people, not names (capitalised inside a
    sentence), three letters or more."""
    out: set[str] = set()
    for index, match in enumerate(_WORD.finditer(text)):
        word = match.group(0).casefold().strip("'")
        if index and match.group(0)[0].isupper():
            continue
        if len(word) >= 3 and word not in _NOT_TOPIC and _unit(word) not in _GENERIC_UNITS:
            out.add(word)
    return out


def read(text: str) -> _Reading:
    """What ``text`` (one line's sentences) states, for ``corrects``."""
    values, rest = _values(text)
    names = frozenset(n.casefold() for n in _NAME.findall(rest))
    words = {_stem(w) for w in _topic_words(rest)}
    if names:
        values["name"] = set(names)
    return _Reading(frozenset(words), names, {k: frozenset(v) for k, v in values.items()})


def is_change(sentence: str) -> bool:
    """Whether ``sentence`` says it changes something (a mark of change, module docstring)."""
    return not sentence.rstrip().endswith("?") and _CHANGE.search(sentence) is not None


def corrects(new: str, old: str) -> bool:
    """Whether the sentence ``new`` corrects the earlier line ``old`` (module docstring)."""
    if not is_change(new) or old.rstrip().endswith("?"):
        return False
    new = _from_mark(new)
    later, earlier = read(new), read(old)
    shared = later.topic & earlier.topic
    if _RETRACT.search(new) and len(shared) + len(later.names & earlier.names) >= 2:
        return True
    strong = _STRONG_CHANGE.search(new) is not None
    # A name replaces a name only after a strong mark, and one at a time: "Ana moved to
    # Porto" after "Bruno visited Braga" is about someone else.
    if not strong or len(later.names - earlier.names) != 1:
        later.values.pop("name", None)
    # After a strong mark the same name is a topic too ("switching to Postgres 16").
    about = shared or (strong and later.names & earlier.names)
    return bool(about) and _conflict(later, earlier, negated=_NEGATED.search(new) is not None)


def _from_mark(sentence: str) -> str:
    """``sentence`` from the start of the clause its first mark of change is in: what
    comes before ("Hey John, great news - I'm now ...") is not what changed."""
    mark = _CHANGE.search(sentence)
    start = 0
    for brk in _CLAUSE_BREAK.finditer(sentence):
        if mark is None or brk.end() > mark.start():
            break
        start = brk.end()
    return sentence[start:]


def _conflict(later: _Reading, earlier: _Reading, *, negated: bool) -> bool:
    """Whether ``later`` states a value of a kind ``earlier`` states and ``earlier``'s value
    is not restated (or the later line negates: "not April 3rd but April 5th")."""
    for kind, values in later.values.items():
        before = earlier.values.get(kind, frozenset())
        if before and values - before and (before - values or negated):
            return True
    return False


def is_changed(line: str) -> bool:
    """Whether ``line`` was already marked as corrected (ends with CHANGED_MARK)."""
    return line.endswith(CHANGED_MARK)


def is_update(line: str) -> bool:
    """Whether ``line`` was already marked as a correction (ends with UPDATE_MARK)."""
    return line.endswith(UPDATE_MARK)


def unmarked(line: str) -> str:
    """``line`` without its CHANGED_MARK or UPDATE_MARK."""
    return line.removesuffix(CHANGED_MARK).removesuffix(UPDATE_MARK)

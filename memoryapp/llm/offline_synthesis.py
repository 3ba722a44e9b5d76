"""The offline adapter's synthesis: recall's answer picked from the recalled text itself.

The answer is at most three sentences of the synthesis text (memoryapp.llm.synthesis_input)
that share the most topic words with the question, in the text's order (facts come
first there, so a current fact wins a tie with a message saying the same). Two rules keep
it from misleading:

- An entry's label (``fact (2026-06-15): ``) and a summary line's bullet are the text's
  framing, never part of the answer.
- A statement a newer fact replaced is never given as true (docs/decisions.md "The
  context never states a replaced fact as true"). A sentence is replaced when its line
  carries the mark, or when, in the same entry, it says what a marked statement says in
  its own words: more than half of the marked statement's topic words that the current
  fact does not share ("I live in Boston" for "The user lives in Boston." replaced by
  "The user moved to Denver."). Such a sentence gives its place to the current fact, as
  recall gives an invalidated fact's place to its replacement; with no current fact it is
  given with its mark. A ``Stated here:`` line is never an answer.
"""

from __future__ import annotations

import re

from memoryapp import salient
from memoryapp.llm.synthesis_input import Line, entries, stale_mark
from memoryapp.search_words import search_text
from memoryapp.stopwords import FUNCTION_WORDS

MAX_SENTENCES = 3
MAX_SENTENCE_CHARS = 400

_WORD = re.compile(r"\w+", re.UNICODE)
_BULLET = re.compile(r"^\s*[-*•]\s+")
# Words that say when or how sure, not what about ("where do I live now?" asks where),
# and "user", which nearly every fact says.
_NOT_TOPIC = FUNCTION_WORDS | frozenset(
    ["now", "currently", "still", "anymore", "again", "nowadays", "actually", "really", "user"]
)


def _fold(word: str) -> str:
    # "lives" and "live", "kids" and "kid" are one topic word.
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def topic_words(text: str) -> frozenset[str]:
    """The words of ``text`` that say what it is about: clitics read
    (memoryapp.search_words), case folded, a plural or third-person ``s`` dropped, words of
    two letters and function words left out."""
    words = _WORD.findall(search_text(text).casefold())
    return frozenset(_fold(w) for w in words if len(w) > 2 and w not in _NOT_TOPIC)


def _sentences(text: str) -> list[str]:
    parts = [p.strip() for p in salient.SENTENCE_SPLIT.split(text) if p and p.strip()]
    return [p if len(p) <= MAX_SENTENCE_CHARS else p[: MAX_SENTENCE_CHARS - 1] + "…" for p in parts]


def _says(sentence: frozenset[str], marked: Line) -> bool:
    """Whether a sentence (its topic words) says the marked statement: more than half of
    the statement's words that its current fact does not share."""
    own = topic_words(marked.text) - topic_words(marked.now or "")
    return bool(own) and 2 * len(own & sentence) > len(own)


def _answer_text(sentence: str, line: Line, marked: list[Line]) -> str:
    """``sentence`` as the answer may give it: itself, or, when it states a replaced
    statement, the current fact (the statement with its mark when none is current)."""
    words = topic_words(sentence)
    stale = line if line.since else next((m for m in marked if _says(words, m)), None)
    if stale is None:
        return sentence
    if stale.now:
        return stale.now
    return f"{sentence} {stale_mark(stale.since or '', None)}"


def answer(query: str, context: str) -> str:
    """The offline synthesis of ``query`` from ``context`` (synthesis_input's text): at
    most MAX_SENTENCES sentences sharing the most topic words with the query, in the
    context's order, none stating a replaced statement as true (module doc); "" when no
    sentence shares a topic word with the query."""
    wanted = topic_words(query)
    if not wanted:
        return ""
    scored: list[tuple[int, int, str]] = []
    for entry in entries(context):
        marked = [line for line in entry.lines if line.since]
        for line in entry.lines:
            if line.stated_here:
                continue
            for sentence in _sentences(_BULLET.sub("", line.text)):
                overlap = len(wanted & topic_words(sentence))
                if overlap:
                    scored.append((-overlap, len(scored), _answer_text(sentence, line, marked)))
    chosen: list[tuple[int, str, frozenset[str]]] = []
    for _, order, text in sorted(scored):
        gist = _gist(text)
        if any(gist <= other for _, _, other in chosen):
            continue  # says nothing a chosen sentence does not ("I'm ..." beside "The user is ...")
        chosen.append((order, _ended(text), gist))
        if len(chosen) == MAX_SENTENCES:
            break
    return " ".join(text for _, text, _ in sorted(chosen))


# Words that turn a statement around: "I don't eat meat" is not "I eat meat" said again.
_NEGATIONS = frozenset(["not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without"])
# Words that are no part of what a sentence says: its framing, and who says it.
_PERSON = _NOT_TOPIC | frozenset(["i", "me", "my", "mine", "myself", "users"])


def _gist(sentence: str) -> frozenset[str]:
    """What a sentence says, for telling repeats apart: its words but function words
    (numbers and two-letter names kept), and whether it is negated; the first person and
    the third ("I'm vegan", "The user is vegan.") alike."""
    words = _WORD.findall(search_text(sentence).casefold())
    gist = frozenset(_fold(w) for w in words if len(w) > 1 and w not in _PERSON)  # "34", "LA" too
    return gist | {"(negated)"} if _NEGATIONS.intersection(words) else gist


def _ended(sentence: str) -> str:
    """``sentence`` with a full stop when it ends without any closing punctuation, so
    joined sentences stay sentences."""
    return sentence if re.search(r"[.!?\u2026\"'\u201d\u2019)\]]$", sentence) else sentence + "."

"""Requests to remember a statement: the request is no part of it.

A user may wrap a statement in a request to keep it: "Remember that my sister is called
Mara", "Please don't forget: I'm vegan", "FYI my flight is on Friday", "Could you note
that I moved to Lyon?", "I swim on Tuesdays, remember that." The request says what to do
with the statement and nothing about the user, so offline extraction reads the statement
alone (memoryapp.llm.extraction_offline: the same facts as the bare statement) and the
offline model writes it alone into its note (memoryapp.llm.offline_memory).

- **Leading.** The request opens the sentence (after "oh", "and", "please"...): a verb
  of keeping (remember, note, keep or bear in mind, don't forget, write down, make a
  note), asked or told ("can you", "I want you to"), then "that", a colon, a comma or a
  dash, or directly a subject ("remember my sister is Mara", "remember Mara is ..."); or
  an aside (FYI, just so you know, for the record, for future reference, heads up)
  before anything.
- **Trailing.** ", remember that." / ", don't forget it!" / ", FYI" closing a statement.
- **Not requests.** "I remember my first car", "Do you remember ...?", "Remember when
  we ...?", "Remember that time we ...", "Remember to call mom" (a task, not a statement),
  "Remember that ...?" (asks whether one remembers): the sentence keeps its meaning. An
  asked request ("Can you remember that I'm vegan?") is a request, its question mark a
  full stop.
- **Empty.** A request with nothing to keep ("remember that", "please remember!",
  "remember this for me, thanks") is the empty statement.
- **Labels.** A label of a word or two and a colon opening a sentence ("Reminder: I'm
  vegan", "Important: I live in Oslo", "PS: ...", "Side note: ...") says as little about
  the user when what follows is a statement of the speaker's own (opening with "I", "my",
  "we", "our"): offline extraction reads that statement alone (unlabelled). A label that
  names whose or what it is ("My address: 12 Rue X", "My wife: she's a nurse") or what
  follows no such statement ("Dinner: pasta") keeps the sentence as written.
"""

from __future__ import annotations

import re

_PLEASE = r"(?:please|pls|plz|kindly)"
# Words that open a sentence before a request and say nothing: "Oh, and please remember".
_OPENER = rf"(?:(?:oh|and|also|so|ok|okay|hey|btw|by the way|one more thing|{_PLEASE})\b[,!:]?\s+)*"
# Asking or telling the listener to keep something.
_ASKED = r"(?:(?P<asked>can|could|would|will) you|I (?:want|need) you to|I(?:'d| would) like you to)"
_KEEP = (
    r"(?:remember|memori[sz]e|note(?: down)?|make a (?:mental )?note|take (?:a )?note|"
    r"keep in mind|bear in mind|(?:don'?t|do not|never) forget|write (?:this |that |it )?down)"
)
# Asides that flag a statement as worth knowing: anything may follow them.
_ASIDE = (
    r"(?:just so you know|fyi|f\.y\.i\.?|for your information|for the record|"
    r"for future reference|(?:a )?heads up)"
)
# What a request may end with before its statement or alone: an object naming what is
# said around it ("this", "that", "it", "the following") and politeness.
_OBJECT = (
    rf"(?:\s+(?:of\s+)?(?:this|that|it|the following)(?=\s*(?:[:,;!.?\-\u2013\u2014]|$|for me\b|{_PLEASE}\b)))?"
)
_POLITE = rf"(?:\s+for me)?(?:,?\s+{_PLEASE})?"
_LEADING = re.compile(
    rf"^\s*{_OPENER}(?:(?:{_ASKED}\s+(?:{_PLEASE}\s+)?)?(?:always\s+)?(?P<keep>{_KEEP}){_OBJECT}{_POLITE}"
    rf"|(?P<aside>{_ASIDE}))"
    rf"(?P<joint>\s*[:,;!.?]+\s*|\s+[-\u2013\u2014]+\s+|\s+that\s+|\s+|\s*$)",
    re.IGNORECASE,
)
# "that" naming a moment, not opening a statement: "Remember that time we went to Rome".
_THAT_MOMENT = re.compile(
    r"(?:time|times|day|days|night|morning|afternoon|evening|week|weekend|month|year|summer|"
    r"winter|spring|autumn|fall|trip|party|holiday|vacation|place|one|guy|girl|song|movie|film|"
    r"book|show|game|moment)\b",
    re.IGNORECASE,
)
# After a keeping verb with no "that" nor punctuation, a statement opens with its
# subject: the speaker ("remember I'm vegan", "remember my sister ...") or a name.
_SUBJECT = re.compile(r"(?:(?:I|i)(?:'m|'ve|'d|'ll)?|my|we|we're|we've|our|(?-i:[A-Z][\w'-]+))\b", re.IGNORECASE)
_TRAILING = re.compile(
    rf"\s*[,;\-\u2013\u2014]+\s*(?:and\s+)?(?:{_PLEASE}\s+)?"
    rf"(?:(?:{_KEEP})(?:\s+(?:that|this|it))?{_POLITE}|{_ASIDE})\s*(?P<end>[.!]*)\s*$",
    re.IGNORECASE,
)
# Words of a request that name nothing to keep ("remember that for me, thanks").
_FILLER = frozenset(
    [
        "please", "pls", "plz", "ok", "okay", "thanks", "thx", "ty", "now", "that", "this", "it",
        "too", "also", "just", "again", "everything", "all", "of",
    ]
)
_FILLER_PHRASE = re.compile(r"\b(?:thank you|for me)\b", re.IGNORECASE)
_WORD = re.compile(r"[\w']+")
# A label of a word or two (letters, no digits) and a colon opening a sentence.
_LABEL = re.compile(r"^\s*(?P<label>[^\W\d_][\w.'-]*(?:\s+[^\W\d_][\w.'-]*)?)\s*:\s+(?=\S)")
# Label words that say whose or which thing is meant ("My address:", "The plan:"): the
# label is part of what the sentence says.
_DETERMINERS = frozenset(
    [
        "my", "our", "your", "his", "her", "their", "its", "the", "a", "an", "this", "that", "these",
        "those", "mine", "ours", "someone",
    ]
)
# A statement of the speaker's own: its subject is the speaker.
_OWN_STATEMENT = re.compile(r"(?:I(?:'m|'ve|'d|'ll)?|my|we(?:'re|'ve|'d|'ll)?|our)\s+\w", re.IGNORECASE)
# A word every request has: most sentences have none and are passed over at once.
_CUES = (
    "remember", "memori", "note", "forget", "mind", "write", "fyi", "f.y.i", "information", "record",
    "reference", "heads", "so you know",
)


def remembered(sentence: str) -> str | None:
    """The statement ``sentence`` asks to be remembered, its request dropped (the module
    docstring's rules): "Remember that my sister is Mara." -> "my sister is Mara.",
    "I swim on Tuesdays, remember that." -> "I swim on Tuesdays."; ``""`` when the request
    names nothing ("remember that!"); None when ``sentence`` makes no request ("I remember
    my first car"). One sentence in; the statement is kept as written (case, closing mark)
    but for a typographic apostrophe, written "'", and an asked request's question mark,
    a full stop."""
    lowered = sentence.lower()
    if not any(cue in lowered for cue in _CUES):
        return None
    text = sentence.replace("\u2019", "'").strip()
    trailing = _TRAILING.search(text)
    if trailing and _WORD.search(text, 0, trailing.start()):
        text = text[: trailing.start()].strip() + trailing["end"]
    else:
        trailing = None
    match = _LEADING.match(text)
    rest = text[match.end() :].strip() if match else ""
    if match is None or not _opens_statement(match, rest):
        return text if trailing else None
    if not names_something(rest):
        return ""
    if match["asked"] and rest.endswith("?"):
        rest = rest.rstrip("?").rstrip() + "."
    return rest


def unlabelled(sentence: str) -> str | None:
    """``sentence`` without a label of a word or two and a colon opening it when what
    follows is the speaker's own statement (the module docstring's **Labels**):
    "Reminder: I'm vegan." -> "I'm vegan.", "PS: my sister lives in Oslo" -> "my sister
    lives in Oslo"; None when no such label opens it ("My address: 12 Rue X", "Dinner:
    pasta", "I'm vegan."). One sentence in, the statement kept as written."""
    match = _LABEL.match(sentence)
    if match is None or match["label"].split()[0].lower() in _DETERMINERS:
        return None
    rest = sentence[match.end() :].strip()
    return rest if _OWN_STATEMENT.match(rest) else None


def _opens_statement(request: re.Match[str], rest: str) -> bool:
    """Whether what follows a leading ``request`` is the statement it asks to keep: not a
    question unless the request is asked ("Remember that ...?"), not a moment named by
    "that" ("remember that time ..."), and after a keeping verb with no "that" nor
    punctuation, a subject ("remember my sister ...", not "remember when ...", "remember
    to ...")."""
    if not request["keep"] or not names_something(rest):
        return True
    if rest.endswith("?") and not request["asked"]:
        return False  # "Remember that ...?" asks whether one remembers
    joint = request["joint"].strip().lower()
    if joint == "that":
        return _THAT_MOMENT.match(rest) is None
    return bool(joint) or _SUBJECT.match(rest) is not None


def names_something(text: str) -> bool:
    """Whether ``text`` has a word besides a request's politeness and pointers ("please",
    "thanks", "that", "for me", ...): "for me, thanks!" names nothing to remember."""
    return bool({w.lower() for w in _WORD.findall(_FILLER_PHRASE.sub(" ", text))} - _FILLER)

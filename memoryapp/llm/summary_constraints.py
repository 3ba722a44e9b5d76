"""Which lines of a conversation state a constraint, for the offline summariser
(memoryapp.llm.offline), which keeps them through every fold of the rolling summary.

A **constraint** is what an assistant must not forget even when it forgets the rest: a
rule about the user or someone they mention that, broken, does harm or wastes the work.
Read from a sentence's form, not from a topic list:

- **safety** (rank SAFETY): health and body - an allergy, an intolerance, a medical
  condition, pregnancy, a disability, a diet kept for health or belief ("Yuki is allergic
  to shellfish", "I'm lactose intolerant", "Grandma uses a wheelchair");
- **requirement** (rank REQUIREMENT): a prohibition or demand addressed to the assistant
  ("no seafood restaurants please", "never book red-eye flights", "make sure ..."), a
  person who can't / must / has to / needs to do something ("Mia can't eat gluten",
  "we have to be back by the 20th"), a preference stated as a rule ("vegetarian options
  only", "it has to be quiet"), a hard budget ("our budget is $2,500 max") or deadline
  ("the report is due March 14").

Only the user's and system lines are read (the user states the rules; an assistant
repeating one is an echo), and a question is a constraint only when it names a safety
matter or asks for a prohibition ("Could you avoid anything with nuts?").
"""

from __future__ import annotations

import re
from typing import NamedTuple

from memoryapp.llm import summary_info

#: Ranks: what a line is kept for, higher first.
NONE = 0
REQUIREMENT = 1
SAFETY = 2

_SAFETY = re.compile(
    r"\b(?<!your )(?:allerg\w*|intoleran\w*|anaphyla\w*|epi-?pens?|coeliac|celiac|lactose|"
    r"diabet\w*|epilep\w*|seizures?|asthma\w*|pregnan\w*|insulin|medications?|"
    r"prescri(?:bed|ption)|blood thinners?|heart condition|blood pressure|wheelchair|"
    r"crutches|mobility|disabilit\w*|disabled|hearing aid|dietary|halal|kosher|vegan|"
    r"vegetarian|pescatarian|teetotal|migraines?|phobi\w*|claustrophob\w*|"
    r"motion sick\w*|sea-?sick\w*|injur\w*|surgery|chronic|"
    r"(?:bad|sore|broken|injured) (?:knee|back|hip|ankle|leg|arm|wrist|shoulder))\b",
    re.IGNORECASE,
)
# Someone the sentence is about: the speaker, a third person, or a name with a verb.
_PERSON = re.compile(
    r"(?<![\w'\u2019])(?:I(?:['\u2019](?:m|ve|d|ll))?|(?i:me|my|mine|we|us|our|he|him|his|she|her|"
    r"they|them|their))(?![\w'\u2019])"
    r"|(?<=\w\W)[A-Z][a-z]+|^[A-Z][a-z]+(?:['\u2019]s)? (?:is|has|had|was|can|can't|cannot|"
    r"gets|needs|must|uses|takes|doesn't|does not|won't|should|mustn't|never|only)\b"
)
# "No seafood restaurants please", "no pork, please": a prohibition addressed to the reader.
_NO_PLEASE = re.compile(
    r"\bno\s+(?:[\w-]+\s+){0,3}?[\w-]+,?\s+(?:please|thanks|thank you)\b"
    r"|\bplease\s+(?:no|never|don't|do not|avoid)\b"
    r"|\b(?:don't|doesn't|do not|does not|never|won't|can't|cannot)\s+(?:eat|drink|consume)\b",
    re.IGNORECASE,
)
# An imperative prohibition or demand opening the sentence or a clause ("Never book ...",
# "..., so avoid peak hours", "Make sure ..."), not a formula ("Don't worry", "Never mind").
_IMPERATIVE = re.compile(
    r"(?:^|[,;:\u2013-]\s+(?:so\s+|and\s+|but\s+)?|\bso\s+)"
    r"(?:(?:and|also|oh|but|so|just|please)[\s,]+)*(?:never|don't|do not|avoid|no|make sure|"
    r"be sure|remember to)\s+(?!(?:worries|worry|problem|way|idea|wonder|doubt|kidding|clue|"
    r"rush|need|mind|mention|hesitate|be|forget|thanks|thank|matter|offense|offence|big deal|"
    r"pressure|biggie|one|thought|been|knew|know|seen|saw|heard|give|ever|quit|say|feel|let|"
    r"you|your|yours|stop|problem)\b)\w",
    re.IGNORECASE,
)
# Someone who can't / must / has to ... do something ("Mia can't eat gluten").
_SUBJECT = (
    r"(?:I|[Ww]e|[Hh]e|[Ss]he|[Tt]hey|(?!(?:You|It|That|This|There|What|Which|Not|Just|Also|"
    r"But|And|So|Really|Maybe|Still|Even|Then|Now|Well|Yes|No|Oh|Wow|Guess|Must)\b)[A-Z][a-z]+|"
    r"(?:[Mm]y|[Oo]ur|[Hh]is|[Hh]er|[Tt]heir) [\w-]+)"
)
_MODAL = (
    r"(?:can't|cannot|can not|can only|shouldn't|must(?:n't| not| never| always)?"
    r"(?!\s+(?:have|be|feel|really|add)\b)|"
    r"should never|need to|needs to|have to|has to|refuses? to)"
)
# What people say they can't / have to do in chat that binds nobody ("I can't wait").
_CHAT_VERBS = (
    r"believe|wait|stop|help|say|tell|thank|imagine|remember|recall|agree|describe|express|"
    r"explain|admit|think|know|understand|resist|deny|complain|see|hear|figure|decide|find|"
    r"seem|care|mind|forget|worry|be|look|feel|get|go|try|keep|put|share|show|thank|wish|"
    r"say|ask|check|catch|hang|learn|read|watch|make|take|give|start|talk|admire|praise|"
    r"visit|come|hope|love|like|just|really|imagine|let|quit|right|now|even|ever|always|"
    r"been|go|win|beat|miss|thank|lose|fail|change|leave"
)
_BOUND = re.compile(
    rf"(?<![\w'])(?-i:{_SUBJECT})\s+(?:really\s+|absolutely\s+|strictly\s+|simply\s+)?"
    rf"(?i:{_MODAL})\s+(?!(?:{_CHAT_VERBS})\b)[a-z]",
    re.IGNORECASE,
)
_RULE_WORDS = re.compile(
    r"\b(?:mustn't|required|requires|requirement|mandatory|non-negotiable|strictly|is a must|"
    r"at (?:most|the latest|the earliest)|no (?:more|later|earlier) than|not (?:more|later) "
    r"than|maximum|deadline|due (?:by|on|date)|hard limit|insists?(?: on)?|deal-?breaker|"
    r"has to be|have to be|needs to be|need to be|only (?:on|after|before|at|between|until|"
    r"from)|(?:in|at|for|on) every|(?-i:I|[Ww]e) must|must be (?:back|home|at|in|there|ready|"
    r"done|finished|on time|out))\b|\b[\w-]+ only[.!]?$",
    re.IGNORECASE,
)
_MONEY = re.compile(
    r"[$€£¥]\s?\d|\b\d[\d,.]*\s?(?:k|dollars|euros|pounds|bucks|usd|eur|gbp|yen)\b", re.I
)
_BUDGET_WORDS = re.compile(
    r"\b(?:budget\w*|afford|max|maximum|at most|under|up to|no more than|limit|cap|tops|total)\b",
    re.IGNORECASE,
)
_ROLES = ("user", "system")
# Of the past or supposed: "I used to ...", "if I couldn't ...", "back when ...".
_NOT_NOW = re.compile(
    r"\b(?:used to|if (?:I|we|he|she|they|you)|back when|when I was|as if|imagine)\b", re.I
)
# A demand that names the reader's own things is advice to them ("make sure your ...").
_ADVICE = re.compile(r"\b(?:you|your|yours|you're|you'll)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
_PREPOSITIONS = frozenset(["to", "of", "from", "with", "for", "after"])
_CLAUSE_BREAK = re.compile(r"[,;:.!\u2013\u2014]\s+|\s+-\s+|\s+(?:and|but|so|since|because)\s+", re.I)


class Rule(NamedTuple):
    """What a sentence is kept for (``rank``) and what its rule is about (``about``: the
    lower-cased stems of the words of the rule and the few around it, "allerg", "shellfish")."""

    rank: int
    about: frozenset[str]


#: What a sentence that binds nothing is kept for.
NO_RULE = Rule(NONE, frozenset())


def rule(role: str | None, sentence: str, *, question: str | None = None) -> Rule:
    """What ``sentence`` (said by ``role``; ``question``: the question it answers, if it
    is a short answer) is kept for, SAFETY, REQUIREMENT or NONE (module docstring), and
    what about. A line with no role (prose of another model's summary) is read as the
    user's; a sentence of the past or of a supposition ("I used to ...", "if I ...") and
    a demand addressed to the reader about their own affairs ("make sure your ...") bind
    nothing now."""
    if role not in (*_ROLES, None) or sentence.rstrip().endswith("?"):
        return NO_RULE
    safety = _SAFETY.search(sentence)
    if safety and _PERSON.search(sentence) and _now(sentence, safety):
        return Rule(SAFETY, _about(sentence, safety, safety=True))
    demand = _NO_PLEASE.search(sentence) or (
        None if _ADVICE.search(sentence) else _IMPERATIVE.search(sentence.lstrip())
    )
    found = demand or _BOUND.search(sentence) or _RULE_WORDS.search(sentence)
    if found is None and _BUDGET_WORDS.search(f"{question or ''} {sentence}"):
        found = _MONEY.search(sentence)
    if found is None or not _now(sentence, found):
        return NO_RULE
    return Rule(REQUIREMENT, _about(sentence, found, safety=False))


def rank(role: str | None, sentence: str, *, question: str | None = None) -> int:
    """rule(...).rank: SAFETY, REQUIREMENT or NONE."""
    return rule(role, sentence, question=question).rank


def _clause_start(sentence: str, index: int) -> int:
    """Where the clause holding ``sentence[index]`` starts."""
    breaks = [m.end() for m in _CLAUSE_BREAK.finditer(sentence, 0, index)]
    return breaks[-1] if breaks else 0


def _now(sentence: str, match: re.Match[str]) -> bool:
    """Whether the clause of ``match`` states it now, not of the past or supposed."""
    return not _NOT_NOW.search(sentence, _clause_start(sentence, match.start()), match.end())


def _about(sentence: str, match: re.Match[str], *, safety: bool) -> frozenset[str]:
    """What the rule ``match`` is about: the stems (six letters) of its words and of up to
    three words after it in its clause, leaving out function words, social formulas and
    -ly adverbs. For a safety matter, the word before it ("peanut allergy") and what
    follows only after a preposition ("allergic to cats", not "lactose intolerant I'm
    trying")."""
    stop = match.end()
    while stop < len(sentence) and (sentence[stop].isalnum() or sentence[stop] in "'-"):
        stop += 1  # a pattern may end inside a word ("I need to b")
    rest = sentence[stop:]
    end = _CLAUSE_BREAK.search(rest)
    after = _WORD.findall(rest[: end.start() if end else None])
    if safety:
        after = after[1:4] if after and after[0].casefold() in _PREPOSITIONS else []
    words = [
        *(_WORD.findall(sentence[: match.start()])[-1:] if safety else []),
        *_WORD.findall(sentence[match.start() : stop]),
        *after[:3],
    ]
    return frozenset(
        w.casefold()[:6]
        for w in words
        if len(w) >= 3
        and w.casefold() not in summary_info.STOP
        and w.casefold() not in summary_info.PHATIC
        and not w.endswith("ly")
    )

"""What a line of a conversation tells a reader, for the offline summariser's choice of
lines (memoryapp.llm.offline).

Names, numbers and dates (memoryapp.salient) are not all a conversation says: "I'm
vegetarian, and my hobby is rock climbing" names nothing and is one of the facts a
summary exists to keep. So a line's information is also its **content words** (words
that are neither function words, memoryapp.stopwords, nor the words of greetings and
acknowledgements), weighted by who says it and how:

- a **self-disclosure**, the user stating something about themselves (a first-person
  subject or possessive, I / we / my / our, in a sentence that is not a question and
  states something: a content word or a salient term), counts SELF_WEIGHT times;
- a line of another speaker (the assistant) counts nothing for what an earlier line of
  someone else already said (an echo: "How is Seattle treating you?" after the user
  said they moved to Seattle), and a question of theirs ASK_WEIGHT: it asks, it does
  not state;
- a greeting or acknowledgement ("Nice to meet you, Alex!", "Thanks, that helps") and
  tool traffic (calls and results, the agent's own plumbing) count nothing.

No word list here names a topic: the two lists are English function words and the words
of social formulas.
"""

from __future__ import annotations

import functools
import re

from memoryapp.stopwords import FUNCTION_WORDS

#: What a content word is worth beside a name, number or date (1).
CONTENT_WEIGHT = 0.5
#: How much more the user's statements about themselves are worth.
SELF_WEIGHT = 2.0
#: What the words of another speaker's question are worth (they ask, not state).
ASK_WEIGHT = 0.5
#: The most a line's content words are worth together: two of the user's words about
#: themselves, four of anyone else's, so a long line does not win by length alone.
MAX_WORDS_VALUE = 2.0

# Function words beyond memoryapp.stopwords: pronouns, auxiliaries, the light verbs and
# adverbs that carry no topic of their own.
_MORE_FUNCTION_WORDS = (
    "i i'm i've i'd i'll im ive he she they them him her his hers its their theirs mine "
    "yours ours you're you've we're we've we'd we'll they're it's that's there's here's "
    "what's let's am been being but by if as so than then there too also just very really "
    "quite much many more most some all any every each other another such own same only "
    "even still yet ever again now here back out up down off over under one ones thing "
    "things something anything everything nothing someone anyone everyone lot lots bit "
    "kind sort way get gets got getting go goes going gone went make makes made take "
    "takes took say says said tell told know knew think thought feel felt see saw seen "
    "look looks want wants like likes need needs let lets come came put keep kept give "
    "gave should shall may might must can't don't didn't doesn't isn't wasn't aren't "
    "won't wouldn't couldn't i'd've yes yeah no not maybe well oh ok okay sure actually "
    "probably definitely totally absolutely pretty always never often sometimes usually "
    "soon today tomorrow yesterday tonight though although because while since until "
    "about after before during through without within between"
)
# The words of greetings, thanks and acknowledgements: a sentence made of these, function
# words and names is small talk, whoever says it.
_PHATIC_WORDS = (
    "hi hello hey hiya greetings morning afternoon evening night bye goodbye later "
    "thanks thank welcome pleasure please sorry nice glad pleased happy great good "
    "fine cool awesome amazing wonderful lovely fantastic brilliant excellent perfect "
    "fun interesting exciting sounds sound meet meeting met hear hearing heard appreciate "
    "appreciated congrats congratulations wow cheers care luck chat talk talking catch "
    "hope hoping wish wishes helps help helpful glad true right exactly agree agreed "
    "indeed lol haha hmm awww aww yay"
)
STOP = FUNCTION_WORDS | frozenset(_MORE_FUNCTION_WORDS.split())
PHATIC = frozenset(_PHATIC_WORDS.split())

_WORD = re.compile(r"[A-Za-z][A-Za-z'\u2019-]*")
_FIRST_PERSON = re.compile(
    r"(?<![\w'\u2019])(?:I|I['\u2019](?:m|ve|d|ll)|(?i:we|we['\u2019](?:re|ve|d|ll)|my|our))"
    r"(?![\w'\u2019])"
)
_DIGIT = re.compile(r"\d")


def _normal(word: str) -> str:
    """``word`` lower-cased, without a possessive and a plain plural ``s``."""
    word = word.casefold().replace("\u2019", "'").strip("'-")
    word = word.removesuffix("'s")
    if len(word) > 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    return word


@functools.lru_cache(maxsize=4096)  # a line is asked about by each pass of the summariser
def content_words(sentence: str) -> frozenset[str]:
    """The sentence's content words, normalised: words of at least three letters that are
    not function words nor words of greetings and acknowledgements, and not capitalised
    inside the sentence (those are names: memoryapp.salient counts them)."""
    out: set[str] = set()
    for index, match in enumerate(_WORD.finditer(sentence)):
        raw = match.group(0)
        if index > 0 and raw[0].isupper():
            continue
        word = _normal(raw)
        if len(word) >= 3 and word not in STOP and word not in PHATIC:
            out.add(word)
    return frozenset(out)


def is_first_person(sentence: str) -> bool:
    """Whether ``sentence`` has a first-person subject or possessive (I, we, my, our)."""
    return _FIRST_PERSON.search(sentence) is not None


def is_self_disclosure(role: str, sentence: str, *, states: bool) -> bool:
    """Whether ``sentence`` is the user stating something about themselves: a user
    sentence with a first-person subject or possessive, not a question, that ``states``
    something (the caller says whether it has content words or salient terms)."""
    return (
        role == "user"
        and states
        and not sentence.rstrip().endswith("?")
        and is_first_person(sentence)
    )


def is_small_talk(sentence: str) -> bool:
    """Whether ``sentence`` is a greeting or acknowledgement: no digit, a word of social
    formulas, and every other word a function word or a capitalised name (a form of
    address, "Nice to meet you, Alex!"; "The Minnesota Wolves!" is no small talk). A first-person sentence naming someone is not ("I'm
    Alex.": the user says who they are)."""
    if _DIGIT.search(sentence):
        return False
    named = social = False
    for index, match in enumerate(_WORD.finditer(sentence)):
        raw = match.group(0)
        word = _normal(raw)
        if word in PHATIC:
            social = True
            continue
        if word in STOP:
            continue
        if raw[0].isupper() and index > 0:
            named = True
            continue
        return False
    return social and not (named and is_first_person(sentence))

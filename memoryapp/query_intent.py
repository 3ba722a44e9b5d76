"""What a recall query asks for, beyond its own words (memoryapp.recall).

People ask for a category where the conversation named its members: "what are his
hobbies?" where the user said "I play guitar" and "I love running"; "what are my kids
called?" where the user said "my son Arjun". The words never meet, so word search alone
finds nothing, or finds "my dog is called Biscuit". A question word that names such a
category (CATEGORIES) adds, to the query's own search words:

- **related words** (``terms``), searched in every layer at EXPANSION_WEIGHT of a word of
  the query, a text counting the best one it has, not their sum: the verbs and nouns the members are stated with ("play", "love", "enjoy";
  "son", "daughter");
- **fact attributes** (``attributes``), looked up in the fact layer as one more search
  term (weight ATTRIBUTE_WEIGHT): the attributes extraction gives such statements
  ("stance on ..." with value "likes"; "son", "daughter"; "lives in"; "job").

A **request word** ("remind", "tell", "called": REQUEST_WORDS) says what is wanted done,
not what about, and a **time word** ("now", "currently": TIME_WORDS) asks for the state
that holds, which the fact layer's current facts already are: either counts
REQUEST_WEIGHT when the query has other words ("where do I live now?" ranked "I'm a
teacher now" first on the shared "now").

**Whose statement.** A question in the first person ("my kids", "where do I live"),
naming "the user", or in the third person naming nobody ("what are his hobbies?": the
person this memory is about) asks about the user: ``roles`` is ``{"user"}``, and the raw layer
prefers the user's own messages (memoryapp.message_search.ROLE_BOOST) over the
assistant's chatter that happens to share a word ("Have you seen them live?").

Pure Python; tokenization stays memoryapp.message_search's (its query_words and
query_terms are the input here).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

#: Weight of a related word against a word of the query (1.0).
EXPANSION_WEIGHT = 0.5
#: Weight of the asked-for attribute as a search term of the fact layer.
ATTRIBUTE_WEIGHT = 1.5
#: Weight of a request word, when the query has other words.
REQUEST_WEIGHT = 0.1

REQUEST_WORDS = frozenset(
    ["remind", "tell", "recall", "remember", "called", "named", "name", "names", "please",
     "again", "know", "list"]
)
# Words asking for what holds now, not naming a topic (weighted as request words).
TIME_WORDS = frozenset(["now", "currently", "nowadays", "anymore", "still"])
_LOW = REQUEST_WORDS | TIME_WORDS
# First-person words: the asker is the user and asks about themself.
FIRST_PERSON = frozenset(["i", "me", "my", "mine", "myself", "user", "user's"])
# Third-person words: with no name in the question, the person memory is about.
THIRD_PERSON = frozenset(["he", "him", "his", "she", "her", "hers", "they", "them", "their"])
_NAME = re.compile(r"\b[^\W\d_][\w'-]*", re.UNICODE)

Attribute = tuple[str, "str | None"]


@dataclass(frozen=True, slots=True)
class Category:
    """A kind of thing a question asks for: the question words naming it (``cues``), the
    words its members are stated with (``related``), the fact attributes they get
    (``(name, value)``: a name ending in "%" is a prefix; value None: any)."""

    cues: frozenset[str]
    related: tuple[str, ...]
    attributes: tuple[Attribute, ...]


def _category(cues: str, related: str, attributes: Sequence[Attribute]) -> Category:
    return Category(frozenset(cues.split()), tuple(related.split()), tuple(attributes))


_CHILDREN = [("son", None), ("daughter", None), ("kid", None), ("child", None), ("baby", None)]
def _names(words: str) -> list[Attribute]:
    return [(word, None) for word in words.split()]


_FAMILY = [
    *_CHILDREN,
    *_names(
        "wife husband partner spouse mother mom mum father dad sister brother grandmother "
        "grandma grandfather grandpa"
    ),
]
_PETS = _names(
    "dog cat pet puppy pup kitten kitty horse pony bird rabbit bunny hamster parrot turtle tortoise "
    "snake lizard gecko ferret fish goldfish"
)

CATEGORIES: tuple[Category, ...] = (
    _category(
        "hobby hobbies pastime pastimes interests interest leisure fun activities "
        "activity sports sport passions passion",
        "love like enjoy play practise practice hobby fan",
        [("stance on %", "likes"), ("stance on %", "does"), ("favorite %", None)],
    ),
    _category(
        "kids kid children child son sons daughter daughters",
        "son daughter kid child children",
        _CHILDREN,
    ),
    _category("family relatives parents siblings", "family son daughter wife husband", _FAMILY),
    _category("pet pets animal animals", "pet dog cat", _PETS),
    _category(
        "job work works occupation profession career living employer",
        "work job",
        [("job", None), ("works at", None)],
    ),
    _category(
        "live lives living home city town address reside resides located based",
        "live moved home based",
        [("lives in", None)],
    ),
    _category("car vehicle drive drives driving", "car drive", [("car", None)]),
    _category(
        "age old birthday born", "age old birthday born turned",
        [("age", None), ("birthday", None), ("born", None)],
    ),
    _category(
        "married spouse wife husband partner", "married wife husband partner",
        [("spouse", None), ("wife", None), ("husband", None), ("partner", None)],
    ),
    _category("friend friends", "friend", [("friend", None)]),
    # "What is my name?": an introduction ("Hi, I'm Dana") states it without the word.
    _category("name names", "", [("name", None)]),
    _category(
        "diet allergy allergies allergic eat food",
        "diet allergic eat food",
        [("diet", None), ("allergic to", None), ("favorite food", None)],
    ),
    _category("study studies studying degree major university", "study",
              [("studies", None)]),
    _category(
        "language languages speak speaks spoken fluent bilingual", "speak fluent language",
        [("speaks", None), ("native language", None), ("learning", None)],
    ),
)


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A query as the layers search it: ``terms`` (the query's own search words, then
    related words) with a ``weights`` entry each, the fact ``attributes`` asked for, and
    the ``roles`` whose messages it asks about."""

    terms: tuple[str, ...]
    weights: tuple[float, ...]
    attributes: tuple[Attribute, ...] = ()
    roles: frozenset[str] = field(default_factory=frozenset)

    @property
    def related(self) -> tuple[int, ...]:
        """The indices of the related words in ``terms`` (bm25.scores' alternatives: a
        text stating one member of a category is not outdone by one with two verbs)."""
        return tuple(i for i, w in enumerate(self.weights) if w == EXPANSION_WEIGHT)

    @property
    def fact_weights(self) -> tuple[float, ...]:
        """``weights`` and, when attributes are asked for, ATTRIBUTE_WEIGHT for them."""
        return (*self.weights, ATTRIBUTE_WEIGHT) if self.attributes else self.weights


def names_someone(query: str) -> bool:
    """Whether ``query`` has a capitalised word after its first (a name: "Caroline",
    "Daniel's"); "I" is not one."""
    return bool(names_in(query))


def names_in(query: str) -> frozenset[str]:
    """The capitalised words of ``query`` after its first, lower-cased and without a
    possessive "'s" ("how old is Tom?" -> {"tom"}, "Daniel's job" -> {"daniel"}); "I" is
    not one."""
    words = _NAME.findall(query)[1:]
    return frozenset(
        re.sub(r"'s$", "", w).lower()
        for w in words
        if w[0].isupper() and w != "I" and not w.startswith("I'")
    )


def asks_attribute(query: SearchQuery, attribute: str | None) -> bool:
    """Whether a fact's ``attribute`` is one ``query`` asks for (any value; a name
    ending in "%" a prefix)."""
    if not attribute:
        return False
    attribute = attribute.lower()
    return any(
        attribute.startswith(name[:-1]) if name.endswith("%") else attribute == name
        for name, _ in query.attributes
    )


def about_someone_else(subject: str | None, text: str, named: frozenset[str]) -> bool:
    """Whether a fact of ``subject`` with ``text`` is about a person other than those a
    query names (``named``, names_in): its subject is someone (not the user) the query
    does not name, and its text names none of them ("Lily is 8." for "how old is Tom?")."""
    if not named or not subject or subject.casefold() == "user":
        return False
    words = {w.lower() for w in _NAME.findall(f"{subject} {text}")}
    words |= {re.sub(r"'s$", "", w) for w in words}
    return not words & named


def search_query(*, words: Sequence[str], terms: Sequence[str], named: bool = False) -> SearchQuery:
    """The SearchQuery of a query whose distinct lower-cased words are ``words`` and whose
    search words are ``terms`` (memoryapp.message_search.query_words / query_terms);
    ``named``: the query names someone (names_someone).
    ``terms`` first (a request or time word at REQUEST_WEIGHT when another term is
    neither, the others 1.0), then the related words of every category a word names (module doc)
    that are not terms already, at EXPANSION_WEIGHT; at most one entry per word."""
    own = list(dict.fromkeys(terms))
    content = [t for t in own if t not in _LOW]
    weights = [1.0 if t not in _LOW or not content else REQUEST_WEIGHT for t in own]
    related: list[str] = []
    attributes: list[Attribute] = []
    asked = set(words)
    for category in CATEGORIES:
        if asked & category.cues:
            related += [w for w in category.related if w not in own and w not in related]
            attributes += [a for a in category.attributes if a not in attributes]
    about_user = bool(asked & FIRST_PERSON) or (bool(asked & THIRD_PERSON) and not named)
    roles = frozenset(["user"]) if about_user else frozenset()
    return SearchQuery(
        terms=(*own, *related),
        weights=(*weights, *[EXPANSION_WEIGHT] * len(related)),
        attributes=tuple(attributes),
        roles=roles,
    )

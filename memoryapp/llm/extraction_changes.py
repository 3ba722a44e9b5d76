"""Life changes the offline extractor reads (memoryapp.llm.extraction_offline's hooks).

General English statements that a state changed, each an attribute whose fact ends the
old one through memoryapp.semantic's single-valued rule or ExtractedFact.retires:

- **Moves.** "I moved from Berlin to Lisbon", "we relocated back to Porto", "I left
  Berlin for Lisbon", "I'm living in Lisbon now", "we've settled in Lisbon": ``lives in``
  the new place.
- **Job changes.** "These days I'm working as a chef", "I've been working as a nurse",
  "I started a new job as a designer", "I switched careers to nursing": ``job`` (the
  title up to its employer, which extraction_offline splits off as ``works at``).
- **Ended states.** "I'm not a teacher anymore", "I no longer work as a teacher", "I
  don't live in Berlin any more", "I no longer work at Acme": a ``former ...`` fact that
  ends the current one naming it (``retires_when``), never a value "no longer".
- **Losses.** "Sadly Rex died", "our cat Luna passed away", "we had to rehome Rex", "we
  gave our dog away": ``lost`` the one named (or the relation word), ending the
  relation or possession naming them (semantic ends a multi-valued fact whose value
  matches ``retires_when``). A bare name's death ("Napoleon died in exile", "I heard
  David Bowie passed away") is the speaker's loss only when the sentence tells it as
  theirs (own_loss: "sadly", "we", "I miss him", and not read or heard about) or the
  episode names the one lost as theirs ("our dog Rex"); else extraction_offline makes it
  a plain fact about the one who died (or the speaker's "I read that ...").
- **Births and adoptions.** "We had a baby girl, Ines", "we adopted a boy, Sam", "our
  son Leo was born": the child's relation fact (``daughter`` Ines); any child fact ends
  "I don't have any kids" (``kids``: none).
- **No content.** A time phrase is never an object ("I quit 2 years ago" is no stance on
  "2 years"); a fragment whose predicate has no complement ("...my wife is.") and test or
  meta chatter ("parallel message number 12 about my dog") state nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _words(text: str) -> list[str]:
    return text.split()


#: A change found in a clause: (attribute, value, single-valued, entity kind).
Change = tuple[str, str, bool, str]

_NAME = r"(?-i:[A-Z][a-z\u00e0-\u00ff'-]+(?: [A-Z][a-z\u00e0-\u00ff'-]+)?)"
_WE_I = r"\b(?:I|we)(?:'ve| have| had)?(?: (?:now|just|recently|finally|also|already|eventually|officially))?"
_PLACE = r"(?P<value>[^,;.!?]+)"
_NUMBERS = "a an one two three four five six seven eight nine ten eleven twelve few couple several many"
_UNITS = r"(?:years?|months?|weeks?|days?|hours?|minutes?|decades?|yrs?|mos?)"
_TIME = re.compile(
    r"^(?:(?:in|since|for|during|until|by|around|about|almost|nearly|over|under|just|like|only|some|a good)\s+)*"
    rf"(?:(?:\d+|{'|'.join(_words(_NUMBERS))}|a few|a couple(?: of)?)\s+{_UNITS}"
    rf"|(?:last|next|this|that|the other|the past|the last)\s+(?:{_UNITS}|spring|summer|autumn|fall|winter|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|night|morning)"
    r"|yesterday|today|tonight|tomorrow|recently|lately|ages|a while|long ago|\d{4}s?)"
    r"(?:\s+(?:ago|back|later|earlier|before|now))?$",
    re.IGNORECASE,
)


#: A hedge that ends a value and everything after it ("penicillin or something like
#: that", "Boston or so", "shellfish I think", "a Honda I guess"), or that ends a value
#: only when nothing follows ("blue kind of", "Lisbon maybe": "a kind of pasta" keeps it).
HEDGE = (
    r"(?:or (?:something|so|whatever|anything|similar|thereabouts)|(?:I|we) (?:think|guess|believe|suppose|"
    r"reckon|assume|imagine)|if I (?:remember|recall)|(?:kind|sort) of\s*$|kinda\s*$|sorta\s*$|"
    r"(?:maybe|probably|perhaps|apparently)\s*$)"
)


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern[str]
    attribute: str
    single: bool = True
    kind: str = ""


def _r(regex: str, attribute: str, *, single: bool = True, kind: str = "") -> _Rule:
    return _Rule(re.compile(regex, re.IGNORECASE), attribute, single, kind)


_ANYMORE = r"(?:anymore|any more|any longer)"
_MOVE = (
    r"(?:moved|relocated|emigrated|immigrated|have moved|'ve moved)(?: (?:back|over|out|down|up|here|there|"
    r"home|abroad|overseas|across the country|across town|all the way))?"
)
# "moved here to be near family": an infinitive after "to" is a purpose, not a place.
_NOT_VERB = (
    r"(?!(?:be|get|live|work|join|start|study|take|help|find|look|stay|see|visit|care|raise|pursue|attend|"
    r"go|do|make|have|open|teach|run|spend|save|escape|retire|focus|try|give|build)\b)"
)
# "we packed up and moved to Lisbon", "I sold the flat and relocated to Porto".
_AND = r"(?: \w+(?: up| out| everything| the \w+)? and)?"
_MOVES = [
    _r(rf"{_WE_I}{_AND} {_MOVE} from [^,;.!?]+? (?:to|into) {_NOT_VERB}{_PLACE}", "lives in", kind="place"),
    _r(rf"{_WE_I}{_AND} {_MOVE} to {_NOT_VERB}{_PLACE}", "lives in", kind="place"),
    _r(
        r"\b(?:I|we)(?:'m|'re| am| are)(?: (?:now|currently|still|also))? (?:living|staying|settled) in "
        + _PLACE,
        "lives in",
        kind="place",
    ),
    _r(rf"{_WE_I} (?:settled|settled down|made (?:the|our|my) (?:big )?move) (?:in|to) {_PLACE}", "lives in", kind="place"),
    _r(r"\b(?:my|our) (?:new )?home is (?:now )?(?:in )?" + _PLACE, "lives in", kind="place"),
    _r(rf"{_WE_I} (?:now )?call (?P<value>{_NAME}) home\b", "lives in", kind="place"),
    # Only where one came from: that home has ended ("we moved here from Chicago").
    _r(rf"{_WE_I} {_MOVE} from (?P<value>{_NAME})", "former home", single=False, kind="place"),
]
_TITLE = r"(?:a |an |the )?(?P<value>[^,;.!?]+?)(?=\s+(?:at|for|with|in|on|since|and|but|because|now|these|nowadays)\b|\s*[,;.!?]|\s*$)"
_JOBS = [
    _r(
        r"\bI(?:'m| am|'ve been| have been)(?: (?:now|currently|still|also|just|actually))? "
        rf"(?:working|employed|hired|starting|employed full[- ]time) as {_TITLE}",
        "job",
    ),
    _r(
        r"\bI(?:'ve| have)?(?: (?:just|recently|finally|now))? (?:started|began|begun|took|taken|got|landed|"
        rf"accepted|found|start)(?: a| my| the)? (?:new |first |full-time |part-time )?(?:job|position|role|gig|"
        rf"career|work) as {_TITLE}",
        "job",
    ),
    _r(rf"\bI(?:'ve| have)?(?: just| recently)? (?:started|began|begun) (?:working|work) as {_TITLE}", "job"),
    _r(rf"\bI(?:'ve| have)? (?:switched|changed) (?:careers|jobs|fields) (?:to (?:become |being )?|and became )?{_TITLE}", "job"),
    _r(rf"\bmy (?:new |current )?(?:job|role|position) is (?:as |working as )?{_TITLE}", "job"),
    _r(rf"\bI(?:'ve| have)? (?:re)?trained as {_TITLE}", "job"),
]
# "not a fan anymore", "no longer a vegetarian": no title (a diet is extraction_offline's).
_NOT_TITLE = (
    r"(?!(?:big |huge |)?(?:fan|member|part|vegetarian|vegan|pescatarian|smoker|drinker|child|kid|baby|"
    r"beginner|single|couple|morning person|night owl)\b)"
)
_ENDED = [
    _r(
        rf"\bI(?:'m| am) (?:no longer (?:a|an) {_NOT_TITLE}{_TITLE}|not (?:a|an) {_NOT_TITLE}(?P<v2>[^,;.!?]+?) {_ANYMORE})",
        "former job",
        single=False,
    ),
    _r(rf"\bI (?:no longer work as (?:a |an )?{_TITLE}|(?:don't|do not) work as (?:a |an )?(?P<v2>[^,;.!?]+?) {_ANYMORE})", "former job", single=False),
    _r(rf"\bI(?:'ve| have)? (?:stopped|quit) (?:being|working as) (?:a|an) {_NOT_TITLE}{_TITLE}", "former job", single=False),
    _r(
        rf"\bI(?:'m| am) (?:no longer working as (?:a |an )?{_TITLE}|not working as (?:a |an )?(?P<v2>[^,;.!?]+?) {_ANYMORE})",
        "former job",
        single=False,
    ),
    _r(rf"\bI(?:'ve| have)? (?:gave|given) up (?:my|the) (?:\w+ )?job as (?:a|an) {_TITLE}", "former job", single=False),
    _r(rf"\bI(?:'ve| have)? (?:stopped|quit) working (?:at|for) {_PLACE}", "former employer", single=False, kind="organisation"),
    _r(
        rf"\b(?:I|we) (?:no longer live in {_PLACE}|(?:don't|do not) live in (?P<v2>[^,;.!?]+?) {_ANYMORE})",
        "former home",
        single=False,
        kind="place",
    ),
    _r(
        rf"\bI (?:no longer work (?:at|for) {_PLACE}|(?:don't|do not) work (?:at|for) (?P<v2>[^,;.!?]+?) {_ANYMORE})",
        "former employer",
        single=False,
        kind="organisation",
    ),
]
#: What an ended state ends: the current fact of these attributes naming its value.
_ENDS = {"former job": ("job",), "former home": ("lives in",), "former employer": ("works at", "job")}

_PETS = "dog|cat|pet|puppy|pup|kitten|kitty|horse|pony|bird|rabbit|bunny|hamster|parrot|turtle|tortoise|snake|fish"
_KIN_MULTI = (
    "sister|brother|son|daughter|kid|child|baby|friend|best friend|cousin|aunt|uncle|grandmother|grandma|"
    "grandfather|grandpa|granny|nan|niece|nephew|roommate|colleague|coworker|neighbou?r|mentor|teacher|coach"
)
_KIN_SINGLE = "wife|husband|partner|spouse|boyfriend|girlfriend|fianc[eé]e?|mother|mom|mum|father|dad|boss|manager"
_PARTNERS = frozenset(_words("wife husband partner spouse boyfriend girlfriend fiance fiancé fiancee fiancée"))
_REL = rf"(?:(?:older|younger|little|big|best|old|twin|step|baby|dear|beloved|sweet|oldest|youngest|eldest) )?(?P<rel>{_KIN_MULTI}|{_KIN_SINGLE}|{_PETS})"
_DIED = (
    r"(?:has |had |sadly |just |recently |finally )*(?:died|passed away|passed on|passed|is gone|was put down|"
    r"was put to sleep|had to be put down|was euthanized|was euthanised|ran away|went missing|got lost|"
    r"was rehomed|was re-homed|was given away|lost (?:his|her|their) (?:life|battle|fight))\b"
)
_GIVE_UP = (
    r"(?:rehome[d]?|re-home[d]?|rehoming|gave away|give away|given away|gave up|give up|put down|put to sleep|"
    r"sold|lost)"
)
_WE = r"\b(?:I|we)(?:'ve| have| had| had to| have to|'ve had to)?(?: (?:sadly|just|recently|finally|also|unfortunately))?"
_LOSSES = [
    re.compile(rf"\b(?i:my|our) {_REL}(?:,? (?P<value>{_NAME}),?)? {_DIED}", re.IGNORECASE),
    re.compile(rf"\b(?P<value>{_NAME}),? (?:(?:my|our) {_REL},? )?{_DIED}"),
    re.compile(rf"{_WE} {_GIVE_UP} (?:my|our) {_REL}(?:,? (?P<value>{_NAME}))?", re.IGNORECASE),
    re.compile(rf"(?i:{_WE} (?:lost|rehome|rehomed|re-home|re-homed)) (?P<value>{_NAME})\b"),
    re.compile(rf"(?i:{_WE} (?:gave|give|put)) (?P<value>{_NAME}) (?i:away|up for adoption|down|to sleep)\b"),
    re.compile(
        rf"{_WE} (?:gave|give|given|put) (?:my|our) {_REL}(?:,? (?P<value>{_NAME}),?)? (?:away|up for adoption|down|to sleep)\b",
        re.IGNORECASE,
    ),
]
_PRONOUN_LOSS = re.compile(rf"^(?:\w+ly,? )?(?:he|she|they|it)(?: sadly)? {_DIED}", re.IGNORECASE)
_CHILD = r"(?P<rel>baby girl|baby boy|baby|girl|boy|son|daughter|child|kid|twins)"
_BIRTHS = [
    re.compile(
        rf"\b(?:I|we)(?:'ve| have)?(?: just| recently| finally| officially)? (?:had|welcomed|adopted|gave birth to|"
        rf"became (?:parents|a (?:mom|dad|mum|mother|father|parent)) (?:to|of))(?: (?:a|an|our|my))?"
        rf"(?: (?:new|first|second|third|little|beautiful|healthy|newborn|precious|sweet|lovely|"
        rf"\d+-(?:year|month|week)-old))* {_CHILD}\b(?:,? (?:named |called |whom we named )?(?P<value>{_NAME}))?",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\b(?:my|our) (?:new |newborn |little |baby )*{_CHILD},? (?P<value>{_NAME}),? (?:was|were) born\b",
        re.IGNORECASE,
    ),
]
_PARENT_NOW = re.compile(r"\bI (?:just |finally |recently )?became a (?:mom|dad|mum|mother|father|parent)\b", re.IGNORECASE)
_NO_KIDS = re.compile(
    r"\b(?:I|we) (?:(?:don't|do not|dont) have (?:any )?|have no )(?:kids|children)\b"
    r"|\bI(?:'m| am) child(?:less|free)\b|\bno (?:kids|children) (?:yet|for (?:me|us))\b",
    re.IGNORECASE,
)
#: Relation words that name one's children: a fact with one ends "no kids".
_CHILD_WORDS = frozenset(_words("son daughter child kid baby kids children sons daughters babies twins"))
KIDS = "kids"
LOST = "lost"


_FRAGMENT_END = re.compile(
    r"(?:^|\s)(?:is|are|was|were|am|be|been|has|have|had|does|did|will|would|can|could|should|"
    r"the|a|an|my|our|your|their|to|of|with|and|or|but|'s|'re|'m)[\s.!\"')\u2026]*$",
    re.IGNORECASE,
)
_WH = re.compile(r"\b(?:what|how|who|whom|where|when|why|which|whatever|wherever|whoever)\b", re.IGNORECASE)
_ELLIPSIS = re.compile(r"^\s*(?:\.\.\.|\u2026)|(?:\.\.\.|\u2026)\s*$")
_CHATTER = re.compile(
    r"^\W*(?:(?:this is |it's |just )?(?:(?:a|an|another|only|just) )?(?:[\w-]+ ){0,2}"
    r"(?:message|msg|test|testing|ping|sample|example|entry|post|line|item|request)"
    r"(?: (?:number|no\.?|num|#))? ?#?\d+\b"
    r"|(?:this is )?(?:just )?(?:a |another )?test(?:ing)?(?: message| msg| (?:one|1)(?:,? ?(?:two|2))*)?\W*$"
    r"|lorem ipsum\b|hello,? world\b)",
    re.IGNORECASE,
)


def change_in(clause: str) -> Change | None:
    """The life change ``clause`` states as (attribute, value, single-valued, entity kind):
    a move (``lives in``), a job taken up (``job``), an ended state (``former job``,
    ``former home``, ``former employer``), a loss (LOST), a birth or adoption (the
    child's relation) or having no children (KIDS "none"); None when it states none
    (the module docstring lists the phrasings)."""
    for rules in (_ENDED, _MOVES, _JOBS):
        found = _ruled(rules, clause)
        if found:
            return found
    return _loss(clause) or _birth(clause)


def _ruled(rules: list[_Rule], clause: str) -> Change | None:
    for rule in rules:
        match = rule.regex.search(clause)
        if not match:
            continue
        value = _clean(apposed(clause, match) if match.group("value") else match.groupdict().get("v2") or "")
        if value and not _TIME.match(value):
            return rule.attribute, value, rule.single, rule.kind
    return None


# A name set after a common noun by a comma ("my hometown, Dayton", "a small startup,
# Finch"), then the clause ends, or a comma or a preposition goes on.
_APPOSED_NAME = re.compile(
    r"^,\s+(?P<name>[^\W\d_][\w'-]*(?: [^\W\d_][\w'-]*){0,2})(?=\s*(?:[,.;:!?]|$|\s(?:in|on|at|near)\b))"
)
_NOT_APPOSED = frozenset(("I", "We", "My", "Our", "It", "That", "This", "He", "She", "They"))


def apposed(clause: str, match: re.Match[str]) -> str:
    """The raw ``value`` group of ``match`` (a pattern's match in ``clause``) or, when that
    names no one (no capital letter: "my hometown") and a name follows it after a comma
    ("my hometown, Dayton"), that name."""
    raw = match.group("value")
    if any(ch.isupper() for ch in raw):
        return raw
    after = _APPOSED_NAME.match(clause[match.end("value") :])
    if after is None:
        return raw
    name = after.group("name")
    words = name.split()
    if words[0] in _NOT_APPOSED or not all(word[0].isupper() for word in words):
        return raw
    return name


def _clean(raw: str) -> str:
    # Only a clause-ending adverb or time phrase is cut here; extraction_offline's
    # clean_value is not importable (acyclic siblings) and would cut "nurse at the clinic".
    value = re.split(
        r"\s+(?:now|these days|nowadays|anymore|any more|any longer|since|last|this|for|in (?:\d{4}|the)|"
        r"(?:in|on) (?:january|february|march|april|may|june|july|august|september|october|november|"
        r"december|spring|summer|autumn|fall|winter)|ago|for (?:good|now|work)|with (?:my|our)|after|"
        rf"because|when|and|but|from|to (?:be|get|live|work|join|start|study|help|care|stay)|so|{HEDGE})\b",
        raw.strip(),
        maxsplit=1,
        flags=re.IGNORECASE,
    )[0]
    value = re.sub(r"^(?:a|an|the|my|our|now|currently)\s+", "", value.strip(), flags=re.IGNORECASE)
    value = value.strip(" '\"()")
    return "" if value.lower() in ("it", "there", "here", "that", "this", "them", "home", "") else value


def _loss(clause: str) -> Change | None:
    for regex in _LOSSES:
        match = regex.search(clause)
        if match:
            value = _OPENER.sub("", match.group("value") or "") or (match.groupdict().get("rel") or "")
            return LOST, value.strip(), False, ""
    return None


# A word before the name that only opens the sentence ("Sadly Rex died").
_OPENER = re.compile(r"^(?:\w+ly|So|Then|And|But|Yesterday|Today|Well|Oh|Also|Last|This|Unfortunately)\s+(?=\S)")


def _birth(clause: str) -> Change | None:
    if _NO_KIDS.search(clause):
        return KIDS, "none", True, ""
    for regex in _BIRTHS:
        match = regex.search(clause)
        if match:
            relation = _child_relation(match.group("rel"))
            name = match.group("value")
            return (relation, name, False, "person") if name else (KIDS, f"has a {relation}", True, "")
    if _PARENT_NOW.search(clause):
        return KIDS, "has a child", True, ""
    return None


def _child_relation(word: str) -> str:
    word = word.lower()
    if "girl" in word or "daughter" in word:
        return "daughter"
    if "boy" in word or "son" in word:
        return "son"
    return "child"


def change_ending(clause: str, attribute: str, value: str) -> tuple[tuple[str, ...], str] | None:
    """``(retires, retires_when)`` (ExtractedFact.retires) for a fact with ``attribute``
    and ``value`` read from ``clause``: an ended state ends the current fact naming its
    value, a loss the relation or possession naming the one lost, any child fact the
    "no kids" one; None when the fact is no life change (extraction_offline decides)."""
    if attribute in _ENDS:
        return _ENDS[attribute], value
    if attribute == LOST:
        return _loss_ends(clause, value)
    if value.lower() != "none" and (attribute in _CHILD_WORDS or (attribute in (KIDS, "has") and _kids(value))):
        return (KIDS,), ""
    if attribute.startswith("number of ") and _kids(attribute) and value != "0":  # "I have two kids"
        return (KIDS,), ""
    return None


def relation_ends(attribute: str) -> tuple[str, ...]:
    """The attributes a relation fact with ``attribute`` ends (ExtractedFact.retires):
    a child's ends "no kids" (KIDS); () for any other relation."""
    return (KIDS,) if attribute in _CHILD_WORDS else ()


def _kids(value: str) -> bool:
    return attribute_words(value) & _CHILD_WORDS != set()


def attribute_words(text: str) -> set[str]:
    """The lower-cased words of ``text`` (a value or an attribute)."""
    return set(re.findall(r"[a-z]+", text.lower()))


def _loss_ends(clause: str, value: str) -> tuple[tuple[str, ...], str]:
    relation = ""
    for regex in _LOSSES:
        match = regex.search(clause)
        if match and match.groupdict().get("rel"):
            relation = match.group("rel").lower()
            break
    if not relation:
        # Whom the name belongs to is unknown: every multi-valued relation or possession
        # naming them ends (a single-valued one would end its siblings too: semantic's gate).
        words = [w for w in f"{_KIN_MULTI}|{_PETS}".split("|") if "?" not in w]
        return (*words, "neighbour", "neighbor", "has"), value
    attribute = "partner" if relation in _PARTNERS else relation
    if value.lower() == relation:
        if re.fullmatch(_KIN_SINGLE, relation):
            return (attribute,), ""
        # "My dog died" ends the dog had and any dog named (semantic: a fact whose
        # attribute is the kind named); "my sister died" no one sister of several.
        return ((attribute, "has"), relation) if re.fullmatch(_PETS, relation) else (("has",), relation)
    return (attribute, "has"), value


def unowned_loss(clause: str) -> str:
    """The name of the one a loss in ``clause`` names without saying whose they are ("Sadly
    Rex died", "Napoleon died in exile": a bare name, no "my dog", no "we lost"), or "".
    Whether such a loss is the speaker's is told by the sentence (own_loss) or the episode
    (whether the speaker names them as theirs)."""
    for index, regex in enumerate(_LOSSES):
        match = regex.search(clause)
        if match:
            bare = index == _BARE_NAME_LOSS and not match.groupdict().get("rel")
            return _OPENER.sub("", match.group("value") or "").strip() if bare else ""
    return ""


#: The loss rule whose one lost may be anybody ("<Name> died").
_BARE_NAME_LOSS = 1
# What makes a sentence the speaker's grief: a word of regret, "we"/"our", missing them.
_OWN_LOSS_CUE = re.compile(
    r"\b(?:sadly|unfortunately|tragically|heartbreakingly|RIP|rest in peace|we|we're|we've|us|our|"
    r"miss (?:him|her|them|you)|heartbroken|devastated|grieving|mourning|gutted)\b",
    re.IGNORECASE,
)
# A death one read or heard about: news, history, a documentary ("I was reading that ...").
_REPORTED = re.compile(
    r"\b(?:read|reading|heard|hearing|learned|learnt|found out|watched|watching|studied|studying|"
    r"(?:saw|seen) (?:that|on|in|online)|apparently|according to|the news|documentary|article|"
    r"did you know|history|historically|biography)\b",
    re.IGNORECASE,
)


def own_loss(sentence: str) -> bool:
    """Whether ``sentence`` tells a loss as its speaker's own ("Sadly Rex died", "Rex passed
    away, we're heartbroken"), not one read or heard about ("I was reading that Napoleon
    died in exile", "apparently the singer died")."""
    return _OWN_LOSS_CUE.search(sentence) is not None and _REPORTED.search(sentence) is None


def reports_loss(clause: str) -> bool:
    """Whether ``clause`` tells of a loss whose subject is no first person ("Sadly Rex
    died", "He passed away last May"): a fact about its speaker all the same."""
    return _PRONOUN_LOSS.search(clause) is not None or _loss(clause) is not None


def says_nothing(clause: str) -> bool:
    """Whether ``clause`` states nothing: test or meta chatter ("parallel message number
    12 about my dog", "just testing") or a fragment whose predicate has no complement
    ("...my wife is.", "and we were")."""
    if _CHATTER.match(clause):
        return True
    short = len(re.findall(r"[\w']+", clause)) <= 6 or _ELLIPSIS.search(clause) is not None
    # "what you did", "how simple it is": a clause of its own that ends there, complete.
    whole = _WH.search(clause) is not None
    return short and not whole and _FRAGMENT_END.search(clause.rstrip()) is not None


def timeless(found: Change | None) -> Change | None:
    """``found`` unless its value, or its stance's item, is a time phrase ("I quit 2
    years ago" is no stance on "2 years"): None then."""
    if found is None:
        return None
    attribute, value, single, kind = found
    if not attribute.startswith(_STANCE):
        return None if _TIME.match(value.strip()) else found
    item = _TRAILING_TIME.sub("", attribute[len(_STANCE) :]).strip()
    return None if not item or _TIME.match(item) else (_STANCE + item, value, single, kind)


_STANCE = "stance on "
# An amount of time that ends an item ("running 3 weeks" of "I started running 3 weeks ago").
_TRAILING_TIME = re.compile(
    rf"\s+(?:(?:about|around|almost|nearly|over)\s+)?(?:\d+|{'|'.join(_words(_NUMBERS))}|a few|a couple(?: of)?)"
    rf"\s+{_UNITS}$",
    re.IGNORECASE,
)

"""Offline episode extraction: heuristic facts, entities and an extractive episode summary.

Deterministic, no network; what ``OfflineModel.extract_episode`` runs (DESIGN.md section 7:
"heuristic facts and entities"). It is a heuristic, not a language model: it reads general
English first-person statements and nothing fitted to one data set.

- **Speaker.** A message that opens with a speaker label (``Mara: ...``, one to three
  capitalised words and a colon, as transcripts write them) speaks for that person; an
  unlabelled ``user`` message for ``user``. Unlabelled ``assistant``, ``system`` and
  ``tool`` messages state nothing about a person (an assistant's "I" is the assistant).
- **Sentences** end at . ! ? but not at an abbreviation's or an initial's full stop
  ("St. Mary's", "Dr. Okafor", "J. R. R. Tolkien", "e.g.", "U.S."; _abbreviation).
- **Facts.** Each first-person clause that is not a question, a hypothetical or talk
  about the talk ("I was wondering if ...", "I think so": _META) becomes a fact about its
  speaker, rewritten in the third person ("I drive a Civic" -> "The user drives a
  Civic."), with relative dates resolved against the message's time ("yesterday
  (7 May 2023)"; a loose amount as loosely: "a few years ago (around 2020)"; a month
  told in the past its year: "I retired in March" -> "in March (March 2023)"); a clause of two words only if it says who one is ("I'm vegan.", "I'm
  Daniel."). Clauses that match a known pattern also get an ``attribute`` and a
  ``value`` (a name its speaker's label already gives is no fact: "Caroline: I'm
  Caroline"): relations (``sister`` Mara; wife, husband, boyfriend... are all ``partner``),
  the car one drives, where one (or "we", the speaker included) lives or is from, job
  and employer, studies, name, age, birthday, diet, favourites (single-valued),
  possessions, conditions and the languages one speaks or is learning (several values:
  "speaks" English, "learning" Japanese, apart; a "native language" is one) and one's stance on a thing or activity
  (``stance on running``: likes, dislikes, does, stopped or changed mind; single-valued
  per item). Changes of state are values too, so the single-valued rule of
  memoryapp.semantic retires the old one: a promotion or a new title, quitting, losing or
  retiring from a job, stopping, giving up or "no more" of an activity, moving away,
  selling the car, a divorce or a break-up; a diet ends the stances on what it leaves out
  ("I eat meat" before "I'm vegetarian now"). The age of someone else ("Arjun turned 9",
  "my son Arjun is 8") is a fact whose subject is that person (single-valued per person).
  A clause giving both a title and a named employer ("I work at Acme as an engineer",
  "I'm an engineer at Acme") is the title (its text) and "The user works at Acme." apart,
  so a promotion replaces the title and the employer stays current.
  A change of state also names the other attributes it ends (ExtractedFact.retires):
  losing a job ends the employer with the title, and "I left Acme" ends both where Acme
  is the employer; so do "I resigned from the bakery", "I stepped down as head nurse",
  "I left nursing" and "I quit nursing" or "I gave up law" (a stance stopped) where the
  job or employer is what they name (memoryapp.semantic matches "nursing" to "nurse").
  Parting with a possession ("I sold my Tesla", "I traded in my Civic", "I gave my bike
  to my nephew", "we got rid of our boat") ends the thing had, the pet or the car driven
  whose value names it, by make or by kind; "I sold my car" replaces the car driven
  ("sold") and ends a thing had that is a car ("an electric car"); a second thing joined
  by "and" is parted with too ("I sold my Tesla and my boat": two clauses, "... my
  boat"). A present state said to be over ("I'm not allergic to dogs anymore", "I'm no
  longer diabetic", "I don't drive a Tesla any more"), given up ("I stopped learning
  Japanese") or left behind ("I used to be allergic to peanuts", "I used to have a dog")
  ends the current fact the clause as a present statement would state (allergic to
  dogs, the condition, the car Tesla, learning Japanese); a possession no longer had ("I
  no longer have a cat", "I don't have the Tesla any more") is one parted with, and a
  list ends each value ("I'm not allergic to cats and dogs anymore": two facts, as
  Lists below). Without "anymore" or "no longer" ("I'm not allergic to dogs") nothing
  ends, nor where no state is named ("I no longer have time", "I stopped by the store",
  "I used to think so"). Other clauses have no attribute and never contradict anything.
- **Others' facts.** A clause whose subject is a name and a verb ("Priya is a teacher",
  "Mark works at Acme", "Priya quit her job") is read as the speaker's own clause would
  be ("I'm a teacher"): a pattern's fact there is about that person (single-valued per
  person), not the speaker. So is a clause whose subject is one's relation ("my sister
  Anna lives in Oslo": Anna lives in Oslo, and "The user's sister is Anna." apart; "my
  daughter goes to Riverside Elementary": subject "user's daughter", or the one name the
  episode gives her). One's relatives as a group are a subject too, never singular-mangled
  ("my parents moved to Lisbon": subject "user's parents", lives in Lisbon; "my
  grandparents are retired", "my family is from Italy"). A clause of an unnamed relative
  or group with no pattern is still theirs, not the speaker's ("my kids started school"),
  unless the speaker is in it ("my kids drive me crazy", "my parents and I moved").
- **Groups.** A plural relation word with its members' names ("We have two kids, Lily and
  Tom", "my sisters are Ana and Bea") gives a relation fact per member, each stating its
  own ("Lily is one of the user's two kids."); so does a group introduced before a
  colon, a comma or a dash, its members the names opening the parts of the list ("We
  have two kids: Lily is 7 and Noah is 4").
- **Lists.** A list of values of an attribute holding several ("I'm allergic to cats,
  dogs and horses", "Priya is diabetic and asthmatic", "I have a cat and a dog", "I own a
  boat and two bikes") is a fact per value, each its clause with that value alone and
  what follows the list ("... since childhood"), so one can end alone (listed). Not
  a single-valued attribute's ("I work at Procter and Gamble": one employer, named so),
  a stance's ("I love rock and roll"), nor words that are no value ("I have a dog and
  love him", "allergic to reptiles and animals with fur": the phrase may be the last's).
  A single-valued attribute's value keeps a phrase joined by "and" whole ("my favourite
  food is mac and cheese", "I study law and economics"; only names for the others: "I
  live in Bosnia and Herzegovina"), never a clause after it ("my favourite food is pizza
  and I eat it weekly": pizza; "I work as a nurse and teach yoga": nurse).
- **Corrections.** "X, not Y" with no verb of its own ("Sorry, it's Porto, not Lisbon", "I
  meant Porto", "a Corolla, not a Civic", "not Maria but Mara") restates the episode's
  latest fact of its speaker whose value names Y with X in its place, which replaces it;
  with no such fact it says nothing. A clause stating X ", not Y" ("I'm allergic to
  peanuts, not shellfish") ends its subject's value Y of a many-valued attribute.
- **Diets.** Leaving one is the diet "no longer vegan"; eating again a food a diet
  leaves out ("I eat meat again") retires the diets that leave it out.
  Discourse markers and interjections that open a clause ("Big news:", "Well, honestly,",
  "Guess what,") are not part of its fact.
- **Clauses.** A sentence is split before each new first-person clause and before each
  clause with a subject of its own joined by "and", "but", "," or ";" when both parts
  state a fact ("Lily is 8 and Tom is 5", "Mark is my brother, Priya is my sister"):
  each fact's text states its own clause only, so replacing one leaves the other's text
  whole. A part that states no fact stays with its neighbour ("his name is Kyle"), and so
  does a phrase of time or place that opens a clause ("In 2019, I moved to Denver", "When
  I was 10, I lived in Rome": the fact keeps its time).
- **References.** A pronoun whose referent is not in its own clause ("I eat it every
  Friday") takes the one name the previous sentence offers: a person, a noun value, or the
  item of a stance as the sentence names it ("No more piano for me, I sold it" -> "sold
  the piano"), never a stance or a change of state ("stopped", "quit"), a number or an
  item that refers elsewhere itself ("having them around"); with
  none or several, the fact is dropped (it would say nothing on its own).
- **Entities.** The speaker (person), relation targets (person, or animal for a pet or a
  breed, its age too; every relation a clause names is a fact), pattern values
  that are names, and capitalised names in the clause: organisation for employers, after
  work, a job or an occupation ("a job at Fernleaf", "a nurse at Fernleaf") and for names
  ending in University, Inc, ...; place after in/to/from/at otherwise; else thing. The
  words before a name decide, never the name.
- **Summary.** The episode's most informative facts in order (pattern facts and facts
  with names, numbers or dates first), at most SUMMARY_LINES lines; ``quoted_sequences``
  are their source messages. The title names the episode's most mentioned entities.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from memoryapp.llm.extraction_changes import (
    HEDGE,
    LOST,
    apposed,
    change_ending,
    change_in,
    own_loss,
    relation_ends,
    reports_loss,
    says_nothing,
    timeless,
    unowned_loss,
)
from memoryapp.llm.port import (
    EpisodeExtraction,
    ExtractedEntity,
    ExtractedFact,
    TranscriptMessage,
    Usage,
)
from memoryapp.llm.remember_cue import remembered, unlabelled
from memoryapp.tokens import count_tokens


def _words(text: str) -> list[str]:
    return text.split()


MODEL_NAME = "offline-heuristic"
#: Lines of the episode summary (the best facts, in conversation order).
SUMMARY_LINES = 12
#: A clause shorter than this many words states too little to be a fact on its own.
MIN_FACT_WORDS = 3
MAX_FACT_CHARS = 500
USER = "user"
#: Words in a pattern's value at most ("nurse at St Mary's Hospital in Leeds" is 7); a
#: longer one is cut before its last phrase that starts within the cap (clean_value).
MAX_VALUE_WORDS = 10


def _char_class(test: Callable[[str], bool]) -> str:
    """The body of a regex character class holding the Basic Multilingual Plane's
    characters for which ``test`` holds, as ranges (Python's ``re`` has no ``\\p{Lu}``).
    The scripts names are written in with letter case (Latin, Greek, Cyrillic, Armenian,
    Georgian, ...) are all in that plane; enumerating it takes a fraction of the time of
    all of Unicode at import."""
    ranges: list[tuple[int, int]] = []
    for point in range(0x10000):
        if test(chr(point)):
            if ranges and ranges[-1][1] == point - 1:
                ranges[-1] = (ranges[-1][0], point)
            else:
                ranges.append((point, point))
    return "".join(
        f"\\u{a:04x}" if a == b else f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges
    )


#: An upper-case (or title-case) letter of any script: "J", "Ł", "Ø", "É", "Ж".
_UPPER = f"[{_char_class(lambda c: c.isupper() or c.istitle())}]"
#: One capitalised word of a name: José, Łatka, Zoë, Ørsted, O'Brien, Jean-Luc, McKay;
#: an apostrophe or hyphen only between letters, and a final "'s" is not part of it.
#: Case-sensitive even inside a pattern compiled with IGNORECASE.
_NAME_WORD = rf"(?-i:{_UPPER}(?:[^\W\d_]|['-](?!s\b)(?=[^\W\d_]))+)"

_LABEL = re.compile(
    rf"^\s*(?P<name>{_UPPER}[\w'.-]*(?: {_UPPER}[\w'.-]*){{0,2}})\s?:\s+(?=\S)"
)
# Labels that open a note rather than name a speaker.
_NOT_SPEAKERS = frozenset(
    _words(
        "note ps p.s re update edit correction summary warning important reminder todo tip fyi q a "
        "question answer example step nb n.b pps p.p.s"
    )
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
#: Stands for the full stop of an abbreviation or an initial inside a clause ("St. Mary's",
#: "J. K. Rowling", "e.g."), so it ends neither a sentence nor a value; a letter
#: (\w, not upper case) so the abbreviation stays one word of a name. Put back as "."
#: in what extraction returns (_restored).
_ABBREVIATION_DOT = "\u02d1"
# Abbreviations a name or a number follows: never a sentence's end before another word.
_TITLES = frozenset(
    _words("mr mrs ms mx dr prof st mt ft sgt capt lt col gen rev fr hon gov sen rep pres")
)
_ALWAYS_ABBREVIATIONS = frozenset(_words("e\u02d1g i\u02d1e vs cf viz approx ca"))
# Abbreviations that may also end a sentence: not its end unless a sentence opener follows.
_MAYBE_ABBREVIATIONS = frozenset(
    _words(
        "etc jr sr inc ltd corp bros ave rd blvd dept univ jan feb mar apr jun jul aug sep "
        "sept oct nov dec"
    )
)
_ABBREVIATION = re.compile(
    r"(?<![\w.'-])(?P<word>[A-Za-z]+(?:[.\u02d1][A-Za-z]+)*)\.(?=[ \t]+(?P<next>[\w'\u2019]+))"
)
# A full stop inside a dotted acronym ("U.S.", "e.g.", "a.m."): never a sentence's end.
_ACRONYM_DOT = re.compile(r"(?<![\w.'-])(?:[A-Za-z]\.)+(?=[A-Za-z]\.)")
# A clause boundary before a new first-person statement: "I sold the Civic, I drive a ...".
_CLAUSES = re.compile(
    r"[,;]\s+(?=(?:and |but |so |now |then )?(?:I|[Mm]y|[Ww]e)\b)|\s+(?:and|but) (?=(?:I|my|we)\b)"
)
_FIRST_PERSON = re.compile(
    r"\b(?:I|I'm|I've|I'd|I'll)\b|\b(?:my|me|mine|myself|we|we're|we've|our|us)\b", re.IGNORECASE
)
_WORD = re.compile(r"[\w']+")
_NUMBER = re.compile(r"\b\d+(?:[.,:/]\d+)*\b")
_MONTH_NAMES = _words(
    "January February March April May June July August September October November December"
)
_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_NOT_NAMES = frozenset(
    _words(
        "a an the i it its this that these those my your our their his her we you he she "
        "they yes no yeah ok okay maybe not just please thanks thank oh well so and but "
        "or hi hello hey great cool nice good what which when where who why how is are "
        "was were do does did can could would will should let wow really also me us them "
        "same true right exactly lol haha hmm today tomorrow yesterday tonight mom dad "
        "mum sir madam god omg btw anyway sure awesome amazing congrats congratulations "
        "glad sorry definitely absolutely totally honestly actually there here then now "
        "if as at by for from in of on to with after before during since until while once "
        "mon tue tues wed thu thur thurs fri sat sun"
    )
    + [m.lower() for m in _MONTH_NAMES + _WEEKDAYS]
)
_NAME = rf"{_NAME_WORD}(?: {_NAME_WORD})?"
_NAMES = re.compile(
    rf"\b{_UPPER}[\w'-]*(?:\s+(?:of |the |de |van |von )?{_UPPER}[\w'-]*)*"
)
_ORGANISATION = re.compile(
    r"\b(?:University|College|School|Academy|Institute|Inc|Corp|Ltd|LLC|Company|Bank|"
    r"Hospital|Clinic|Club|Church|Center|Centre|Agency|Foundation|Group|Studio|Labs?)\b"
)
_PLACE_CUE = re.compile(
    r"\b(?:in|to|from|at|near|visit(?:ed|ing)?|around)\s+(?:the\s+)?$", re.IGNORECASE
)
_LEADING_CONJUNCTION = re.compile(r"^(?:(?:and|but|so|also|then|plus|oh|well)\b,?\s*)+", re.IGNORECASE)
# Discourse markers and interjections: words that frame a statement and say nothing of
# its content (a closed class of English, not names or topics).
_MARKER = (
    r"(?:oh|ohh|ah|aw|aww|wow|whoa|yay|hey|hi|hello|well|so|and|but|now|anyway|anyways|anyhow|"
    r"btw|by the way|fyi|honestly|frankly|seriously|actually|basically|literally|truly|"
    r"okay|ok|alright|all right|right|yeah|yes|yep|yup|no|nope|nah|sure|um+|uh+|er+|hm+|"
    r"lol|haha+|omg|oh my god|oh my gosh|my god|gosh|ugh|phew|sadly|luckily|fortunately|"
    r"unfortunately|thankfully|hopefully|surprisingly|interestingly|funnily enough|"
    r"guess what|you know what|you know|listen|look|also|plus|besides|incidentally|"
    r"in fact|of course|to be honest|tbh|believe it or not|long story short|just so you know|"
    r"if I (?:remember|recall)(?: (?:correctly|right))?|if I(?:'m| am)(?: being)? honest|"
    r"if you (?:ask me|must know|want to know|remember)|if anything|"
    r"(?:(?:big|good|great|bad|sad|exciting|happy|some|breaking|fun|random|quick|little|"
    r"funny|true|side)\s+)?(?:news|update|fact|story|note|thought|confession|announcement))"
)
# Markers before a statement, ending in "," ":" "!" or a dash: "Big news: I got a job",
# "Oh wow, guess what, my sister ...". Stripped from each clause (strip_discourse).
_DISCOURSE = re.compile(rf"^\s*{_MARKER}(?:[\s,]+{_MARKER})*\s*(?:[,:!]+|\s[-\u2013\u2014]+)\s*(?=\S)", re.IGNORECASE)
_QUESTION_START = re.compile(
    r"^(?:what|which|who|whom|whose|when|where|why|how|do|does|did|is|are|was|were|can|"
    r"could|would|will|should|shall|have|has)\b",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(r"^(?:if|unless|whether|maybe|perhaps)\b", re.IGNORECASE)


@dataclass(frozen=True)
class _Pattern:
    """A first-person statement with an attribute: ``regex`` has a ``value`` group (and
    may have ``attr`` naming the attribute); ``kind`` is the kind of entity the value
    names, or "" when the value is not an entity. With ``fixed`` the value is that word
    (a change of state: job "quit", lives in "moved away"); for the attribute STANCE the
    attribute is "stance on <item>", the item the ``value`` (a noun or gerund phrase) or
    ``verbal`` group (a verb phrase, made a gerund: "run" -> "running"). ``lead`` is
    written before the value (a diet left: "no longer " + "vegan")."""

    regex: re.Pattern[str]
    attribute: str
    single: bool
    kind: str = ""
    fixed: str = ""
    retires: tuple[str, ...] = ()
    lead: str = ""


_RELATIONS_SINGLE = _words(
    "wife husband partner spouse boyfriend girlfriend fiance fiancé fiancee mother "
    "mom mum father dad boss manager"
)
_RELATIONS_MULTI = _words(
    "sister brother son daughter kid child baby friend cousin aunt uncle grandmother "
    "grandma grandfather grandpa niece nephew roommate colleague coworker neighbor "
    "neighbour mentor teacher coach"
)
_PETS = _words(
    "dog cat pet puppy pup kitten kitty horse pony bird rabbit bunny hamster parrot turtle "
    "tortoise snake lizard gecko ferret fish goldfish"
)
# Kinds of dog or cat one names a pet by ("our golden retriever Max"): that pet's relation.
_BREEDS = {
    **dict.fromkeys(
        [
            "golden retriever", "labrador retriever", "german shepherd", "border collie", "pit bull",
            *_words(
                "retriever labrador shepherd collie poodle terrier beagle bulldog husky corgi spaniel "
                "dachshund chihuahua pug labradoodle goldendoodle rottweiler greyhound whippet "
                "schnauzer pitbull doberman dalmatian"
            ),
        ],
        "dog",
    ),
    "tabby": "cat",
}
#: Words for an animal one keeps: its name is an animal entity, never a person or a thing.
_ANIMALS = frozenset([*_PETS, *_BREEDS])
_RELATION_WORDS = "|".join(sorted(_RELATIONS_SINGLE + _RELATIONS_MULTI + [*_PETS, *_BREEDS], key=len, reverse=True))
_ADJ = r"(?:(?:older|younger|little|big|best|new|old|twin|step|baby|late|dear|oldest|youngest|eldest) )?"
_OCCUPATIONS = _words(
    "teacher engineer developer programmer designer doctor nurse lawyer accountant "
    "chef cook writer author artist painter musician singer dancer photographer "
    "student manager consultant scientist researcher professor pilot driver mechanic "
    "electrician plumber carpenter farmer firefighter officer soldier veteran "
    "pharmacist dentist therapist counselor counsellor psychologist architect analyst "
    "journalist editor librarian cashier waiter waitress barista bartender "
    "entrepreneur founder freelancer investor banker salesman saleswoman realtor "
    "marketer translator tutor coach trainer athlete actor actress director producer "
    "veterinarian vet surgeon paramedic mom dad retiree"
)
_OCCUPATION_WORDS = "|".join(_OCCUPATIONS)
# What comes before a name decides its kind, not the name: "at" after work, a job or an
# occupation names a place of work or study ("I work at Fernleaf", "a job with Fernleaf",
# "a nurse at Fernleaf", "I study at Fernleaf"): an organisation; elsewhere a place.
_EMPLOYER_CUE = re.compile(
    r"\b(?:(?:work(?:s|ed|ing)?|employed|hired|stud(?:y|ies|ied|ying)|enrolled|interned|"
    r"intern(?:ing|ship)?|volunteer(?:s|ed|ing)?|teach(?:es|ing)?|taught)\s+(?:\w+ly\s+)?"
    r"(?:at|for|by)|(?:job|jobs|position|role|post|gig|career|shift|contract|offer|interview|"
    rf"promotion|internship|boss|colleagues?|coworkers?|co-workers?|{_OCCUPATION_WORDS})s?\s+"
    r"(?:at|with|for))\s+(?:the\s+)?$",
    re.IGNORECASE,
)
_I = r"\bI(?: (?:now|currently|still|also|actually|just|recently|really|finally))?"
# "we" includes the speaker: where "we" live is where the speaker lives.
_WE_I = r"\b(?:I|[Ww]e)(?: (?:now|currently|still|also|actually|just|recently|really|finally|all|both))?"
_VALUE = r"(?P<value>[^,;.!?]+)"


def _p(
    regex: str,
    attribute: str,
    *,
    single: bool,
    kind: str = "",
    fixed: str = "",
    retires: tuple[str, ...] = (),
    lead: str = "",
) -> _Pattern:
    return _Pattern(re.compile(regex, re.IGNORECASE), attribute, single, kind, fixed, retires, lead)


# Parting with a possession: selling, giving or trading it away, getting rid of it.
_PARTED = (
    r"sold(?: off)?|got rid of|gotten rid of|scrapped|junked|gave away|given away|donated|rehomed|"
    r"traded in|traded|swapped|exchanged|parted with|totall?ed"
)
# Giving it to someone: "I gave my bike to my nephew" (not "I gave my bike a wash").
_GAVE = r"gave|given|handed|passed on|handed down"
# The thing parted with, up to where its new owner, price or time begins ("my Tesla to a
# neighbour", "my Civic in for a Prius", "my boat last week").
_THING_END = (
    r"(?=\s+(?:to|for|in|on|at|off|away|back|last|this|yesterday|today|because|"
    r"and|but|so|after|when|since|ago|a (?:few|couple)|\d)\b|\s*[,;.!?]|\s*$)"
)
# Giving one's notice or resignation is quitting the job, no possession parted with.
_NOTICE = (
    r"(?:handed|put|turned|sent) in (?:my|a) (?:notice|resignation)|(?:gave|given|submitted|tendered) "
    r"(?:in )?(?:my |a )?(?:(?:two|2|four|4) weeks'? )?(?:notice|resignation)"
)
_PARTED_THING = rf"(?!(?:(?:two|2|four|4) weeks'? )?(?:notice|resignation)\b)(?P<value>[^,;.!?]+?){_THING_END}"


# A field one works in, by its ending: nursing, journalism, politics, pharmacy,
# psychology, dentistry, photography, finance, medicine, law.
_FIELD = r"(?-i:[a-z]+(?:ing|ism|ics|acy|ology|istry|aphy|ance|ine)|law)"

#: Losing one's job ends the employer with the title (ExtractedFact.retires).
_ENDS_EMPLOYMENT = ("works at",)
#: Leaving a named place of work ends the employment and the title held there.
_LEFT_EMPLOYER = ("works at", "job")
# Who employs the speaker, as the subject of what happened to the job ("my company laid me off").
_EMPLOYER_SUBJECT = (
    r"(?:(?:my|our|the) (?:company|employer|boss|manager|firm|work|job|school|hospital|bank|agency|team|"
    r"supervisor|office|store|restaurant|startup)|(?-i:[A-Z][\w&'-]*(?: [A-Z][\w&'-]*)?))"
)
# Taking up a job somewhere: "got a job at", "landed a position with", "started working for".
_JOB_NOUN = r"(?:(?:new |first |full-time |part-time |summer )?(?:job|position|role|internship|post|gig))"


#: One's stance on an activity, food, hobby, habit: single-valued and keyed by the item,
#: so "I stopped running" (stance on running: stopped) replaces "I love running" (stance
#: on running: likes) through memoryapp.semantic's rule for a single-valued attribute,
#: while likes of different things stay side by side.
STANCE = "stance on"
#: How many of a thing one has in all ("I have 3 cats"): the attribute is "number of
#: <things>", single-valued, the value the count, so "I have 5 cats now" replaces it.
COUNT = "number of"
#: A thing of one's own that is a number ("My budget is 20000 euros"): the attribute is
#: the thing ("budget"), single-valued.
MEASURE = "<measure>"
_LEAD_IN = r"(?:so |and |but |also |now |btw |anyway |ok |okay )"
_COUNT_WORDS = "two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_LIKES, _DISLIKES, _STOPPED = "likes", "dislikes", "stopped"
_DOES, _CHANGED = "does", "changed mind"
_ITEM = r"(?P<value>[^,;.!?]+)"
_FREQUENCY = r"(?:usually|often|always|regularly|normally|mostly|sometimes|still)"
# A habit's object: a few words, not an article, pronoun, adverb or phrase ("I work hard",
# "I eat a lot", "I work from home"), up to its first preposition ("tennis at the club").
_STOP_WORD = (
    r"(?:a|an|the|my|our|your|his|her|their|it|that|this|these|those|them|to|for|at|in|on|"
    r"with|from|as|out|up|off|hard|late|early|well|too|so|very|much|more|less|nothing|"
    r"everything|something|anything|all|some|any|what|whatever|and|or|but|because|when|while|"
    r"after|before|during|every|each|twice|once|most|like|there|here|home|now|today|things|"
    # an emphatic "do" before a verb: "I do love it", "I do remember", "I do have a cat"
    r"stuff|love|remember|think|know|want|hope|believe|miss|enjoy|appreciate|feel|agree|"
    r"understand|need|wish|see|mean|get|care|mind|have|own|"
    # a negated verb: "I do not have a dog", "I do not eat meat" are no habit of "not ..."
    r"not|never)"
)
# Gerunds after "I started" that name no pursuit: a feeling, a try, a thought, a job.
_NOT_PURSUITS = (
    r"(?:feeling|thinking|getting|going|having|looking|trying|wondering|working|being|seeing|"
    r"making|taking|saying|talking|asking|crying|laughing|worrying|planning|waiting|using|"
    r"preparing|packing|noticing|realizing|realising|coming|becoming|to)"
)
# A word that makes a name a school's: "Riverside Elementary", "Oakwood High", "Leeds Uni"
# ("High" or "Middle" only last or before "School": "High Street" is none).
_SCHOOL = (
    r"(?-i:School|University|College|Academy|Institute|Uni|Polytechnic|Conservatory|Elementary|"
    r"Primary|Kindergarten|Preschool|Pre-K|Nursery|Montessori|(?:High|Middle|Junior High)(?= School|\s*$|\s*[,;.!?]))"
)
_HABIT = rf"(?P<value>(?!{_STOP_WORD}\b)[\w'-]+(?: (?!{_STOP_WORD}\b)[\w'-]+){{0,3}})"
_VERBAL = r"(?P<verbal>[^,;.!?]+)"
# A clause saying "anymore" / "any longer": what follows "don't" has stopped.
_ANYMORE = r"(?=[^,;.!?]*\b(?:anymore|any more|any longer)\b)"
_NOT = r"(?:don't|do not|dont|didn't)"
# Up to three words before an occupation ("senior UX designer"), none a word that joins
# phrases ("a fan of designer bags").
_MODIFIERS = r"(?:(?!(?:of|and|or|with|for|in|at|to|the|a|an|fan|not|no)\b)[\w-]+ ){0,3}"
# The diets one can say one has left (their -ism too: "I gave up veganism").
_DIETS_LEFT = r"(?:vegetarian|vegan|pescatarian)"
# After "I": "'ve" or " have", and an adverb ("I've just quit", "I have finally retired").
_HAVE = r"(?:'ve| have)?(?: (?:just|recently|finally|also|already))?"


#: Languages one speaks ("I speak English and Spanish"): several, each a fact.
SPEAKS = "speaks"
#: Languages one is learning ("I'm learning Japanese"), apart from those one speaks.
LEARNING = "learning"
# A language's name: a capitalised word ("Portuguese"), or one with "Sign Language"
# ("American Sign Language"). "I speak to Anna", "I speak my mind" name none.
_LANGUAGE = r"(?P<value>(?-i:[A-Z][a-z]+(?: Sign Language)?))\b(?!')"
# How well: "I speak a little French", "I'm learning basic Korean".
_LEVEL = (
    r"(?:fluent|native|basic|some|decent|good|broken|conversational|a little|a bit of|a little bit of|"
    r"enough|passable|rusty|beginner|intermediate)"
)


def _relation_single(word: str) -> bool:
    return word.lower() in _RELATIONS_SINGLE


#: One's partner, whatever the word ("wife", "boyfriend", "married to"): one attribute,
#: so a divorce or a break-up ("Priya and I got divorced", "I'm single now") ends it
#: without saying which word named the partner.
PARTNER = "partner"
_PARTNER_WORDS = frozenset(
    _words("wife husband partner spouse boyfriend girlfriend fiance fiancé fiancee fiancée")
)


def _relation_attribute(word: str) -> str:
    """The attribute a relation word is stored under: PARTNER for a partner, "dog" for a
    breed of dog ("golden retriever"), else the word."""
    word = " ".join(word.lower().split())
    return PARTNER if word in _PARTNER_WORDS else _BREEDS.get(word, word)


def _relation_kind(word: str) -> str:
    """The kind of entity a relation word's name is: an animal for a pet, else a person."""
    return "animal" if " ".join(word.lower().split()) in _ANIMALS else "person"


_PARTNER = "|".join(sorted(_PARTNER_WORDS))
# The end of a partnership, said by the speaker, "we", "my wife and I" or "Priya and I".
# When, said between a verb and its object: "got married last weekend to Sam".
_WHEN_SAID = (
    r"(?: (?:last|this|next) (?:week|weekend|month|year|summer|spring|fall|autumn|winter|night)"
    r"| (?:yesterday|today|recently)| in \d{4}| in [A-Z][a-z]+| on [A-Z][a-z]+)?"
)


_PARTNERSHIP_ENDS = [
    _p(
        rf"(?:\b(?:I|we)|\bmy {_ADJ}(?:{_PARTNER}) and I|\b{_NAME} and I)(?:'ve| have| had)?"
        r"(?: (?:just|recently|finally|officially|eventually))? (?:got |are |were |'re |have |had |"
        r"have been |'ve been )?(?P<value>divorced|broke up|broken up|split up|parted ways|"
        r"separated(?=\s*(?:$|[,.!;]|from\b|last\b|in\b|this\b|after\b|\d|a (?:year|month|week))))",
        PARTNER,
        single=True,
    ),
    _p(
        r"\bI(?:'m| am)(?: (?:now|recently|newly|officially|happily|still))? "
        r"(?P<value>single|divorced|separated|widowed|a widow|a widower)\b",
        PARTNER,
        single=True,
    ),
]


_RELATION_PATTERNS = [
    # "my sister is Mara", "our dog's name is Rex", "my sister is called Mara"
    re.compile(
        rf"\b(?:my|our) {_ADJ}(?P<attr>{_RELATION_WORDS})(?:'s name)? (?:is|was|'s) "
        rf"(?:called |named )?(?P<value>{_NAME})\b",
        re.IGNORECASE,
    ),
    # "Mara is my sister", "Rex is our dog", "Rex, our dog, ..."
    # ("Chemistry is my husband Omar's subject": the relation is Omar's.)
    re.compile(
        rf"\b(?P<value>{_NAME})(?:,? (?:is|was)|,) (?i:my|our) {_ADJ}(?P<attr>{_RELATION_WORDS})\b(?!'s| {_NAME_WORD})"
    ),
    # "my sister Mara", "our son, Tom,", "a dog named Rex" / "a sister called Mara"
    re.compile(rf"\b(?i:(?:my|our) {_ADJ}(?P<attr>{_RELATION_WORDS})),? (?P<value>{_NAME})\b"),
    # "I have a son, Leo, who is 12": a name in apposition.
    re.compile(rf"\b(?i:(?:a|an|another) {_ADJ}(?P<attr>{_RELATION_WORDS})), (?P<value>{_NAME})\b"),
    re.compile(
        rf"\b(?i:(?:a|an|my|another|our) {_ADJ}(?P<attr>{_RELATION_WORDS})) (?i:named|called) (?P<value>{_NAME})\b"
    ),
    # "I have a new puppy, her name is Pip": the name given later in the clause.
    re.compile(
        rf"\b(?i:(?:a|an|my|our|another) {_ADJ}(?P<attr>{_RELATION_WORDS}))\b[^.!?]*?,\s*"
        rf"(?i:his|her|its|their) name(?:'s| is) (?P<value>{_NAME})\b"
    ),
]

_PATTERNS = [
    _p(
        rf"{_I} (?:drive|am driving|'m driving) (?:a |an |the |my )?{_VALUE}",
        "car",
        single=True,
        kind="product",
    ),
    # The car parted with, named by its kind: the car "sold", which replaces the car one
    # drives, and it ends a possession naming a car ("I have an electric car"; retires_when
    # is the ``thing`` group).
    _p(
        rf"{_WE_I}{_HAVE} (?:(?P<parted>{_PARTED})|{_GAVE}) (?:my|our|the) (?:old |first |own )?(?P<thing>car){_THING_END}"
        r"(?(parted)|(?= (?:away|to)\b))",
        "car",
        single=True,
        fixed="sold",
        retires=("has",),
    ),
    # Any other possession parted with, by its kind or its make ("I sold my boat", "we gave
    # away our dog Rex", "I traded in my Tesla", "I gave my bike to my nephew"): it ends the
    # pet, thing had or car driven whose value names it (retires_when; the car "Tesla Model
    # 3" by "Tesla"). Only the one named: "I sold the Civic, I drive a Prius now" ends the
    # Civic, never the Prius.
    _p(
        rf"{_WE_I}{_HAVE} (?:(?P<parted>{_PARTED})|{_GAVE}) (?:my|our|the) (?:old )?{_PARTED_THING}"
        r"(?(parted)|(?= (?:away|to)\b))",
        "",
        single=False,
        retires=("has", "car", *_PETS),
    ),
    _p(
        rf"\bmy (?:new |current )?car is (?:a |an |the )?{_VALUE}",
        "car",
        single=True,
        kind="product",
    ),
    _p(rf"{_WE_I} live (?:in|at|near) {_VALUE}", "lives in", single=True, kind="place"),
    # Still there: "I've been living in Berlin", "I've lived in Berlin for 5 years / since 2019".
    _p(
        rf"{_WE_I}(?:'ve| have) (?:been living|lived) (?:in|at|near) "
        r"(?P<value>[^,;.!?]+?)(?= for (?:\w+ )?(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|"
        r"a few|several|many|some) (?:years?|months?|weeks?|decades?)\b| since\b| now\b)",
        "lives in",
        single=True,
        kind="place",
    ),
    _p(rf"{_WE_I}(?:'ve| have) been living (?:in|at|near) {_VALUE}", "lives in", single=True, kind="place"),
    _p(rf"{_WE_I}{_HAVE} (?:moved|relocated) to {_VALUE}", "lives in", single=True, kind="place"),
    _p(
        rf"{_WE_I}{_HAVE} (?:moved|relocated) (?:out of|away from) {_VALUE}",
        "lives in",
        single=True,
        fixed="moved away",
    ),
    _p(rf"\b(?:I'm|I am|we're|we are) (?:currently |now )?based in {_VALUE}", "lives in", single=True, kind="place"),
    _p(
        rf"{_I} (?:come from|grew up in|am from|'m from) {_VALUE}",
        "from",
        single=True,
        kind="place",
    ),
    _p(rf"\bI'm from {_VALUE}", "from", single=True, kind="place"),
    _p(rf"{_I} work (?:\w+ly )?as (?:a |an )?{_VALUE}", "job", single=True),
    _p(
        r"\bmy (?:job|profession|occupation) is (?:a |an |being a |being an )?" + _VALUE,
        "job",
        single=True,
    ),
    # Changes of job: the old value stops being current (memoryapp.semantic).
    _p(
        rf"{_I}{_HAVE} (?:(?:quit|left|resigned from) (?:my|the|a) (?:\w+ )?(?:job|position|role|post)|"
        rf"resigned(?! (?:from|as)\b)|{_NOTICE})\b",
        "job",
        single=True,
        fixed="quit",
        retires=_ENDS_EMPLOYMENT,
    ),
    _p(
        rf"{_I}{_HAVE} (?:lost (?:my|the) (?:\w+ )?job|(?:got|was|been) (?:fired|laid off|let go|made redundant|sacked))\b",
        "job",
        single=True,
        fixed="lost job",
        retires=_ENDS_EMPLOYMENT,
    ),
    # Let go by the employer: "they laid me off", "my company made me redundant".
    _p(
        rf"\b(?:they|{_EMPLOYER_SUBJECT})(?: (?:just|recently|finally|eventually))? (?:laid me off|let me go|"
        r"fired me|sacked me|made me redundant)\b",
        "job",
        single=True,
        fixed="lost job",
        retires=_ENDS_EMPLOYMENT,
    ),
    # Resigning from a place or a post ("I resigned from the bakery", "I stepped down as
    # head nurse"): the job and employer end only if it names them (retires_when), so
    # "I resigned from the board" leaves the job at Acme current.
    _p(
        rf"{_I}{_HAVE} (?:resigned|stepped down|stepped away) (?:from|as) (?:my |the |a |an |our )?{_VALUE}",
        "",
        single=False,
        retires=_LEFT_EMPLOYER,
    ),
    _p(rf"{_I}{_HAVE} retired\b", "job", single=True, fixed="retired", retires=_ENDS_EMPLOYMENT),
    _p(
        rf"{_I}{_HAVE} (?:took|taken|went into|gone into|opted for|accepted) (?:an? )?(?:early |voluntary )?retirement\b"
        r"|\bI(?:'ve| have) been (?:happily |officially )?retired\b",
        "job",
        single=True,
        fixed="retired",
        retires=_ENDS_EMPLOYMENT,
    ),
    _p(
        rf"\bI(?:'m| am) (?:no longer (?:a|an) {_MODIFIERS}(?:{_OCCUPATION_WORDS})|not (?:a|an) "
        rf"{_MODIFIERS}(?:{_OCCUPATION_WORDS}) (?:anymore|any more|any longer))\b",
        "job",
        single=True,
        fixed="no longer",
    ),
    _p(
        rf"{_I}{_HAVE} (?:got |was |been |'ve been )?promoted to (?:a |an |the )?(?:role of |position of )?{_VALUE}",
        "job",
        single=True,
    ),
    # Promoted by the employer, or a promotion got: "they promoted me to team lead", "I got
    # a promotion to manager" (the new title), "I got a promotion at work" (promoted).
    _p(
        rf"(?:\b(?:they|{_EMPLOYER_SUBJECT})(?: (?:just|recently|finally|officially))? promoted me|"
        rf"{_I}{_HAVE} (?:got|received|earned|was given|been given) (?:a|my|the|that) (?:big |long-awaited )?promotion)"
        r" to (?:a |an |the )?(?:role of |position of )?" + _VALUE,
        "job",
        single=True,
    ),
    _p(rf"{_I}{_HAVE} (?:got |was |been )?promoted\b", "job", single=True, fixed="promoted"),
    _p(
        rf"\b(?:they|{_EMPLOYER_SUBJECT})(?: (?:just|recently|finally|officially))? promoted me\b"
        rf"|{_I}{_HAVE} (?:got|received|earned|was given|been given) (?:a|my|the|that) (?:big |long-awaited )?promotion\b",
        "job",
        single=True,
        fixed="promoted",
    ),
    _p(
        rf"\bI(?:'m| am| became| have become|'ve become)(?: now| currently| still| finally)? (?:a|an) "
        rf"(?P<value>{_MODIFIERS}(?:{_OCCUPATION_WORDS}))\b",
        "job",
        single=True,
    ),
    _p(rf"{_I} work (?:\w+ly )?(?:at|for) {_VALUE}", "works at", single=True, kind="organisation"),
    _p(
        rf"(?:{_I}{_HAVE} (?:got|landed|found|started|accepted|took|taken|began|begun|been offered|"
        rf"was offered)(?: a| an| the| my)? {_JOB_NOUN} (?:at|with|for)|{_I}(?:'m| am) (?:now |"
        rf"currently )?(?:working (?:at|for)|employed (?:at|by))|{_I}{_HAVE} (?:started|begun|began) "
        rf"(?:working|work) (?:at|for)|{_I}{_HAVE} (?:got |been |was )?hired (?:at|by)) {_VALUE}",
        "works at",
        single=True,
        kind="organisation",
    ),
    _p(rf"\bI(?:'m| am) (?:severely |very |mildly )?allergic to {_VALUE}", "allergic to", single=False),
    # Languages, named with a capital as English writes them: those one speaks (several),
    # one's native language, and those one is learning (no language spoken yet).
    _p(
        rf"{_I}(?: speak| can speak|(?:'m| am) (?:fluent|conversational) in)(?: {_LEVEL})? {_LANGUAGE}",
        SPEAKS,
        single=False,
    ),
    _p(rf"\bmy (?:native|first|mother) (?:language|tongue) is {_LANGUAGE}", "native language", single=True),
    _p(
        rf"{_I}(?:'m| am|'ve been| have been) learning(?: {_LEVEL})? {_LANGUAGE}",
        LEARNING,
        single=False,
    ),
    # A diet left ("I'm not vegan anymore", "I stopped being vegetarian", "I gave up
    # veganism"): the diet is "no longer vegan", which replaces "vegan".
    _p(
        rf"\bI(?:(?:'m| am) (?:no longer|not{_ANYMORE}|(?:so |totally )?(?:done|through) (?:being|with))| used to be) "
        rf"(?:a |an )?(?:strict )?(?P<value>{_DIETS_LEFT})(?:ism)?\b",
        "diet",
        single=True,
        lead="no longer ",
    ),
    _p(
        rf"{_I}{_HAVE} (?:stopped|quit|gave up|given up) (?:being (?:a |an )?)?(?P<value>{_DIETS_LEFT})(?:ism)?\b",
        "diet",
        single=True,
        lead="no longer ",
    ),
    _p(
        r"\bI(?:(?:'m| am)(?: now| fully| mostly)?|(?:'ve| have)? ?(?:gone|went|become|became|turned)"
        r"(?: fully)?|(?:'ve| have) been) (?:a |an )?(?:strict )?(?P<value>vegetarian|vegan|pescatarian|"
        r"gluten[- ]free|lactose[- ]intolerant|kosher|halal)\b",
        "diet",
        single=True,
    ),
    _p(
        r"\bI(?:'m| am) (?:a |an )?(?P<value>diabetic|asthmatic|epileptic|pregnant|c(?:o)?eliac|"
        r"deaf|blind|colou?r[- ]?blind|autistic|dyslexic|an(?:a)?emic|insomniac|allergic)\b",
        "condition",
        single=False,
    ),
    _p(r"\bI(?:'m| am) (?:now |officially |happily )?retired\b", "job", single=True, fixed="retired"),
    _p(
        r"\bI(?:'m| am) (?:now |currently )?(?:unemployed|jobless|out of work|between jobs)\b",
        "job",
        single=True,
        fixed="unemployed",
    ),
    # Where one studies: "I'm studying at MIT", "I attend Leeds University" (a school's
    # name after go to / attend: "I go to the gym" is no school).
    _p(
        rf"{_I}(?:'m| am)?(?: now| currently)? (?:study(?:ing)?(?: \w+)?|enrolled|a (?:\w+ )?student) at {_VALUE}",
        "studies at",
        single=True,
        kind="organisation",
    ),
    _p(
        rf"{_I}(?: go to| attend|'m attending| am attending|(?:'m| am) (?:in (?:kindergarten|preschool|nursery|(?:the )?\w+ (?:grade|year|class)) )?at|"
        rf"{_HAVE} (?:started|began|begun)(?: (?:school|kindergarten|preschool|nursery|college|university|"
        rf"(?:the )?\w+ (?:grade|year)))? at) (?:the )?(?P<value>[^,;.!?]*\b{_SCHOOL}\b[^,;.!?]*)",
        "studies at",
        single=True,
        kind="organisation",
    ),
    _p(
        rf"{_I}(?: study|'m studying| am studying| major in|'m majoring in| am majoring in) {_VALUE}",
        "studies",
        single=True,
    ),
    _p(r"\bmy name is (?P<value>" + _NAME + r")\b", "name", single=True),
    _p(r"\b(?:call me|I go by) (?P<value>" + _NAME + r")\b", "name", single=True),
    # An introduction: "Hi, I'm Daniel." (not "I'm Jewish": _NOT_INTRODUCTIONS).
    _p(
        rf"^I(?:'m| am) (?P<value>{_NAME})(?=\s*(?:$|[,.!;:]|\s(?:and|from|here|btw)\b))",
        "name",
        single=True,
    ),
    _p(
        r"\bI(?:'m| am) (?P<value>\d{1,3})(?: (?:years old|yrs old|year old)\b|(?=\s*(?:$|[,.!;]|now\b)))",
        "age",
        single=True,
    ),
    _p(r"\bI (?:just )?turned (?P<value>\d{1,3})\b", "age", single=True),
    _p(r"\bmy birthday is (?:on )?" + _VALUE, "birthday", single=True),
    _p(r"\bI was born (?:in|on) " + _VALUE, "born", single=True),
    _p(
        rf"\bI(?:'m| am|'ve| have)?(?: just| recently| finally)? (?:now |got |gotten |been )?"
        rf"(?:married|engaged){_WHEN_SAID} to (?P<value>{_NAME})\b",
        PARTNER,
        single=True,
        kind="person",
    ),
    # "Sam and I got married", "Priya and I are engaged".
    _p(
        rf"\b(?P<value>{_NAME}) and I(?: just| recently| finally| officially)? (?:got|are|were|'re|have been) "
        r"(?:married|engaged)\b",
        PARTNER,
        single=True,
        kind="person",
    ),
    # Dating someone: "I'm dating Jonas", "I'm seeing someone new, his name is Jonas".
    _p(
        r"\bI(?:'m| am|'ve been| have been| started| began| just started)?(?: (?:now|currently|also|still))? "
        r"(?:(?:dating|going out with|in a relationship with) |(?:dating|seeing) (?:someone|somebody|a (?:guy|girl|"
        rf"man|woman))\b[^.!?]*?\b(?:his|her|their) name(?:'s| is) )(?P<value>{_NAME})\b",
        PARTNER,
        single=True,
        kind="person",
    ),
    _p(
        rf"\bI(?: just| recently| finally)? married (?P<value>{_NAME})\b",
        PARTNER,
        single=True,
        kind="person",
    ),
    # Married or engaged, no one named ("I just got married!", "I'm engaged now"): it ends
    # "single" all the same (the named forms above come first).
    _p(
        r"\bI(?:'m| am|'ve| have)?(?: just| recently| finally| now| officially| happily)? (?:got |gotten |been |now )?"
        r"(?P<value>married(?!\s+to\b)|engaged(?=\s*(?:$|[,.!;:]|now\b|last\b|yesterday\b|this\b|and\b)))\b",
        PARTNER,
        single=True,
    ),
    _p(
        r"\bmy (?:all[- ]time )?favou?rite (?P<attr>[a-z]+(?: [a-z]+)?) (?:is|was|are) (?:a |an |the )?"
        + _VALUE,
        "favorite",
        single=True,
    ),
    _p(
        rf"{_I} (?:have|own)(?: (?:just|now|still))? (?P<count>{_COUNT_WORDS}|\d{{1,6}}) {_VALUE}",
        COUNT,
        single=True,
    ),
    _p(
        rf"{_I} (?:have|own|got|bought|purchased|adopted)(?: just)? (?:a|an|two|three|four|five|\d+) (?:new )?{_VALUE}",
        "has",
        single=False,
    ),
    # Stances, endings first: "I don't like X anymore" is not "I like X".
    _p(
        rf"{_I}{_HAVE} changed my mind (?:about|on) {_ITEM}",
        STANCE,
        single=True,
        fixed=_CHANGED,
    ),
    _p(rf"\bno more {_ITEM}", STANCE, single=True, fixed=_STOPPED),
    _p(
        rf"\bI(?:'m| am) (?:so |totally |completely )?(?:done|through|finished) with {_ITEM}",
        STANCE,
        single=True,
        fixed=_STOPPED,
    ),
    _p(
        rf"{_I}{_HAVE} (?:stopped|quit|gave up(?: on)?|given up(?: on)?) {_ITEM}",
        STANCE,
        single=True,
        fixed=_STOPPED,
    ),
    _p(
        rf"{_I} (?:(?:no longer|{_NOT}{_ANYMORE}) (?:really )?(?:like|love|enjoy|(?:do|go)(?= \w+ing\b)) "
        rf"{_ITEM}|(?:no longer|{_NOT}{_ANYMORE}) {_VERBAL})",
        STANCE,
        single=True,
        fixed=_STOPPED,
    ),
    _p(
        rf"\bI(?:'m| am) (?:no longer|not{_ANYMORE}) (?:really )?into {_ITEM}",
        STANCE,
        single=True,
        fixed=_STOPPED,
    ),
    _p(
        rf"\bI used to (?:(?:really )?(?:like|love|enjoy|(?:do|go)(?= \w+ing\b)) {_ITEM}|{_VERBAL})",
        STANCE,
        single=True,
        fixed=_STOPPED,
    ),
    _p(
        rf"{_I} (?:really |absolutely |totally |truly )?(?:do (?:really )?)?(?:love|like|enjoy|adore|prefer) "
        rf"(?:to {_VERBAL}|{_ITEM})",
        STANCE,
        single=True,
        fixed=_LIKES,
    ),
    _p(
        rf"{_I} (?:really )?(?:hate|dislike|can't stand|cannot stand|{_NOT} (?:really )?(?:like|enjoy)) "
        rf"(?:to {_VERBAL}|{_ITEM})",
        STANCE,
        single=True,
        fixed=_DISLIKES,
    ),
    _p(rf"{_I}(?:'m| am) (?:really |so )?into {_ITEM}", STANCE, single=True, fixed=_LIKES),
    # Taking up a pursuit: "I started rock climbing", "I took up pottery", "I'm learning to
    # knit" (what one does now; "I started a job" is no pursuit, a feeling or a try neither).
    _p(
        rf"{_I}{_HAVE} (?:started|began|begun) (?P<value>(?:(?!{_NOT_PURSUITS}\b)[a-z-]+ ){{0,2}}(?!{_NOT_PURSUITS}\b)[a-z-]+ing\b[^,;.!?]*)",
        STANCE,
        single=True,
        fixed=_DOES,
    ),
    _p(
        rf"(?:{_I}{_HAVE} (?:took up|taken up|got into|gotten into|started learning|began learning)|"
        rf"{_I}(?:'m| am|'ve been| have been) learning)(?: how)? (?:to {_VERBAL}|(?-i:(?![A-Z])){_ITEM})",
        STANCE,
        single=True,
        fixed=_DOES,
    ),
    # Eating something again: "I'm eating meat again", "I went back to eating fish".
    _p(
        rf"{_I}(?:'m| am|'ve been| have been)(?: now)? eating {_HABIT}(?=[^,;.!?]*\bagain\b)"
        rf"|{_I}{_HAVE} (?:went|gone|got|gotten|(?:'m| am)(?: going)?) back to (?P<verbal>eating\b[^,;.!?]*)",
        STANCE,
        single=True,
        fixed=_DOES,
    ),
    # Habits: what one does ("I work night shifts", "I play tennis", "I smoke"), so "no more
    # night shifts for me" and "I quit smoking" end them.
    _p(
        rf"{_I}(?: {_FREQUENCY})? (?:work|play|do|practi[cs]e|eat|drink|smoke) (?:the )?{_HABIT}",
        STANCE,
        single=True,
        fixed=_DOES,
    ),
    _p(
        rf"{_I}(?: {_FREQUENCY})? (?P<verbal>smoke|vape|drink|run|jog|swim|cycle|meditate|gamble)"
        r"(?=\s*(?:$|[,.!;]|(?:every|each|daily|weekly|twice|once|regularly|a lot|most|on|at night|in the)\b))",
        STANCE,
        single=True,
        fixed=_DOES,
    ),
    # "I left Acme": the job ends only if Acme is where the speaker works (retires_when).
    # Last, so a clause that says more ("I left Paris when I moved to Leeds") keeps that.
    # So "I left nursing", "I left pharmacy", "I left my career in banking": the job ends
    # if it names the field (a word a field's name ends with: -ing, -ism, -acy, -ology...).
    _p(
        rf"{_I}{_HAVE} (?:left|walked away from) (?:(?:my|a|the) (?:\w+ )?(?:career|job|work|position|role) "
        rf"(?:in|as|at|with) (?:a |an |the )?)?(?P<value>{_NAME}|{_FIELD})\b",
        "",
        single=False,
        retires=_LEFT_EMPLOYER,
    ),
    # A number of one's own: "My budget is 20000 euros", "my goal is 10000 steps a day" (the
    # thing is the attribute, so a new figure replaces the old). Not a relative's age.
    _p(
        rf"^(?:{_LEAD_IN})?my (?!{_ADJ}(?:{_RELATION_WORDS})s?\b)(?P<attr>[a-z]+(?: [a-z]+)?) (?:is|was) "
        r"(?:now |currently |still |only |about |around )?(?P<value>[^,;!?]*\d[^,;!?]*)",
        MEASURE,
        single=True,
    ),
]

# Words that end a value phrase: what follows is another clause or a time adverb.
_VALUE_END = re.compile(
    r"\s+(?:and|but|because|since|so|if|unless|which|who|that|when|while|where|(?:right |just |for )?now|"
    r"at the moment|at present|these days|"
    r"nowadays|anymore|any more|any longer|again|lately|sometimes|often|occasionally|rarely|regularly|today|tonight|yesterday|for|with|though|although|as|"
    r"originally|initially|at first|by birth|"
    r"after|before|until|due to|thanks to|"
    + HEDGE
    + r"|last|next|every|once|twice|ago|(?:\d+|an?|one|two|three|four|five|six|a few|a couple(?: of)?|several) "
    r"(?:days?|weeks?|months?|years?|decades?) (?:ago|back)|(?:in|on|since) (?:the )?(?:\d{4}|spring|summer|autumn|"
    r"fall|winter|weekends?|"
    + "|".join(_MONTH_NAMES + _WEEKDAYS)
    + r")s?)\b.*$",
    re.IGNORECASE,
)
# Articles and the adverbs that only say when or how sure ("is now Fleetwood Mac",
# "is actually a Prius"): not part of the value.
# A dash between spaces starts an aside: "pro ball - it's a challenge".
_DASH = re.compile(r"\s+[-\u2013\u2014]+\s+")
_LEADING = re.compile(
    r"^(?:a|an|the|my|our|some|to|really|very|now|currently|actually|still|also|just|finally|"
    r"officially|definitely|probably|honestly|basically|literally|even|already|mostly|"
    r"usually|always|once again|again|right now|at the moment|these days|nowadays)\s+",
    re.IGNORECASE,
)
# A value opening with a pronoun refers elsewhere ("it here", "her cooking").
_PRONOUN_VALUE = re.compile(
    r"^(?:it|them|him|her|you|us|me|myself|yourself|himself|herself|itself|ourselves|"
    r"themselves)\b",
    re.IGNORECASE,
)
_VAGUE_VALUES = frozenset(
    _words(
        "it that this them you him her those these there here question problem idea "
        "feeling lot bit time chance look try minute moment way point thought doubt clue "
        "favor something anything everything nothing one"
    )
)
_NO_OBJECT = re.compile(
    r"^(?:to|from|into|around|home|back|through|down|up|past|across|over|there|by|for)\b",
    re.IGNORECASE,
)


# Words that start a phrase inside a value ("at", "in"): a value cut at the cap ends
# before the last of them, and never with one of them or an article.
_PHRASE_START = frozenset(
    _words(
        "a an the at in on of to for from by near with into about over under after before "
        "between called named and or my our your his her their its this that"
    )
)


def _within_cap(words: list[str]) -> list[str]:
    """``words`` cut to MAX_VALUE_WORDS at a phrase boundary, no dangling preposition,
    conjunction or article at the end ("nurse at St Mary's Hospital in")."""
    if len(words) > MAX_VALUE_WORDS:
        words = words[:MAX_VALUE_WORDS]
        starts = [i for i, w in enumerate(words) if i and w.lower() in _PHRASE_START]
        if starts:
            words = words[: starts[-1]]
    while words and words[-1].lower() in _PHRASE_START:
        words = words[:-1]
    return words


# Markup in a value: a tag ("<b>Acme</b>") goes, and the value ends at a character no
# name or phrase holds ('"Oslo" <script>...' is Oslo).
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_NOT_IN_VALUE = re.compile(r"[<>{}\[\]|`\\].*$", re.DOTALL)
_QUOTED = re.compile(r'^\s*(?P<q>["\u201c\u201d])(?P<inner>[^"\u201c\u201d]+)["\u201c\u201d]')


def _unmarked(raw: str) -> str:
    """``raw`` without markup (_TAG, _NOT_IN_VALUE)."""
    return _NOT_IN_VALUE.sub("", _TAG.sub("", raw)).strip()


def clean_value(raw: str) -> str:
    """A pattern's value phrase, trimmed: cut at the next clause, time adverb or hedge
    ("penicillin or something like that", "Boston or so", "a Honda I guess": HEDGE; a
    sentence's punctuation already ended it), leading articles dropped, at most
    MAX_VALUE_WORDS words ending at a phrase boundary; "" when nothing definite is left.
    A quoted value is the quotation as written ('"The Cure"' -> "The Cure")."""
    text = _unmarked(raw)
    quoted = _QUOTED.match(text)
    if quoted:
        return " ".join(_within_cap(quoted.group("inner").split()))
    value = _VALUE_END.sub("", _DASH.split(text)[0])
    if _NO_OBJECT.match(value):
        return ""
    for _ in range(4):
        value = _LEADING.sub("", value)
    value = " ".join(_within_cap(value.split())).strip(" '\"()")
    if _PRONOUN_VALUE.match(value):
        return ""
    if not value or value.lower() in _VAGUE_VALUES or _NO_OBJECT.match(value):
        return ""
    return value


@dataclass
class _Found:
    """One fact found in a clause, before facts are merged across the episode."""

    text: str
    subject: str
    attribute: str
    value: str
    single: bool
    entities: list[tuple[str, str]]
    # Names that only opened the clause: kept if the episode confirms them elsewhere.
    tentative: set[str]
    sequence: int
    weight: float
    retires: tuple[str, ...] = ()
    retires_when: str = ""
    # Who said it, when the fact is about someone else ("Arjun turned 9": subject Arjun).
    speaker: str = ""
    # The relation word of a subject left unnamed ("my daughter goes to ...": daughter).
    relative: str = ""
    # The one a loss names without saying whose ("Napoleon died"): the speaker's loss only
    # if the episode names them as the speaker's (_settle_losses); ``told`` when the
    # speaker's own clause tells it ("I read that Napoleon died").
    unowned: str = ""
    told: bool = False

    def restored(self) -> _Found:
        """This fact with abbreviations' full stops written again (_restored)."""
        self.text, self.value = _restored(self.text), _restored(self.value)
        self.attribute = _restored(self.attribute)
        self.entities = [(_restored(n), k) for n, k in self.entities]
        self.tentative = {_restored(n) for n in self.tentative}
        self.retires_when = _restored(self.retires_when)
        return self


def speaker_of(message: TranscriptMessage) -> tuple[str | None, str]:
    """``(speaker, body)``: the label's name and the text after it, or ``user`` for an
    unlabelled user message and None (states nothing about a person) otherwise."""
    match = _LABEL.match(message.content)
    if (
        match
        and match.group("name").lower().rstrip(".") not in _NOT_SPEAKERS
        # "Btw: ...", "Big News: ..." open a statement; they name nobody.
        and not re.fullmatch(_MARKER, match.group("name"), re.IGNORECASE)
        # Nor does a request to remember ("Remember: ...", "Don't Forget: ...").
        and remembered(match.group(0)) is None
    ):
        return match.group("name"), message.content[match.end() :]
    return (USER if message.role == "user" else None), message.content


def _abbreviation(match: re.Match[str], text: str) -> bool:
    """Whether the full stop after ``match``'s word belongs to an abbreviation or an
    initial and the sentence goes on: always after a title ("Dr.", "St." before a name,
    not "Main St."), "e.g." or "vs."; after an initial ("J."), a dotted acronym ("U.S.")
    or an abbreviation that may end a sentence ("etc.", "Inc.", "Jan.") unless the next
    word opens sentences ("I", "We", "The", "Then": _NOT_NAMES)."""
    word = match.group("word")
    lower = word.lower()
    before = text[: match.start()].split()
    street = lower == "st" and bool(before) and before[-1][:1].isupper()
    if (lower in _TITLES and not street) or lower in _ALWAYS_ABBREVIATIONS:
        return True
    initial = len(word) == 1 and word.isupper() and word != "I"
    if not (initial or _ABBREVIATION_DOT in word or street or lower in _MAYBE_ABBREVIATIONS):
        return False
    following = match.group("next").replace("\u2019", "'").split("'")[0]
    opener = following.lower() in _NOT_NAMES and following[:1].isupper()
    return not opener and following != "i"


def _protect_abbreviations(text: str) -> str:
    """``text`` with the full stops of abbreviations and initials (_abbreviation) as
    _ABBREVIATION_DOT: "I work at St. Mary's" is one sentence, its value "St. Mary's"."""
    text = _ACRONYM_DOT.sub(lambda m: m.group(0).replace(".", _ABBREVIATION_DOT), text)
    return _ABBREVIATION.sub(
        lambda m: m.group(0).replace(".", _ABBREVIATION_DOT) if _abbreviation(m, text) else m.group(0),
        text,
    )


def _restored(text: str) -> str:
    """``text`` with an abbreviation's full stop written again (_protect_abbreviations)."""
    return text.replace(_ABBREVIATION_DOT, ".")


def strip_discourse(clause: str) -> str:
    """``clause`` without the discourse markers and interjections that open it and end in
    a comma, colon, exclamation mark or dash ("Big news: I got a job" -> "I got a job",
    "Well, honestly, Mara is my sister" -> "Mara is my sister"); anything else that opens
    a clause ("In 2019, I moved", "At work, I ...") says when or where and stays."""
    while True:
        stripped = _DISCOURSE.sub("", clause, count=1)
        if stripped == clause:
            return clause
        clause = stripped


def clauses(text: str) -> list[str]:
    """Sentences of ``text`` (not ended by an abbreviation's full stop, which is
    _ABBREVIATION_DOT in them), each split before a new first-person clause."""
    return [clause for sentence in sentences(text) for clause in sentence]


def sentences(text: str) -> list[list[str]]:
    """The clauses of each sentence of ``text`` (clauses), sentence by sentence."""
    out: list[list[str]] = []
    for sentence in _SENTENCES.split(_protect_abbreviations(text.replace("\u2019", "'"))):
        sentence = _TOLD_BEFORE.sub("", _unrequested(sentence.strip()))
        parts = [_LEADING_CONJUNCTION.sub("", strip_discourse(c.strip())) for c in _split_clauses(sentence)]
        if any(parts):
            out.append([part for part in parts if part])
    return out


def _unrequested(sentence: str) -> str:
    """``sentence`` without a request to remember it, opening (after discourse markers)
    or closing it: "Oh, remember that my sister is Mara" reads as "my sister is Mara"
    (memoryapp.llm.remember_cue.remembered); a request naming nothing leaves nothing.
    Nor with a label opening the speaker's statement ("Reminder: I'm vegan" reads as
    "I'm vegan": memoryapp.llm.remember_cue.unlabelled)."""
    statement = remembered(sentence)
    if statement is None:
        opened = _LEADING_CONJUNCTION.sub("", strip_discourse(sentence))
        statement = remembered(opened) if opened != sentence else None
    if statement is None:
        statement = unlabelled(sentence)
    return sentence if statement is None else statement


# "my dog," closing an apposition after a name ("Rex, my dog, loves the beach").
_APPOSITION = re.compile(rf"(?i:(?:my|our) {_ADJ}(?:{_RELATION_WORDS})),")
# A subject joined to the speaker by "and" ("Priya and I", "my wife and I"): not a clause.
_CO_SUBJECT = re.compile(
    rf"^(?:(?i:(?:my|our) {_ADJ}(?:{_RELATION_WORDS}|parents|kids|children|family|friends|folks|"
    rf"siblings)s?)(?: {_NAME})?|(?!I\b|I'){_NAME})$"
)


# A finite verb after a subject ("Tom is 5", "Priya works at ...").
_FINITE = (
    r"(?:is|are|was|were|am|has|have|had|turned|turns|works|worked|lives|lived|will|can|"
    r"loves|likes|plays|teaches|studies|got|just|also|now|still)"
)
# A clause with a subject of its own joined by "and", "but", "," or ";" ("Lily is 8 and Tom
# is 5", "Mark is my brother, Priya is my sister"): a name, or his/her/their someone.
_OTHER_CLAUSE = re.compile(
    rf"(?:[,;]\s+(?:and |but )?|\s+(?:and|but)\s+)"
    rf"(?=(?:{_NAME}|(?i:his|her|their|our) [\w-]+(?: {_NAME})?)(?:'s\s|\s+(?i:{_FINITE})\b))"
)


def _split_clauses(sentence: str) -> list[str]:
    """``sentence`` split before each new first-person clause (_CLAUSES), except after a
    subject joined to the speaker ("Priya and I got divorced" is one clause), and before
    each clause with a subject of its own (_own_subjects: "Lily is 8 and Tom is 5" is two
    clauses)."""
    pieces = _CLAUSES.split(sentence)
    joints = [m.group(0) for m in _CLAUSES.finditer(sentence)]
    out = [pieces[0]]
    for joint, piece in zip(joints, pieces[1:], strict=True):
        # "Rex, my dog, loves the beach": a name before its apposition is no clause.
        apposition = (
            joint.startswith(",") and _APPOSITION.match(piece) is not None
            and re.fullmatch(_NAME, out[-1].strip()) is not None
            and out[-1].split()[0].lower() not in _NOT_NAMES
        )
        parted = _PARTED_HEAD.match(out[-1]) if joint.strip() == "and" else None
        if (joint.strip() == "and" and _CO_SUBJECT.match(out[-1].strip())) or _adverbial(out[-1]) or apposition:
            out[-1] += joint + piece
        elif parted is not None and _PARTED_ALSO.match(piece):
            # "I sold my Tesla and my boat": the boat is sold too ("I sold my boat").
            out.append(parted.group("head") + piece)
        else:
            out.append(piece)
    return [part for piece in out for part in _own_subjects(piece)]


# A phrase that says when or where and is no clause ("In 2019", "Last summer", "Two years
# ago", "Back in college"): it stays with the clause it opens.
_ADVERBIAL = re.compile(
    r"^(?:(?:back|early|late|way back|sometime|right)\s+)?(?:(?:in|on|at|during|after|before|"
    r"since|by|around|over|last|this|next|that|every|until|from|for|earlier|later|when)\b"
    r"|(?:[\w-]+\s+){1,4}(?:ago|later|earlier)$|(?:[\w-]+\s+){1,4}(?:days?|weeks?|months?|years?|decades?)\s+back$"
    r"|(?:yesterday|today|tonight|recently|lately|"
    r"nowadays|these days|back then|then|afterwards|eventually|originally|initially|"
    r"at first|at the time|now)$)",
    re.IGNORECASE,
)


def _adverbial(piece: str) -> bool:
    """Whether ``piece`` (split off before a first-person clause) is a phrase of time or
    place opening that clause ("In 2019, I moved to Denver"): a few words, no first
    person of its own; or a clause of time, reason or condition leaning on it ("When I
    was 10", "If I get the job")."""
    words = piece.split()
    if _CONDITION.match(piece.strip()):
        return 0 < len(words) <= 16
    if _SUBORDINATE.match(piece.strip()):
        return 0 < len(words) <= 10
    return 0 < len(words) <= 6 and not _FIRST_PERSON.search(piece) and bool(_ADVERBIAL.match(piece.strip()))


# A clause that says when or why and leans on the next ("When I was 10, I lived in Rome").
_SUBORDINATE = re.compile(
    r"^(?:when|whenever|after|before|since|while|once|until|because|as soon as)\s+(?:I|we|my|our)\b",
    re.IGNORECASE,
)


# A condition opening a clause ("If I get the job at Google, I'll move to Seattle"): the
# clause is no fact without it, so it keeps its text and states no attribute
# (_conditioned). "Unless" and "even if" keep the main clause true and are left alone.
_CONDITION = re.compile(r"^(?:only )?if\b", re.IGNORECASE)


def _conditioned(clause: str, facts: list[_Found]) -> None:
    """Drop the attribute of ``facts`` found in a ``clause`` that opens with a condition
    (_CONDITION): "If my wife agrees, we will adopt a dog named Max" says no dog."""
    if not _CONDITION.match(clause):
        return
    for fact in facts:
        fact.attribute, fact.value, fact.single, fact.retires, fact.retires_when = "", "", False, (), ""


def _core(clause: str) -> str:
    """``clause`` without a phrase of time or place that opens it ("In 2019, I ...")."""
    head, comma, rest = clause.partition(", ")
    return rest if comma and rest and _adverbial(head) else clause


def _own_subjects(clause: str) -> list[str]:
    """``clause`` split before each clause with a subject of its own (_OTHER_CLAUSE) when
    both parts state a fact on their own ("Lily is 8" and "Tom is 5", "Mark is my brother"
    and "Priya is my sister"). A part that states none stays with its neighbour, whose fact
    would otherwise lose it ("In May, Tom turned 9", "Our one-year-old is so cute, his name
    is Kyle", "I'm a nurse and Priya is a teacher")."""
    joints = list(_OTHER_CLAUSE.finditer(clause))
    if not joints:
        return [clause]
    ends = [m.start() for m in joints[1:]] + [len(clause)]
    out: list[str] = []
    start = 0
    for joint, end in zip(joints, ends, strict=True):
        part, after = clause[start : joint.start()].strip(), clause[joint.end() : end].strip()
        if _states(part) and _states(after):
            out.append(part)
            start = joint.end()
    return [*out, clause[start:]]


def _states(clause: str) -> bool:
    """Whether ``clause`` states a fact on its own: of its speaker, of someone it names
    (_of_someone: "Priya is a teacher") or someone's age."""
    return _is_statement(clause) or _tells_age(clause) or _of_someone(clause, "") is not None


# Talk about the conversation, not about the speaker: "I was wondering if ...", "I think
# so", "I changed my mind", "let me know".
_META = re.compile(
    r"^(?:I (?:was |am |'m )?(?:just )?(?:wondering|curious)\b"
    r"|I(?:'m| am) (?:just )?(?:asking|curious|kidding|joking)\b"
    r"|I (?:think|guess|hope|suppose|believe|reckon|doubt|fear|imagine) (?:so|not)\b"
    r"|I (?:don't|do not|dont) (?:think|believe|suppose|know|really know)(?: so| yet| either| for sure| about that)?[.!]*$"
    r"|I(?:'m| am) not (?:really |so |too )?sure(?: yet| about that| what to (?:say|think))?[.!]*$"
    r"|I (?:totally |completely |fully |really )?(?:agree(?: with (?:you|that|this|him|her|them))?"
    r"(?=\s*(?:$|[,.!;]|-|\u2014))|see what you mean|know what you mean|"
    r"understand (?:what|you|how|why)|hear you|get (?:it|that|you|what you mean))\b"
    r"|I (?:just )?(?:wanted|want|would like|'d like) to (?:ask|know|check|thank)\b"
    r"|I (?:have|'ve got|got) a (?:quick |small |little )?question\b"
    r"|let me (?:know|think|ask|check|see)\b"
    r"|I(?:'ll| will) let you know\b"
    r"|I(?:'ll| will) (?:think about it|keep (?:that|it|this) in mind|try (?:that|it|this))[.!]*$"
    r"|I(?:'m| am) (?:so |really |very )?(?:sorry|glad|happy) to hear\b"
    r"|I(?:'ve| have)?(?: just)? changed my mind[.!]*$"
    r"|that's (?:what|all) I (?:said|meant|thought|wanted)\b"
    r"|I(?:'m| am)? (?:so |really |very |just |also )*(?:hope|wish|miss|proud of|happy for|glad for|"
    r"thinking of|praying for|can't wait to (?:see|meet|hear from|talk to|catch up with)|"
    r"(?:look|am looking|'m looking) forward to (?:seeing|meeting|hearing from|talking to)) you\b"
    r"|I (?:really |totally |just |absolutely |so )?(?:love|like|hate|appreciate|enjoy|adore)"
    r"(?: that| this| what| how| the way)? (?:you\b|your\b|(?:that|this|the) (?:idea|plan|suggestion|advice|tip)\b)"
    r")",
    re.IGNORECASE,
)


def _is_statement(clause: str) -> bool:
    """Whether ``clause`` states something of the speaker: first person, not a question,
    a hypothetical or talk about the talk (_META); a short one ("I'm vegan.", "I'm
    Daniel.") only if a pattern reads an attribute in it."""
    core = _core(clause)
    if clause.endswith("?") or _QUESTION_START.match(core) or _HYPOTHETICAL.match(core):
        return False
    if says_nothing(core) or reports_loss(core):
        return not says_nothing(core)
    if _META.match(core) or not _FIRST_PERSON.search(clause):
        return False
    return (
        len(_WORD.findall(clause)) >= MIN_FACT_WORDS
        or bool(_IDENTITY.match(core))
        or _attribute(clause) is not None
    )


# --- third person and dates --------------------------------------------------------------

_ADVERBS = (
    "really|also|just|still|always|never|no longer|often|usually|sometimes|actually|now|currently|"
    "even|finally|recently|totally|absolutely|definitely|mostly|already|only|truly|"
    "probably|certainly|generally|seriously|honestly|literally|kinda|sort of|kind of|almost|nearly"
)
# The speaker's "I" (or chat's "i"), with its contraction ("I'm", "I've", "I'd", "I'll", and
# "Im"/"Ive" typed without the apostrophe), the adverbs after it and the next word.
_I_SUBJECT = re.compile(
    r"(?<![\w'.-])(?:I|i)(?:'(?P<clitic>m|ve|d|ll)|(?P<bare>m|ve)(?= ))?(?![\w'-]|\.\w)"
    rf"(?P<adv>(?: (?:{_ADVERBS}))*)(?: (?P<verb>[a-z]+(?:'[a-z]+)?)\b(?!'))?"
)
_CLITICS = {"m": "is", "ve": "has", "ll": "will"}
# "I'd" is "I had" before these and a regular past participle ("I'd started"), else "I
# would" ("I'd like").
_HAD_BEFORE = frozenset(
    _words(
        "been better had gotten got done gone seen taken eaten given known written driven "
        "flown grown shown spoken broken chosen forgotten fallen left lost met made found "
        "heard kept told sold bought brought thought felt"
    )
)
# Negated auxiliaries: the third person's form; "dont" and the like as typed without the
# apostrophe get it back.
_NEGATIVES = {"do": "doesn't", "have": "hasn't", "ai": "isn't", "am": "isn't"}
_NEGATABLE = frozenset(
    _words("do have ai am can ca wo did was could would should had must need might dare")
)


def _negative(verb: str) -> str | None:
    """The third person of a negated auxiliary ("don't" -> "doesn't", "cant" ->
    "can't"), or None when ``verb`` is not one."""
    match = re.fullmatch(r"(?P<aux>[a-z]+?)(?:n't|nt)", verb)
    if match is None or match.group("aux") not in _NEGATABLE:
        return None
    aux = match.group("aux")
    return _NEGATIVES.get(aux, f"{aux}n't")


def _had_or_would(verb: str | None) -> str:
    """What "'d" stands for before ``verb``: "had" before a past participle ("I'd
    started"), else "would" ("I'd like")."""
    had = verb is not None and (verb in _HAD_BEFORE or (verb.endswith("ed") and verb not in _BASE_ED))
    return "had" if had else "would"


def _i_rewritten(match: re.Match[str], name: str) -> str:
    """One "I ..." of a clause in the third person (third_person)."""
    clitic = match.group("clitic") or match.group("bare")
    adverbs, verb = match.group("adv"), match.group("verb")
    if re.search(r"\b(?:and|&)\s+$", match.string[: match.start()]):  # "Mark and I live"
        return _plural_rewritten(name, clitic, adverbs, verb)
    clitic_word = _had_or_would(verb) if clitic == "d" else _CLITICS.get(clitic or "", "")
    if clitic_word:
        rest = f" {verb}" if verb else ""
        return f"{name} {clitic_word}{adverbs}{rest}"
    if verb is None:
        return f"{name}{adverbs}"
    return f"{name}{adverbs} {_negative(verb) or _third_person_verb(verb)}"


_PLURAL_CLITICS = {"m": "are", "ve": "have", "ll": "will"}
_PLURAL_VERBS = {"am": "are", "was": "were"}


def _plural_rewritten(name: str, clitic: str | None, adverbs: str, verb: str | None) -> str:
    """The "I ..." of a compound subject ("Mark and I live in Leeds") in the third person:
    the verb stays plural ("Mark and the user live in Leeds")."""
    rest = f" {_PLURAL_VERBS.get(verb, verb)}" if verb else ""
    if clitic == "d":
        return f"{name} {_had_or_would(verb)}{adverbs}{rest}"
    if clitic:
        return f"{name} {_PLURAL_CLITICS[clitic]}{adverbs}{rest}"
    return f"{name}{adverbs}{rest}"


_IRREGULAR_PRESENT = {"am": "is", "have": "has", "do": "does", "go": "goes", "was": "was"}
_NO_AGREEMENT = frozenset(
    _words(
        "can could will would shall should may might must did went was were had got made "
        "took saw came gave found told felt thought knew left lost met paid put ran said "
        "sent sold spent stood taught understood wore won wrote ate began bought brought "
        "built caught chose drew drove fell flew forgot grew heard held kept led lent let "
        "meant read rode rang sang sat slept spoke swam threw tried used started became "
        "been quit cut set hit shut hurt cost bet split spread cannot "
        "broke woke froze stole bit hid shook forgave arose awoke bent bled blew bound bred "
        "burnt clung crept dealt dug dove dreamt drank dwelt fed fled flung fought forbade "
        "ground hung knelt laid lay leant leapt learnt lit mistook overcame rose sank sought "
        "shone shot shrank slid smelt sped spelt spun spat sprang stuck stung stank strode "
        "struck swore swept swung tore trod undertook underwent withdrew wept wound wrung "
        "shed slung beat oversaw overslept rebuilt retook rewrote sewn"
    )
)


# Present-tense verbs that end like a past tense.
_BASE_ED = frozenset(_words("need feed seed bleed breed speed proceed succeed exceed heed weed embed"))


def _third_person_verb(verb: str) -> str:
    if verb in _IRREGULAR_PRESENT:
        return _IRREGULAR_PRESENT[verb]
    past = verb.endswith("ed") and verb not in _BASE_ED
    if verb in _NO_AGREEMENT or past or verb.endswith("ing"):
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


# Idioms where "my" is the speaker's own mind or effort: "changed my mind" is "changed
# their mind", never "changed the user's mind".
_OWN_FACULTY = re.compile(
    r"\b(?P<verb>chang(?:e|es|ed|ing)|ma(?:de|ke|kes|king) up|los(?:t|e|es|ing)|"
    r"tr(?:y|ies|ied|ying)|d(?:id|o|oes|oing)|spoke|speak(?:s|ing)?|follow(?:s|ed|ing)?) "
    r"my (?P<noun>mind|best|temper|cool|mind up)\b",
    re.IGNORECASE,
)


# A hedge closing a statement ("I drive a Honda I guess", "..., I think."): it says how
# sure the speaker is, not what is so.
_TRAILING_HEDGE = re.compile(
    r"(?<=\w)[,;]?\s+(?:or\s+)?(?:i|I) (?:guess|think|believe|suppose|reckon)\s*[.!?]*\s*$"
)
# A report of having told the assistant before ("I told you I live in Oslo", "as I said,
# ...", "like I mentioned before, ..."): what was told is the statement.
_TOLD_BEFORE = re.compile(
    r"^(?:(?i:as|like) (?:i|I) (?:said|mentioned|told you)(?: before| earlier| already)?,\s*"
    r"|(?:i|I) (?:already )?(?:told|mentioned to) you(?: before| earlier| already)?,?(?: that)? "
    r"(?=(?:I|i|[Mm]y|[Ww]e|[Oo]ur)\b))"
)

# Verbs said of oneself that a second verb joined by "and" shares the subject of ("I'm a
# nurse and teach yoga", "I live in Oslo and work in tech").
_JOINED_VERBS = frozenset(
    _words(
        "teach work live play love like own run write speak study cook paint sing coach drive ride "
        "read enjoy hate want need make sell build train practice practise swim hike use collect "
        "volunteer manage design help take go do have know prefer miss"
    )
)
# "and <verb>" in a clause whose subject is the speaker's own "I".
_JOINED_VERB = re.compile(r"\b(?P<and>and|&) (?P<verb>[a-z]+)(?= [\w\x00])")


def _joined_agreeing(clause: str) -> str:
    """``clause`` with a verb joined by "and" to the speaker's own present-tense verb in
    the third person ("I'm a nurse and teach yoga": "... and teaches yoga", "I have two
    kids and work full time"); not after "to", a modal, a negation or a past tense ("I
    like to cook and read", "I can swim and dance", "I don't smoke and drink")."""
    subject = next(_I_SUBJECT.finditer(clause), None)
    if subject is None or re.search(r"\b(?:and|&)\s+$", clause[: subject.start()]):
        return clause
    clitic, verb = subject.group("clitic") or subject.group("bare"), subject.group("verb")
    if clitic is not None:
        agrees = clitic == "m"
    else:
        agrees = verb is not None and _negative(verb) is None and _third_person_verb(verb) != verb
    if not agrees:
        return clause
    tail = clause[subject.end() :]
    stop = re.search(r"\b(?:to|I|i)\b|[,;:]", tail)
    end = stop.start() if stop is not None else len(tail)

    def agreed(match: re.Match[str]) -> str:
        word = match.group("verb")
        return f"{match.group('and')} {_third_person_verb(word)}" if word in _JOINED_VERBS else match.group(0)

    return clause[: subject.end()] + _JOINED_VERB.sub(agreed, tail[:end]) + tail[end:]


# The possessive "my" placed where third_person writes "their" (never matched by the
# rewriting of "my" and "me" after it).
_THEIR = "\x00"


def _their_after_subject(clause: str) -> str:
    """``clause`` with each "my" after the speaker's own "I" as subject (not one of
    "Mark and I") marked to read "their": "I sold my Tesla" is "The user sold their
    Tesla"; "My sister lives in Lyon" keeps "The user's sister", naming no one before."""
    subject = next(
        (m for m in _I_SUBJECT.finditer(clause) if not re.search(r"\b(?:and|&)\s+$", clause[: m.start()])),
        None,
    )
    if subject is None:
        return clause
    head, tail = clause[: subject.end()], clause[subject.end() :]
    return head + re.sub(r"\b[Mm]y\b", _THEIR, tail)


def third_person(clause: str, speaker: str, others: str = "others") -> str:
    """``clause`` with the speaker's first person rewritten: "I love my dog" by Mara ->
    "Mara loves Mara's dog"; ``user`` reads "the user", and "my" after the user as
    subject reads "their" ("The user loves their dog"); "we" is the speaker "and others"
    (or whom ``others`` names). A closing hedge ("..., I guess") and a lead-in telling
    the assistant again ("I told you (that) ...", "as I said, ...") are dropped; a verb
    joined by "and" to the speaker's own agrees ("I'm a nurse and teach yoga": "... and
    teaches yoga")."""
    name = "the user" if speaker == USER else speaker
    clause = clause.replace("\u2019", "'")
    clause = _TRAILING_HEDGE.sub("", _TOLD_BEFORE.sub("", clause.strip())) or clause
    clause = _joined_agreeing(clause)
    if speaker == USER:
        clause = _their_after_subject(clause)
    text = _I_SUBJECT.sub(lambda m: _i_rewritten(m, name), clause)
    text = _OWN_FACULTY.sub(r"\g<verb> their \g<noun>", text)
    text = re.sub(r"\b(?:my|mine)\b", f"{name}'s", text, flags=re.IGNORECASE)
    text = re.sub(r"\b(?:me|myself)\b", name, text, flags=re.IGNORECASE)
    # "we" has no single subject; it keeps the speaker in the sentence.
    group = f"{name} and {others}"
    text = re.sub(r"\bwe're\b", f"{group} are", text, flags=re.IGNORECASE)
    text = re.sub(r"\bwe've\b", f"{group} have", text, flags=re.IGNORECASE)
    text = re.sub(r"\bwe'll\b", f"{group} will", text, flags=re.IGNORECASE)
    text = re.sub(r"\bwe'd\b", f"{group} would", text, flags=re.IGNORECASE)
    text = re.sub(r"\b(?:we|us)\b", group, text, flags=re.IGNORECASE)
    text = re.sub(r"\bour\b", f"{name}'s", text, flags=re.IGNORECASE)
    text = text.replace(_THEIR, "their").strip()
    if text and not text.endswith((".", "!", "?")):
        text += "."
    return text[:1].upper() + text[1:]


def _day(moment: datetime) -> str:
    return f"{moment.day} {_MONTH_NAMES[moment.month - 1]} {moment.year}"


def _month(moment: datetime) -> str:
    return f"{_MONTH_NAMES[moment.month - 1]} {moment.year}"


def _shift_month(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months
    return moment.replace(year=index // 12, month=index % 12 + 1, day=1)


def _last_weekday(when: datetime, name: str) -> datetime:
    """The latest ``name`` day (Monday..Sunday) strictly before ``when``."""
    target = [d.lower() for d in _WEEKDAYS].index(name.lower())
    back = (when.weekday() - target) % 7 or 7
    return when - timedelta(days=back)


def _next_weekday(when: datetime, name: str) -> datetime:
    """The first ``name`` day (Monday..Sunday) strictly after ``when``: "next Tuesday"
    said on a Wednesday is the Tuesday six days on."""
    target = [d.lower() for d in _WEEKDAYS].index(name.lower())
    return when + timedelta(days=(target - when.weekday()) % 7 or 7)


_AMOUNTS = dict(
    zip(_words("a an one two three four five six seven eight nine ten eleven twelve"), [1, 1, *range(1, 13)], strict=True)
)
# Amounts said loosely: the date they give is "around" one ("a few years ago (around 2023)").
_ROUGH_AMOUNTS = {"a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3, "several": 4}
_UNIT_DAYS = {"day": 1, "week": 7}
# "<amount> <unit> ago" or "... back" ("a few weeks back"), not "a few days back home".
_AGO = re.compile(
    r"\b(?P<hedge>(?:about|around|roughly|approximately|almost|nearly|maybe) )?"
    rf"(?P<n>\d+|{'|'.join(sorted([*_AMOUNTS, *_ROUGH_AMOUNTS], key=len, reverse=True))}) "
    r"(?P<unit>days?|weeks?|months?|years?|decades?) "
    r"(?:ago|back(?!\s+(?:home|to|in|at|from|with|on|into|onto|there|here|up|down|out|then|and|again)\b))\b",
    re.IGNORECASE,
)


def _ago(match: re.Match[str], when: datetime) -> str:
    """The date "<amount> <unit> ago" means at ``when``: a day, a week, a month or a year,
    "around" one when the amount is loose ("a few", "a couple of", "several"), hedged
    ("about two years") or in decades, so the fact claims no more precision than was said."""
    written = " ".join(match.group("n").lower().split())
    unit = match.group("unit").lower().rstrip("s")
    rough = bool(match.group("hedge")) or written in _ROUGH_AMOUNTS or unit == "decade"
    amount = int(written) if written.isdigit() else _ROUGH_AMOUNTS.get(written) or _AMOUNTS[written]
    if unit in _UNIT_DAYS:
        date = _day(when - timedelta(days=amount * _UNIT_DAYS[unit]))
        date = date if unit == "day" else f"the week of {date}"
    elif unit == "month":
        date = _month(_shift_month(when, -amount))
    else:
        date = str(when.year - amount * (10 if unit == "decade" else 1))
    return f"around {date}" if rough else date


def resolve_dates(text: str, when: datetime | None) -> str:
    """``text`` with relative dates followed by the date they mean at ``when`` (the
    message's time): "yesterday" -> "yesterday (7 May 2023)", "last year" -> "last year
    (2022)", "3 days ago" -> "3 days ago (5 May 2023)"; an amount said loosely gives a date
    said so ("a few years ago (around 2020)", "a couple of weeks back (around the week of
    ...)"). Unchanged without a time."""
    if when is None:
        return text
    fixed: list[tuple[str, str]] = [
        (r"yesterday|last night", _day(when - timedelta(days=1))),
        (r"today|tonight|this morning|this afternoon|this evening", _day(when)),
        (r"tomorrow", _day(when + timedelta(days=1))),
        (r"last week|last weekend", "the week before " + _day(when)),
        (r"next week|next weekend", "the week after " + _day(when)),
        (r"this week|this weekend", "the week of " + _day(when)),
        (r"last month", _month(_shift_month(when, -1))),
        (r"this month", _month(when)),
        (r"next month", _month(_shift_month(when, 1))),
        (r"last year", str(when.year - 1)),
        (r"this year", str(when.year)),
        (r"next year", str(when.year + 1)),
    ]
    for phrase, date in fixed:
        # \g<0> is the phrase as written; the date follows it in brackets.
        text = re.sub(rf"\b(?:{phrase})\b", rf"\g<0> ({date})", text, flags=re.IGNORECASE)
    text = re.sub(
        rf"\blast (?P<day>{'|'.join(_WEEKDAYS)})\b",
        lambda m: f"{m.group(0)} ({_day(_last_weekday(when, m.group('day')))})",
        text,
        flags=re.IGNORECASE,
    )
    text = re.sub(
        rf"\b(?:next|this coming|coming) (?P<day>{'|'.join(_WEEKDAYS)})\b",
        lambda m: f"{m.group(0)} ({_day(_next_weekday(when, m.group('day')))})",
        text,
        flags=re.IGNORECASE,
    )
    text = _AGO.sub(lambda m: f"{m.group(0)} ({_ago(m, when)})", text)
    return _past_month(text, when)


# "in March" with no day or year after it ("I retired in March", "in early May").
_IN_MONTH = re.compile(
    rf"\b(?:in|since|during|back in) (?:(?:early|mid|late|the end of|the start of|the beginning of)[ -])?"
    rf"(?P<month>{'|'.join(_MONTH_NAMES)})\b(?![ ,]*(?:\d|of \d))",
)
# A clause told in the past ("retired", "was let go", "got promoted"), none of a time to come.
_PAST = re.compile(
    r"(?<!\bis )(?<!\bare )(?<!\bam )(?<!'m )(?<!'re )(?<!\bbe )(?<!\bso )(?<!\bvery )(?<!\bget )(?<!\bgets )"
    r"\b(?:[a-z]+ed|was|were|got|had|did|went|left|lost|quit|sold|began|became|took|made|met|came|gave|won|"
    r"bought|found|began|fell|grew|ran|sent|spent|told|wrote|broke|chose|drove|flew|knew|paid|put|said|saw|"
    r"stood|taught|thought|let|laid|cut|set|hit|hurt|split|shut)\b"
)
_TO_COME = re.compile(
    r"\b(?:will|going to|'ll|plans?|planning|planned|hopes?|hoping|next|soon|wants?|would|might|(?-i:may)|"
    r"excited|looking forward|can't wait|upcoming|scheduled|booked|expect(?:s|ing)?|intends?|should|"
    # an arrangement or what goes on ("is getting married in May"), a birth (years back)
    r"(?:is|are|am)(?: \w+)? \w+ing|born|birthday)\b",
    re.IGNORECASE,
)


def _past_month(text: str, when: datetime) -> str:
    """``text`` with "in <Month>" of a clause told in the past followed by its year at
    ``when``: the latest such month no later than ``when``'s ("The user retired in March
    (March 2026)." said in June 2026; "in November (November 2025)" said in March 2026).
    A time to come, what goes on, a birth or a clause not in the past is left as said."""
    if _TO_COME.search(text):
        return text

    def dated(match: re.Match[str]) -> str:
        if not _PAST.search(text[: match.start()]):
            return match.group(0)
        month = _MONTH_NAMES.index(match.group("month")) + 1
        year = when.year if month <= when.month else when.year - 1
        return f"{match.group(0)} ({match.group('month')} {year})"

    return _IN_MONTH.sub(dated, text)


# --- entities and facts ------------------------------------------------------------------


def names_in(clause: str) -> list[tuple[str, str, bool]]:
    """``(name, kind, opens)`` of the capitalised names in ``clause``: kind place after
    in/to/from/at, organisation for names like "Acme Inc", else thing; ``opens`` when the
    name is the clause's first word, which is capitalised anyway (a name only if the
    episode also writes it capitalised elsewhere)."""
    found: list[tuple[str, str, bool]] = []
    for match in _NAMES.finditer(clause):
        name = re.sub(r"'s$", "", match.group(0)).strip()
        words = name.split()
        opens = match.start() == 0
        while words and words[0].lower() in _NOT_NAMES:
            words.pop(0)
            opens = False
        if not words or words[0] == "I" or words[0].startswith("I'"):
            continue
        if len(words) == 1 and words[0].lower() in _NOT_NAMES:
            continue
        name = " ".join(words)
        if len(name) < 2 or (name.isupper() and len(name) > 5):
            continue
        if _ORGANISATION.search(name) or _EMPLOYER_CUE.search(clause[: match.start()]):
            kind = "organisation"
        elif _PLACE_CUE.search(clause[: match.start()]):
            kind = "place"
        else:
            kind = "thing"
        found.append((name, kind, opens))
    return found


def _relation(clause: str) -> tuple[str, str, bool, str] | None:
    for regex in _RELATION_PATTERNS:
        match = regex.search(clause)
        if match and match.group("value").split()[0].lower() not in _NOT_NAMES:
            attr = match.group("attr").lower()
            kind = _relation_kind(attr)
            return _relation_attribute(attr), match.group("value"), _relation_single(attr), kind
    return None


# Capitalised words that follow "I'm" without being one's name: nationalities, faiths,
# languages ("I'm Jewish", "I'm Canadian") and words capitalised for emphasis.
_NATIONALITIES_AND_FAITHS = _words(
        "american british english scottish irish welsh canadian mexican brazilian argentinian "
        "chilean colombian peruvian cuban french german italian spanish portuguese dutch "
        "belgian swiss austrian swedish norwegian danish finnish icelandic polish czech "
        "slovak hungarian romanian bulgarian serbian croatian russian ukrainian greek turkish "
        "indian pakistani bangladeshi nepali chinese japanese korean vietnamese thai filipino "
        "indonesian malaysian singaporean australian kiwi nigerian kenyan ghanaian ethiopian "
        "egyptian moroccan israeli iranian persian iraqi syrian lebanese arab african asian "
        "european latino latina latinx hispanic black white jewish christian catholic "
        "protestant muslim hindu buddhist sikh atheist agnostic mormon quaker gay lesbian "
        "bisexual queer trans"
)
_NOT_INTRODUCTIONS = frozenset(
    _NATIONALITIES_AND_FAITHS
    + _words("sorry fine good great busy done back home ready tired happy sad excited bored hungry sure okay")
)
# Who one is, said in two words ("I'm married.", "I'm Jewish."): a fact however short.
_IDENTITY = re.compile(
    r"^I(?:'m| am)(?: (?:now|happily|newly|recently|still|very|quite|also))? (?:a |an )?(?:"
    + "|".join(
        _NATIONALITIES_AND_FAITHS
        + _words(
            "married engaged straight nonbinary non-binary introvert introverted extrovert "
            "extroverted left-handed right-handed religious spiritual sober teetotal"
        )
    )
    + r")\b",
    re.IGNORECASE,
)


def _introduces(name: str) -> bool:
    """Whether ``name``, after "I'm" or "my name is", can be one's name."""
    first = name.split()[0].lower()
    return first not in _NOT_NAMES and first not in _NOT_INTRODUCTIONS


def gerund(verb: str) -> str:
    """The -ing form of an English verb: run -> running, bake -> baking, tie -> tying."""
    verb = verb.lower()
    if verb.endswith("ing"):
        return verb
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")) and len(verb) > 2:
        return verb[:-1] + "ing"
    if re.fullmatch(r"[^aeiou]*[aeiou][bdgklmnprt]", verb):
        return verb + verb[-1] + "ing"
    return verb + "ing"


def _item(match: re.Match[str]) -> str:
    """The item a STANCE pattern is about, lower-cased: its ``value`` group as written,
    or its ``verbal`` group with the verb as a gerund ("eat meat" -> "eating meat")."""
    groups = match.groupdict()
    if groups.get("value"):
        raw = groups["value"]
    elif groups.get("verbal"):
        first, _, rest = groups["verbal"].strip().partition(" ")
        raw = f"{gerund(first)} {rest}"
    else:
        return ""
    item = _LIGHT_VERB.sub("", clean_value(raw).lower())
    return "" if _NO_ITEM.search(item) else item


# An item that points at the talk, not at a thing the speaker likes for good: the one
# addressed ("your style", "the way you think") or what was just said ("that idea",
# "that you remembered").
_NO_ITEM = re.compile(r"^(?:that|this|these|those|what|how)\b|\b(?:you|your|yours|you're|youre|u|ur)\b")


# A light verb before its object says nothing of the item: "playing darts" is "darts",
# "working night shifts" "night shifts", so "I play darts" and "I stopped playing darts"
# are stances on one item ("working out", "going to ..." keep theirs).
_LIGHT_VERB = re.compile(
    r"^(?:playing|doing|working|eating|drinking|practi[cs]ing|having)\s+"
    r"(?!(?:out|up|on|off|at|in|for|with|from|to|by|a|an|the|it|that|this)\b)(?=\w)"
)


def _attribute(clause: str) -> tuple[str, str, bool, str] | None:
    # A partnership's end first: "My wife Priya and I separated" is not "my wife Priya".
    relation = change_in(clause) or _matched(_PARTNERSHIP_ENDS, clause) or _relation(clause)
    return timeless(relation or _matched(_PATTERNS, clause))


def _matched(
    patterns: list[_Pattern], clause: str, *, anchored: bool = False
) -> tuple[str, str, bool, str] | None:
    """The attribute of the first of ``patterns`` that says something in ``clause`` (with
    ``anchored``, only where the match starts the clause)."""
    for pattern in patterns:
        match = pattern.regex.match(clause) if anchored else pattern.regex.search(clause)
        if not match:
            continue
        if pattern.attribute == STANCE:
            item = _item(match)
            if item:
                return f"{STANCE} {item}", pattern.fixed, True, ""
            continue
        if pattern.fixed:
            return pattern.attribute, pattern.fixed, pattern.single, ""
        if pattern.attribute == COUNT:
            counted = _counted(match)
            if counted:
                return counted
            continue
        value = clean_value(apposed(clause, match))
        if pattern.kind == "organisation":
            value = _joined_name(match.group("value")) or value
        elif pattern.single and pattern.attribute != MEASURE:
            value = _coordinated(apposed(clause, match), names=pattern.attribute not in _PHRASE_VALUES) or value
        if not value or (pattern.attribute == "name" and not _introduces(value)):
            continue
        attribute = pattern.attribute
        if pattern.lead:
            value = pattern.lead + value.lower()
        if "attr" in match.groupdict():
            attr = match.group("attr").lower()
            if attribute == MEASURE:
                attribute, value = attr, value.rstrip(". ")
            else:
                attribute = f"favorite {attr}" if attribute == "favorite" else "likes"
        return attribute, value, pattern.single, pattern.kind
    return None


# One name of two joined by "and" or "&" ("Procter and Gamble", "Marks & Spencer").
_JOINED_NAME = re.compile(rf"^(?:the )?(?P<name>{_NAME_WORD}(?: {_NAME_WORD}){{0,2}} (?:and|&) {_NAME_WORD}(?: {_NAME_WORD}){{0,2}})(?!\w)")


def _joined_name(raw: str) -> str:
    """The name of an organisation whose words join two names by "and" ("I work at Procter
    and Gamble": "Procter and Gamble", which clean_value would cut at "and"), or "";
    never when a word is a day, a month or no name ("Acme and Sundays")."""
    found = _JOINED_NAME.match(raw.strip())
    if found is None:
        return ""
    words = [w for w in found.group("name").split() if w not in ("and", "&")]
    if any(w.lower() in _NOT_NAMES or w in _MONTH_NAMES or w.removesuffix("s") in _WEEKDAYS for w in words):
        return ""
    return found.group("name")


def _counted(match: re.Match[str]) -> tuple[str, str, bool, str] | None:
    """The COUNT attribute of "I have 3 cats": ("number of cats", "3", True, ""); None
    when no plural noun follows the count ("I have 2 go", "I have two left")."""
    things = clean_value(match.group("value")).lower()
    if not things or not re.fullmatch(r"[a-z][a-z' -]*s", things) or len(things.split()) > 3:
        return None
    count = match.group("count").lower()
    return f"{COUNT} {things}", str(_AMOUNTS.get(count, count)), True, ""


def _weight(clause: str, attribute: str, names: list[tuple[str, str, bool]]) -> float:
    weight = 3.0 if attribute else 0.0
    weight += min(sum(1 for *_, opens in names if not opens), 3) + min(len(_NUMBER.findall(clause)), 2)
    return weight + len(_WORD.findall(clause)) / 100


# --- references to an earlier sentence ---------------------------------------------------

_PRONOUN = re.compile(r"\b(?:he|him|his|she|her|hers|it|they|them|their|theirs)\b", re.IGNORECASE)
_PERSON_PRONOUNS = frozenset(_words("he him his she her hers"))
_GROUP_PRONOUNS = frozenset(_words("they them their theirs"))
_POSSESSIVE = frozenset(_words("his hers their theirs"))
# "it" that refers to nothing ("it's late", "it rained", "I made it", "take it easy").
_DUMMY_IT_AFTER = re.compile(
    r"^(?:'s|'ll|'d|\s+(?:is|was|will|would|seems?|looks?|feels?|sounds?|has|had|gets?|got|"
    r"turns?|depends?|rains?|rained|snows?|snowed|doesn't|didn't|isn't|wasn't|here|there|"
    r"easy|out|up|off|all|through|together|in|for|anymore)\b)",
    re.IGNORECASE,
)
_DUMMY_IT_BEFORE = re.compile(r"\b(?:make|makes|made|making)\s+$", re.IGNORECASE)
_DUMMY_IT_MADE = re.compile(r"^\s+(?:to|through|back|home|big|work)\b", re.IGNORECASE)
# A noun phrase before the pronoun in its own clause: its referent is there ("I did a
# course and loved it", "I called my mom and told her").
_PHRASE_BEFORE = re.compile(
    rf"\b(?:a|an|the|this|that|these|those|my|our|your|some|another|\d+)\s+\w"
    rf"|(?-i:\s(?!I\b|I'){_UPPER})",
    re.IGNORECASE,
)
# Words after "her" that make it an object ("I visit her once a month"), not a possessive.
_AFTER_OBJECT = frozenset(
    _words(
        "a an the to and or but at with for on in out up down back again once twice every "
        "about from off over too as so about some this that yesterday today tonight tomorrow "
        "last next when if because"
    )
)
# "we" described as a group ("we'll be neighbours", "we're close"): nothing about the
# speaker unless the others are known. A gerund or a place after it is an action.
_WE_DESCRIBED = re.compile(
    r"\bwe(?:'re| are| were|'ll be| will be|'d be| would be|'ve been| have been| had been)"
    r"(?:\s+(?:so|very|really|all|both|still|now|just|also|finally|such|good|best|great|close|old))*"
    r"\s+(?P<next>[a-z]+)\b",
    re.IGNORECASE,
)
_WE = re.compile(r"\b(?:we|us|our|we're|we've|we'll|we'd)\b", re.IGNORECASE)
_NOT_DESCRIPTION = frozenset(
    _words("at in on to from with near by for going off out back home there here away over based")
)


# The values a pattern gives for a change of state ("sold", "quit", "moved away"): words
# about the speaker, not a thing a pronoun can stand for.
_STATE_VALUES = frozenset(p.fixed.casefold() for p in _PATTERNS if p.fixed)
# The changes of state among them that tell something happened, true once said
# (ExtractedFact.event): "The user quit the hospital job." stays true after a new job.
_EVENT_VALUES = frozenset(["sold", "moved away", "quit", "lost job"])
# What may stand before a noun in the sentence that names it: a determiner or a gerund
# ("my bike", "a piano", "eating meat"); "a"/"an" become "the" once the noun is known.
_BEFORE_NOUN = re.compile(
    r"(?:\b(?P<det>my|our|his|her|their|the|this|that|these|those|a|an)\s+"
    r"|\b(?P<verb>(?!(?:thing|something|nothing|anything|everything|during|morning|evening)\b)"
    r"\w{2,}ing)\s+)?$",
    re.IGNORECASE,
)


# A stance's item that is no noun phrase to stand for "it": one that refers elsewhere
# ("having them around", "your ice cream") or a clause ("when you give me tips").
_NOT_AN_ITEM = re.compile(
    r"\b(?:he|him|his|she|her|hers|it|its|they|them|their|theirs|you|your|yours)\b"
    r"|^(?:when|where|what|how|why|if|that|because|while|who|which|whether)\b",
    re.IGNORECASE,
)


def _is_noun(attribute: str, value: str) -> bool:
    """Whether a pattern's ``value`` can be what a pronoun stands for: not a change of
    state (_STATE_VALUES; a partnership's "divorced", "single") and not a number ("34")."""
    if attribute == PARTNER or value.casefold() in _STATE_VALUES or value.startswith("no longer "):
        return False
    return not re.fullmatch(r"[\d\W]*", value)


def _noun_phrase(sentence: str, noun: str, *, item: bool = False) -> str:
    """``noun`` as the sentence names it, to stand in a pronoun's place: with its
    possessive or gerund ("my bike", "eating meat"), "the" for "a"/"an"; a stance's
    ``item`` written bare gets "the" too ("No more piano" -> "the piano", but a name or a
    gerund stays as it is: "Civic", "running"), a bare value stays bare ("My favourite
    snack is popcorn" -> "popcorn")."""
    found = re.search(rf"(?<![\w'-]){re.escape(noun)}(?![\w'-])", sentence, re.IGNORECASE)
    written = found.group(0) if found else noun
    before = _BEFORE_NOUN.search(sentence[: found.start()]) if found else None
    if before and before.group("det"):
        det = before.group("det")
        return f"the {written}" if det.lower() in ("a", "an") else f"{det} {written}"
    if before and before.group("verb"):
        return f"{before.group('verb')} {written}"
    if not item or written[:1].isupper() or written.split()[0].lower().endswith("ing"):
        return written
    return f"the {written}"


@dataclass(frozen=True)
class _Referents:
    """Who and what a sentence names: ``persons`` (relation values, people a pattern
    names), ``things`` (other values, products, organisations) and ``unknown`` (other
    names capitalised mid-sentence: a person or a thing)."""

    persons: tuple[str, ...]
    things: tuple[str, ...]
    unknown: tuple[str, ...]
    animals: frozenset[str] = frozenset()

    @classmethod
    def of(cls, sentence: str, speaker: str) -> _Referents:
        persons: list[str] = []
        things: list[str] = []
        animals: frozenset[str] = frozenset()
        taken = {speaker.casefold()}
        attribute = _attribute(sentence)
        if attribute is not None:
            attr, value, _, kind = attribute
            item = attr[len(STANCE) + 1 :] if attr.startswith(f"{STANCE} ") else ""
            taken |= {value.casefold(), item.casefold()}
            if kind in ("person", "animal"):
                persons.append(value)
                animals = frozenset([value.casefold()] if kind == "animal" else [])
            elif item:  # the item, never the stance ("stopped")
                if _NOT_AN_ITEM.search(item) is None:
                    things.append(_noun_phrase(sentence, item, item=True))
            elif kind != "place" and _is_noun(attr, value):
                things.append(_noun_phrase(sentence, value))
        unknown: list[str] = []
        taken |= {n.casefold() for n in persons + things}
        for name, kind, opens in names_in(sentence):
            # A sentence's first word is capitalised anyway ("Besides", "You're"); a name
            # only ever a possessor ("I met Tom's sister. She ...") is not who "she" is.
            if opens or name.casefold() in taken or _only_possessor(sentence, name):
                continue
            taken.add(name.casefold())
            if kind in ("organisation", "product"):
                things.append(name)
            elif kind == "thing":
                unknown.append(name)
        return cls(tuple(persons), tuple(things), tuple(unknown), animals)

    def referent(self, pronoun: str) -> str | None:
        """The one name ``pronoun`` can stand for here, or None (none or several)."""
        if pronoun in _PERSON_PRONOUNS:
            candidates = self.persons or self.unknown
        elif pronoun in _GROUP_PRONOUNS:
            candidates = self.persons + self.things + self.unknown
        else:  # a capitalised name may be a thing as well as any value
            candidates = self.things + self.unknown
        return candidates[0] if len(candidates) == 1 else None

    def partner(self) -> str | None:
        """The one other person "we" can mean here (a name a pattern says is a person),
        or None: an unknown name may be a pet or a place, and a pet is no "we"."""
        people = [p for p in self.persons if p.casefold() not in self.animals]
        return people[0] if len(self.persons) == 1 and people else None


def _only_possessor(sentence: str, name: str) -> bool:
    """Whether every mention of ``name`` in ``sentence`` is a possessive ("Tom's")."""
    mentions = list(re.finditer(rf"(?<![\w'-]){re.escape(name)}(?![\w-])", sentence))
    return bool(mentions) and all(sentence[m.end() : m.end() + 2] in ("'s", "\u2019s") for m in mentions)


def _outward(clause: str, match: re.Match[str]) -> bool:
    """Whether the pronoun ``match`` needs a referent outside its clause: not a dummy
    "it", and no noun phrase before it in the clause."""
    before, after = clause[: match.start()], clause[match.end() :]
    opening = _OPENING_NAME.match(before)
    if opening and opening.group("name").split()[0].lower().split("'")[0] in _NOT_NAMES:
        opening = None
    if match.group(0).lower() == "it" and (
        not before.strip()
        or _DUMMY_IT_AFTER.match(after)
        or (_DUMMY_IT_BEFORE.search(before) and _DUMMY_IT_MADE.match(after))
    ):
        return False
    if _NAMED_AFTER.match(after):
        return False  # "his name is Jonas": the clause names whom it means
    if match.group(0).lower() == "they" and not before.strip() and _EMPLOYER_THEY.match(after):
        return False  # "They laid me off": the employer, named nowhere
    if match.group(0).lower() in _PERSON_PRONOUNS and opening:
        return False  # "Lily turned 8, she's so big", "Priya quit her job"
    return not _PHRASE_BEFORE.search(before)


# "They laid me off", "they promoted me": a "they" that is whoever employs the speaker.
_EMPLOYER_THEY = re.compile(
    r"^(?: (?:just|recently|finally|eventually|officially))? (?:laid me off|let me go|fired me|sacked me|"
    r"made me redundant|promoted me|hired me)\b",
    re.IGNORECASE,
)
# "his name is Jonas", "her name's Ada": a pronoun whose clause gives the name.
_NAMED_AFTER = re.compile(rf"^\s+name(?:'s| is| was)\s+(?:called\s+)?{_NAME}")
# A name that opens a clause, a person a later "he" or "her" there can stand for.
_OPENING_NAME = re.compile(rf"^(?!I\b|I')(?P<name>{_NAME})(?=\s|'s\b)")


def _as_pronoun(word: str, after: str, name: str) -> str:
    """``name`` in the place of the pronoun ``word`` (a possessive as "name's")."""
    lower = word.lower()
    following = _WORD.match(after.lstrip())
    possessive = lower in _POSSESSIVE or (
        lower == "her" and following is not None and following.group(0).lower() not in _AFTER_OBJECT
    )
    return f"{name}'s" if possessive else name


def resolve_references(clause: str, previous: str, speaker: str) -> tuple[str, str] | None:
    """``(clause, others)``: the clause with each pronoun whose referent lies outside it
    ("I eat it every Friday", "I practise with him") replaced by the one name the previous
    sentence offers for it, and ``others``, who "we" is besides the speaker ("others"
    unless the previous sentence names one person); None when a pronoun has no single
    referent there, or "we" is only described ("we'll be neighbours") and the others are
    unknown: such a fact says nothing on its own."""
    referents: _Referents | None = None
    parts: list[str] = []
    end = len(clause)
    for match in reversed(list(_PRONOUN.finditer(clause))):
        if not _outward(clause, match):
            continue
        referents = referents or _Referents.of(previous, speaker)
        name = referents.referent(match.group(0).lower())
        if name is None:
            return None
        parts.append(clause[match.end() : end])
        parts.append(_as_pronoun(match.group(0), clause[match.end() :], name))
        end = match.start()
    resolved = clause[:end] + "".join(reversed(parts))
    others = "others"
    if _WE.search(resolved):
        partner = (referents or _Referents.of(previous, speaker)).partner()
        described = _WE_DESCRIBED.search(resolved)
        if partner is not None:
            others = partner
        elif described and not (
            described.group("next").lower().endswith("ing")
            or described.group("next").lower() in _NOT_DESCRIPTION
        ):
            return None
    return resolved, others


# --- ages of the people one talks about ------------------------------------------------

# "<Name> turned 9", "<Name> is 8 (years old)", "my son Arjun's 9 now": the age of a person
# other than the speaker, single-valued per person (the fact's subject is that person).
_AGE_OF = re.compile(
    rf"(?<![\w'])(?P<name>{_NAME})(?:,? (?:who ?)?(?:(?:has )?(?:just |recently |finally )?turned |"
    r"(?:is|'s)(?: now| already| only)? )| \((?=\d{1,3}\)))(?P<age>\d{1,3})(?=\s*(?:$|[,.!;)]|years? old\b|"
    r"yrs? old\b|now\b|this\b|last\b|next\b|today\b|yesterday\b|in\b|on\b|and\b|but\b|so\b))"
)
# "He turned 9", "she's 12 now": an age whose person the previous sentence names.
_PRONOUN_AGE = re.compile(r"\b(?:he|she)(?:'s| is| just turned| turned) \d{1,3}\b", re.IGNORECASE)
# The relation word a clause names its person by ("my son Arjun is 8": son).
_RELATION_WORD = re.compile(rf"\b(?:my|our) {_ADJ}(?P<attr>{_RELATION_WORDS})\b", re.IGNORECASE)
# A name joined to the speaker ("Priya and I ..."): a name by its place, like a value.
_CO_SUBJECT_NAME = re.compile(rf"^(?P<name>{_NAME}) and (?:I|my|we)\b")


def _tells_age(clause: str) -> bool:
    if clause.endswith("?") or _QUESTION_START.match(clause) or _HYPOTHETICAL.match(clause):
        return False
    return bool(_AGE_OF.search(clause) or _PRONOUN_AGE.search(clause))


def _ages(clause: str, speaker: str) -> list[tuple[str, str]]:
    """``(name, age)`` of each person but the speaker whose age ``clause`` gives."""
    out: list[tuple[str, str]] = []
    for match in _AGE_OF.finditer(clause):
        name, age = match.group("name"), int(match.group("age"))
        if name.split()[0].lower() in _NOT_NAMES or name.casefold() == speaker.casefold():
            continue
        if 0 < age <= 120:
            out.append((name, str(age)))
    return out


# --- the members of a group the speaker names -------------------------------------------


def _plural(word: str) -> str:
    """The plural of a relation or pet word: kid -> kids, child -> children, puppy ->
    puppies, fish -> fish."""
    if word == "child":
        return "children"
    if word == "fish":
        return word
    if re.search(r"[^aeiou]y$", word):
        return word[:-1] + "ies"
    if re.search(r"(?:s|sh|ch|x|z)$", word):
        return word + "es"
    return word + "s"


# "our two boys", "my girls": one's sons and daughters when their names follow.
_SINGULAR = {_plural(w): w for w in [*_RELATIONS_MULTI, *_PETS, *_BREEDS]} | {"boys": "son", "girls": "daughter"}
_COUNT = r"(?:two|three|four|five|six|seven|eight|nine|ten|\d{1,2}|a couple of|twin)"
# "We have two kids, Lily and Tom", "two kids: Lily and Tom", "our kids Lily and Tom", "my
# sisters are Ana and Bea":
# a plural relation word and the names of its members.
_MEMBERS = re.compile(
    rf"\b(?i:(?:my|our|(?:I|we)(?:'ve got| have got| have| had| got))\s+(?:(?P<count>{_COUNT})\s+)?"
    rf"{_ADJ}(?P<attr>{'|'.join(sorted(_SINGULAR, key=len, reverse=True))}))"
    rf"(?:[,:]\s*|\s+(?i:are|were|named|called)\s+|\s+)"
    rf"(?P<names>{_NAME}(?:,\s*{_NAME})*,?\s+(?i:and|&)\s+{_NAME})\b"
)


def _member_facts(clause: str, group: _Group | None, speaker: str, sequence: int) -> tuple[list[_Found], str]:
    """``(facts, rest)``: one relation fact per member of a group the speaker names with
    its members ("We have two kids, Lily and Tom": kid Lily, kid Tom), each stating its
    own member ("Lily is one of the user's two kids."), and what the clause says besides
    ("love the park"); ([], "") when ``clause`` names no such group. ``group`` is the one
    its sentence introduces before a colon, a comma or a dash (_group)."""
    match = _MEMBERS.search(clause)
    if group is not None and _GROUP_HEAD.search(clause):
        plural, count, names, rest = group.plural, group.count, group.names, group.rest
    elif match is not None:
        plural, count = match.group("attr").lower(), match.group("count") or ""
        names = [n for n in re.split(r",\s*(?:(?:and|&)\s+)?|\s+(?:and|&)\s+", match.group("names")) if n]
        rest = _MEMBERS.sub("", clause)
    else:
        return [], ""
    attribute = _relation_attribute(_SINGULAR[plural])
    kind = _relation_kind(_SINGULAR[plural])
    owner = "the user" if speaker == USER else speaker
    count = f"{count.lower()} " if count else ""
    facts = [
        _Found(
            text=f"{name} is one of {owner}'s {count}{plural}.",
            subject=speaker,
            attribute=attribute,
            value=name,
            single=False,
            entities=[(speaker, "person"), (name, kind)],
            tentative=set(),
            sequence=sequence,
            weight=_weight(clause, attribute, []),
            retires=relation_ends(attribute),
        )
        for name in names
        if name.split()[0].lower() not in _NOT_NAMES
    ]
    return facts, rest


# A plural relation word introducing its members after a colon, a comma or a dash ("We
# have two kids: Lily is 7 and Noah is 4", "I have two daughters, Mia, who is 9, and ...").
_GROUP_HEAD = re.compile(
    rf"\b(?i:(?:my|our|(?:I|we)(?:'ve got| have got| have| had| got))\s+(?:(?P<count>{_COUNT})\s+)?"
    rf"{_ADJ}(?P<attr>{'|'.join(sorted(_SINGULAR, key=len, reverse=True))}))\s*(?::|,|\s?[-\u2013\u2014]+)\s*"
)
# Where a list of members splits: commas, brackets, dashes, "and".
_MEMBER_SPLIT = re.compile(r"\s*(?:[,;()]|\s[-\u2013\u2014]+\s|\s(?:and|&)\s)\s*")
# A part of the list that says more of the member before it ("who is 9", "8", "aged 5").
_MEMBER_ASIDE = re.compile(r"^(?:who|which|aged?|ages|both|\d)", re.IGNORECASE)
_COUNTS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
           "ten": 10, "a couple of": 2, "twin": 2}


@dataclass(frozen=True)
class _Group:
    """A group a sentence introduces with its members: the plural relation word, the
    count as written ("two" or ""), the members' names and the words after the list."""

    plural: str
    count: str
    names: list[str]
    rest: str


def _group(sentence: str) -> _Group | None:
    """The group ``sentence`` introduces before a colon, a comma or a dash, its members
    the names that open the parts of the list after it ("Lily is 7 and Noah is 4": Lily,
    Noah; asides such as "who is 9" skipped), up to the count given; None without one."""
    head = _GROUP_HEAD.search(sentence)
    if head is None:
        return None
    count = (head.group("count") or "").lower()
    most = int(count) if count.isdigit() else _COUNTS.get(count, 12)
    names: list[str] = []
    said: list[str] = []  # what the list says of its members besides names and asides
    parts = [re.sub(r"^(?:and|&)\s+", "", part) for part in _MEMBER_SPLIT.split(sentence[head.end() :])]
    for index, part in enumerate(parts):
        name = re.match(_NAME, part)
        if name and name.group(0).split()[0].lower() not in _NOT_NAMES and len(names) < most:
            names.append(name.group(0))
            said.append(part[name.end() :].strip())
        elif part and not _MEMBER_ASIDE.match(part):
            said.extend(parts[index:])
            break
    return _Group(head.group("attr").lower(), count, names, " ".join(said).strip()) if names else None


# --- facts about someone the clause names ------------------------------------------------

# A clause whose subject is a name and a verb ("Priya is a teacher", "Mark works at Acme",
# "Priya quit her job") or one's relation, named or not ("my sister Anna lives in Oslo",
# "my daughter goes to ..."): read as the speaker's own clause would be ("I'm a teacher"),
# its fact is about that person.
# One's relatives as a group ("my parents", "our kids", "my grandparents", "my family"):
# the subject is the group ("user's parents"), its verb plural as written.
_GROUPS = frozenset(
    [*_SINGULAR, *_words("parents grandparents folks siblings in-laws grandkids grandchildren twins relatives family")]
)
_NAMED_SUBJECT = re.compile(
    rf"^(?:(?i:(?:my|our) {_ADJ}(?P<attr>{_RELATION_WORDS}))(?:,? (?P<relative>{_NAME}),?)?"
    rf"|(?i:(?:my|our) {_ADJ}(?P<group>{'|'.join(sorted(_GROUPS, key=len, reverse=True))}))"
    rf"|(?!I\b|I')(?P<name>{_NAME}))(?P<adv>(?: (?:now|currently|still|also|just|recently|finally|both|all|no longer|never|always|usually|often|sometimes|rarely|seldom|already|really|actually|even|only))*)"
    r"(?P<verb>'s|\s+[a-z]+)\b(?!')"
)
# Words after a name that are no verb: the name is not the clause's subject alone.
_NOT_VERBS = frozenset(_words("and or but nor with who which that whose when while where if as"))
# Attributes of someone else a clause gives elsewhere: an age (_ages), a name.
_NOT_OF_SOMEONE = frozenset(["", "age", "name"])


def _first_person_verb(verb: str) -> str:
    """The first person of a third-person verb: "is" -> "am", "works" -> "work",
    "studies" -> "study", "teaches" -> "teach"; a past tense stays as it is."""
    irregular = {"'s": "'m", "is": "am", "has": "have", "does": "do", "goes": "go", "was": "was", "are": "am", "were": "was"}
    if verb in irregular:
        return irregular[verb]
    if re.search(r"[^aeiou]ies$", verb):
        return verb[:-3] + "y"
    if re.search(r"(?:sh|ch|x|ss|z|o)es$", verb):
        return verb[:-2]
    if verb.endswith("s") and not verb.endswith(("ss", "us", "is")):
        return verb[:-1]
    return verb


@dataclass(frozen=True)
class _Someone:
    """What a clause says of the person (or animal) it has as subject (_of_someone):
    ``name`` is theirs, or "<speaker>'s <relation>" for a relation left unnamed ("my
    daughter"); ``relation`` the relation word that introduced them, if any."""

    name: str
    attribute: str
    value: str
    single: bool
    kind: str
    retires: tuple[str, ...]
    retires_when: str
    relation: str = ""
    named: bool = True

    @property
    def subject_kind(self) -> str:
        """The kind of entity the subject is: an animal for a pet (or pets), else a person."""
        return _relation_kind(_SINGULAR.get(self.relation, self.relation))


def _subject(match: re.Match[str], speaker: str) -> tuple[str, str, bool] | None:
    """``(name, relation, named)`` of the subject _NAMED_SUBJECT matched, or None when
    it is no one but the speaker, or no person ("Acme Inc", "Yes")."""
    if match.group("group"):
        group = match.group("group").lower()
        return f"{speaker}'s {group}", group, False
    relation = (match.group("attr") or "").lower()
    name = match.group("relative") or match.group("name")
    if name is None:
        return f"{speaker}'s {relation}", relation, False
    if (
        name.split()[0].lower().split("'")[0] in _NOT_NAMES
        or name.casefold() == speaker.casefold()
        or _ORGANISATION.search(name)
    ):
        return None
    return name, relation, True


def _of_someone(clause: str, speaker: str) -> _Someone | None:
    """What ``clause`` says of its subject when that is a person it names or a relation
    of the speaker's, not the speaker, read as a pattern reads the speaker's own clause
    ("Priya is a teacher" as "I'm a teacher", "my sister Anna lives in Oslo" as "I live
    in Oslo"); None otherwise (an age is _ages', a relation the speaker's)."""
    told = _as_own(clause, speaker)
    if told is None:
        return None
    own, subject = told
    attribute = _matched(_PATTERNS, own)
    if attribute is None or attribute[0] in _NOT_OF_SOMEONE:
        return None
    retires, when = _ending(own, attribute[0], attribute[1])
    name, relation, named = subject
    return _Someone(name, *attribute, retires, when, relation, named)


def _as_own(clause: str, speaker: str) -> tuple[str, tuple[str, str, bool]] | None:
    """``clause``, whose subject is someone other than the speaker, as the speaker's own
    ("Priya is a teacher" -> "I am a teacher"), with that subject (_subject); None when
    its subject is no one else."""
    if clause.endswith("?") or _QUESTION_START.match(clause) or _HYPOTHETICAL.match(clause):
        return None
    core = _core(clause)  # "Yesterday, my husband Sam got a job": its subject after the time
    match = _NAMED_SUBJECT.match(core)
    subject = _subject(match, speaker) if match else None
    if match is None or subject is None:
        return None
    verb = match.group("verb").strip()
    # "Mark says I drive a Golf": a pattern would read the speaker's clause; so "Acme
    # promoted me", the speaker its object ("Kenji quit to work with me" is Kenji's).
    after = core[match.end() :]
    if verb in _NOT_VERBS or re.search(r"\b(?:I|we)\b", after, re.IGNORECASE) or re.match(r"\s+(?:me|us)\b", after, re.IGNORECASE):
        return None
    verb = _first_person_verb(verb)
    joint = "" if verb.startswith("'") else " "
    rest = re.sub(r"\b(?:his|her|their)\b", "my", core[match.end() :], flags=re.IGNORECASE)
    return f"I{match.group('adv')}{joint}{verb}{rest}", subject


def _someone_facts(clause: str, speaker: str, text: str, sequence: int) -> list[_Found]:
    """The fact about the person ``clause`` has as its subject (_of_someone), a title and
    a named employer apart (_employment), and, when a relation names them ("my sister
    Anna lives in Oslo"), the relation apart ("The user's sister is Anna."); [] when the
    clause is about no one else."""
    found = _of_someone(clause, speaker)
    if found is None:
        return []
    name, value, kind = found.name, found.value, found.kind
    names = [n for n in names_in(clause) if n[0].casefold() not in (name.casefold(), speaker.casefold())]
    entities = [(name, found.subject_kind)]
    if value and kind:
        entities.append((value, kind))
    entities.extend((n, k) for n, k, _ in names if n.casefold() != value.casefold())
    fact = _Found(
        text=text[:MAX_FACT_CHARS],
        subject=name,
        attribute=found.attribute,
        value=value,
        single=found.single,
        entities=[*entities, (speaker, "person")],
        tentative=set(),
        sequence=sequence,
        weight=_weight(clause, found.attribute, names),
        retires=found.retires,
        retires_when=found.retires_when,
        speaker=speaker,
        relative="" if found.named else found.relation,
    )
    if not (found.relation and found.named):
        return _employment(fact, clause)
    return [_relation_fact(speaker, found.relation, name, found.subject_kind, fact), *_employment(fact, clause)]


def _relation_fact(speaker: str, relation: str, name: str, kind: str, of: _Found) -> _Found:
    """The speaker's relation ``name`` as a fact of its own ("The user's sister is
    Anna."), drawn from the clause that gave ``of``."""
    owner = "The user" if speaker == USER else speaker
    return _Found(
        text=f"{owner}'s {relation} is {name}.",
        subject=speaker,
        attribute=_relation_attribute(relation),
        value=name,
        single=_relation_single(relation),
        entities=[(speaker, "person"), (name, kind)],
        tentative=set(),
        sequence=of.sequence,
        weight=of.weight,
        retires=relation_ends(_relation_attribute(relation)),
    )


def _clause_fact(
    clause: str, speaker: str, text: str, sequence: int, ages: list[tuple[str, str]]
) -> _Found:
    """The fact a first-person clause states about its speaker. When the clause also gives
    the age of the person a relation names ("My son Arjun is 8"), that age is a fact of
    its own (_age_fact) and this one only says the relation ("The user's son is Arjun.")."""
    names = [n for n in names_in(clause) if n[0].casefold() != speaker.casefold()]
    attribute, value, single, kind = _attribute(clause) or ("", "", False, "")
    retires, when = _ending(clause, attribute, value)
    if attribute.startswith(f"{STANCE} ") and value == _STOPPED and _pet_gone(clause):
        attribute = ""  # "I don't have the dog anymore": the pet it ends, no stance on having it
    value = value if attribute else ""  # "I left Acme", "I sold my boat": what it ends, no value
    entities = [(speaker, "person")]
    if value and kind:
        entities.append((value, kind))
    # A value that is no entity itself ("My favourite band is Fleetwood Mac") is still a name.
    entities.extend((n, k) for n, k, _ in names if not (kind and n.casefold() == value.casefold()))
    # A pattern's value is a name by its place ("Mara is my sister"), not by its case.
    placed = {value.casefold()}
    co_subject = _CO_SUBJECT_NAME.match(clause)
    if co_subject:
        placed.add(co_subject.group("name").casefold())
        entities.insert(1, (co_subject.group("name"), "person"))
    tentative = {n.casefold() for n, _, opens in names if opens and n.casefold() not in placed}
    word = _RELATION_WORD.search(clause)
    if kind in ("person", "animal") and word and value.casefold() in {n.casefold() for n, _ in ages}:
        owner = "The user" if speaker == USER else speaker
        text = f"{owner}'s {word.group('attr').lower()} is {value}."
    return _Found(
        text=text[:MAX_FACT_CHARS],
        subject=speaker,
        attribute=attribute,
        value=value,
        single=single,
        entities=entities,
        tentative=tentative,
        sequence=sequence,
        weight=_weight(clause, attribute, names),
        retires=retires,
        retires_when=when,
    )


# What a diet leaves out: "I'm vegetarian now" ends "I eat meat" (a stance on the item).
_MEAT = [
    "red meat",
    *_words(
        "meat beef pork chicken steak steaks bacon lamb ham sausage sausages burger burgers "
        "turkey veal"
    ),
]
_SEAFOOD = _words("fish seafood salmon tuna shrimp prawns")
_ANIMAL_PRODUCTS = _words("dairy cheese milk eggs butter honey yogurt yoghurt")
_DIET_ENDS = {
    "vegetarian": (*_MEAT, *_SEAFOOD),
    "pescatarian": _MEAT,
    "vegan": (*_MEAT, *_SEAFOOD, *_ANIMAL_PRODUCTS),
}


# "as an engineer" after where one works: the title.
_AS_TITLE = re.compile(rf"\bas (?:a|an) (?P<value>{_MODIFIERS}(?:{_OCCUPATION_WORDS}))\b", re.IGNORECASE)


def _employment(fact: _Found, clause: str) -> list[_Found]:
    """``fact``, or, when its clause gives both a title and a named employer ("I work at
    Acme as an engineer", "I'm an engineer at Acme"), the title (``job``, the clause's
    text) and the employer apart (``works at``: "The user works at Acme."), so a
    promotion replaces the title and the employer stays current."""
    title = employer = ""
    if fact.attribute == "works at":
        employer = fact.value
        found = _AS_TITLE.search(clause)
        title = clean_value(found.group("value")) if found else ""
    elif fact.attribute == "job" and fact.value not in _STATE_VALUES:
        title = fact.value
        names = [n for n, kind, _ in names_in(clause) if kind == "organisation"]
        employer = names[0] if len(names) == 1 else ""
    if not title or not employer:
        return [fact]
    owner = f"The {fact.subject}" if fact.subject == USER or fact.subject.startswith(f"{USER}'s ") else fact.subject
    work = _Found(
        text=f"{owner} works at {employer}.",
        subject=fact.subject,
        attribute="works at",
        value=employer,
        single=True,
        entities=[(fact.subject, "person"), (employer, "organisation")],
        tentative=set(),
        sequence=fact.sequence,
        weight=fact.weight,
        speaker=fact.speaker,
    )
    fact.attribute, fact.value, fact.single = "job", title, True
    return [fact, work]


# A food eaten as a change ("I eat meat again", "I started eating fish"): it ends a diet
# without it; eating it alongside one ("I'm vegetarian but I eat fish") is not said to.
_TAKEN_UP_AGAIN = re.compile(
    r"\b(?:again|now|these days|nowadays|anymore|started|start|began|begun|back to)\b", re.IGNORECASE
)


# Quitting or leaving something one may work in or at ("I quit nursing", "I gave up law").
_LEFT_WORK = re.compile(r"\b(?:quit|quitting|left|leaving|gave up|given up|giving up|walked away from)\b", re.IGNORECASE)


def _ending(clause: str, attribute: str, value: str) -> tuple[tuple[str, ...], str]:
    """``(retires, retires_when)`` of the pattern that gave the clause its attribute
    (ExtractedFact.retires): a job's ending ends the employer too; "I left Acme" ends the
    job where Acme is the employer, "I quit nursing" (a stance stopped) the job or
    employer it names; a possession parted with ends what names it ("I sold my Tesla":
    the car or thing had "Tesla"), a car parted with by its kind the things had that
    name a car; a diet ends the stances on what it leaves out
    ("I'm vegetarian now" ends "stance on meat"), and eating such a food again ends the
    diets that leave it out ("I eat meat again" ends "vegetarian", "vegan",
    "pescatarian", not "gluten-free")."""
    changed = change_ending(clause, attribute, value)
    if changed is not None:
        return changed
    if attribute == "diet" and value.lower() in _DIET_ENDS:
        items = dict.fromkeys(_DIET_ENDS[value.lower()])
        return tuple(f"{STANCE} {item}" for item in items), ""
    ended = _ended_state(clause)
    if ended is not None and ended[0] != attribute:
        return ended[1], ended[2]
    if attribute.startswith(f"{STANCE} ") and value == _STOPPED and _LEFT_WORK.search(clause):
        # "I quit nursing", "I gave up law", "I quit Acme": the job or employer it names ends
        # (semantic.values_match folds "nursing" and "nurse"); "I quit smoking" ends none.
        return _LEFT_EMPLOYER, attribute[len(STANCE) + 1 :]
    if attribute.startswith(f"{STANCE} ") and value == _DOES and _TAKEN_UP_AGAIN.search(clause):
        item = attribute[len(STANCE) + 1 :]
        diets = [diet for diet, items in _DIET_ENDS.items() if item in items]
        # retires_when names every diet the food ends: the current one need only be among them.
        return (("diet",), " ".join(diets)) if diets else ((), "")
    for pattern in _PATTERNS:
        if not pattern.retires or pattern.attribute != attribute:
            continue
        found = pattern.regex.search(clause)
        if pattern.fixed and pattern.fixed == value and found:
            # A change named by its kind ends only the things of that kind ("sold my car").
            return pattern.retires, found.groupdict().get("thing") or ""
        if not pattern.attribute and value and found:
            return pattern.retires, value
    return (), ""


# A present state said to be over: "I'm no longer X", "I'm not X anymore", "I no longer
# <verb> X", "I don't <verb> X any more", "we don't have X anymore" (no "anymore", no
# change: "I'm not allergic to dogs"); a list may come between ("cats, dogs, or horses").
_NO_LONGER = re.compile(
    r"\b(?:I|we)(?P<be>'m| am|'re| are)? (?:no longer|(?:not|don't|do not|dont)"
    r"(?=(?:[^,;.!?]|,(?= ))*\b(?:anymore|any more|any longer)\b))"
    r"(?: (?:really|even|actually))? ",
    re.IGNORECASE,
)
_ANYMORE_WORDS = re.compile(r",?\s*\b(?:anymore|any more|any longer)\b", re.IGNORECASE)
# A possession no longer had, named with its article or owner ("a cat", "the Tesla", "my
# car"; "I no longer have time" names none).
_NO_LONGER_HAD = re.compile(
    rf"^I (?:have|has|own|owns)(?: got)? (?:a|an|the|my|our|his|her|their|any) (?:old )?{_PARTED_THING}",
    re.IGNORECASE,
)
# One no longer had, named by their name ("I no longer have Luna"): a pet's or a thing's.
_NO_LONGER_HAD_NAMED = re.compile(r"^I (?:have|has|own|owns)(?: got)? (?P<value>(?-i:[A-Z][a-z'-]+))\s*$", re.IGNORECASE)
_OWNED = ("has", "car", *_PETS)
#: What a present state said to be over ends besides its own attribute: an employer no
#: longer worked at the job held there too.
_NEGATED_ENDS = {"works at": _LEFT_EMPLOYER}


# A state given up or left behind: "I stopped learning Japanese" (what one was doing),
# "I used to be allergic to peanuts", "we used to have a boat", "I used to live in Berlin".
# "I stopped by the store", "I used to think so": no state.
_GIVEN_UP_STATE = re.compile(
    r"\b(?:I|we)(?:'ve| have| had)?(?: (?:just|finally|recently|eventually|also|actually|since))? "
    r"(?:(?:stopped|quit) (?P<doing>[a-z]+ing)|used to (?P<was>be|have|live))(?= )",
    re.IGNORECASE,
)
_BEING = {"being": "I'm", "having": "I have", "be": "I'm", "have": "I have", "live": "I live"}


def _state_over(clause: str) -> tuple[int, str] | None:
    """Where in ``clause`` the state it says is over is told and that state as a present
    statement of the speaker's: "I'm not allergic to dogs anymore", "I no longer have a
    cat", "I used to be allergic to dogs", "I stopped learning Japanese" -> "I'm allergic
    to dogs", "I have a cat", "I'm allergic to dogs", "I'm learning Japanese" ("we"
    includes the speaker: what "we" no longer have, the speaker no longer has); None when
    it says no state is over."""
    match = _NO_LONGER.search(clause)
    if match is not None:
        be = "'m" if match.group("be") else ""
        return match.end(), f"I{be} {_ANYMORE_WORDS.sub('', clause[match.end() :])}"
    given_up = _GIVEN_UP_STATE.search(clause)
    if given_up is None:
        return None
    rest = clause[given_up.end() :]
    verb = (given_up.group("doing") or given_up.group("was")).lower()
    if verb in _BEING:
        return given_up.end() + 1, f"{_BEING[verb]}{rest}"
    return given_up.start("doing"), f"I'm {clause[given_up.start('doing') :]}"


def _ended_state(clause: str) -> tuple[str, tuple[str, ...], str] | None:
    """``(attribute, retires, retires_when)`` of the present state ``clause`` says is over
    (_state_over: "I'm not allergic to dogs anymore", "I used to be allergic to dogs":
    allergic to dogs; "I don't drive a Tesla any more": car Tesla; "I stopped learning
    Japanese": learning Japanese), read as that state would be. A possession no longer
    had is one parted with ("I no longer have a cat", "I don't have the Tesla any more":
    the thing had, the car driven or the pet naming it; "my car" any car driven). None
    when it says no state is over or the state is no pattern's ("I no longer have time";
    "I no longer like jazz": a stance is its own attribute)."""
    over = _state_over(clause)
    if over is None:
        return None
    positive = over[1]
    had = _NO_LONGER_HAD.match(positive)
    if had is not None:
        thing = clean_value(had.group("value"))
        if thing.lower() == "car":
            return "has", ("car",), ""
        return ("has", _OWNED, thing) if thing else None
    named = _NO_LONGER_HAD_NAMED.match(positive.rstrip(" .!"))
    if named is not None:
        return "has", _OWNED, named.group("value")
    found = _matched(_PATTERNS, positive, anchored=True)
    if found is None:
        return None
    attribute, value = found[0], found[1]
    if not attribute or attribute.startswith((f"{STANCE} ", f"{COUNT} ")) or not value:
        return None
    return attribute, _NEGATED_ENDS.get(attribute, (attribute,)), value


def _pet_gone(clause: str) -> bool:
    """Whether ``clause`` says a pet, by its kind or its name, is no longer had ("I don't
    have the dog anymore", "I no longer have Luna", "I used to have a cat"; not "I no
    longer have time", "I don't have the Tesla any more")."""
    over = _state_over(clause)
    if over is None:
        return False
    had = _NO_LONGER_HAD.match(over[1])
    if had is not None:
        return clean_value(had.group("value")).lower() in _PETS
    return _NO_LONGER_HAD_NAMED.match(over[1].rstrip(" .!")) is not None


def _age_fact(
    clause: str, speaker: str, text: str, sequence: int, person: tuple[str, str], animals: set[str]
) -> _Found:
    """The age of ``person`` (name, age), someone other than the speaker, as a fact about
    them: an animal's if ``animals`` has their name ("our cat Luna is 2"), else a person's."""
    name, age = person
    return _Found(
        text=text[:MAX_FACT_CHARS],
        subject=name,
        attribute="age",
        value=age,
        single=True,
        entities=[(name, "animal" if name in animals else "person"), (speaker, "person")],
        tentative=set(),
        sequence=sequence,
        weight=_weight(clause, "age", []),
        speaker=speaker,
    )


def facts_in(message: TranscriptMessage, previous: str = "") -> list[_Found]:
    """The facts one message states (see the module docstring); ``previous`` is the last
    sentence before it (pronouns refer back to it)."""
    speaker, body = speaker_of(message)
    if speaker is None:
        return []
    found: list[_Found] = []
    for sentence in sentences(body):
        group = _group(", ".join(sentence))
        for clause in sentence:
            statement = _is_statement(clause)
            someone = _of_someone(clause, speaker) is not None
            if not statement and not someone and not _tells_age(clause):
                named = _named_by_pronoun(clause, previous, speaker)
                if named is None:
                    previous = clause
                    continue
                clause = named
            resolved = resolve_references(clause, previous, speaker)
            previous = clause
            if resolved is not None:
                clause, others = resolved
                for part in [clause] if group is not None else listed(clause, speaker):
                    text = resolve_dates(third_person(part, speaker, others), message.created_at)
                    facts = _facts_of_clause(part, speaker, text, message.sequence_number, group)
                    _mark_unowned(facts, part, ", ".join(sentence))
                    _not_tail(part, facts)
                    _conditioned(part, facts)
                    found.extend(facts)
    return [f.restored() for f in _without_echoes(found)]


#: The attributes that hold several values, each a fact of its own in a list ("I'm
#: allergic to cats and dogs"): possessions (a count is one: "two dogs and a parrot"),
#: allergies, conditions, languages ("I speak English and Spanish"). A single-valued one never splits ("I work at Procter and
#: Gamble", "my favourite food is mac and cheese"), nor does a stance, single-valued per
#: item ("I love rock and roll"; "I enjoy reading, watching movies and exploring nature"
#: stays one fact).
_LISTED = {
    "has": "has",
    COUNT: "has",
    "allergic to": "allergic to",
    "condition": "condition",
    SPEAKS: SPEAKS,
    LEARNING: LEARNING,
}
_NUMBER_WORDS = rf"(?:a|an|one|{_COUNT_WORDS}|\d+|some|several|a few|a couple of)"
# Where a list of values ends and the rest of its clause, said of each value, goes on: a
# time, a reason, a contrast ("bees and wasps since childhood", "a tent and a stove last
# week", "cats and dogs but not rabbits"). A phrase that may be the last value's alone
# ("reptiles and animals with fur", "a tent and a stove at the shop") is no such end.
_LIST_END = (
    r"(?:and|or|but|not|since|because|when|while|if|so|though|although|after|before|until|now|again|"
    r"anymore|lately|recently|every|ago|last|next|this|yesterday|today|tonight|tomorrow|earlier|"
    r"these days|nowadays|already|still|too|either|as well)"
)
# A word a listed value never has: a pronoun, a verb that starts a clause of its own ("I
# have a dog and love him", "allergic to cats and get hives"), a word that starts a phrase.
_NOT_LISTED_WORD = (
    rf"(?:{_LIST_END}|nor|i|me|you|he|she|it|we|they|him|her|them|us|his|its|their|your|myself|yourself|"
    r"himself|herself|itself|ourselves|themselves|am|is|are|was|were|be|been|have|has|had|do|does|did|get|"
    r"gets|got|can|could|will|would|should|might|must|never|also|just|really|very|love|loves|hate|hates|"
    r"like|likes|need|needs|want|wants|feel|feels|make|go|went|take|use|for|with|that|which|who|as|at|in|"
    r"on|from|to|of|than|around|about|there|here|such|once|twice|something|anything|everything|nothing|"
    r"stuff|things|etc)"
)
_LIST_WORD = rf"(?!{_NOT_LISTED_WORD}\b)[\w'-]+"
_LIST_ITEM = rf"{_LIST_WORD}(?: {_LIST_WORD}){{0,3}}"
_LIST = re.compile(
    rf"^(?P<items>{_LIST_ITEM}(?:, {_LIST_ITEM})*,? (?:and|or) {_LIST_ITEM})"
    rf"(?P<tail>(?:\s+{_LIST_END}\b|\s*[^\w\s'-]|\s*$).*)$",
    re.IGNORECASE | re.DOTALL,
)
# What follows the "and" of a single value's phrase: words a listed value may have, up to
# the clause's end or a list's end ("mac and cheese", "cheese since college").
_JOINED_REST = re.compile(rf"^{_LIST_ITEM}(?=\s*$|\s+{_LIST_END}\b)", re.IGNORECASE)
_AND_JOINED = re.compile(r"\s+(?:and|&)\s+", re.IGNORECASE)
_JOINED = "\ue000"  # stands for the "and" while clean_value trims the phrase


#: Single-valued attributes whose value is a phrase naming a thing, two joined by "and"
#: as well as one ("mac and cheese", "law and economics"); any other's only names ("I
#: live in Bosnia and Herzegovina", not "Boston and teach").
_PHRASE_VALUES = frozenset(["favorite", "studies"])


def _coordinated(raw: str, *, names: bool) -> str:
    """The value of a single-valued attribute whose phrase joins two by "and" ("my
    favourite food is mac and cheese", "Pride and Prejudice", "I live in Bosnia and
    Herzegovina"), which clean_value would cut at "and"; "" when the phrase has no "and",
    what follows it is a clause of its own ("pizza and I eat it weekly") or goes on past
    a list's end ("Boston and work at Acme"), or, with ``names``, is no name ("I work as
    a nurse and teach yoga")."""
    joined = _AND_JOINED.search(raw)
    rest = _JOINED_REST.match(raw[joined.end() :]) if joined is not None else None
    if joined is None or rest is None or (names and not all(w[0].isupper() for w in rest.group().split())):
        return ""
    whole = clean_value(f"{raw[: joined.start()]} {_JOINED} {raw[joined.end() :]}")
    if _JOINED not in whole or whole.endswith(_JOINED) or whole.startswith(_JOINED):
        return ""
    return whole.replace(_JOINED, joined.group().strip())


# A possession parted with, up to its owner ("I sold my Tesla" -> "I sold "), and a second
# one joined to it by "and" with nothing of its own but a time or where it went ("my boat",
# "our old van last week"; not "my wife was upset", "my son cried": a verb after a noun).
_PARTED_HEAD = re.compile(rf"^(?P<head>.*\b(?:{_PARTED}) )(?:my|our) ", re.IGNORECASE)
_PARTED_ALSO = re.compile(
    r"^(?:my|our) (?![\w'-]+(?: [\w'-]+)* (?:[\w'-]+ed|left|went|came|said|got|ran|fell|felt|told|took|made|"
    rf"knew|saw|thinks|says|wants|loves|hates|likes)\b){_LIST_ITEM}{_THING_END}",
    re.IGNORECASE,
)


_LIST_SPLIT = re.compile(r",? (?:and|or) |, ", re.IGNORECASE)
# A possession's list names each thing with its article or count ("a cat and a dog").
_COUNTED = re.compile(rf"^{_NUMBER_WORDS} ", re.IGNORECASE)
_COUNTED_BEFORE = re.compile(rf"\b{_NUMBER_WORDS} (?:new )?$", re.IGNORECASE)


def listed(clause: str, speaker: str) -> list[str]:
    """``clause`` once per value when it lists several values of an attribute holding
    several (_LISTED: "I'm allergic to cats, dogs and horses" -> "I'm allergic to cats",
    "I'm allergic to dogs", "I'm allergic to horses"; "Priya has a cat and a dog" the
    same), what follows the list kept in each ("... since childhood"); ``[clause]`` when
    it lists none, or when a part would not state that attribute on its own ("I'm
    diabetic and tired": "tired" is no condition). A state said to be over is split as
    the state itself would be ("I'm not allergic to cats and dogs anymore" -> "I'm not
    allergic to cats anymore", "I'm not allergic to dogs anymore"), so each value ends."""
    found = _list_in(clause, speaker)
    if found is None:
        found = _ended_list(clause, speaker)
    if found is None:
        return [clause]
    start, end, items = found
    return [f"{clause[:start]}{item}{clause[end:]}" for item in items]


def _ended_list(clause: str, speaker: str) -> tuple[int, int, list[str]] | None:
    """The list of _list_in that ``clause``, a present state said to be over
    (_ended_state), names: the list of the state without its negation, found where it
    stands in ``clause``; None when it names none or a part would end no state."""
    over = _state_over(clause)
    found = _list_in(over[1], speaker) if over is not None else None
    if over is None or found is None:
        return None
    start, end, items = found
    at = clause.find(over[1][start:end], over[0])
    if at < 0:
        return None
    parts = [f"{clause[:at]}{item}{clause[at + end - start :]}" for item in items]
    return (at, at + end - start, items) if all(_ended_state(part) is not None for part in parts) else None


def _list_in(clause: str, speaker: str) -> tuple[int, int, list[str]] | None:
    """``(start, end, items)``: where in ``clause`` the list of values of listed stands and
    its values, or None when it lists none (listed's rules)."""
    told = _as_own(clause, speaker)
    own = told[0] if told is not None else clause
    family = _family(_matched(_PATTERNS, own) if told is not None else _attribute(clause))
    if not family:
        return None
    for pattern in _PATTERNS:
        match = pattern.regex.search(own)
        if match is None or _LISTED.get(pattern.attribute) != family:
            continue
        start = _list_start(match, family, own)
        found = _LIST.match(own[start:]) if start >= 0 else None
        if found is None or not clause.endswith(own[start:]):
            return None
        items = _LIST_SPLIT.split(found.group("items"))
        if family == "has" and not all(_COUNTED.match(item) for item in items):
            return None
        head = len(clause) - len(own) + start
        tail = head + len(found.group("items"))
        parts = [f"{clause[:head]}{item}{clause[tail:]}" for item in items]
        read = [_family(_of_someone_attribute(p, speaker) if told is not None else _attribute(p)) for p in parts]
        return (head, tail, items) if all(r == family for r in read) else None
    return None


def _family(found: tuple[str, str, bool, str] | None) -> str:
    """The _LISTED family of a clause's attribute ("number of dogs" is a possession), or
    "" when it holds a single value."""
    if found is None:
        return ""
    attribute = found[0]
    return "has" if attribute.startswith(f"{COUNT} ") else _LISTED.get(attribute, "")


def _of_someone_attribute(clause: str, speaker: str) -> tuple[str, str, bool, str] | None:
    """The attribute _of_someone reads in ``clause`` as _attribute gives it, or None."""
    found = _of_someone(clause, speaker)
    return None if found is None else (found.attribute, found.value, found.single, found.kind)


def _list_start(match: re.Match[str], family: str, own: str) -> int:
    """Where the list of values starts in ``own``: at a possession's article or count
    ("I have [a cat and a dog]"), else at the pattern's value; -1 when it has none."""
    groups = match.groupdict()
    if groups.get("count"):
        return match.start("count")
    if not groups.get("value"):
        return -1
    start = match.start("value")
    if family == "has":
        before = _COUNTED_BEFORE.search(own[:start])
        return before.start() if before else -1
    return start


# A clause whose subject is "he" or "she": who it is, the previous sentence may name.
_PRONOUN_SUBJECT = re.compile(r"^(?:he|she)\b(?!')", re.IGNORECASE)
# Two people named together ("Tom and Anna came over"): "she" is either.
_TWO_NAMED = re.compile(rf"{_NAME_WORD},? and {_NAME_WORD}")


def _named_by_pronoun(clause: str, previous: str, speaker: str) -> str | None:
    """``clause`` with its subject pronoun replaced by the one person the previous
    sentence names ("My sister Anna is a doctor. She lives in Boston." -> "Anna lives in
    Boston"), when it then states a fact of that person (_of_someone); else None."""
    if not _PRONOUN_SUBJECT.match(clause) or _TWO_NAMED.search(previous):
        return None
    resolved = resolve_references(clause, previous, speaker)
    if resolved is None or _of_someone(resolved[0], speaker) is None:
        return None
    return resolved[0]


def _mark_unowned(facts: list[_Found], clause: str, sentence: str) -> None:
    """Mark a loss of a bare name ("Napoleon died in exile", "I heard David Bowie passed
    away") whose sentence does not tell it as the speaker's grief (own_loss): the episode
    decides whose it is (_settle_losses)."""
    name = unowned_loss(clause)
    if not name or own_loss(sentence):
        return
    for fact in facts:
        if fact.attribute == LOST and fact.value == name:
            fact.unowned, fact.told = name, _FIRST_PERSON.search(clause) is not None


def _settle_losses(found: list[_Found]) -> None:
    """A loss marked unowned (_mark_unowned) stays the speaker's when another fact of theirs
    in the episode names the one lost ("our dog Rex", "I have a cat named Luna"); else it
    is no loss of the speaker's: a plain fact about the one who died ("Napoleon died in
    exile": subject Napoleon), or the speaker's own plain statement when they tell it ("The
    user was reading that Napoleon died in exile."). Either way it ends nothing."""
    for fact in found:
        if not fact.unowned:
            continue
        named = re.compile(rf"(?<![\w'-]){re.escape(fact.unowned)}(?![\w'-])", re.IGNORECASE)
        if any(
            other.subject == fact.subject and other.attribute not in ("", LOST) and named.search(other.value)
            for other in found
        ):
            continue
        fact.attribute, fact.value, fact.single, fact.retires, fact.retires_when = "", "", False, (), ""
        if not fact.told:
            fact.speaker, fact.subject = fact.subject, fact.unowned
            if all(name.casefold() != fact.unowned.casefold() for name, _ in fact.entities):
                fact.entities.insert(0, (fact.unowned, "person"))
            fact.entities = [(n, "person" if n.casefold() == fact.unowned.casefold() else k) for n, k in fact.entities]


def _facts_of_clause(clause: str, speaker: str, text: str, sequence: int, group: _Group | None) -> list[_Found]:
    """The facts of one clause (facts_in), its references resolved and ``text`` its
    fact's text; ``group`` the group its sentence names with its members, if any."""
    found: list[_Found] = []
    ages = _ages(clause, speaker)
    of_others = _someone_facts(clause, speaker, text, sequence)
    members, rest = _member_facts(clause, group, speaker, sequence) if _is_statement(clause) else ([], "")
    if of_others:
        found.extend(of_others)
    elif members:
        found.extend(members)
        if len(_WORD.findall(rest)) >= 2:  # "My kids Lily and Tom love the park"
            fact = _clause_fact(clause, speaker, text, sequence, ages)
            if fact.attribute == "has" or fact.attribute.startswith(COUNT):  # the members, not "kids: Lily"
                fact.attribute, fact.value = "", ""
            found.append(fact)
    elif _is_statement(clause) and not _restates_speaker(clause, speaker):
        fact = _clause_fact(clause, speaker, text, sequence, ages)
        if not fact.attribute:
            _about_relative(fact, clause, speaker)
        found.extend(_employment(fact, clause))
        found.extend(_other_relations(clause, speaker, fact))
    animals = {name for word, name in _relations_in(clause) if _relation_kind(word) == "animal"}
    if group is not None and _relation_kind(_SINGULAR[group.plural]) == "animal":
        animals.update(group.names)
    found.extend(_age_fact(clause, speaker, text, sequence, a, animals) for a in ages)
    return found


def _about_relative(fact: _Found, clause: str, speaker: str) -> None:
    """Make ``fact`` (a clause's plain fact, no attribute) one about the relative or the
    group of relatives the clause has as subject, unnamed, when the clause says nothing
    else of the speaker ("My kids started school": subject "user's kids"; "my sister is so
    funny": "user's sister", named later by _name_relatives); "My kids drive me crazy" and
    "my parents and I ..." stay the speaker's."""
    match = _NAMED_SUBJECT.match(_core(clause))
    if match is None or match.group("name") or match.group("relative"):
        return
    if match.group("verb").strip() in _NOT_VERBS or _FIRST_PERSON.search(_core(clause)[match.end() :]):
        return
    subject = _subject(match, speaker)
    if subject is None:
        return
    name, relation, _ = subject
    fact.speaker, fact.subject = speaker, name
    fact.relative = relation
    kind = _relation_kind(_SINGULAR.get(relation, relation))
    fact.entities = [(name, kind), *fact.entities]


def _relations_in(clause: str) -> list[tuple[str, str]]:
    """``(relation word, name)`` of every relation ``clause`` names ("a dog named Rex and
    a cat named Luna": dog Rex, cat Luna), in the order of _RELATION_PATTERNS."""
    out: list[tuple[str, str]] = []
    for regex in _RELATION_PATTERNS:
        for match in regex.finditer(clause):
            name = match.group("value")
            if name.split()[0].lower() not in _NOT_NAMES and name not in (n for _, n in out):
                out.append((match.group("attr").lower(), name))
    return out


def _other_relations(clause: str, speaker: str, fact: _Found) -> list[_Found]:
    """A relation fact ("The user's cat is Luna.") for each relation ``clause`` names
    besides the one ``fact`` (its clause's fact) states ("I have a dog named Rex and a cat
    named Luna"): each name gets its kind and can be found by its relation."""
    return [
        _relation_fact(speaker, word, name, _relation_kind(word), fact)
        for word, name in _relations_in(clause)
        if name != fact.value
        and name.casefold() != speaker.casefold()
        # one partner, one mother: a second in the same clause is a misreading
        and not (_relation_single(word) and _relation_attribute(word) == fact.attribute)
    ]


def _without_echoes(found: list[_Found]) -> list[_Found]:
    """``found`` less each fact with no attribute whose text another fact of the message
    states with one ("Our son Tom is 5 years old": the clause's plain fact and Tom's age
    read alike, and recall would return the sentence twice); the one kept takes the
    dropped one's entities too, so the sentence still links everyone it names."""
    keyed = {f.text for f in found if f.attribute}
    kept = [f for f in found if f.attribute or f.text not in keyed]
    for echo in (f for f in found if not f.attribute and f.text in keyed):
        twin = next(f for f in kept if f.text == echo.text)
        twin.entities += [e for e in echo.entities if e not in twin.entities]
        twin.tentative |= echo.tentative
    return kept


def _restates_speaker(clause: str, speaker: str) -> bool:
    """Whether ``clause`` only gives the name its speaker's label already says ("Caroline:
    I'm Caroline", "Caroline: my name is Caroline"): its fact would read "Caroline is
    Caroline."."""
    attribute = _attribute(clause)
    return attribute is not None and attribute[0] == "name" and attribute[1].casefold() == speaker.casefold()


def _name_relatives(found: list[_Found]) -> None:
    """Give a relative left unnamed ("my daughter goes to ...": subject "user's daughter")
    the name the episode gives that relation ("my daughter Mia"), when it gives one only."""
    named: dict[tuple[str, str], set[str]] = {}
    for fact in found:
        if not fact.speaker and fact.attribute and fact.value:
            named.setdefault((fact.subject, fact.attribute), set()).add(fact.value)
    for fact in found:
        one = fact.relative and fact.relative not in _GROUPS  # "my kids" are not the one kid named
        names = named.get((fact.speaker, _relation_attribute(fact.relative)), set()) if one else set()
        if len(names) == 1:
            (name,) = names
            fact.entities = [(name if n == fact.subject else n, k) for n, k in fact.entities]
            fact.subject = name


def _confirm_names(found: list[_Found]) -> None:
    """Drop names seen only as a clause's first word ("Finding", "Last"), unless the
    episode also writes them capitalised mid-clause, as a speaker or as a value."""
    confirmed = {
        name.casefold()
        for fact in found
        for name, _ in fact.entities
        if name.casefold() not in fact.tentative
    }
    for fact in found:
        fact.entities = [
            (name, kind)
            for name, kind in fact.entities
            if name.casefold() not in fact.tentative or name.casefold() in confirmed
        ]


def _entities(found: list[_Found]) -> tuple[list[ExtractedEntity], Counter[str]]:
    """The episode's entities, each with its most specific kind and, unless it is a
    speaker, the first fact that names it as its summary: the fact's whole text, so
    memoryapp.semantic can tell the summary quotes that fact and replace it once the fact
    is invalidated or deleted."""
    speakers = {(f.speaker or f.subject).casefold() for f in found}
    kinds: dict[str, ExtractedEntity] = {}
    mentions: Counter[str] = Counter()
    for fact in found:
        for name, kind in fact.entities:
            key = name.casefold()
            mentions[key] += 1
            known = kinds.get(key)
            if known is None or (known.kind == "thing" and kind != "thing"):
                summary = known.summary if known else ("" if key in speakers else fact.text)
                kinds[key] = ExtractedEntity(
                    name=known.name if known else name, kind=kind, summary=summary
                )
    return list(kinds.values()), mentions


def _title(entities: list[ExtractedEntity], mentions: Counter[str], found: list[_Found]) -> str:
    speakers = {(f.speaker or f.subject).casefold() for f in found}
    ranked = sorted(
        (e for e in entities if e.name.casefold() not in speakers),
        key=lambda e: -mentions[e.name.casefold()],
    )
    if ranked:
        return ", ".join(e.name for e in ranked[:3])[:200]
    if found:
        return " ".join(found[0].text.split()[:8])[:200]
    return "Conversation"


# --- corrections ----------------------------------------------------------------------

# A correction "X, not Y" without a verb of its own ("Sorry, it's Porto, not Lisbon", "I
# meant Porto, not Lisbon", "a Corolla, not a Civic", "not Maria but Mara"): X and Y are a
# few words each.
_FIX_OPENER = r"(?:(?:sorry|oops|no|nope|wait|correction|my bad|actually|oh|sorry no|no wait)\s*[,:!.\u2014-]*\s*)*"
_FIX_LEAD = (
    r"(?:(?:it's|it is|it was|that's|that is|that was|they're|they are|he's|she's|I meant|I mean|make that|"
    r"(?:it )?should be|I should have said)\s+)?"
)
_ARTICLE = r"(?:a |an |the )?"
_FIX_WORDS = r"[\w'-]+(?: [\w'-]+){0,3}"
_CORRECTION = re.compile(
    rf"^{_FIX_OPENER}(?:{_FIX_LEAD}{_ARTICLE}(?P<new>{_FIX_WORDS}),?\s+not\s+{_ARTICLE}(?P<old>{_FIX_WORDS})"
    rf"|not\s+{_ARTICLE}(?P<old2>{_FIX_WORDS}),?\s+(?:but\s+)?{_ARTICLE}(?P<new2>{_FIX_WORDS}))\s*[.!]*$",
    re.IGNORECASE,
)
# An X that is a subject or a verb, not a value: "I'm not a nurse" denies, it corrects
# nothing (it stored job "I'm"); "I live in Milan, not Rome" states X itself (_NOT_TAIL).
_NO_FIX = re.compile(
    r"^(?:i|i'm|im|i've|i'd|i'll|we|we're|you|you're|he|he's|she|she's|they|they're|it|it's|that|"
    r"that's|this|there|there's)(?:\s|$)|\b(?:am|is|are|was|were|do|does|did|have|has|had|don't|doesn't|"
    r"can|can't|will|won't)$",
    re.IGNORECASE,
)
# "X, not Y" closing a clause that states X ("I'm allergic to peanuts, not shellfish").
_NOT_TAIL = re.compile(rf",?\s+not\s+{_ARTICLE}(?P<old>{_FIX_WORDS})\s*[.!]*$", re.IGNORECASE)


def _naming(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w'-]){re.escape(name)}(?![\w'-])", re.IGNORECASE)


def _corrected(message: TranscriptMessage, found: list[_Found]) -> list[_Found]:
    """The facts a message's bare corrections restate ("It's Porto, not Lisbon" after "My
    sister lives in Lisbon": "The user's sister lives in Porto."): the latest fact of the
    episode its speaker stated whose value names Y, with X in its place, so it replaces
    that fact (single-valued: memoryapp.semantic's rule; else by ``retires`` naming Y).
    A correction whose Y no fact of the episode names says nothing here."""
    speaker, body = speaker_of(message)
    out: list[_Found] = []
    for clause in clauses(body) if speaker is not None else []:
        match = _CORRECTION.match(clause)
        if match is None:
            continue
        new, old = (match.group("new"), match.group("old")) if match.group("new") else (match.group("new2"), match.group("old2"))
        if _NO_FIX.search(new):
            continue
        named = _naming(old)
        target = next(
            (f for f in reversed(found) if (f.speaker or f.subject) == speaker and f.attribute and named.search(f.value)),
            None,
        )
        text = named.sub(new, target.text, count=1) if target is not None else ""
        if target is None or new.casefold() == old.casefold() or text == target.text:
            continue
        value = named.sub(new, target.value)
        entities = [(named.sub(new, n), k) for n, k in target.entities]
        retires, when = ((), "") if target.single else ((target.attribute,), old)
        out.append(
            replace(target, text=text, value=value, entities=entities, tentative=set(), sequence=message.sequence_number,
                    retires=retires, retires_when=when)
        )
    return out


def _without_corrections(facts: list[_Found], fixes: list[_Found]) -> list[_Found]:
    """``facts`` less the plain statement of a correction ``fixes`` restated ("The user
    meant Porto, not Lisbon.")."""
    def restated(fact: _Found) -> bool:
        said = re.search(r"\bnot\b", fact.text, re.IGNORECASE) is not None
        return not fact.attribute and said and any(_naming(fix.value).search(fact.text) for fix in fixes)

    return [f for f in facts if not restated(f)]


def _not_tail(clause: str, facts: list[_Found]) -> None:
    """A clause stating X, "not Y" ("I'm allergic to peanuts, not shellfish") ends its
    subject's fact of the same attribute naming Y where the attribute holds several values
    (the single-valued rule ends it otherwise)."""
    tail = _NOT_TAIL.search(clause)
    if tail is None:
        return
    old = tail.group("old")
    for fact in facts:
        if fact.attribute and not fact.single and not fact.retires_when and not _naming(old).search(fact.value):
            fact.retires, fact.retires_when = (*fact.retires, fact.attribute), old


def extract_episode(messages: list[TranscriptMessage]) -> EpisodeExtraction:
    """Title, summary, facts and entities of one episode (see the module docstring)."""
    found: list[_Found] = []
    seen: set[tuple[str, str]] = set()
    previous = ""
    for message in messages:
        fixes = _corrected(message, found)
        for fact in [*_without_corrections(facts_in(message, previous), fixes), *fixes]:
            key = (fact.subject.casefold(), fact.text.casefold())
            if key not in seen:
                seen.add(key)
                found.append(fact)
        sentences = clauses(speaker_of(message)[1])
        previous = sentences[-1] if sentences else previous
    _settle_losses(found)
    _confirm_names(found)
    _name_relatives(found)
    entities, mentions = _entities(found)
    best = sorted(range(len(found)), key=lambda i: (-found[i].weight, i))[:SUMMARY_LINES]
    lines = [found[i] for i in sorted(best)]
    summary = "\n".join(f"- {f.text}" for f in lines)
    if not lines:
        summary = "Nothing about the people in this conversation was stated."
    facts = [
        ExtractedFact(
            text=f.text,
            subject=f.subject,
            attribute=f.attribute,
            value=f.value,
            single_valued=f.single,
            entities=tuple(dict.fromkeys(name for name, _ in f.entities)),
            source_sequences=(f.sequence,),
            retires=f.retires,
            retires_when=f.retires_when,
            event=f.value.casefold() in _EVENT_VALUES,
        )
        for f in found
    ]
    consumed = sum(count_tokens(m.content) for m in messages)
    return EpisodeExtraction(
        title=_title(entities, mentions, found),
        summary=summary,
        quoted_sequences=tuple(dict.fromkeys(f.sequence for f in lines)),
        facts=facts,
        entities=entities,
        model=MODEL_NAME,
        usage=Usage(input_tokens=consumed, output_tokens=count_tokens(summary)),
    )

"""Semantic memory: facts and entities, their lineage, and search over them.

Spec 000 ("Relationship to the other layers"): facts and entities are extracted from the
raw message rows of an episode's range (memoryapp.episodic runs the job and calls
facts_store inside its one transaction). DESIGN.md sections 4-5 give the shapes.

Lineage rules (facts_store):
- A fact with the same subject and attribute as a current fact whose value only
  **restates** it is a **reworded duplicate** (restates): the later statement's value
  words (filler aside, plurals folded) are the earlier one's, or fewer of them ("a Prius
  now" after "Toyota Prius": a shorthand). It is merged into the current fact (its
  source messages are added), never stored twice and never treated as a contradiction.
  A later value with a word the earlier one lacks is not a duplicate, even if it
  contains the earlier one: "senior engineer" after "engineer" is a promotion, "Toyota
  Prius" after "Prius" more specific, both new values. A fact without an attribute is a
  duplicate when its words (stop words aside) are those of a current fact of its subject.
- A fact with the same subject and a **single-valued** attribute but another value
  **invalidates** the current one: the older fact gets ``invalidated_at`` (the newer
  fact's ``valid_from``: when it stopped being true) and ``invalidated_by``, and is kept
  for audit. If the stored fact is the newer one (messages extracted out of order), the
  new fact is stored already invalidated by it.
- A change of state may end other single-valued attributes as well
  (ExtractedFact.retires: quitting a job ends the title and the employer): their
  current facts stated no later than it are invalidated by it in the same way; with
  ``retires_when`` only if one of them has that value (its words name it: "Acme" and
  "Acme Corp"; a word's derived forms are one word, "nursing" and "nurse": word_stem);
  a multi-valued one of them ends only if its own value names it ("Rex died" ends "dog:
  Rex", not the other dogs), the new fact's own attribute included when it is
  multi-valued ("Mara, not Maria" ends "sister: Maria", not the other sisters). Of one
  message's facts, those that end others only by naming them are stored after the rest,
  so a new value stated beside one replaces the old value itself ("I sold the Civic, I
  drive a Prius now": the Civic is replaced by the Prius, which recall then brings in for
  it; the sale has nothing left to end).
- Deleting a fact removes it and its search-index row at once (fact_delete); a fact it
  had invalidated is current again unless a newer current fact invalidates it
  (invalidations_release, the same for a thread's or a dataset's facts).
- An entity's summary never outlives the fact it quotes: when a fact stops being current
  (invalidated or deleted), an entity whose summary is that fact's text gets the text of
  the newest current fact that mentions it, or "" (summaries_refresh, in the same
  transaction). A summary that is no fact's text (a model wrote it) is left alone.
- A derived summary follows the newest fact: when a job links facts to an entity whose
  summary is empty or a fact's text, it becomes the text of the entity's newest current
  fact (summaries_track, same transaction); the ``user`` entity excepted. A summary a
  model gives for an entity replaces the one it had (EntityBook.resolve).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import (
    Case,
    Count,
    Exists,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from memoryapp import events
from memoryapp.errors import FactNotFound, ThreadNotFound
from memoryapp.llm.port import ExtractedEntity, ExtractedFact
from memoryapp.models import Entity, Episode, Fact, Message, Project, Thread
from memoryapp.paging import cursor_decode, cursor_encode, cursor_uuid, keyset_page
from memoryapp.validation import path_id

FACT_FTS = "memoryapp_fact_fts"
# PostgreSQL's 'english' with accents folded (migration 0019), like SQLite's FTS5 tables.
PG_SEARCH_CONFIG = "memoryapp_english"
LIST_LIMIT_MAX = 100

_WORD = re.compile(r"\w+", re.UNICODE)
# Words that do not tell two values or two statements apart.
_FILLER_TEXT = (
    "a an the my our your his her their its this that some now currently still new "
    "just really also very is are was were be been to of and in on at for with"
)
_FILLER = frozenset(_FILLER_TEXT.split())


# --- normalisation ----------------------------------------------------------------------


def entity_key(name: str) -> str:
    """The case-folded, whitespace-collapsed name that identifies an entity in a dataset."""
    return " ".join(name.split()).casefold()[:200]


def value_key(text: str) -> str:
    """The words of ``text`` that carry meaning, lower-cased, in order (for comparing
    values: "a Toyota Prius now" -> "toyota prius")."""
    words = [w for w in _WORD.findall(text.casefold()) if w not in _FILLER]
    return " ".join(words)[:500]


def text_key(text: str) -> str:
    """The sorted distinct meaningful words of a statement: equal for rewordings that only
    reorder words or change filler ("The user sold the Civic." / "the user sold a civic")."""
    return " ".join(sorted(set(value_key(text).split())))[:500]


def values_match(a: str, b: str) -> bool:
    """Whether two value keys name the same thing: one's words contain the other's
    ("acme" and "acme corp"; for naming a thing, not for telling values apart), a word
    and its derived forms one word ("nursing" and "nurse", "teaching" and "high school
    teacher", "law" and "lawyer": word_stem)."""
    left, right = {word_stem(w) for w in a.split()}, {word_stem(w) for w in b.split()}
    return bool(left and right) and (left <= right or right <= left)


# Endings that make a field or a doer of one root ("nursing", "teacher", "pharmacist").
_SUFFIXES = ("ing", "ism", "ist", "ian", "ant", "ent", "ry", "er", "or")


def word_stem(word: str) -> str:
    """The root of ``word`` (lower case, five letters or more; a shorter one stays whole,
    so names like "Jan" and "Jane" stay apart): a plural's "s", then up to two endings of
    a field or a doer (_SUFFIXES), then a final "e" or "y", never leaving fewer than three
    letters. "nursing", "nurse" and "nurses" -> "nurs"; "lawyer" -> "law"; "engineering"
    and "engineer" -> "engin"; "dentistry" and "dentist" -> "dent"; "acme" stays."""
    if len(word) < 5:
        return word
    if word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    for _ in range(2):
        suffix = next((s for s in _SUFFIXES if word.endswith(s) and len(word) - len(s) >= 3), "")
        if not suffix:
            break
        word = word[: -len(suffix)]
    if word.endswith(("e", "y")) and len(word) > 3:
        word = word[:-1]
    return word


def _value_words(key: str) -> set[str]:
    # A plural and its singular are one word of a value ("dogs", "dog").
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in key.split()
    }


def restates(later: str, earlier: str) -> bool:
    """Whether a value stated later (value key ``later``) only restates the value stated
    earlier (``earlier``): its words, plurals folded, are all among the earlier one's
    ("prius" after "toyota prius", "toyota prius" after "prius toyota"). A later value
    with a word of its own is new information, more specific or a change ("senior
    engineer" after "engineer"), never a restatement."""
    words = _value_words(later)
    return bool(words) and words <= _value_words(earlier)


# --- entities ---------------------------------------------------------------------------


class EntityBook:
    """The entities of one dataset, loaded once, for one extraction job's transaction.

    ``resolve(name, kind, summary)`` returns the dataset's entity called ``name``,
    creating it if new. A name whose words contain, or are contained in, exactly one
    existing entity's name of a compatible kind ("Civic" and "Honda Civic", "Mara" and
    "Mara Jones") is that entity. A more specific ``kind`` than "thing" is recorded. A
    ``summary`` a model wrote (not the text of one of the job's facts, ``fact_texts``)
    replaces the entity's summary, so the newest one the model gave stands; a summary that
    is a fact's text is left to summaries_track, which gives the entity its newest current
    fact once the job's facts are stored.
    """

    def __init__(
        self, *, project: Project, dataset: str, fact_texts: Iterable[str] = ()
    ) -> None:
        self.project, self.dataset = project, dataset
        self.fact_texts = {t.strip() for t in fact_texts}
        self.by_key = {e.key: e for e in Entity.objects.filter(project=project, dataset=dataset)}

    def resolve(self, name: str, kind: str = "thing", summary: str = "") -> Entity:
        key = entity_key(name)
        entity = self.by_key.get(key) or self._by_words(key, kind)
        summary = summary.strip()
        if summary in self.fact_texts:  # a fact's text: summaries_track's to give
            summary = ""
        if entity is None:
            entity = Entity.objects.create(
                project=self.project,
                dataset=self.dataset,
                name=" ".join(name.split())[:200],
                key=key,
                kind=kind[:50] or "thing",
                summary=summary,
            )
            self.by_key[key] = entity
            return entity
        changed: list[str] = []
        if entity.kind == "thing" and kind and kind != "thing":
            entity.kind = kind[:50]
            changed.append("kind")
        if summary and summary != entity.summary:
            entity.summary = summary
            changed.append("summary")
        if changed:
            entity.save(update_fields=changed)
        return entity

    def _by_words(self, key: str, kind: str) -> Entity | None:
        words = set(key.split())
        if not any(len(w) >= 3 for w in words):
            return None
        matches = [
            e
            for e in self.by_key.values()
            if (words <= set(e.key.split()) or set(e.key.split()) <= words)
            and (e.kind == kind or "thing" in (e.kind, kind))
        ]
        return matches[0] if len(matches) == 1 else None


def entity_list(
    *, project: Project, dataset: str | None = None, limit: int = 50, cursor: str | None = None
) -> tuple[list[Entity], str | None]:
    """``(entities, next_cursor)`` of ``project`` (one dataset, or all), by name whatever
    its case (the case-folded ``key``: "anna", "Bob", "user", "Zoe"; a letter beyond
    ASCII sorts by its code point, after "z"); each has
    ``fact_count`` (serializers.entity_to_dict reads it): the current facts that are
    about it or mention it. Raises InvalidInput
    for a malformed cursor."""
    qs = Entity.objects.filter(project=project)
    if dataset is not None:
        qs = qs.filter(dataset=dataset)
    if cursor:
        key, last_id = cursor_decode(cursor, size=2)
        qs = qs.filter(Q(key__gt=key) | Q(key=key, id__gt=cursor_uuid(last_id)))
    qs = qs.annotate(
        fact_count=Count("facts", filter=Q(facts__invalidated_at__isnull=True), distinct=True)
    )
    rows: list[Entity] = list(qs.order_by("key", "id")[: limit + 1])
    next_cursor = None
    if len(rows) > limit:
        last = rows[limit - 1]
        next_cursor = cursor_encode([last.key, str(last.id)])
    return rows[:limit], next_cursor


#: The entity of the unnamed user (an unlabelled user message speaks for it).
USER_KEY = "user"


def _newest_fact_text() -> QuerySet[Fact, Any]:
    """The text of the newest current fact linked to the outer entity (a subquery of one
    row, for summaries_track and summaries_refresh)."""
    return (
        Fact.objects.current()
        .filter(entities=OuterRef("pk"))
        .order_by("-valid_from", "-created", "-id")
        .values("text")[:1]
    )


def summaries_track(*, entity_ids: Iterable[object]) -> int:
    """Give each of ``entity_ids`` whose summary is derived (empty, or the text of a fact
    linked to it) the text of the newest current fact linked to it; return how many rows
    the UPDATE touched. A model-written summary (no fact's text) is left alone, and so is
    the ``user`` entity: the subject of nearly every fact, it would take whichever came
    last ("The user eats it every Friday."), so it keeps "" or what a model wrote, and its
    profile is its facts (GET /semantic/facts?entity=user). One UPDATE; call it in the
    transaction that linked new facts, after the links are written."""
    ids = list(entity_ids)
    if not ids:
        return 0
    newest = _newest_fact_text()
    quoted = Fact.objects.filter(entities=OuterRef("pk"), text=OuterRef("summary"))
    return (
        Entity.objects.filter(pk__in=ids)
        .exclude(key=USER_KEY)
        .filter(Q(summary="") | Exists(quoted))
        .update(summary=Coalesce(Subquery(newest), Value("")), updated=timezone.now())
    )


def summaries_refresh(*, project_id: int, dataset: str, texts: Iterable[str]) -> int:
    """Give each entity of ``dataset`` whose summary is one of ``texts`` (the texts of
    facts that just stopped being current: invalidated or deleted) the text of the newest
    current fact that mentions it, or "" when none is left (always "" for the user);
    return how many entities changed. One UPDATE; call it inside the transaction that invalidated or deleted the
    facts, after it did, so no summary ever quotes a fact that is gone."""
    gone = {t for t in texts if t}
    if not gone:
        return 0
    newest = _newest_fact_text()
    # The user never takes a fact's text as its summary (summaries_track): it goes empty.
    replacement = Case(
        When(key=USER_KEY, then=Value("")),
        default=Coalesce(Subquery(newest), Value("")),
        output_field=TextField(),
    )
    return Entity.objects.filter(project_id=project_id, dataset=dataset, summary__in=gone).update(
        summary=replacement, updated=timezone.now()
    )


# --- facts: storing -----------------------------------------------------------------------


@dataclass
class FactsStored:
    """What facts_store did: facts created, merged into an existing one, invalidated."""

    created: list[Fact] = field(default_factory=list)
    merged: list[Fact] = field(default_factory=list)
    invalidated: list[Fact] = field(default_factory=list)


def _sources(fact: ExtractedFact, messages: dict[int, Message]) -> list[Message]:
    cited = [messages[s] for s in dict.fromkeys(fact.source_sequences) if s in messages]
    if cited:
        return cited
    # No usable citation: the message sharing the most words with the fact.
    words = set(value_key(fact.text).split())
    best = max(
        messages.values(),
        key=lambda m: (len(words & set(value_key(m.content).split())), -m.sequence_number),
        default=None,
    )
    return [best] if best is not None else []


class _Ledger:
    """The dataset's current facts, loaded once, and what this job changes: new facts,
    merges, invalidations and entity links, written in bulk by ``flush``."""

    def __init__(self, episode: Episode) -> None:
        self.episode = episode
        self.current: dict[tuple[object, str], list[Fact]] = {}
        for fact in Fact.objects.current().filter(
            project=episode.project, dataset=episode.dataset
        ):
            self.current.setdefault((fact.subject_id, fact.attribute), []).append(fact)
        self.links: dict[object, set[object]] = {}
        self.stored = FactsStored()
        self.new: list[Fact] = []
        self.changed: dict[object, Fact] = {}

    def duplicate(
        self, subject: Entity, attribute: str, key: str, valid_from: datetime
    ) -> Fact | None:
        """The current fact that a statement of ``key`` at ``valid_from`` restates (the
        later of the two restating the earlier), or None."""
        for fact in self.current.get((subject.pk, attribute), []):
            if not attribute:
                same = fact.value_key == key
            elif fact.valid_from <= valid_from:
                same = restates(key, fact.value_key)
            else:  # stored out of order: the current fact is the later statement
                same = restates(fact.value_key, key)
            if same:
                return fact
        return None

    def merge(self, fact: Fact, sources: list[Message], entities: list[Entity]) -> None:
        ids = list(fact.source_message_ids)
        ids.extend(str(m.id) for m in sources if str(m.id) not in ids)
        if ids != fact.source_message_ids:
            fact.source_message_ids = ids
            self.changed[fact.pk] = fact
        self.links.setdefault(fact.pk, set()).update(e.pk for e in entities)
        self.stored.merged.append(fact)

    def add(self, fact: Fact, entities: list[Entity]) -> None:
        # An event is no value of its attribute: nothing newer replaces it.
        others = [o for o in self.current.get((fact.subject_id, fact.attribute), []) if not o.event]
        self.new.append(fact)
        self.links[fact.pk] = {e.pk for e in entities}
        self.stored.created.append(fact)
        if fact.single_valued and others:
            self.supersede(fact, others)
        if fact.invalidated_at is None:
            self.current.setdefault((fact.subject_id, fact.attribute), []).append(fact)

    def supersede(self, new: Fact, others: list[Fact]) -> None:
        """The single-valued rule between ``new`` and current facts ``others`` (same
        subject and attribute, other values)."""
        newer = [o for o in others if o.valid_from > new.valid_from]
        if newer and new.event:  # it happened before them: it ends only what is older
            others = [o for o in others if o.valid_from <= new.valid_from]
        elif newer:
            later = self._next_later(new, newer)
            new.invalidated_at, new.invalidated_by = later.valid_from, later
            new.invalidation_found_at = timezone.now()
            self.stored.invalidated.append(new)
            self._re_end(new)
            return
        for old in others:
            self._invalidate(old, new)

    def _re_end(self, new: Fact) -> None:
        """Facts already replaced that ``new`` (stored out of order) now ends sooner: those
        of its subject and attribute stated before it whose replacement came after it
        (Paris of 2019 was ended by Oslo of today; Rome of 2021 imported later ends it in
        2021)."""
        earlier = Fact.objects.filter(
            project_id=new.project_id, dataset=new.dataset, subject_id=new.subject_id,
            attribute=new.attribute, single_valued=True, event=False,
            valid_from__lt=new.valid_from, invalidated_at__gt=new.valid_from,
        ).exclude(value_key=new.value_key)
        made = [
            f for f in self.new
            if f is not new and f.subject_id == new.subject_id and f.attribute == new.attribute
            and not f.event and f.valid_from < new.valid_from and f.invalidated_at is not None
            and f.invalidated_at > new.valid_from and f.value_key != new.value_key
        ]
        for old in [*earlier, *made]:
            old.invalidated_at, old.invalidated_by = new.valid_from, new
            old.invalidation_found_at = timezone.now()
            self.changed[old.pk] = old
            self.stored.invalidated.append(old)

    def _next_later(self, new: Fact, newer: list[Fact]) -> Fact:
        """The statement that ended ``new``, stated out of order (an import of old history):
        the earliest of the subject's facts of its attribute stated after it with another
        value, current (``newer``) or already replaced ("Paris" of 2019 imported after
        "Rome" of 2020 and "Oslo" of today is ended by Rome in 2020, not by Oslo today)."""
        stored = Fact.objects.filter(
            project_id=new.project_id, dataset=new.dataset, subject_id=new.subject_id,
            attribute=new.attribute, single_valued=True, event=False, valid_from__gt=new.valid_from,
        ).exclude(value_key=new.value_key).order_by("valid_from", "created")[:1]
        made = [
            f for f in self.new
            if f is not new and f.subject_id == new.subject_id and f.attribute == new.attribute
            and not f.event and f.valid_from > new.valid_from and f.value_key != new.value_key
        ]
        return min([*newer, *stored, *made], key=lambda f: f.valid_from)

    def retire(self, new: Fact, attributes: Iterable[str], when: str) -> None:
        """ExtractedFact.retires: the current single-valued facts of ``new``'s subject with
        one of ``attributes`` stated no later than ``new`` are invalidated by it; with
        ``when``, only if one of them has that value (values_match)."""
        if new.invalidated_at is not None:
            return
        ended = [
            old
            for attribute in dict.fromkeys(" ".join(a.lower().split()) for a in attributes)
            if attribute and attribute != new.attribute
            for old in self.current.get((new.subject_id, attribute), [])
            if old.single_valued and not old.event and old.valid_from <= new.valid_from
        ]
        if when and not any(values_match(value_key(when), old.value_key) for old in ended):
            ended = []
        for old in ended + self._naming(new, attributes, when):
            self._invalidate(old, new)

    def _naming(self, new: Fact, attributes: Iterable[str], when: str) -> list[Fact]:
        """The current multi-valued facts of ``new``'s subject with one of ``attributes``
        whose value names ``when`` (a loss ends "dog: Rex" and no other dog) or whose
        attribute is ``when`` ("I don't have the dog anymore" ends "dog: Rex"); its own
        attribute too when ``new`` is multi-valued (a correction, "Mara, not Maria", ends
        "sister: Maria" and no other sister)."""
        if not when:
            return []
        return [
            old
            for attribute in dict.fromkeys(" ".join(a.lower().split()) for a in attributes)
            if attribute and (attribute != new.attribute or not new.single_valued)
            for old in self.current.get((new.subject_id, attribute), [])
            if old is not new
            and not old.single_valued
            and old.valid_from <= new.valid_from
            and (values_match(value_key(when), old.value_key) or " ".join(when.lower().split()) == attribute)
        ]

    def _invalidate(self, old: Fact, new: Fact) -> None:
        old.invalidated_at, old.invalidated_by = new.valid_from, new
        old.invalidation_found_at = timezone.now()
        self.current[(old.subject_id, old.attribute)].remove(old)
        self.changed[old.pk] = old
        self.stored.invalidated.append(old)

    def flush(self) -> None:
        Fact.objects.bulk_create(self.new)
        fresh = {f.pk for f in self.new}
        old = [f for pk, f in self.changed.items() if pk not in fresh]
        if old:
            Fact.objects.bulk_update(
                old,
                ["source_message_ids", "invalidated_at", "invalidated_by", "invalidation_found_at"],
            )
        through = Fact.entities.through
        Fact.entities.through.objects.bulk_create(
            [
                through(fact_id=fact_id, entity_id=entity_id)
                for fact_id, entity_ids in self.links.items()
                for entity_id in entity_ids
            ],
            ignore_conflicts=True,
        )
        summaries_refresh(
            project_id=self.episode.project_id,
            dataset=self.episode.dataset,
            texts=[f.text for f in self.stored.invalidated],
        )
        summaries_track(entity_ids={e for ids in self.links.values() for e in ids})


def _store_one(
    *,
    ledger: _Ledger,
    book: EntityBook,
    extracted: ExtractedFact,
    messages: dict[int, Message],
) -> None:
    episode = ledger.episode
    sources = _sources(extracted, messages)
    if not sources or not extracted.text.strip():
        return
    subject = book.resolve(extracted.subject or "user", "person")
    mentioned = [subject] + [
        book.resolve(name)
        for name in dict.fromkeys(extracted.entities)
        if name.strip() and entity_key(name) != subject.key
    ]
    attribute = " ".join(extracted.attribute.lower().split())[:100]
    key = value_key(extracted.value) if attribute else text_key(extracted.text)
    valid_from = max(m.created_at for m in sources)
    duplicate = ledger.duplicate(subject, attribute, key, valid_from)
    if duplicate is not None:
        ledger.merge(duplicate, sources, mentioned)
        return
    fact = Fact(
        id=uuid.uuid4(),
        project=episode.project,
        dataset=episode.dataset,
        episode=episode,
        thread_id=episode.thread_id,
        text=extracted.text.strip()[:2000],
        subject=subject,
        attribute=attribute,
        value=extracted.value.strip()[:500] if attribute else "",
        value_key=key,
        single_valued=bool(attribute) and extracted.single_valued,
        event=bool(attribute) and extracted.event,
        source_message_ids=[str(m.id) for m in sources],
        valid_from=valid_from,
        created=timezone.now(),
    )
    ledger.add(fact, mentioned)
    ledger.retire(fact, extracted.retires, extracted.retires_when)


def facts_store(
    *,
    episode: Episode,
    facts: Sequence[ExtractedFact],
    entities: Sequence[ExtractedEntity],
    messages: dict[int, Message],
) -> FactsStored:
    """Store what extraction found in ``episode``'s range, applying the lineage rules of
    the module docstring. ``messages`` are the range's raw rows by sequence number: a
    fact's ``source_sequences`` outside them are ignored (a fact citing none gets the
    message sharing most words with it). Must run inside the caller's transaction (the
    episode job's): it writes nothing on its own if that transaction rolls back. A few
    queries whatever the number of facts: the dataset's entities and current facts are
    read once and the new rows written in bulk.
    """
    book = EntityBook(
        project=episode.project, dataset=episode.dataset, fact_texts=(f.text for f in facts)
    )
    for entity in entities:
        if entity.name.strip():
            book.resolve(entity.name.strip(), entity.kind, entity.summary)
    ledger = _Ledger(episode)
    # One message's facts that end others only by naming them (retires_when) go last, so a
    # value stated beside them is what replaces the old one (module docstring).
    ordered = sorted(
        facts,
        key=lambda f: (
            min((s for s in f.source_sequences if s in messages), default=0),
            bool(f.retires_when),
        ),
    )
    for extracted in ordered:
        _store_one(ledger=ledger, book=book, extracted=extracted, messages=messages)
    ledger.flush()
    return ledger.stored


# --- facts: reading and deleting -----------------------------------------------------------


def _uuid(value: str | uuid.UUID) -> uuid.UUID:
    return path_id(value, FactNotFound)


def _facts_qs() -> QuerySet[Fact]:
    return Fact.objects.select_related("subject").prefetch_related("entities")


def fact_list(
    *,
    project: Project,
    dataset: str | None = None,
    entity: str | None = None,
    thread_id: uuid.UUID | None = None,
    include_invalidated: bool = False,
    limit: int = 50,
    cursor: str | None = None,
) -> tuple[list[Fact], str | None]:
    """``(facts, next_cursor)`` of ``project``, newest ``valid_from`` first.

    ``dataset`` narrows to one user scope; ``entity`` (a name, case-insensitive) to facts
    about it or mentioning it; ``thread_id`` to the facts extracted from that thread's
    messages; invalidated facts only with ``include_invalidated``. Raises ThreadNotFound
    when ``thread_id`` is not the project's thread (as episodic.episode_list does),
    InvalidInput for a malformed cursor.
    """
    qs = _facts_qs().filter(project=project)
    if dataset is not None:
        qs = qs.filter(dataset=dataset)
    if thread_id is not None:
        if not Thread.objects.filter(pk=thread_id, project=project).exists():
            raise ThreadNotFound()
        qs = qs.filter(thread_id=thread_id)
    if not include_invalidated:
        qs = qs.filter(invalidated_at__isnull=True)
    if entity is not None:
        key = entity_key(entity)
        qs = qs.filter(Q(subject__key=key) | Q(entities__key=key)).distinct()
    return keyset_page(qs, time_field="valid_from", cursor=cursor, limit=limit)


def fact_get(*, project: Project, fact_id: str | uuid.UUID) -> Fact:
    """The project's fact ``fact_id``. Raises FactNotFound for a malformed id, a missing
    fact, or another project's fact alike."""
    pk = fact_id if isinstance(fact_id, uuid.UUID) else _uuid(str(fact_id))
    fact = _facts_qs().filter(project=project, pk=pk).first()
    if fact is None:
        raise FactNotFound()
    return fact


def invalidations_release(*, deleted: QuerySet[Fact]) -> list[Fact]:
    """Settle the facts that the facts ``deleted`` (about to be deleted) had invalidated,
    so none is left invalidated by nothing; return them. Each becomes current again,
    unless a current fact outside ``deleted`` with the same subject and a single-valued
    attribute is newer than it: then it is invalidated by the earliest such fact (at its
    ``valid_from``, when the older statement stopped being true). Facts released
    together are settled newest first, so an older one is invalidated by a newer one
    made current again here, never two current values of one single-valued attribute.
    Call inside the deleting transaction, before the delete (the delete clears
    ``invalidated_by``, after which nothing tells such a fact from any other)."""
    gone = deleted.values("pk")  # a subquery: a dataset's facts can be many
    orphans = list(
        Fact.objects.filter(invalidated_by_id__in=gone)
        .exclude(pk__in=gone)
        .order_by("-valid_from", "-created", "-id")
    )
    keyed = [f for f in orphans if f.attribute and f.subject_id is not None]
    rivals: dict[tuple[object, str], list[Fact]] = {}
    if keyed:
        for fact in (
            Fact.objects.current()
            .filter(
                single_valued=True,
                subject_id__in={f.subject_id for f in keyed},
                attribute__in={f.attribute for f in keyed},
            )
            .exclude(event=True)  # something that happened is no current value
            .exclude(pk__in=gone)
        ):
            rivals.setdefault((fact.subject_id, fact.attribute), []).append(fact)
    for fact in orphans:
        key = (fact.subject_id, fact.attribute)
        newer = [r for r in rivals.get(key, []) if fact.attribute and r.valid_from > fact.valid_from]
        if newer:
            by = min(newer, key=lambda r: (r.valid_from, r.created))
            fact.invalidated_at, fact.invalidated_by = by.valid_from, by
            fact.invalidation_found_at = timezone.now()
        else:
            fact.invalidated_at, fact.invalidated_by = None, None
            fact.invalidation_found_at = None
            if fact.attribute and fact.single_valued:
                rivals.setdefault(key, []).append(fact)
    if orphans:
        Fact.objects.bulk_update(
            orphans, ["invalidated_at", "invalidated_by", "invalidation_found_at"]
        )
    return orphans


def fact_delete(*, project: Project, fact_id: str | uuid.UUID) -> None:
    """Forget one fact for good (a person's right to have one thing forgotten): the row
    and its full-text index entry go in one transaction, so recall and search stop
    returning it at once; an entity summary quoting it is replaced (summaries_refresh).
    A fact it had invalidated is current again unless a newer current fact of its
    subject and attribute invalidates it (invalidations_release); the dataset's open
    pages are told (events.dataset_changed). Raises FactNotFound."""
    with transaction.atomic():
        fact = fact_get(project=project, fact_id=fact_id)
        invalidations_release(deleted=Fact.objects.filter(pk=fact.pk))
        fact.delete()
        summaries_refresh(project_id=project.pk, dataset=fact.dataset, texts=[fact.text])
        events.dataset_changed(project_id=project.pk, dataset=fact.dataset)


# --- search -------------------------------------------------------------------------------


def _match_expression(terms: Iterable[str]) -> str:
    # Every term quoted and OR-ed: user words can never become FTS5 syntax.
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def fact_search(
    *,
    project: Project,
    dataset: str,
    terms: Sequence[str],
    limit: int = 10,
    include_invalidated: bool = False,
) -> list[tuple[Fact, float]]:
    """Facts of ``dataset`` whose text matches any of ``terms`` (plain words), best first,
    as ``(fact, score)`` with score higher-is-better (comparable within one call). Current
    facts only unless ``include_invalidated``. SQLite ranks with FTS5 bm25, PostgreSQL
    with ts_rank_cd over the GIN index of migration 0007; other databases return []."""
    terms = [t for t in terms if t.strip()]
    if not terms or limit < 1:
        return []
    if connection.vendor == "sqlite":
        ranked = _fact_search_sqlite(project, dataset, terms, limit, include_invalidated)
    elif connection.vendor == "postgresql":
        ranked = _fact_search_postgresql(project, dataset, terms, limit, include_invalidated)
    else:
        return []
    facts = _facts_qs().in_bulk([pk for pk, _ in ranked])
    return [(facts[pk], score) for pk, score in ranked if pk in facts]


def _fact_search_sqlite(
    project: Project, dataset: str, terms: Sequence[str], limit: int, invalidated: bool
) -> list[tuple[uuid.UUID, float]]:
    sql = f"""
        SELECT f.id, -bm25({FACT_FTS}) AS score
        FROM {FACT_FTS}
        JOIN memoryapp_fact AS f ON f.rowid = {FACT_FTS}.rowid
        WHERE {FACT_FTS} MATCH %s AND f.project_id = %s AND f.dataset = %s
          {"" if invalidated else "AND f.invalidated_at IS NULL"}
        ORDER BY bm25({FACT_FTS}), f.valid_from DESC
        LIMIT %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [_match_expression(terms), project.pk, dataset, limit])
        rows = cursor.fetchall()
    return [(uuid.UUID(str(row[0])), float(row[1])) for row in rows]


def _fact_search_postgresql(
    project: Project, dataset: str, terms: Sequence[str], limit: int, invalidated: bool
) -> list[tuple[uuid.UUID, float]]:
    from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

    vector = SearchVector("text", config=PG_SEARCH_CONFIG)
    search: SearchQuery | None = None
    for term in terms:
        one = SearchQuery(term, config=PG_SEARCH_CONFIG, search_type="plain")
        search = one if search is None else search | one
    assert search is not None  # terms is not empty
    qs = Fact.objects.filter(project=project, dataset=dataset).alias(document=vector)
    if not invalidated:
        qs = qs.filter(invalidated_at__isnull=True)
    rows = (
        qs.filter(document=search)
        .annotate(score=SearchRank(vector, search, cover_density=True))
        .order_by("-score", "-valid_from")
        .values_list("id", "score")[:limit]
    )
    return [(pk, float(score)) for pk, score in rows]

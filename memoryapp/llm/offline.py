"""The offline model adapter: deterministic, no network, the default with no API key.

It does not pretend to be a language model. ``summarize`` is extractive: it keeps the
sentences that carry names, numbers, dates, decisions, preferences and open questions,
keeps a short reply together with the question it answers (the answer is the fact),
carries the previous summary's content forward, and stays within the token budget.
``reply`` says plainly that it is offline and quotes the lines of its context that best
match the user's message, each with where it came from (memoryapp.llm.offline_reply).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from memoryapp import salient
from memoryapp.llm import (
    extraction_offline,
    offline_memory,
    offline_reply,
    offline_synthesis,
    summary_changes,
    summary_constraints,
    summary_info,
    tool_results,
)
from memoryapp.llm.input_tokens import input_tokens
from memoryapp.llm.port import (
    ChatMessage,
    EpisodeExtraction,
    ExtractedEntity,
    ExtractedFact,
    Extraction,
    OpenNote,
    ReplyChunk,
    Summary,
    ToolCall,
    ToolSpec,
    TranscriptMessage,
    Usage,
)
from memoryapp.tokens import count_tokens

SUMMARY_HEADER = "Summary of earlier conversation (offline extractive summary):"
#: Opened the index line earlier summaries ended with (a bare list of terms): a previous
#: summary's such line is not carried, it states nothing a reader can use.
INDEX_PREFIX = "- Also mentioned: "
#: The offline adapter's replies open with this; the summariser never folds them.
REPLY_MARK = "[offline model"
#: A sentence at least this long that repeats earlier text is an echo and not folded.
ECHO_MIN_CHARS = 20
MAX_SENTENCE_CHARS = 400
#: A message of at most this many words (and MAX_ANSWER_CHARS characters) that follows
#: another speaker's question, and is not itself a question, is that question's answer.
MAX_ANSWER_WORDS = 5
MAX_ANSWER_CHARS = 80
#: Joins a question and its answer in one line: ``- assistant: Which day? → user: Tuesday``.
ANSWER_ARROW = " → "
#: A previous summary's bullet line up to this long is carried whole (a question and its
#: answer with their roles fit); a longer one is split into sentences.
MAX_LINE_CHARS = MAX_SENTENCE_CHARS + MAX_ANSWER_CHARS + 40

_SENTENCE_SPLIT = salient.SENTENCE_SPLIT
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DATE = re.compile(
    rf"\b(?:{_MONTHS}|monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|"
    r"tomorrow|yesterday|tonight|next week|last week|weekend|\d{1,2}[:/]\d{2}|(?:19|20)\d{2})\b",
    re.IGNORECASE,
)
# One number as written: "30,000", "10:30", "3.5", "2026".
_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*")
_DECISION = re.compile(
    r"\b(?:decid\w*|chose|choose|chosen|pick\w*|will|going to|plan\w*|agree\w*|prefer\w*|"
    r"like|love|hate|want\w*|need\w*|bought|buy|ordered|book|booked|signed|promis\w*|must|"
    r"always|never|favou?rite|allerg\w*|my name|i am|i'm|i have|i live|i work|budget)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
# A short answer's first word is often the fact itself ("Alice.", "Blue, please."), which
# _NAME skips because it opens the sentence; these opening words are not names.
_LEADING_WORD = re.compile(r"[A-Z][a-z]+")
_NOT_NAMES_TEXT = (
    "a an the i it its this that these those my your our their his her we you he she they "
    "yes no yeah yep yup nope nah sure ok okay maybe not just please thanks thank oh well so "
    "and but or hi hello hey great cool nice good fine fair what which when where who why "
    "how is are was were do does did can could would will should shall let sounds perfect "
    "wow really absolutely definitely probably of in on at for to with from by about there "
    "here then now also me us them same true right exactly totally lol haha hmm"
)
_NOT_NAMES = frozenset(_NOT_NAMES_TEXT.split())
_FILLER_WORDS = (
    r"hi|hello|hey|there|thanks|thank you|thanks a lot|ok|okay|sure|great|cool|"
    r"perfect|nice|awesome|yes|yeah|no|bye|goodbye|good\s+\w+|happy to help|"
    r"you're welcome|no problem|sounds good|that sounds good(?: to me)?|got it|of course|"
    r"how can i help(?: you)?(?: today)?|good|fine|not bad|and you|you|me too|same|please|"
    r"lol|haha|wow|oh|hmm|right|true|exactly|totally|indeed|yep|yup|nope|nah|absolutely|"
    r"definitely|certainly|agreed|totally agree|congrats|congratulations|for sure|sure thing|"
    r"no worries|no doubts?|lucky you|woo+hoo+|aw+|same here|me neither|glad to hear(?: it)?"
)
# A sentence made only of these is chatter ("Great, thanks!", "Happy to help.").
_FILLER = re.compile(rf"^(?:(?:{_FILLER_WORDS})\W*)+$", re.IGNORECASE)
# Chatter addressed to someone ("Thanks, Mel!", "Hey Caroline!"): the name is only a
# form of address, not a fact worth a line.
_ADDRESSED_FILLER = re.compile(rf"^(?i:(?:(?:{_FILLER_WORDS})\W*)+)[A-Z][\w'-]*\W*$")
# A reply opening with one of these decides something: "Yes, book it.", "No." to "Shall I?".
_YES_NO = re.compile(
    r"^(?:yes|yeah|yep|yup|no|nope|nah|sure|ok|okay|of course|definitely|absolutely|"
    r"certainly|correct|not yet)\b",
    re.IGNORECASE,
)
# Questions a bare "yes"/"no" cannot answer ("How are you?" → "Good."): a filler reply to
# one of these is chatter, to any other question ("Shall I book it?" → "Yes.") a decision.
_OPEN_QUESTION = re.compile(r"^(?:what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)
_ROLES = "user|assistant|system|tool"
_ROLE_PREFIX = re.compile(rf"^(?:{_ROLES}): ")
_PAIR_LINE = re.compile(
    rf"^(?P<asker>{_ROLES}): (?P<question>.+?\?){re.escape(ANSWER_ARROW)}"
    rf"(?P<answerer>{_ROLES}): (?P<answer>.+)$"
)
_ROLE_LINE = re.compile(rf"^(?P<role>{_ROLES}): (?P<text>.*)$", re.DOTALL)
_WORD = re.compile(r"\w+", re.UNICODE)


#: Previous-summary lines score this much extra: they were already chosen once.
CARRY_BONUS = 1.0
#: Share of the budget kept for this run's messages, so a full summary cannot crowd out
#: everything new (the previous summary's lines may use the rest).
FRESH_SHARE = 1 / 3
#: Below this score a line is chatter ("ok thanks"): it is kept only when none of this
#: run's lines scores higher, so a summary is never empty of what it folded.
MIN_SCORE = 0.0
#: What each distinct name (up to MAX_NAMES) and each distinct number (up to MAX_NUMBERS)
#: adds to a sentence's score; a date or a decision adds 2 once.
NAME_SCORE = 2.0
MAX_NAMES = 3
NUMBER_SCORE = 2.0
MAX_NUMBERS = 2
#: What being the answer to a question is worth on top of the answer's own facts: the
#: same as a number or a date, so "Which day? → Tuesday" outranks the bare question.
ANSWER_SCORE = 2.0
#: What each distinct content word (memoryapp.llm.summary_info, up to MAX_CONTENT) adds
#: to a sentence's score, and what the user's statement about themselves adds once.
CONTENT_SCORE = 0.5
MAX_CONTENT = 4
SELF_SCORE = 2.0


@dataclass
class _Candidate:
    order: int
    text: str
    score: float
    carried: bool
    #: What the line is kept first for, and about what (summary_constraints.rule).
    rule: summary_constraints.Rule = summary_constraints.NO_RULE
    #: A later line corrects it (summary_changes): marked, and taken last if at all.
    changed: bool = False


def _sentences(text: str) -> list[str]:
    parts = [p.strip() for p in _SENTENCE_SPLIT.split(text) if p and p.strip()]
    return [p if len(p) <= MAX_SENTENCE_CHARS else p[: MAX_SENTENCE_CHARS - 1] + "…" for p in parts]


def _is_tool_plumbing(role: str | None, text: str) -> bool:
    """A tool line that is no result: a recorded call or an error (tool_results)."""
    return role == "tool" and tool_results.is_plumbing(text)


def _is_chatter(sentence: str) -> bool:
    """Greetings, thanks and acknowledgements, with or without a name to address."""
    return bool(
        _FILLER.match(sentence)
        or _ADDRESSED_FILLER.match(sentence)
        or summary_info.is_small_talk(sentence)
    )


def _score(sentence: str, *, answer_to: str | None = None, role: str | None = None) -> float:
    """How much ``sentence`` says: numbers, dates, decisions (a short yes/no reply
    included), names, content words and questions add up, and the user's statement about
    themselves (summary_info.is_self_disclosure) SELF_SCORE more; chatter and tool
    traffic (``role`` "tool") score -3, and so does a fragment of fewer than three words
    with none of those (a fragment that carries one scores like the fact). ``answer_to``
    is the question the sentence answers, if it does: then a one- or two-word answer's
    first word counts as a name ("Alice."), and "Yes." to a yes/no question is a
    decision, not chatter."""
    words = len(sentence.split())
    yes_no = words <= MAX_ANSWER_WORDS and _YES_NO.match(sentence) is not None
    yes_no_question = answer_to is not None and not _OPEN_QUESTION.match(answer_to)
    if _is_tool_plumbing(role, sentence) or (_is_chatter(sentence) and not (yes_no and yes_no_question)):
        return -3.0
    numbers = len(set(_NUMBER.findall(sentence)))
    date = _DATE.search(sentence) is not None
    # In a long sentence "Yeah, ..." only opens the turn; a short one decides.
    decision = yes_no or _DECISION.search(sentence) is not None
    names = len(_NAME.findall(sentence))
    if answer_to is not None and words <= 2 and (lead := _LEADING_WORD.match(sentence)):
        names += lead.group(0).casefold() not in _NOT_NAMES
    content = len(summary_info.content_words(sentence))
    own = role is not None and summary_info.is_self_disclosure(
        role, sentence, states=bool(content or numbers or names)
    )
    score = (
        NUMBER_SCORE * min(numbers, MAX_NUMBERS)
        + 2.0 * date
        + 2.0 * decision
        + NAME_SCORE * min(names, MAX_NAMES)
        + CONTENT_SCORE * min(content, MAX_CONTENT)
        + SELF_SCORE * own
    )
    if sentence.rstrip().endswith("?"):
        score += 1.5
    if words < 3 and not (numbers or date or decision or names):
        score -= 3
    return score


def _pair_score(
    question: str, answer: str, roles: tuple[str | None, str | None] = (None, None)
) -> float | None:
    """The score of ``question`` answered by the short ``answer`` (``roles``: who asked,
    who answered); None when the answer is chatter (a "Good, thanks." to "How are
    you?"), which leaves the two apart."""
    answer_score = _score(answer, answer_to=question, role=roles[1])
    if answer_score < MIN_SCORE and _is_chatter(answer):
        return None
    # A two-word question is no fragment once it is answered ("Which colour?").
    question_score = max(_score(question, role=roles[0]), 0.0) or (
        1.5 if question.endswith("?") else 0.0
    )
    return question_score + ANSWER_SCORE + max(answer_score, 0.0)


def _line_score(body: str) -> float:
    """The score of a summary line's text (after ``- ``): a question-and-answer line as a
    pair, a ``role: sentence`` line as its sentence, prose as it is."""
    pair = _PAIR_LINE.match(body)
    if pair:
        score = _pair_score(pair["question"], pair["answer"], (pair["asker"], pair["answerer"]))
        if score is not None:
            return score
    line = _ROLE_LINE.match(body)
    if line:
        return _score(line["text"], role=line["role"])
    return _score(body)


def _answer(
    message: TranscriptMessage, sentences: list[str], reply: TranscriptMessage
) -> str | None:
    """``reply``'s whole text when it is a short answer to the question that ends
    ``message`` (another speaker, at most MAX_ANSWER_WORDS words, not a question)."""
    if (
        not sentences
        or not sentences[-1].endswith("?")
        or reply.role == message.role
        or "tool" in (message.role, reply.role)
    ):
        return None
    text = " ".join(_sentences(reply.content))
    if (
        not text
        or text.endswith("?")
        or len(text) > MAX_ANSWER_CHARS
        or len(text.split()) > MAX_ANSWER_WORDS
    ):
        return None
    return text


def _is_own_reply(message: TranscriptMessage) -> bool:
    """The offline adapter's own reply (it opens with REPLY_MARK): what it quoted is
    already in memory, and its framing is no fact."""
    return message.role == "assistant" and message.content.lstrip().startswith(REPLY_MARK)


def _folded_messages(
    messages: list[TranscriptMessage], previous_summary: str | None
) -> list[TranscriptMessage]:
    """``messages`` without the offline adapter's own replies, and each message without
    its quoted lines (``> ...``) and the sentences of at least ECHO_MIN_CHARS characters
    that only echo a sentence of an earlier message or of the previous summary. A
    message left empty is dropped."""
    earlier = {_key(s) for s in _sentences(_ROLE_PREFIX.sub("", previous_summary or ""))}
    earlier |= {
        _key(_ROLE_PREFIX.sub("", line.strip()[2:]))
        for line in (previous_summary or "").splitlines()
    }
    out: list[TranscriptMessage] = []
    for message in messages:
        if _is_own_reply(message):
            continue
        if message.role == "tool" and not message.plumbing:
            out.append(message)  # a result is kept whole: tool_results.brief reads it
            continue
        sentences = _sentences(message.content)
        kept = [
            s
            for s in sentences
            if not s.startswith(">") and not (len(s) >= ECHO_MIN_CHARS and _key(s) in earlier)
        ]
        earlier.update(_key(s) for s in sentences)
        if kept:
            out.append(replace(message, content=" ".join(kept)))
    return out


def _fresh_lines(messages: list[TranscriptMessage]) -> list[tuple[str, float]]:
    """This run's lines with their scores, in conversation order: ``- <role>: <sentence>``,
    or ``- <role>: <question> → <role>: <answer>`` for a question and its short answer."""
    lines: list[tuple[str, float]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        if message.role == "tool":
            lines.extend(_tool_lines(message))
            index += 1
            continue
        sentences = _sentences(message.content)
        reply = messages[index + 1] if index + 1 < len(messages) else None
        answer = _answer(message, sentences, reply) if reply is not None else None
        pair_score = (
            _pair_score(sentences[-1], answer, (message.role, reply.role))
            if reply is not None and answer is not None
            else None
        )
        if reply is not None and answer is not None and pair_score is not None:
            lines.extend(
                (f"- {message.role}: {s}", _score(s, role=message.role)) for s in sentences[:-1]
            )
            lines.append(
                (
                    f"- {message.role}: {sentences[-1]}{ANSWER_ARROW}{reply.role}: {answer}",
                    pair_score,
                )
            )
            index += 2
            continue
        lines.extend((f"- {message.role}: {s}", _score(s, role=message.role)) for s in sentences)
        index += 1
    return lines


def _tool_lines(message: TranscriptMessage) -> list[tuple[str, float]]:
    """A tool message's lines with their scores: a result as one ``- tool: <brief>`` line
    (tool_results.brief: its key content, briefly) scored as any other speaker's
    statement; none for an agent's memory-tool traffic (``plumbing``), a call or an error:
    a line of theirs, once kept for want of anything else, would read as a result when
    carried into the next fold."""
    if message.plumbing or tool_results.is_plumbing(message.content):
        return []
    brief = tool_results.brief(message.content)
    return [(f"- tool: {brief}", _score(brief, role="tool"))] if brief else []


def _carried_lines(previous_summary: str | None) -> list[str]:
    """The previous summary as ``- ...`` lines (each bullet whole: one fact stays one
    line; the sentences of prose, as another adapter may write); an INDEX_PREFIX line of
    an earlier version is left out."""
    lines: list[str] = []
    for line in (previous_summary or "").splitlines():
        text = line.strip()
        if not text or text == SUMMARY_HEADER or text.startswith(INDEX_PREFIX):
            continue
        if text.startswith("- "):
            lines.append(f"- {text[2:].strip()}")
        else:
            lines.extend(f"- {sentence}" for sentence in _sentences(text))
    return lines


def _line_parts(text: str) -> list[tuple[str | None, str]]:
    """A ``- ...`` line's (role, sentence) parts: a question and its answer are two, a
    ``role: sentence`` line one, prose one without a role."""
    body = text[2:]
    pair = _PAIR_LINE.match(body)
    if pair:
        return [(pair["asker"], pair["question"]), (pair["answerer"], pair["answer"])]
    line = _ROLE_LINE.match(body)
    return [(line["role"], line["text"])] if line else [(None, body)]


def _part_terms(
    role: str | None, sentence: str, known: frozenset[str], *, answer: bool = False
) -> dict[str, float]:
    """What one part of a line states, term -> weight (memoryapp.llm.summary_info): its
    salient terms 1 each, its content words (``~word``) CONTENT_WEIGHT each; the content
    words SELF_WEIGHT times for the user's statement about themselves or ``answer`` to a
    question (the user's short answer is the fact, "How many of you? → Four."), all of them
    ASK_WEIGHT times for another speaker's question; nothing for tool traffic and small
    talk."""
    if _is_tool_plumbing(role, sentence) or _is_chatter(sentence):
        return {}
    found = salient.terms(sentence, known=known).all()
    named = {w.casefold() for term in found for w in term.split()}
    weights = dict.fromkeys(found, 1.0)
    for word in summary_info.content_words(sentence) - named:
        weights[f"~{word}"] = summary_info.CONTENT_WEIGHT
    own = (role == "user" and answer) or (
        role is not None and summary_info.is_self_disclosure(role, sentence, states=bool(weights))
    )
    if own:
        factor = summary_info.SELF_WEIGHT
    elif role not in (None, "user") and sentence.rstrip().endswith("?"):
        factor = summary_info.ASK_WEIGHT
    else:
        factor = 1.0
    # A name or number is worth the same whoever states it (the names-and-numbers pass
    # must not trade them for the user's words), unless the speaker only asks.
    return {
        term: weight * (factor if term.startswith("~") or factor < 1 else 1.0)
        for term, weight in weights.items()
    }


def _echoes(own: dict[str, float], new: dict[str, float]) -> bool:
    """Whether a line whose terms are ``own``, ``new`` of them not said before by someone
    else, mostly echoes: at least half of its terms said before, and no new name, number
    or date."""
    return bool(own) and 2 * len(new) <= len(own) and all(t.startswith("~") for t in new)


@dataclass
class _Terms:
    """What the candidates state (_line_terms): each one's terms with their weights, and
    the lines that mostly echo others."""

    weights: dict[int, dict[str, float]]
    echoes: set[int]


def _line_terms(candidates: list[_Candidate]) -> _Terms:
    """Each candidate's terms with their weights by its order (_part_terms): salient
    terms (memoryapp.salient: names, numbers, dates; a sentence-opening word counts as a
    name when another candidate writes it capitalised inside a sentence) and content
    words. A part said by someone other than the user counts nothing for a term an
    earlier line of another speaker stated (an echo), and a line of theirs that mostly
    echoes (_echoes: "How is Seattle treating you?" after "We moved to Seattle") is one
    of ``echoes``."""
    parts = {c.order: _line_parts(c.text) for c in candidates}
    known = salient.name_words([sentence for ps in parts.values() for _, sentence in ps])
    stated: dict[str, set[str | None]] = {}
    out = _Terms({}, set())
    for cand in candidates:
        weights: dict[str, float] = {}
        for index, (role, sentence) in enumerate(parts[cand.order]):
            own = _part_terms(role, sentence, known, answer=index == 1)
            if role not in (None, "user"):
                new = {t: w for t, w in own.items() if not stated.get(t, set()) - {role}}
                if _echoes(own, new) and len(parts[cand.order]) == 1:
                    out.echoes.add(cand.order)
                own = new
            for term, weight in own.items():
                weights[term] = max(weight, weights.get(term, 0.0))
                stated.setdefault(term, set()).add(role)
        out.weights[cand.order] = weights
    return out


def _cover(
    candidates: list[_Candidate],
    terms: _Terms,
    costs: dict[int, int],
    take: Callable[[_Candidate], bool],
    *,
    words: bool,
) -> None:
    """Greedy coverage: offer ``candidates`` to ``take`` by the weight of the terms
    (_line_terms: salient terms and content words) they state that no taken line states
    yet, per token (``costs``), best first (newer first on ties), until no candidate adds
    a term. Lazy: a line's value only drops as terms get covered, so a popped line still
    worth the most of the heap is the best. ``words``: content words only (``~...``), a
    line worth at most summary_info.MAX_WORDS_VALUE (a long sentence of advice is no
    more informative per word than a short statement), else salient terms only."""
    found = {
        order: {t: w for t, w in line_terms.items() if t.startswith("~") == words}
        for order, line_terms in terms.weights.items()
    }
    by_order = {c.order: c for c in candidates}
    covered: set[str] = set()
    cap = summary_info.MAX_WORDS_VALUE if words else math.inf
    heap = [
        (-min(sum(found[c.order].values()), cap) / costs[c.order], -c.order)
        for c in candidates
        if found[c.order]
    ]
    heapq.heapify(heap)
    while heap:
        stale, neg_order = heapq.heappop(heap)
        cand = by_order[-neg_order]
        new = [weight for term, weight in found[cand.order].items() if term not in covered]
        if not new:
            continue
        value = min(sum(new), cap) / costs[cand.order]
        if value < -stale and heap and (-value, neg_order) > heap[0]:
            heapq.heappush(heap, (-value, neg_order))
            continue
        if take(cand):
            covered.update(found[cand.order])


def _cut_to(text: str, max_tokens: int) -> str:
    """The longest word prefix of ``text`` within ``max_tokens`` (characters when not even
    one word fits)."""
    words = text.split(" ")
    kept: list[str] = []
    for word in words:
        if count_tokens(" ".join([*kept, word])) > max_tokens:
            break
        kept.append(word)
    if kept:
        return " ".join(kept)
    out = ""
    for ch in text:
        if count_tokens(out + ch) > max_tokens:
            break
        out += ch
    return out


def _key(line: str) -> str:
    return " ".join(line.casefold().split())


def _line_facts(line: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The names (case-folded), numbers and content words of a ``- ...`` line."""
    body = _ROLE_PREFIX.sub("", line[2:], count=1)
    return (
        frozenset(n.casefold() for n in _NAME.findall(body)),
        frozenset(_NUMBER.findall(body)),
        summary_info.content_words(body),
    )


def _stale_value(facts: frozenset[str], covered: set[str], weight: float, cap: int) -> float:
    """What ``facts`` already in ``covered`` took off a line's score."""
    return weight * (min(len(facts), cap) - min(len(facts - covered), cap))


def _choose(candidates: list[_Candidate], take: Callable[[_Candidate], bool]) -> None:
    """Offer ``candidates`` to ``take`` best first (newer first on ties) until all were
    offered; ``take`` says whether it kept the line. A name, number or content word
    already in a kept line no longer counts: a second "Mel" or "30" tells nothing new, a
    first "Ana" does.

    Lazy greedy: a line's value only drops as names and numbers get covered, so a popped
    line whose re-scored value is still the best of the heap is the best; the others are
    re-scored only when popped.
    """
    facts = {c.order: _line_facts(c.text) for c in candidates}
    by_order = {c.order: c for c in candidates}
    covered_names: set[str] = set()
    covered_numbers: set[str] = set()
    covered_words: set[str] = set()
    heap = [(-c.score, -c.order) for c in candidates]
    heapq.heapify(heap)
    while heap:
        stale, neg_order = heapq.heappop(heap)
        cand = by_order[-neg_order]
        names, numbers, words = facts[cand.order]
        value = (
            cand.score
            - _stale_value(names, covered_names, NAME_SCORE, MAX_NAMES)
            - _stale_value(numbers, covered_numbers, NUMBER_SCORE, MAX_NUMBERS)
            - _stale_value(words, covered_words, CONTENT_SCORE, MAX_CONTENT)
        )
        if value < -stale and heap and (-value, neg_order) > heap[0]:
            heapq.heappush(heap, (-value, neg_order))
            continue
        if take(cand):
            covered_names |= names
            covered_numbers |= numbers
            covered_words |= words


def _summary_candidates(
    carried_lines: list[str], messages: list[TranscriptMessage]
) -> list[_Candidate]:
    """The carried lines (with CARRY_BONUS), then this run's, repeated lines dropped."""
    candidates: list[_Candidate] = []
    seen: set[str] = set()
    carried = [(line, _line_score(line[2:]) + CARRY_BONUS, True) for line in carried_lines]
    fresh = [(line, score, False) for line, score in _fresh_lines(messages)]
    for line, score, is_carried in carried + fresh:
        key = _key(line)
        if key not in seen:
            seen.add(key)
            candidates.append(_Candidate(len(candidates), line, score, is_carried, _rule(line)))
    _mark_changes(candidates)
    return candidates


def _mark_changes(candidates: list[_Candidate]) -> None:
    """Mark each line a later one corrects (summary_changes.corrects: "Actually we land on
    the 5th" after "We land on April 3rd"), carried lines and this run's alike: it gets
    summary_changes.CHANGED_MARK and the lowest score kept, so it is never stated as
    current and goes first when room is short; the correcting line is kept first, as a
    requirement, so the reader sees what replaced it."""
    for cand in candidates:  # marked by an earlier run
        if summary_changes.is_changed(cand.text):
            cand.changed, cand.score = True, min(cand.score, MIN_SCORE)
        elif summary_changes.is_update(cand.text):
            _updates(cand, cand.text)
    parts = [
        [(r, s) for r, s in _line_parts(summary_changes.unmarked(c.text)) if r != "tool"]
        for c in candidates
    ]
    for later in candidates:
        news = [s for _, s in parts[later.order] if summary_changes.is_change(s)]
        for earlier in candidates[: later.order] if news else []:
            old = " ".join(s for _, s in parts[earlier.order])
            if any(summary_changes.corrects(new, old) for new in news):
                earlier.changed, earlier.score = True, min(earlier.score, MIN_SCORE)
                earlier.text = summary_changes.unmarked(earlier.text) + summary_changes.CHANGED_MARK
                _updates(later, " ".join(news))


def _updates(cand: _Candidate, correction: str) -> None:
    """Make ``cand`` a correction: UPDATE_MARK on its text, and kept first as a
    requirement about what ``correction`` says, unless it is kept for more already."""
    cand.text = summary_changes.unmarked(cand.text) + summary_changes.UPDATE_MARK
    if cand.rule.rank < summary_constraints.REQUIREMENT:
        about = summary_changes.read(correction).topic | {"(update)"}
        cand.rule = summary_constraints.Rule(summary_constraints.REQUIREMENT, about)


def _rule(line: str) -> summary_constraints.Rule:
    """What a ``- ...`` line is kept first for (summary_constraints.rule): a short answer
    is read with the question it answers ("What's your budget? → $6000 total.")."""
    parts = _line_parts(line)
    if len(parts) == 2:
        (_, question), (role, answer) = parts
        return summary_constraints.rule(role, answer, question=question)
    return max(summary_constraints.rule(role, sentence) for role, sentence in parts)


def _keep_first(candidates: list[_Candidate], take: Callable[..., bool]) -> None:
    """Offer ``take`` the constraint lines before anything else, safety first, then the
    older first (carried lines before this run's), past the carried lines' cap: a rule
    stated once survives every fold while the budget holds it. A line whose rule is about
    nothing a rule taken before is not (summary_constraints.Rule.about) only restates it
    ("since I'm allergic" after "I'm allergic to cats"): it is left to compete."""
    covered: set[str] = set()
    # A corrected line keeps its place only for safety: a rule misread as corrected is
    # kept, marked, rather than lost.
    ruled = [
        c for c in candidates
        if c.rule.rank and (not c.changed or c.rule.rank == summary_constraints.SAFETY)
    ]
    for cand in sorted(ruled, key=lambda c: (-c.rule.rank, c.order)):
        if cand.rule.about - covered and take(cand, capped=False):
            covered |= cand.rule.about


def _fallback_lines(
    chosen: list[_Candidate],
    fresh_pool: list[_Candidate],
    candidates: list[_Candidate],
    costs: dict[int, int],
    room: int,
    header: bool,
) -> int:
    """Add to ``chosen``, when none of this run's lines is in it, this run's most recent
    lines that fit in ``room`` tokens (never every trace of a run lost); when nothing at
    all is chosen, the best line cut to fit. Returns the tokens the added lines cost."""
    added = 0
    if not any(not c.carried for c in chosen):
        for cand in sorted(fresh_pool, key=lambda c: -c.order):
            cost = costs[cand.order]
            if added + cost <= room:
                chosen.append(cand)
                added += cost
    if not chosen and candidates and room > 0:
        best = min(candidates, key=lambda c: (-c.score, -c.order))
        cut = _cut_to(best.text, room - 1 if header else room)
        if cut:
            chosen.append(_Candidate(best.order, cut, best.score, best.carried))
            added += count_tokens(cut) + 1
    return added


def _select(
    kept: list[_Candidate],
    terms: _Terms,
    costs: dict[int, int],
    take: Callable[..., bool],
    chosen: list[_Candidate],
) -> None:
    """Offer ``take`` the ``kept`` lines in the order of extractive_summary's passes (the
    lines it takes are appended to ``chosen``): constraints, then coverage of salient
    terms and of content words by the lines no later line corrects, then the rest by
    score (a corrected line last)."""
    _keep_first(kept, take)
    current = [c for c in kept if not c.changed]
    _cover([c for c in current if c not in chosen], terms, costs, take, words=False)
    _cover([c for c in current if c not in chosen], terms, costs, take, words=True)
    _choose([c for c in kept if c not in chosen], take)


def extractive_summary(
    *, previous_summary: str | None, messages: list[TranscriptMessage], max_tokens: int
) -> str:
    """Return an extractive rolling summary of at most ``max_tokens`` tokens
    (memoryapp.tokens.count_tokens), the same text for the same input.

    The text is SUMMARY_HEADER, then the previous summary's lines (carried forward, with a
    CARRY_BONUS), then this run's lines, each group in conversation order. A line is
    ``- <role>: <sentence>``, or ``- <role>: <question> → <role>: <answer>`` when a
    message ending in a question is followed by another speaker's short reply (at most
    MAX_ANSWER_WORDS words, not a question): the answer is the fact, so it is never kept
    without its question, and it scores ANSWER_SCORE more.

    Constraint lines (memoryapp.llm.summary_constraints: an allergy, "no seafood please",
    a hard budget or deadline) are taken first, safety first, carried ones past the
    carried cap, so a rule survives every fold. A line a later one corrects
    (memoryapp.llm.summary_changes) gets its CHANGED_MARK, is left out of the coverage
    and is taken last; the correction gets UPDATE_MARK and is kept first. Then greedy
    coverage: the line stating the most salient terms (memoryapp.salient names, numbers,
    dates) no chosen line states yet, per token, is taken while it fits (newer first on
    ties), carried and new lines alike. Then the same coverage by content words (memoryapp.llm.summary_info: the
    user's statements about themselves weigh most, another speaker's echo nothing). Then
    the room left goes by score: each distinct number, name and content word
    (NUMBER_SCORE, NAME_SCORE, CONTENT_SCORE), a date, a decision or preference (a short
    yes/no reply included), the user's self-statement, a question; a short answer scores
    like the fact it carries; what a taken line states no longer counts. Chatter
    (greetings, acknowledgements, tool calls, errors: score below MIN_SCORE) and repeated
    lines are dropped, and FRESH_SHARE of the budget stays open to this run's lines. No
    bare list of terms is written. When none of this run's lines would be kept, its most
    recent lines that fit are kept instead, so a summary never loses every trace of what
    it folded. A budget too small for the header drops it; one too small for any whole
    line keeps the best line cut to fit.
    Implements the rolling summary of spec 000 "Compaction" for DESIGN.md section 7.
    """
    replaced = count_tokens(previous_summary or "") + sum(count_tokens(m.content) for m in messages)
    # Always shorter than what it replaced, so a run can never make memory grow.
    max_tokens = max(min(max_tokens, replaced - 1), 0)
    carried = _carried_lines(previous_summary)
    candidates = _summary_candidates(carried, _folded_messages(messages, previous_summary))
    terms = _line_terms(candidates)
    # Chatter and another speaker's echo of what was said are never chosen for content.
    kept = [c for c in candidates if c.score >= MIN_SCORE and c.order not in terms.echoes]
    fresh_kept = [c for c in kept if not c.carried]
    # The lines this run's share is reserved for: the scored ones, or, when every one of
    # them is chatter, the fallback's (so carried lines cannot take all the room).
    fresh_pool = fresh_kept or [c for c in candidates if not c.carried]

    header_cost = count_tokens(SUMMARY_HEADER)
    # The header only when it leaves room for content; the budget is what counts.
    header = [SUMMARY_HEADER] if max_tokens >= 2 * header_cost else []
    budget = max_tokens - (header_cost if header else 0)
    # Each line costs its tokens plus one for its newline; count_tokens of the joined text
    # is never more than the sum, so the total stays within max_tokens.
    costs = {c.order: count_tokens(c.text) + 1 for c in candidates}
    fresh_total = sum(costs[c.order] for c in fresh_pool)
    carried_cap = budget - min(int(budget * FRESH_SHARE), fresh_total)

    chosen: list[_Candidate] = []
    used = carried_used = 0

    def take(cand: _Candidate, capped: bool = True) -> bool:
        nonlocal used, carried_used
        cost = costs[cand.order]
        if used + cost > budget or (capped and cand.carried and carried_used + cost > carried_cap):
            return False
        chosen.append(cand)
        used += cost
        if cand.carried:
            carried_used += cost
        return True

    _select(kept, terms, costs, take, chosen)
    used += _fallback_lines(chosen, fresh_pool, candidates, costs, budget - used, bool(header))
    chosen.sort(key=lambda c: c.order)
    return "\n".join([*header, *(c.text for c in chosen)])


_TOOL_LINE = re.compile(r"^/(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s+(?P<args>\{.*\})\s*$", re.M)


def _requested_calls(
    messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]
) -> tuple[ToolCall, ...]:
    """The ``/<tool> {json}`` lines of the last message, when it is the user's and names
    offered tools (lines whose JSON is not an object are ignored)."""
    if not tools or not messages or messages[-1].role != "user":
        return ()
    offered = {t.name for t in tools}
    calls: list[ToolCall] = []
    for match in _TOOL_LINE.finditer(messages[-1].content):
        try:
            arguments = json.loads(match["args"])
        except ValueError:
            continue
        if match["name"] in offered and isinstance(arguments, dict):
            call_id = f"offline-{len(calls) + 1}"
            calls.append(ToolCall(name=match["name"], arguments=arguments, call_id=call_id))
    return tuple(calls)


def _offline_reply_text(system_instruction: str, messages: Sequence[ChatMessage]) -> str:
    last = messages[-1] if messages else None
    if last is not None and last.tool_result is not None:
        result = last.tool_result
        outcome = "refused" if result.is_error else "answered"
        return f"[offline model] {result.name} {outcome}: {result.content[:200]}"
    return offline_reply.reply_text(system_instruction, messages)


_NOTE_STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "what",
        "who",
        "with",
        "that",
        "this",
        "from",
        "them",
        "they",
        "their",
        "right",
        "now",
        "when",
        "why",
        "have",
        "about",
        "into",
        "your",
        "you",
        "are",
        "was",
        "were",
        "will",
        "been",
        "what's",
        "does",
        "everyone",
    ]
)


def _note_terms(note: OpenNote) -> set[str]:
    words = _WORD.findall(f"{note.name.replace('_', ' ')} {note.description}".lower())
    return {w for w in words if len(w) > 3 and w not in _NOTE_STOPWORDS}


def note_updates(open_notes: list[OpenNote], messages: list[TranscriptMessage]) -> dict[str, str]:
    """The offline compactor's rewrite of open notes, deterministic: each user or
    assistant sentence being folded that shares a word (over three letters, not a stop
    word) with a note's name or description, and is not in the note yet, is appended to
    that note as a ``- `` line. Tool calls and results are skipped (the agent wrote
    those itself). Returns only the notes that changed, name -> new content."""
    out: dict[str, str] = {}
    for note in open_notes:
        terms = _note_terms(note)
        content = note.content
        for message in messages:
            if message.role not in ("user", "assistant") or not terms:
                continue
            for sentence in _sentences(message.content):
                words = {w.lower() for w in _WORD.findall(sentence)}
                line = f"- {message.role}: {sentence[:MAX_SENTENCE_CHARS]}"
                if terms & words and sentence not in content:
                    content = f"{content}\n{line}"
        if content != note.content:
            out[note.name] = content
    return out


class OfflineModel:
    """ModelPort without a network (memoryapp.llm.port). Deterministic for equal input."""

    name = "offline"
    model_name = "offline-extractive"

    def summarize(
        self,
        *,
        previous_summary: str | None,
        messages: list[TranscriptMessage],
        max_tokens: int,
        open_notes: list[OpenNote] | None = None,
    ) -> Summary:
        """Extractive rolling summary (see extractive_summary); open notes are kept
        current by note_updates."""
        text = extractive_summary(
            previous_summary=previous_summary, messages=messages, max_tokens=max_tokens
        )
        consumed = sum(count_tokens(m.content) for m in messages) + count_tokens(
            previous_summary or ""
        )
        notes = note_updates(open_notes or [], messages)
        return Summary(
            text=text,
            model=self.model_name,
            usage=Usage(
                input_tokens=consumed + sum(count_tokens(n.content) for n in open_notes or []),
                output_tokens=count_tokens(text) + sum(count_tokens(c) for c in notes.values()),
            ),
            notes=notes,
        )

    def extract(self, *, messages: list[TranscriptMessage]) -> Extraction:
        """Heuristic facts (first-person statements with a decision or preference) and
        entities (capitalised names)."""
        facts: list[ExtractedFact] = []
        entities: dict[str, ExtractedEntity] = {}
        for message in messages:
            for sentence in _sentences(message.content):
                names = _NAME.findall(sentence)
                for name in names:
                    entities.setdefault(name, ExtractedEntity(name=name, kind="thing"))
                if message.role == "user" and _DECISION.search(sentence):
                    facts.append(ExtractedFact(text=sentence, subject=names[0] if names else None))
        return Extraction(facts=facts, entities=list(entities.values()))

    def extract_episode(self, *, messages: list[TranscriptMessage]) -> EpisodeExtraction:
        """Heuristic episode extraction (memoryapp.llm.extraction_offline)."""
        return extraction_offline.extract_episode(messages)

    def synthesize(self, *, query: str, context: str) -> str:
        """At most three sentences of ``context`` (memoryapp.llm.synthesis_input's text)
        sharing the most topic words with ``query``, none stating a replaced statement as
        true (memoryapp.llm.offline_synthesis); "" when none shares a word."""
        return offline_synthesis.answer(query, context)

    def reply(
        self,
        *,
        system_instruction: str,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec] | None = None,
    ) -> Iterator[ReplyChunk]:
        """A streamed answer from memory: the lines of this turn's context that best
        match the user's message, each with its source (memoryapp.llm.offline_reply).

        Takes part in tool use deterministically: when the last message is the user's
        and has lines ``/<tool> <JSON object>`` naming offered ``tools``, the reply is
        those ToolCalls (no text); when the last message is a ToolResult, the reply
        reports it. With the memory tools offered it also follows the plain cues of
        memoryapp.llm.offline_memory ("remember that ...", "what do you know about ...").
        Its usage counts the input with memoryapp.llm.input_tokens (instruction, messages
        with their tool calls and results, tool declarations).
        """
        # The whole input, tool declarations and tool traffic included, counted as the
        # turn X-ray counts it (memoryapp.llm.input_tokens).
        consumed = input_tokens(system_instruction=system_instruction, messages=messages, tools=tools)
        cued = offline_memory.next_call(messages, tools or ())
        calls = _requested_calls(messages, tools or ()) or ((cued,) if cued else ())
        if calls:
            yield ReplyChunk(tool_calls=calls, model=self.model_name)
            yield ReplyChunk(done=True, model=self.model_name, usage=Usage(input_tokens=consumed))
            return
        text = offline_memory.answer(messages, tools or ()) or _offline_reply_text(system_instruction, messages)
        words = text.split(" ")
        for i, word in enumerate(words):
            yield ReplyChunk(text=word if i == 0 else " " + word, model=self.model_name)
        yield ReplyChunk(
            done=True,
            model=self.model_name,
            usage=Usage(input_tokens=consumed, output_tokens=count_tokens(text)),
        )

    def embed(self, *, texts: list[str]) -> list[list[float]]:
        """Hashed bag-of-words vectors (256 dimensions, L2-normalised)."""
        vectors = []
        for text in texts:
            vec = [0.0] * 256
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                vec[int.from_bytes(digest, "big") % 256] += 1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            vectors.append([v / norm for v in vec])
        return vectors

    def count_tokens(self, *, text: str) -> int:
        """memoryapp.tokens.count_tokens."""
        return count_tokens(text)

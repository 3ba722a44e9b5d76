"""The offline model adapter: deterministic, no network, the default with no API key.

It does not pretend to be a language model. ``summarize`` is extractive: it keeps the
sentences that carry names, numbers, dates, decisions, preferences and open questions,
carries the previous summary's content forward, and stays within the token budget.
``reply`` says plainly that it is offline and shows what memory gave the turn.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from memoryapp.llm.port import (
    ExtractedEntity,
    ExtractedFact,
    Extraction,
    ReplyChunk,
    Summary,
    ToolSpec,
    TranscriptMessage,
    Usage,
)
from memoryapp.tokens import count_tokens

SUMMARY_HEADER = "Summary of earlier conversation (offline extractive summary):"
MAX_SENTENCE_CHARS = 400

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DATE = re.compile(
    rf"\b(?:{_MONTHS}|monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|"
    r"tomorrow|yesterday|tonight|next week|last week|weekend|\d{1,2}[:/]\d{2}|(?:19|20)\d{2})\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d")
_DECISION = re.compile(
    r"\b(?:decid\w*|chose|choose|chosen|pick\w*|will|going to|plan\w*|agree\w*|prefer\w*|"
    r"like|love|hate|want\w*|need\w*|bought|buy|ordered|booked|signed|promis\w*|must|"
    r"always|never|favou?rite|allerg\w*|my name|i am|i'm|i have|i live|i work|budget)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
# A sentence made only of these is chatter ("Great, thanks!", "Happy to help.").
_FILLER = re.compile(
    r"^(?:(?:hi|hello|hey|there|thanks|thank you|thanks a lot|ok|okay|sure|great|cool|"
    r"perfect|nice|awesome|yes|yeah|no|bye|goodbye|good\s+\w+|happy to help|"
    r"you're welcome|no problem|sounds good|that sounds good(?: to me)?|got it|of course|"
    r"how can i help(?: you)?(?: today)?)\W*)+$",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+", re.UNICODE)


#: Previous-summary lines score this much extra: they were already chosen once.
CARRY_BONUS = 1.0
#: Share of the budget kept for this run's messages, so a full summary cannot crowd out
#: everything new (the previous summary's lines may use the rest).
FRESH_SHARE = 1 / 3
#: Below this score a sentence is chatter ("ok thanks") and never kept.
MIN_SCORE = 0.0


@dataclass
class _Candidate:
    order: int
    text: str
    score: float
    carried: bool


def _sentences(text: str) -> list[str]:
    parts = [p.strip() for p in _SENTENCE_SPLIT.split(text) if p and p.strip()]
    return [p if len(p) <= MAX_SENTENCE_CHARS else p[: MAX_SENTENCE_CHARS - 1] + "…" for p in parts]


def _score(sentence: str) -> float:
    if _FILLER.match(sentence):
        return -3.0
    score = 0.0
    if _NUMBER.search(sentence):
        score += 2
    if _DATE.search(sentence):
        score += 2
    if _DECISION.search(sentence):
        score += 2
    if sentence.rstrip().endswith("?"):
        score += 1.5
    score += min(len(_NAME.findall(sentence)), 3)
    words = len(sentence.split())
    if words < 3:
        score -= 3
    return score


def _carried_lines(previous_summary: str | None) -> list[str]:
    """The previous summary as ``- ...`` lines: its short bullet lines as they are, the
    sentences of prose and of long bullets (a summary another adapter wrote may be prose)."""
    lines: list[str] = []
    for line in (previous_summary or "").splitlines():
        text = line.strip()
        if not text or text == SUMMARY_HEADER:
            continue
        bullet = text.startswith("- ")
        body = text[2:].strip() if bullet else text
        if bullet and len(body) <= MAX_SENTENCE_CHARS:
            lines.append(f"- {body}")
        else:
            lines.extend(f"- {sentence}" for sentence in _sentences(body))
    return lines


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


def extractive_summary(
    *, previous_summary: str | None, messages: list[TranscriptMessage], max_tokens: int
) -> str:
    """Return an extractive rolling summary of at most ``max_tokens`` tokens
    (memoryapp.tokens.count_tokens), the same text for the same input.

    The text is SUMMARY_HEADER, then the previous summary's lines (carried forward, with a
    CARRY_BONUS), then this run's sentences as ``- <role>: <sentence>``, each group in
    conversation order. Sentences are scored for numbers, dates, decisions and
    preferences, questions and names; chatter (score below MIN_SCORE) and repeated lines
    are dropped. When everything does not fit, the lowest-scoring lines are left out
    (newer first on ties), while FRESH_SHARE of the budget stays open to this run's
    sentences. A budget too small for the header drops the header; one too small for any
    whole line keeps the best line cut to fit.
    """
    candidates: list[_Candidate] = []
    seen: set[str] = set()
    for line in _carried_lines(previous_summary):
        key = _key(line)
        if key not in seen:
            seen.add(key)
            candidates.append(
                _Candidate(len(candidates), line, _score(line[2:]) + CARRY_BONUS, True)
            )
    for message in messages:
        for sentence in _sentences(message.content):
            line = f"- {message.role}: {sentence}"
            key = _key(line)
            if key not in seen:
                seen.add(key)
                candidates.append(_Candidate(len(candidates), line, _score(sentence), False))
    candidates = [c for c in candidates if c.score >= MIN_SCORE]

    header_cost = count_tokens(SUMMARY_HEADER)
    # The header only when it leaves room for content; the budget is what counts.
    header = [SUMMARY_HEADER] if max_tokens >= 2 * header_cost else []
    budget = max_tokens - (header_cost if header else 0)
    # Each line costs its tokens plus one for its newline; count_tokens of the joined text
    # is never more than the sum, so the total stays within max_tokens.
    costs = {c.order: count_tokens(c.text) + 1 for c in candidates}
    fresh_total = sum(costs[c.order] for c in candidates if not c.carried)
    carried_cap = budget - min(int(budget * FRESH_SHARE), fresh_total)

    chosen: list[_Candidate] = []
    used = carried_used = 0
    ranked = sorted(candidates, key=lambda c: (-c.score, -c.order))
    for cand in ranked:
        cost = costs[cand.order]
        if used + cost > budget or (cand.carried and carried_used + cost > carried_cap):
            continue
        chosen.append(cand)
        used += cost
        if cand.carried:
            carried_used += cost
    if not chosen and ranked and budget > 0:
        best = ranked[0]
        cut = _cut_to(best.text, budget - 1 if header else budget)
        if cut:
            chosen.append(_Candidate(best.order, cut, best.score, best.carried))
    chosen.sort(key=lambda c: c.order)
    return "\n".join([*header, *(c.text for c in chosen)])


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
    ) -> Summary:
        """Extractive rolling summary (see extractive_summary)."""
        text = extractive_summary(
            previous_summary=previous_summary, messages=messages, max_tokens=max_tokens
        )
        consumed = sum(count_tokens(m.content) for m in messages) + count_tokens(
            previous_summary or ""
        )
        return Summary(
            text=text,
            model=self.model_name,
            usage=Usage(input_tokens=consumed, output_tokens=count_tokens(text)),
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

    def synthesize(self, *, query: str, context: str) -> str:
        """The context sentences sharing the most words with ``query`` (at most three)."""
        terms = {w.lower() for w in _WORD.findall(query) if len(w) > 2}
        scored = []
        for i, sentence in enumerate(_sentences(context)):
            overlap = len(terms & {w.lower() for w in _WORD.findall(sentence)})
            if overlap:
                scored.append((-overlap, i, sentence))
        best = sorted(scored)[:3]
        if not best:
            return ""
        return " ".join(s for _, _, s in sorted(best, key=lambda t: t[1]))

    def reply(
        self,
        *,
        system_instruction: str,
        messages: list[dict[str, str]],
        tools: list[ToolSpec] | None = None,
    ) -> Iterator[ReplyChunk]:
        """A streamed, honest non-answer: what memory put into this turn's context."""
        last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        summaries = [m for m in messages if m["role"] == "system"]
        text = (
            "[offline model: no GEMINI_API_KEY is set, so no language model answered.] "
            f"Memory gave this turn {len(messages)} message(s)"
            + (", including a compaction summary" if summaries else "")
            + f" and a {count_tokens(system_instruction)}-token system instruction. "
            + f'You said: "{last_user[:200]}"'
        )
        words = text.split(" ")
        for i, word in enumerate(words):
            yield ReplyChunk(text=word if i == 0 else " " + word, model=self.model_name)
        consumed = count_tokens(system_instruction) + sum(
            count_tokens(m["content"]) for m in messages
        )
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

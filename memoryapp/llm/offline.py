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
_FILLER = re.compile(
    r"^(?:hi|hello|hey|thanks|thank you|ok|okay|sure|great|cool|yes|no|bye|good\s+\w+)\W*$",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class _Candidate:
    order: int
    text: str
    score: float


def _sentences(text: str) -> list[str]:
    parts = [p.strip() for p in _SENTENCE_SPLIT.split(text) if p and p.strip()]
    return [p if len(p) <= MAX_SENTENCE_CHARS else p[: MAX_SENTENCE_CHARS - 1] + "…" for p in parts]


def _score(sentence: str) -> float:
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
    if words < 3 or _FILLER.match(sentence):
        score -= 3
    return score


def extractive_summary(
    *, previous_summary: str | None, messages: list[TranscriptMessage], max_tokens: int
) -> str:
    """Return an extractive rolling summary of at most ``max_tokens`` tokens.

    Lines of the previous summary come first and get a bonus so older context is
    carried forward; new lines are ``- <role>: <sentence>``. When everything does not
    fit, the lowest-scoring lines are left out; the kept ones stay in conversation order.
    """
    candidates: list[_Candidate] = []
    order = 0
    if previous_summary:
        for line in previous_summary.splitlines():
            text = line.strip()
            if not text or text == SUMMARY_HEADER:
                continue
            if not text.startswith("- "):
                for sentence in _sentences(text):
                    candidates.append(_Candidate(order, f"- {sentence}", _score(sentence) + 1))
                    order += 1
                continue
            candidates.append(_Candidate(order, text, _score(text[2:]) + 1))
            order += 1
    for message in messages:
        for sentence in _sentences(message.content):
            candidates.append(
                _Candidate(order, f"- {message.role}: {sentence}", _score(sentence))
            )
            order += 1

    budget = max(max_tokens - count_tokens(SUMMARY_HEADER), 0)
    chosen: list[_Candidate] = []
    used = 0
    for cand in sorted(candidates, key=lambda c: (-c.score, -c.order)):
        cost = count_tokens(cand.text) + 1
        if used + cost > budget:
            continue
        chosen.append(cand)
        used += cost
    chosen.sort(key=lambda c: c.order)
    return "\n".join([SUMMARY_HEADER, *(c.text for c in chosen)])


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

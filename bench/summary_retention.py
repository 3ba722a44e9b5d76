"""How many of a conversation's names and numbers survive rolling compaction.

    .venv/bin/python bench/summary_retention.py [--database sqlite|postgres] [--data DIR]

Ingests every LoCoMo conversation exactly as bench/locomo_ingest.py does (through /v1,
one thread per conversation, ``autoCompactThreshold`` 30, offline model, throwaway
database), then reads every row back and measures, per conversation:

- ``final``: the share of the conversation's distinct capitalised names and numbers that
  appear in the final active summary (the memory prepare returns for everything folded).
  A 1024-token summary cannot hold 400-700 turns, so this is a ceiling-bound figure: it
  compares summarisers, it is not expected to approach 1.
- ``per run``: for each compaction run, the share of the distinct names and numbers of
  the messages that run folded that appear in the summary it wrote, averaged over runs.
  This is what one summarize call keeps of what it was given.
- ``empty``: summaries that are only the header line (or nothing) although the folded
  messages had content.
- ``self``: the user's own statements about themselves that survive. A **self-statement**
  is a sentence of a ``user`` turn (speaker A) that is not a question, has at least
  SELF_MIN_WORDS words and a first-person subject or possessive (I, I'm, I've, I'd,
  I'll, we, we're, we've, we'd, we'll, my, our); it survives in a summary when its text
  occurs there (case and spacing aside). ``self/run`` is, for each run, the share of the
  self-statements of the messages it folded that the summary it wrote keeps, pooled over
  runs (what one summarize call keeps of what the user said about themselves);
  ``self final`` the share of the conversation's self-statements in the final summary.
  Defined by the bench alone, not by the summariser's rules.

Then the hand-written conversations of bench/summary_cases.py (four planning threads,
``autoCompactThreshold`` 6): how many of their rules (allergies, "no ... please", hard
budgets and deadlines) the final summary keeps, how many statements a later message
corrected it still states as current, and how many values of tool results it keeps.

Two yardsticks, side by side in one run, because the offline summariser chooses its
lines by memoryapp.salient's terms (and once built an "Also mentioned" index line with
it): graded by salient alone it is graded by its own rules.

- **independent** (the headline figure): the bench's own definitions, not the
  summariser's. A name is a word starting with a capital letter that is not the first
  word of its sentence and is not "I"; a number is a run of digits (with inner
  ``.,:/``). A term survives when it occurs in the summary as a whole word,
  case-sensitively.
- **salient**: memoryapp.salient's names (with dates) and numbers, the extractor the
  dashboard uses to show what a summary dropped (salient.survives).

Each is given for the whole final summary and for its lines without an index line
(``- Also mentioned: ...``, a bare list of terms with no statement of what they were):
the second says what the summary's sentences keep. The offline summariser no longer
writes that line (docs/decisions.md), so the two agree for it; the filter stays for
summaries of other models or of earlier versions.
"""

from __future__ import annotations

import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass

from _common import BASE, Api, conversation_files, locomo_arguments, throwaway_database
from locomo_ingest import all_rows, ingest, load
from summary_cases import CASES, THRESHOLD, Case

from memoryapp import salient
from memoryapp.tokens import count_tokens

HEADER_PREFIX = "Summary of earlier conversation"
INDEX_PREFIX = "- Also mentioned:"

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[\w'\u2019-]+")
_NAME = re.compile(r"^[A-Z][A-Za-z]+(?:['\u2019]s)?$")
_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*")
_FIRST_PERSON = re.compile(
    r"(?<![\w'\u2019])(?:I|I['\u2019](?:m|ve|d|ll)|(?i:we|we['\u2019](?:re|ve|d|ll)|my|our))"
    r"(?![\w'\u2019])"
)
#: A self-statement has at least this many words ("I did it!" says little).
SELF_MIN_WORDS = 5


def independent_terms(text: str) -> tuple[set[str], set[str]]:
    """``(names, numbers)`` by the bench's own definitions (module docstring)."""
    names: set[str] = set()
    for sentence in _SENTENCE.split(text):
        for word in _WORD.findall(sentence)[1:]:
            word = word.strip("'\u2019-")
            if _NAME.match(word) and word != "I":
                names.add(re.sub(r"['\u2019]s$", "", word))
    return names, set(_NUMBER.findall(text))


def self_statements(turns: list[tuple[str, str]]) -> list[str]:
    """The user's self-statements among ``turns`` (module docstring), normalised (case
    folded, spaces collapsed), in order, repeats once."""
    found: dict[str, None] = {}
    for role, text in turns:
        if role != "user":
            continue
        for sentence in _SENTENCE.split(text):
            sentence = sentence.strip()
            if (
                sentence
                and not sentence.endswith("?")
                and len(sentence.split()) >= SELF_MIN_WORDS
                and _FIRST_PERSON.search(sentence)
            ):
                found[_normal(sentence)] = None
    return list(found)


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def self_kept(statements: list[str], summary: str) -> int:
    """How many of ``statements`` (normalised) occur in ``summary``."""
    text = _normal(summary)
    return sum(s in text for s in statements)


def independent_survives(term: str, summary: str) -> bool:
    """True when ``term`` occurs in ``summary`` as a whole word (case-sensitive)."""
    return re.search(rf"(?<![\w]){re.escape(term)}(?![\w])", summary) is not None


def terms(text: str) -> tuple[set[str], set[str]]:
    """``(names, numbers)`` stated in ``text`` by memoryapp.salient (dates count with the
    names)."""
    found = salient.terms(text)
    return set(found.names | found.dates), set(found.numbers)


survives = salient.survives


def without_index(summary: str) -> str:
    """``summary`` without its "Also mentioned" index line."""
    return "\n".join(line for line in summary.splitlines() if not line.startswith(INDEX_PREFIX))


@dataclass
class Kept:
    """Distinct terms of a conversation and how many the final summary keeps, with and
    without its index line."""

    total: int = 0
    kept: int = 0
    kept_no_index: int = 0


def kept_in_final(
    turns: list[tuple[str, str]],
    final: str,
    extract: Callable[[str], tuple[set[str], set[str]]],
    found_in: Callable[[str, str], bool],
) -> Kept:
    """The conversation's distinct names and numbers by ``extract`` kept in ``final``."""
    every: set[str] = set()
    for _, text in turns:
        names, numbers = extract(text)
        every |= names | numbers
    prose = without_index(final)
    return Kept(
        total=len(every),
        kept=sum(found_in(t, final) for t in every),
        kept_no_index=sum(found_in(t, prose) for t in every),
    )


def share(kept: int, total: int) -> float:
    """``kept / total``, 1.0 for an empty total (nothing to lose)."""
    return kept / total if total else 1.0


def content_lines(summary: str) -> list[str]:
    """The summary's lines other than the offline header."""
    return [
        line for line in summary.splitlines() if line.strip() and not line.startswith(HEADER_PREFIX)
    ]


@dataclass
class Retention:
    """One conversation's figures."""

    conversation_id: str
    names: int
    numbers: int
    names_kept: int
    numbers_kept: int
    per_run: list[float]
    runs: int
    empty: int
    summary_tokens: int
    independent: Kept
    salient: Kept
    self_total: int = 0
    self_final: int = 0
    self_run_total: int = 0
    self_run_kept: int = 0


def measure(api: Api, conversation_id: str, thread_id: str, turns: list[tuple[str, str]]) -> Retention:
    """Read the thread's rows back and compute its Retention."""
    rows = all_rows(api, thread_id)
    summaries = [r for r in rows if "summary" in r]
    ordinary = [r for r in rows if "summary" not in r]
    active = [s for s in summaries if s["compactedAt"] is None]
    final = active[0]["content"] if active else ""

    names: set[str] = set()
    numbers: set[str] = set()
    for _, text in turns:
        n, d = terms(text)
        names |= n
        numbers |= d

    per_run: list[float] = []
    empty = self_run_total = self_run_kept = 0
    for s in summaries:
        folded_rows = [r for r in ordinary if r["compactedAt"] == s["createdAt"]]
        folded = [r["content"] for r in folded_rows]
        statements = self_statements([(r["role"], r["content"]) for r in folded_rows])
        self_run_total += len(statements)
        self_run_kept += self_kept(statements, s["content"])
        batch_names: set[str] = set()
        batch_numbers: set[str] = set()
        for text in folded:
            n, d = terms(text)
            batch_names |= n
            batch_numbers |= d
        batch = batch_names | batch_numbers
        per_run.append(share(sum(survives(t, s["content"]) for t in batch), len(batch)))
        if folded and not content_lines(s["content"]):
            empty += 1

    said = self_statements(turns)
    return Retention(
        conversation_id=conversation_id,
        names=len(names),
        numbers=len(numbers),
        names_kept=sum(survives(t, final) for t in names),
        numbers_kept=sum(survives(t, final) for t in numbers),
        per_run=per_run,
        runs=len(summaries),
        empty=empty,
        summary_tokens=count_tokens(final),
        independent=kept_in_final(turns, final, independent_terms, independent_survives),
        salient=kept_in_final(turns, final, terms, survives),
        self_total=len(said),
        self_final=self_kept(said, final),
        self_run_total=self_run_total,
        self_run_kept=self_run_kept,
    )


#: How the offline summariser marks a statement a later one corrected
#: (memoryapp.llm.summary_changes): such a line is not stated as current.
CHANGED_MARK = "[changed later]"


@dataclass
class CaseFigures:
    """What the final summaries of bench/summary_cases.py keep, summed over the cases."""

    rules: int = 0
    rules_kept: int = 0
    changed: int = 0
    changed_current: int = 0
    corrections: int = 0
    corrections_kept: int = 0
    facts: int = 0
    facts_kept: int = 0


def case_summary(api: Api, case: Case) -> str:
    """Fold ``case`` through /v1 at THRESHOLD; the final active summary's text."""
    thread = api.ok(
        "POST", f"{BASE}/threads", {"dataset": f"case-{case.name}", "autoCompactThreshold": THRESHOLD},
        expect=201,
    )
    for role, text in case.turns:
        api.ok("POST", f"{BASE}/threads/{thread['threadId']}/messages", {"role": role, "content": text}, expect=201)
    active = [r for r in all_rows(api, thread["threadId"]) if "summary" in r and r["compactedAt"] is None]
    return str(active[0]["content"]) if active else ""


def add_case(figures: CaseFigures, case: Case, summary: str) -> None:
    """Count what ``summary`` keeps of ``case`` into ``figures`` (summary_cases docstring)."""
    lines = [_normal(line) for line in summary.splitlines()]
    text = _normal(summary)
    figures.rules += len(case.rules)
    figures.rules_kept += sum(_normal(rule) in text for rule in case.rules)
    figures.changed += len(case.changed)
    figures.changed_current += sum(
        any(_normal(old) in line and CHANGED_MARK not in line for line in lines) for old in case.changed
    )
    figures.corrections += len(case.corrections)
    figures.corrections_kept += sum(_normal(new) in text for new in case.corrections)
    figures.facts += len(case.tool_facts)
    figures.facts_kept += sum(fact in summary for fact in case.tool_facts)


def run_cases(api: Api) -> CaseFigures:
    """Fold every case of bench/summary_cases.py and count what its summary keeps."""
    figures = CaseFigures()
    for case in CASES:
        add_case(figures, case, case_summary(api, case))
    return figures


def print_cases(f: CaseFigures) -> None:
    """Print what the final summaries of the hand-written cases keep."""
    print(
        f"cases (bench/summary_cases.py, {len(CASES)} conversations, threshold {THRESHOLD}): "
        f"rules kept {f.rules_kept}/{f.rules}; superseded statements still current "
        f"{f.changed_current}/{f.changed}; corrections kept {f.corrections_kept}/{f.corrections}; "
        f"tool-result facts kept {f.facts_kept}/{f.facts}"
    )


def main() -> int:
    args = locomo_arguments(__doc__)
    files = conversation_files(args.data)
    conversations = [load(f) for f in files]

    with throwaway_database(args.database, args.postgres_url) as label:
        from django.conf import settings

        print(f"database: {label}; model: offline; threshold 30; summary budget "
              f"{settings.MEMORY_SUMMARY_MAX_TOKENS} tokens\n")
        api = Api.for_new_project("retention-bench")
        print(
            f"{'conversation':<13}{'runs':>5}{'names':>7}{'kept':>6}{'numbers':>9}{'kept':>6}"
            f"{'final':>8}{'per run':>9}{'empty':>7}{'tokens':>8}{'indep':>8}{'no idx':>8}"
        )
        results: list[Retention] = []
        for conversation in conversations:
            ingested = ingest(api, conversation)
            r = measure(api, conversation.conversation_id, ingested.thread_id, conversation.turns)
            results.append(r)
            print(
                f"{r.conversation_id:<13}{r.runs:>5}{r.names:>7}{r.names_kept:>6}{r.numbers:>9}"
                f"{r.numbers_kept:>6}"
                f"{share(r.names_kept + r.numbers_kept, r.names + r.numbers):>8.3f}"
                f"{statistics.fmean(r.per_run) if r.per_run else 1.0:>9.3f}{r.empty:>7}"
                f"{r.summary_tokens:>8}"
                f"{share(r.independent.kept, r.independent.total):>8.3f}"
                f"{share(r.independent.kept_no_index, r.independent.total):>8.3f}"
                f"{share(r.self_run_kept, r.self_run_total):>9.3f}"
                f"{share(r.self_final, r.self_total):>11.3f}"
            )
        cases = run_cases(api)

    terms_total = sum(r.names + r.numbers for r in results)
    kept_total = sum(r.names_kept + r.numbers_kept for r in results)
    runs = [x for r in results for x in r.per_run]
    print(
        f"\nfinal active summary keeps {kept_total}/{terms_total} = "
        f"{share(kept_total, terms_total):.3f} of the conversations' distinct names and numbers "
        f"(names {share(sum(r.names_kept for r in results), sum(r.names for r in results)):.3f}, "
        f"numbers {share(sum(r.numbers_kept for r in results), sum(r.numbers for r in results)):.3f}); "
        f"per run {statistics.fmean(runs) if runs else 1.0:.3f} of the folded batch's "
        f"({len(runs)} runs); {sum(r.empty for r in results)} header-only summaries"
    )
    for label, pick in (("independent", lambda r: r.independent), ("salient", lambda r: r.salient)):
        total = sum(pick(r).total for r in results)
        kept = sum(pick(r).kept for r in results)
        bare = sum(pick(r).kept_no_index for r in results)
        print(
            f"{label:<12} final summary keeps {share(kept, total):.3f} ({kept}/{total}); "
            f"without its 'Also mentioned' line {share(bare, total):.3f} ({bare}/{total})"
        )
    run_kept, run_total = sum(r.self_run_kept for r in results), sum(r.self_run_total for r in results)
    final_kept, final_total = sum(r.self_final for r in results), sum(r.self_total for r in results)
    print(
        f"self-statements: each run's summary keeps {share(run_kept, run_total):.3f} "
        f"({run_kept}/{run_total}) of the user's self-statements it folded; the final summary "
        f"{share(final_kept, final_total):.3f} ({final_kept}/{final_total}) of the conversations'"
    )
    print_cases(cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())

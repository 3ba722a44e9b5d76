"""Evidence recall@k of recall's raw layer on the LoCoMo conversations.

    .venv/bin/python bench/locomo_recall.py [--database sqlite|postgres] [--data DIR]

The measure is the one /work/shared/data/locomo/README.md defines: for every question with
evidence (categories 1-4), recall with that question over the conversation's dataset, take
the first k raw messages returned, and count the share of the question's evidence turns
among them; average over questions. The README's reference, plain BM25 over
"speaker: text" of every turn, is printed next to the figures.

Each conversation is its own dataset (``conv-26``, ...), each session one thread of it
(a natural conversation), and each turn one message whose content is ``speaker: text``,
the same text the reference indexes (speaker_a is the ``user``, speaker_b the
``assistant``). Messages go in through memoryapp.working.message_append, recall runs
through memoryapp.recall.recall(include=["raw"], limit=20) with no current thread, so
every thread of the dataset is searched. No auto-compaction (it does not change what raw
search sees: compacted rows stay searchable, summaries never are). Evidence ids are used
as the data gives them; the three malformed ones ("D8:6; D9:17", "D", "D:11:26") can never
be retrieved, as for any method. Also prints recall latency percentiles.

Throwaway database (a temporary SQLite file, or a new PostgreSQL database dropped at exit),
offline model, no network. Exits 0 after printing.
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from _common import conversation_files, locomo_arguments, percentile, throwaway_database

KS = (5, 10, 20)
REFERENCE = {5: 0.521, 10: 0.578, 20: 0.626}


@dataclass
class Question:
    dataset: str
    text: str
    evidence: list[str]
    category: int


def ingest(path: Path) -> tuple[dict[str, str], list[Question]]:
    """Store one conversation; return (message id -> dia_id, its questions with evidence)."""
    from memoryapp import working
    from memoryapp.models import Project

    data = json.loads(path.read_text(encoding="utf-8"))
    dataset = path.stem
    project = Project.objects.get(slug="bench")
    speaker_a = data["speaker_a"]
    numbers = sorted(int(m.group(1)) for k in data if (m := re.fullmatch(r"session_(\d+)", k)))
    dia_of: dict[str, str] = {}
    for number in numbers:
        thread = working.thread_create(
            project=project, dataset=dataset, tags=[f"session_{number}"]
        )
        for turn in data[f"session_{number}"]:
            role = "user" if turn["speaker"] == speaker_a else "assistant"
            result = working.message_append(
                thread=thread, role=role, content=f"{turn['speaker']}: {turn['text']}"
            )
            dia_of[str(result.message.id)] = turn["dia_id"]
    questions = [
        Question(dataset, str(q["question"]), list(q["evidence"]), int(q["category"]))
        for q in data["qa"]
        if int(q["category"]) in (1, 2, 3, 4) and q.get("evidence")
    ]
    return dia_of, questions


def main() -> int:
    args = locomo_arguments(__doc__)
    files = conversation_files(args.data)

    with throwaway_database(args.database, args.postgres_url) as label:
        from memoryapp.models import Project
        from memoryapp.recall import recall

        Project.objects.create(slug="bench", name="bench")
        project = Project.objects.get(slug="bench")
        dia_of: dict[str, str] = {}
        questions: list[Question] = []
        started = time.perf_counter()
        for path in files:
            ids, qs = ingest(path)
            dia_of.update(ids)
            questions.extend(qs)
        ingest_seconds = time.perf_counter() - started

        sums = dict.fromkeys(KS, 0.0)
        by_category: dict[int, dict[int, float]] = {}
        counts: dict[int, int] = {}
        latencies: list[float] = []
        for q in questions:
            t0 = time.perf_counter()
            result = recall(
                project=project, dataset=q.dataset, query=q.text, include=["raw"], limit=max(KS)
            )
            latencies.append((time.perf_counter() - t0) * 1000)
            ranked = [dia_of.get(item["messageId"], "") for item in result["raw"]]
            evidence = set(q.evidence)
            per_cat = by_category.setdefault(q.category, dict.fromkeys(KS, 0.0))
            counts[q.category] = counts.get(q.category, 0) + 1
            for k in KS:
                share = len(evidence & set(ranked[:k])) / len(evidence)
                sums[k] += share
                per_cat[k] += share

    n = len(questions)
    print(f"LoCoMo evidence recall@k of recall's raw layer, {label}")
    print(f"{len(files)} conversations, {len(dia_of)} turns ingested in {ingest_seconds:.1f} s, {n} questions")
    print()
    print(f"{'':>22}" + "".join(f"{'@' + str(k):>9}" for k in KS))
    print(f"{'this service (raw)':>22}" + "".join(f"{sums[k] / n:>9.3f}" for k in KS))
    print(f"{'reference BM25':>22}" + "".join(f"{REFERENCE[k]:>9.3f}" for k in KS))
    for category in sorted(by_category):
        row = by_category[category]
        label_c = f"category {category} ({counts[category]})"
        print(f"{label_c:>22}" + "".join(f"{row[k] / counts[category]:>9.3f}" for k in KS))
    print()
    print(
        f"recall latency per question: p50 {percentile(latencies, 50):.1f} ms, "
        f"p95 {percentile(latencies, 95):.1f} ms, max {max(latencies):.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

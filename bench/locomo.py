"""Long-term memory on the LoCoMo conversations: load through /v1, end(), extract, recall.

    .venv/bin/python bench/locomo.py [--database sqlite|postgres] [--data DIR] [--json FILE]

**Load.** Every conversation in ``--data`` (default ../shared/data/locomo, read in place,
never copied) is its own dataset (``conv-26``, ...); every session one thread of it,
created with POST /v1/memory/working/threads, tags ``["locomo", "session_N"]`` and
metadata ``{"session": N, "sessionDate": ISO date-time of the session, "participants":
{"user": speaker_a, "assistant": speaker_b}}`` (recall reads ``participants`` as the
speaker field). Every turn is one POST .../messages: ``speaker_a`` the ``user``,
``speaker_b`` the ``assistant``, content the turn's text, plus ``[image: caption]`` when
the turn shared a photo (the caption is all the text there is of it), and ``createdAt``
the session's date-time (read as UTC; LoCoMo dates sessions, not turns), so messages carry
their real time and facts their real validFrom (docs/decisions.md, "Imported messages keep
their real time").

**Extract.** When the service has end() (POST .../threads/{id}/end), every thread is
ended and its job run to completion; the episodes, facts and entities made per
conversation and the extraction time are printed. Without it, this step says so and
recall works on raw messages only.

**Ask.** Every category 1-4 question with evidence goes to POST /v1/memory/recall
(``include`` episodes, facts, raw; limit 20; no current thread, so every thread of the
dataset is searched). Evidence recall@k: the message ids the returned items cite, in rank
order (items of all layers ordered by their ``rank``), de-duplicated, cut at k: a raw hit
cites itself and its returned neighbours, a fact its source messages, an episode the
messages it quotes (never its whole range); the share of the question's evidence turns
among them, averaged over questions. Printed overall, per category and per conversation
(how evenly the figure holds across conversations) beside the BM25 reference of the data's
README, with recall latency p50/p95 (the domain function, and the whole HTTP request
through Django's test client).

``--json FILE`` writes ``{"overall": {"5", "10", "20"}, "bm25": {"5", "10", "20"},
"byCategory": {"1": {"5", "10", "20"}, ...}, "byConversation": {"conv-26": {"5", "10",
"20", "bm25": {...}}, ...}, "latencyMs": {"p50", "p95", "apiP50", "apiP95", "cpuP50"},
"database", "questions", "conversations": [{"dataset", "threads", "messages",
"episodes", "facts", "entities", "extractionSeconds"}]}``; ``bm25`` is the README's
reference recipe recomputed on the data at hand (bm25_reference).

**Held out.** ``--data bench/heldout`` runs the same on three conversations written for
this project in LoCoMo's file format (other people, places and pursuits; no LoCoMo text),
which no constant of recall or extraction was tuned on: the check that the figure is not
fitted to LoCoMo's five (docs/performance.md). Compare it with "BM25 on this data", not
with the README's figure: they are short, so every k reaches further.

Throwaway database (a temporary SQLite file, or a new PostgreSQL database dropped at
exit), offline model, no network.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from _common import (
    BASE,
    DEFAULT_POSTGRES_URL,
    LOCOMO_DATA,
    Api,
    conversation_files,
    percentile,
    throwaway_database,
)

KS = (5, 10, 20)
# The data README's plain BM25 on LoCoMo's five conversations (760 questions).
REFERENCE = {5: 0.521, 10: 0.578, 20: 0.626}
# The README's reference recipe, recomputed here on whatever --data holds (bm25_reference):
# rank-bm25's BM25Okapi defaults, lower-cased \w+ tokens, a short stop-word list.
BM25_K1, BM25_B, BM25_EPSILON = 1.5, 0.75, 0.25
_BM25_STOP_TEXT = (
    "a an the and or of to in on at for with is are was were be i you he she it we they my "
    "your his her our their me him them do did does what when where who how why which that this"
)
BM25_STOP_WORDS = frozenset(_BM25_STOP_TEXT.split())
RECALL = "/v1/memory/recall"
LAYERS = ("episodes", "facts", "raw")


@dataclass
class Question:
    text: str
    evidence: list[str]
    category: int


@dataclass
class Loaded:
    """One conversation as stored: its dataset, threads, message id -> dia_id, questions."""

    dataset: str
    thread_ids: list[str]
    dia_of: dict[str, str]
    questions: list[Question]
    # Every turn as (dia_id, "speaker: text"), for the BM25 reference.
    turns: list[tuple[str, str]] = field(default_factory=list)
    extraction_seconds: float = 0.0
    made: dict[str, int] = field(default_factory=dict)
    # Sum of evidence recall@k over this conversation's questions, per k.
    recall_sums: dict[int, float] = field(default_factory=lambda: dict.fromkeys(KS, 0.0))


def session_date(text: str) -> str:
    """LoCoMo's "1:56 pm on 8 May, 2023" as ISO 8601 ("2023-05-08T13:56:00")."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").isoformat()


def load(api: Api, path: Path) -> Loaded:
    """Create the conversation's threads and append every turn through /v1."""
    data = json.loads(path.read_text(encoding="utf-8"))
    dataset = path.stem
    speakers = {data["speaker_a"]: "user", data["speaker_b"]: "assistant"}
    numbers = sorted(int(m.group(1)) for k in data if (m := re.fullmatch(r"session_(\d+)", k)))
    loaded = Loaded(dataset=dataset, thread_ids=[], dia_of={}, questions=[])
    for number in numbers:
        when = session_date(data[f"session_{number}_date_time"])
        metadata = {
            "session": number,
            "sessionDate": when,
            "participants": {role: name for name, role in speakers.items()},
        }
        thread = api.ok(
            "POST",
            f"{BASE}/threads",
            {"dataset": dataset, "tags": ["locomo", f"session_{number}"], "metadata": metadata},
            expect=201,
        )
        loaded.thread_ids.append(thread["threadId"])
        for turn in data[f"session_{number}"]:
            content = turn["text"]
            if turn.get("blip_caption"):
                content += f" [image: {turn['blip_caption']}]"
            body = {
                "role": speakers[turn["speaker"]],
                "content": content,
                "createdAt": when + "Z",
            }
            appended = api.ok(
                "POST", f"{BASE}/threads/{thread['threadId']}/messages", body, expect=201
            )
            loaded.dia_of[appended["messageId"]] = turn["dia_id"]
            loaded.turns.append((turn["dia_id"], f"{turn['speaker']}: {turn['text']}"))
    loaded.questions = [
        Question(str(q["question"]), list(q["evidence"]), int(q["category"]))
        for q in data["qa"]
        if int(q["category"]) in (1, 2, 3, 4) and q.get("evidence")
    ]
    return loaded


def _bm25_tokens(text: str) -> list[str]:
    return [w for w in re.findall(r"\w+", text.lower()) if w not in BM25_STOP_WORDS]


def bm25_reference(loaded: Loaded) -> dict[int, float]:
    r"""Evidence recall@k (sums over the conversation's questions, per k) of the data
    README's reference: plain Okapi BM25 (rank-bm25's BM25Okapi: k1 1.5, b 0.75, a
    negative idf replaced by 0.25 of the mean idf) over "speaker: text" of every turn,
    lower-cased \w+ tokens less BM25_STOP_WORDS. On LoCoMo's five it gives 0.524 / 0.577
    / 0.629 against the README's 0.521 / 0.578 / 0.626, so on other data (--data) the
    service is compared with the same yardstick measured there."""
    docs = [Counter(_bm25_tokens(text)) for _, text in loaded.turns]
    if not docs:
        return dict.fromkeys(KS, 0.0)
    lengths = [sum(d.values()) for d in docs]
    mean_length = sum(lengths) / len(docs) or 1.0
    df = Counter(w for d in docs for w in d)
    idf = {w: math.log(len(docs) - f + 0.5) - math.log(f + 0.5) for w, f in df.items()}
    floor = BM25_EPSILON * sum(idf.values()) / len(idf)
    idf = {w: v if v >= 0 else floor for w, v in idf.items()}
    sums = dict.fromkeys(KS, 0.0)
    for q in loaded.questions:
        words = _bm25_tokens(q.text)
        scores = []
        for doc, length in zip(docs, lengths, strict=True):
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length / mean_length)
            scores.append(
                sum(idf[w] * doc[w] * (BM25_K1 + 1) / (doc[w] + norm) for w in words if doc[w])
            )
        order = sorted(range(len(docs)), key=lambda i: -scores[i])  # stable: ties in turn order
        ranked = [loaded.turns[i][0] for i in order]
        evidence = set(q.evidence)
        for k in KS:
            sums[k] += len(evidence & set(ranked[:k])) / len(evidence)
    return sums


def has_end() -> bool:
    """Whether this service has end() (its route resolves)."""
    from django.urls import Resolver404, resolve

    try:
        resolve(f"{BASE}/threads/00000000-0000-0000-0000-000000000000/end")
    except Resolver404:
        return False
    return True


def count_all(api: Api, path: str, key: str, **params: Any) -> int:
    """Rows of a cursor-paged list endpoint."""
    total, cursor = 0, None
    while True:
        query = dict(params, cursor=cursor) if cursor else params
        page = api.ok("GET", path, **query)
        total += len(page[key])
        cursor = page.get("nextCursor")
        if not cursor:
            return total


def extract(api: Api, loaded: Loaded) -> None:
    """end() every thread of the conversation, run the queued jobs (django-tasks'
    ``db_worker --batch`` in this process: it exits once the queue is empty), check that
    each succeeded, count what was made. The time covers both."""
    from django.core.management import call_command

    started = time.perf_counter()
    jobs = []
    for thread_id in loaded.thread_ids:
        status, body = api.request("POST", f"{BASE}/threads/{thread_id}/end")
        if status == 200:  # nothing to extract
            continue
        if status != 202:
            raise SystemExit(f"end() of {thread_id} answered {status}: {body}")
        jobs.append(body["jobId"])
    call_command("db_worker", "--batch", "--no-startup-delay", verbosity=0)
    loaded.extraction_seconds = time.perf_counter() - started
    for job_id in jobs:
        job = api.ok("GET", f"/v1/memory/jobs/{job_id}")
        if job["status"] != "succeeded":
            raise SystemExit(f"extraction job {job_id} {job['status']}: {job['error']}")
    loaded.made = {
        "episodes": count_all(
            api, "/v1/memory/episodic/episodes", "episodes", dataset=loaded.dataset
        ),
        "facts": count_all(api, "/v1/memory/semantic/facts", "facts", dataset=loaded.dataset),
        "entities": count_all(
            api, "/v1/memory/semantic/entities", "entities", dataset=loaded.dataset
        ),
    }


def cited(result: dict[str, Any]) -> list[str]:
    """Message ids the returned items cite, in rank order, de-duplicated (module doc)."""
    items: list[tuple[int, int, list[str]]] = []
    for layer_index, layer in enumerate(LAYERS):
        for position, item in enumerate(result.get(layer) or []):
            if layer == "raw":
                ids = [item["messageId"], *(n["messageId"] for n in item.get("neighbours", []))]
            elif layer == "facts":
                ids = list(item.get("sourceMessageIds") or [])
            else:
                ids = list(item.get("quotedMessageIds") or [])
            rank = item.get("rank", position + 1)
            items.append((rank, layer_index, ids))
    items.sort(key=lambda t: (t[0], t[1]))
    return list(dict.fromkeys(i for _, _, ids in items for i in ids))


def ask(api: Api, project: Any, loaded: Loaded, scores: dict[str, Any]) -> None:
    """Ask every question twice (domain function timed, then the API measured)."""
    from memoryapp.recall import recall

    for q in loaded.questions:
        c0, t0 = time.process_time(), time.perf_counter()
        recall(project=project, dataset=loaded.dataset, query=q.text, include=LAYERS, limit=max(KS))
        scores["latency"].append((time.perf_counter() - t0) * 1000)
        scores["cpu"].append((time.process_time() - c0) * 1000)
        t0 = time.perf_counter()
        result = api.ok(
            "POST",
            RECALL,
            {"dataset": loaded.dataset, "query": q.text, "include": list(LAYERS), "limit": max(KS)},
        )
        scores["apiLatency"].append((time.perf_counter() - t0) * 1000)
        ranked = [loaded.dia_of.get(i, "") for i in cited(result)]
        evidence = set(q.evidence)
        fresh: dict[int | str, float] = {"n": 0, **dict.fromkeys(KS, 0.0)}
        per = scores["byCategory"].setdefault(q.category, fresh)
        per["n"] += 1
        for k in KS:
            share = len(evidence & set(ranked[:k])) / len(evidence)
            scores["overall"][k] += share
            per[k] += share
            loaded.recall_sums[k] += share


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL)
    parser.add_argument("--data", type=Path, default=LOCOMO_DATA)
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    return parser.parse_args()


def report(
    label: str, conversations: list[Loaded], scores: dict[str, Any], ended: bool
) -> dict[str, Any]:
    """Print the figures; return them as --json writes them."""
    n = sum(c["n"] for c in scores["byCategory"].values())
    print(f"LoCoMo long-term memory, {label}; model: offline")
    if ended:
        print(
            f"\n{'conversation':<13}{'threads':>8}{'messages':>9}{'episodes':>9}{'facts':>7}{'entities':>9}{'extract s':>10}"
        )
        for c in conversations:
            print(
                f"{c.dataset:<13}{len(c.thread_ids):>8}{len(c.dia_of):>9}{c.made['episodes']:>9}"
                f"{c.made['facts']:>7}{c.made['entities']:>9}{c.extraction_seconds:>10.2f}"
            )
    else:
        print("\nend() is not in this service yet: no extraction, recall answers from raw messages")
    print(f"\nevidence recall@k over {n} questions (categories 1-4)")
    print(f"{'':>22}" + "".join(f"{'@' + str(k):>9}" for k in KS))
    overall = {str(k): round(scores["overall"][k] / n, 3) for k in KS}
    print(f"{'this service':>22}" + "".join(f"{overall[str(k)]:>9.3f}" for k in KS))
    bm25_sums = {c.dataset: bm25_reference(c) for c in conversations}
    bm25 = {str(k): round(sum(b[k] for b in bm25_sums.values()) / n, 3) for k in KS}
    print(f"{'BM25 on this data':>22}" + "".join(f"{bm25[str(k)]:>9.3f}" for k in KS))
    print(
        f"{'BM25 of the README':>22}"
        + "".join(f"{REFERENCE[k]:>9.3f}" for k in KS)
        + "  (LoCoMo's five)"
    )
    by_category = {}
    for category in sorted(scores["byCategory"]):
        row = scores["byCategory"][category]
        by_category[str(category)] = {str(k): round(row[k] / row["n"], 3) for k in KS}
        name = f"category {category} ({row['n']})"
        print(f"{name:>22}" + "".join(f"{by_category[str(category)][str(k)]:>9.3f}" for k in KS))
    print(f"\nper conversation{'this service':>33}{'BM25 on it':>27}")
    by_conversation: dict[str, Any] = {}
    for c in conversations:
        asked = max(len(c.questions), 1)
        mine = {str(k): round(c.recall_sums[k] / asked, 3) for k in KS}
        theirs = {str(k): round(bm25_sums[c.dataset][k] / asked, 3) for k in KS}
        by_conversation[c.dataset] = {**mine, "bm25": theirs}
        name = f"{c.dataset} ({len(c.questions)})"
        print(
            f"{name:>22}"
            + "".join(f"{mine[str(k)]:>9.3f}" for k in KS)
            + "".join(f"{theirs[str(k)]:>9.3f}" for k in KS)
        )
    latency = {
        "p50": round(percentile(scores["latency"], 50), 2),
        "p95": round(percentile(scores["latency"], 95), 2),
        "apiP50": round(percentile(scores["apiLatency"], 50), 2),
        "apiP95": round(percentile(scores["apiLatency"], 95), 2),
        "cpuP50": round(percentile(scores["cpu"], 50), 2),
    }
    print(
        f"\nrecall latency: p50 {latency['p50']:.1f} ms, p95 {latency['p95']:.1f} ms "
        f"(POST {RECALL}: p50 {latency['apiP50']:.1f} ms, p95 {latency['apiP95']:.1f} ms)"
    )
    print(
        f"this process's CPU time per recall: p50 {latency['cpuP50']:.1f} ms (on SQLite the "
        f"whole recall, on PostgreSQL without the server's part; wall times inflate with the "
        f"machine's load, load average {os.getloadavg()[0]:.1f})"
    )
    return {
        "overall": overall,
        "bm25": bm25,
        "byCategory": by_category,
        "byConversation": by_conversation,
        "latencyMs": latency,
        "database": label,
        "questions": n,
        "conversations": [
            {
                "dataset": c.dataset,
                "threads": len(c.thread_ids),
                "messages": len(c.dia_of),
                **c.made,
                "extractionSeconds": round(c.extraction_seconds, 3),
            }
            for c in conversations
        ],
    }


def main() -> int:
    args = arguments()
    files = conversation_files(args.data)
    with throwaway_database(args.database, args.postgres_url) as label:
        from memoryapp.models import Project

        api = Api.for_new_project("locomo")
        project = Project.objects.get(slug="locomo")
        conversations = [load(api, path) for path in files]
        ended = has_end()
        if ended:
            for loaded in conversations:
                extract(api, loaded)
        if args.database == "postgres":
            from _common import analyze_tables

            analyze_tables()
        by_category: dict[int, dict[int | str, float]] = {}
        scores: dict[str, Any] = {
            "overall": dict.fromkeys(KS, 0.0),
            "byCategory": by_category,
            "latency": [],
            "apiLatency": [],
            "cpu": [],
        }
        for loaded in conversations:
            ask(api, project, loaded, scores)
        figures = report(label, conversations, scores, ended)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

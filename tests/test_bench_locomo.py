"""bench/locomo.py (issue 8 "Must show"): what it prints and writes, run on the held-out
conversations of bench/heldout (written for this project in LoCoMo's file format), and
the citation rule its recall@k is measured by."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
HELDOUT = ROOT / "bench" / "heldout"
KS = ["5", "10", "20"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any]]:
    """One run of the bench on SQLite over bench/heldout: (stdout, the --json figures)."""
    out = tmp_path_factory.mktemp("locomo") / "figures.json"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "LOCOMO_DATA")}
    done = subprocess.run(
        [sys.executable, "bench/locomo.py", "--data", str(HELDOUT), "--json", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, json.loads(out.read_text(encoding="utf-8"))


def test_it_writes_the_figures_in_the_issue_shape(run: tuple[str, dict[str, Any]]) -> None:
    _, figures = run
    assert set(figures) == {
        "overall",
        "bm25",
        "byCategory",
        "byConversation",
        "latencyMs",
        "database",
        "questions",
        "conversations",
    }
    assert list(figures["overall"]) == list(figures["bm25"]) == KS
    assert list(figures["byCategory"]) == ["1", "2", "3", "4"]
    assert all(list(row) == KS for row in figures["byCategory"].values())
    assert list(figures["latencyMs"]) == ["p50", "p95", "apiP50", "apiP95", "cpuP50"]
    assert figures["database"].startswith("SQLite")
    assert figures["questions"] == 56
    # The reference is plain Python over the files: the same figures every run.
    assert figures["bm25"] == {"5": 0.635, "10": 0.75, "20": 0.991}


def test_it_counts_what_extraction_made_per_conversation(run: tuple[str, dict[str, Any]]) -> None:
    stdout, figures = run
    made = [
        (c["dataset"], c["threads"], c["messages"], c["episodes"]) for c in figures["conversations"]
    ]
    # One thread per session, one episode per thread (end() on each).
    assert made == [("conv-h1", 3, 33, 3), ("conv-h2", 3, 31, 3), ("conv-h3", 3, 31, 3)]
    for c in figures["conversations"]:
        assert c["facts"] > 0 and c["entities"] > 0 and c["extractionSeconds"] > 0
        row = next(line.split() for line in stdout.splitlines() if line.startswith(c["dataset"]))
        assert row[:6] == [
            c["dataset"],
            "3",
            str(c["messages"]),
            "3",
            str(c["facts"]),
            str(c["entities"]),
        ]


def test_it_prints_recall_at_k_overall_per_category_and_per_conversation(
    run: tuple[str, dict[str, Any]],
) -> None:
    stdout, figures = run
    lines = stdout.splitlines()
    service = next(line.split() for line in lines if line.strip().startswith("this service"))
    assert [float(v) for v in service[2:]] == [figures["overall"][k] for k in KS]
    for category, row in figures["byCategory"].items():
        printed = next(
            line.split() for line in lines if line.strip().startswith(f"category {category} (")
        )
        assert [float(v) for v in printed[3:]] == [row[k] for k in KS]
    assert list(figures["byConversation"]) == ["conv-h1", "conv-h2", "conv-h3"]
    assert "recall latency: p50" in stdout


def test_it_beats_bm25_on_conversations_it_was_never_tuned_on(
    run: tuple[str, dict[str, Any]],
) -> None:
    """The issue's goal is checked on conversations we do not have: on these, written
    after every constant was set, recall must still beat the same BM25 at 5 and 10 (at
    20 both reach most of a 31-turn conversation)."""
    _, figures = run
    for k in ("5", "10"):
        assert figures["overall"][k] > figures["bm25"][k], k


def _bench() -> Any:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import locomo
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return locomo


def test_it_measures_the_messages_items_cite_in_rank_order() -> None:
    """Raw hits cite themselves and their neighbours, facts their source messages,
    episodes only the messages they quote; in rank order, de-duplicated."""
    result = {
        "episodes": [
            {"rank": 1, "quotedMessageIds": ["q1", "r1"], "fromSequence": 1, "toSequence": 99}
        ],
        "facts": [{"rank": 3, "sourceMessageIds": ["s1"]}],
        "raw": [
            {"rank": 2, "messageId": "r1", "neighbours": [{"messageId": "n1"}]},
            {"rank": 4, "messageId": "s1", "neighbours": []},
        ],
    }
    assert _bench().cited(result) == ["q1", "r1", "n1", "s1"]

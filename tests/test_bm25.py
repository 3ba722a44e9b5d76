"""memoryapp.bm25: BM25 with the statistics a caller hands it (exact values)."""

from __future__ import annotations

import math

import pytest

from memoryapp import bm25


def test_it_counts_document_frequency_and_mean_length_in_a_complete_pool() -> None:
    hits = [[True, False], [True, True], [False, True], [True, False]]
    corpus = bm25.pool_corpus(hits, [10, 20, 30, 40], size=10)

    assert (corpus.size, corpus.mean_length, list(corpus.frequency)) == (10, 25.0, [3, 2])
    assert corpus.idfs() == pytest.approx([math.log(1 + 7.5 / 3.5), math.log(1 + 8.5 / 2.5)])


def test_it_never_takes_a_collection_smaller_than_the_pool() -> None:
    assert bm25.pool_corpus([[True]] * 3, [5, 5, 5], size=1).size == 3
    assert bm25.pool_corpus([], [], size=0) == bm25.Corpus(0, 1.0, [])


def test_it_scores_present_words_by_idf_and_length() -> None:
    corpus = bm25.Corpus(size=10, mean_length=20.0, frequency=[1, 5])
    idf_rare, idf_common = corpus.idfs()

    got = bm25.scores([[True, True], [False, True], [False, False]], [20, 40, 20], corpus)

    # |d| = avgdl: norm 1 + K1; twice as long: 1 + K1 * (1 - B + 2B).
    k1, b = bm25.K1, bm25.B
    assert got == pytest.approx(
        [
            (idf_rare + idf_common) * (k1 + 1) / (1 + k1),
            idf_common * (k1 + 1) / (1 + k1 * (1 - b + 2 * b)),
            0.0,
        ]
    )
    assert idf_rare == pytest.approx(math.log(1 + 9.5 / 1.5))

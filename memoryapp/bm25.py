"""Okapi BM25 over a candidate pool, computed here: recall's one ranking on every engine.

The database's full-text index (SQLite FTS5, PostgreSQL tsvector) finds the candidates
that contain any query word and says, per candidate and query word, whether the word is
in it (with the engine's stemming: "painted" finds "painting"). This module scores them,
so the order does not depend on the engine's own ranking function: FTS5 ``bm25()`` and
PostgreSQL ``ts_rank_cd`` rank differently, and ts_rank_cd has no inverse document
frequency at all (a common word counted as much as a rare one).

For query words ``t`` and a document ``d``::

    score(d) = sum over t in d of  idf(t) * (K1 + 1) / (1 + K1 * (1 - B + B * |d| / avgdl))
    idf(t)   = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

This is BM25 with a term frequency of 1 for a word the document has (recall searches
chat messages, facts and summaries: short texts where a word rarely recurs, and whose
engines report presence, not counts, cheaply) and the non-negative idf of Lucene and
rank-bm25's Okapi variant. ``|d|`` is the length in characters (the ratio |d| / avgdl is
all BM25 uses, and characters count the same on every engine). ``Corpus`` carries ``N``,
``avgdl`` and ``df``; the callers (memoryapp.message_search, memoryapp.layer_search) say
where theirs come from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

K1 = 1.2
B = 0.75


@dataclass(frozen=True, slots=True)
class Corpus:
    """What BM25 knows of the collection: ``size`` documents (N), their mean length in
    characters (avgdl) and, per query word (in query order), how many contain it (df)."""

    size: int
    mean_length: float
    frequency: Sequence[int]

    def idfs(self) -> list[float]:
        """idf per query word: ln(1 + (N - df + 0.5) / (df + 0.5)), df capped at N."""
        out = []
        for count in self.frequency:
            df = min(count, self.size)
            out.append(math.log(1 + (self.size - df + 0.5) / (df + 0.5)))
        return out


def pool_corpus(hits: Sequence[Sequence[bool]], lengths: Sequence[int], size: int) -> Corpus:
    """The statistics of a pool that holds *every* document containing a query word, so
    df is exact: ``hits[i][j]`` whether document i has word j, ``lengths[i]`` its length,
    in a collection of ``size`` documents (at least the pool's). avgdl is the pool's mean
    length: the only lengths at hand without reading the whole collection."""
    words = len(hits[0]) if hits else 0
    frequency = [sum(1 for row in hits if row[j]) for j in range(words)]
    mean = sum(lengths) / len(lengths) if lengths else 1.0
    return Corpus(size=max(size, len(hits)), mean_length=max(mean, 1.0), frequency=frequency)


def scores(
    hits: Sequence[Sequence[bool]],
    lengths: Sequence[int],
    corpus: Corpus,
    weights: Sequence[float] | None = None,
    alternatives: Sequence[int] = (),
) -> list[float]:
    """The BM25 score of every document (module doc), in order; 0.0 for one that has no
    query word. ``weights``: per query word, a factor on its idf (a word the query only
    implies counts less than one it says: memoryapp.query_intent); None: 1.0 each.
    ``alternatives``: the indices of words that stand for one another (the words a
    question implies): a document counts only the best of them that it has."""
    idfs = corpus.idfs()
    if weights is not None and hits:
        idfs = [idf * weight for idf, weight in zip(idfs, weights, strict=True)]
    either = set(alternatives)
    out = []
    for row, length in zip(hits, lengths, strict=True):
        weight = sum(idf for i, (idf, hit) in enumerate(zip(idfs, row, strict=True))
                     if hit and i not in either)
        weight += max((idfs[i] for i in either if row[i]), default=0.0)
        norm = 1 + K1 * (1 - B + B * max(length, 1) / corpus.mean_length)
        out.append(weight * (K1 + 1) / norm)
    return out

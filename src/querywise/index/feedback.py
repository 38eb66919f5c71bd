"""Pseudo-relevance feedback for the BM25 list (`[index] feedback_docs`): the query's terms, plus
the terms that weigh most in its first few hits, searched again.

The first hits come from the same search (hybrid: the fused list, whose top is more often right
than either list's alone; bm25: the BM25 list). Each hit's text is weighed as the build weighs a
chunk (BM25's saturated term frequency, tf / (tf + k1 * (1 - b + b * dl / avgdl))), the weights
are averaged over the hits and multiplied by the term's IDF (Rocchio on the BM25 vectors, as
Bo1 and RM3 rank expansion terms by how much more a term weighs in the feedback than in the
corpus). The `terms` best become query terms beside the query's own, at `weight` times their
share of the best one's score; the query's own terms keep their count over the largest count.
The dense list is searched as it was: the query's vector does not change.

It is off by default: on a collection whose first hits are often wrong it drifts the query
(SciFact's claims and doc2dial's questions lost with every setting tried), while on Medline's
topical queries it gained (bench/results/feedback.md). `querywise tune` measures it on labelled queries and writes it only
when it held out above the tuned fusion without it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from querywise.index.engine import Engine, EngineQuery
from querywise.index.lexical import Lexicon, SparseVec, doc_length
from querywise.text import analyze

__all__ = ["expand", "feedback_text", "with_feedback"]


def idf(df: int, n_docs: int) -> float:
    """The engine's IDF modifier (Qdrant's, Lucene's BM25): ln(1 + (N - df + 0.5) / (df + 0.5))."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def feedback_text(payload: dict[str, Any]) -> str:
    """What a hit is weighed by: its title line and its text, as the build analysed it."""
    title, text = str(payload.get("title") or ""), str(payload.get("text") or "")
    return f"{title}\n{text}" if title else text


def expand(query: SparseVec, texts: Sequence[str], lexicon: Lexicon, *, terms: int, weight: float, k1: float, b: float) -> SparseVec:
    """`query` (term ids, counts) with the `terms` best feedback terms of `texts` added.

    A term's feedback score is its mean saturated frequency over `texts` times its IDF; each added
    term weighs `weight` * score / best score, added to its own weight when the query holds it,
    whose terms weigh count / largest count. Terms the lexicon lacks are ignored; no text, no
    term or no weight: `query` as it was.

    >>> lex = Lexicon(terms={"cat": 0, "purr": 1, "dog": 2}, df=[2, 1, 2], n_docs=3, total_len=6)
    >>> ids, weights = expand(([0], [1.0]), ["cat purr purr"], lex, terms=2, weight=0.5, k1=1.2, b=0.75)
    >>> ids, [round(w, 3) for w in weights]  # purr scores best: it weighs 0.5; cat 1 + 0.5 * its share
    ([0, 1], [1.165, 0.5])
    """
    ids, counts = query
    if not texts or terms <= 0 or weight <= 0 or not ids:
        return query
    avgdl = lexicon.avgdl
    mass: dict[int, float] = {}
    for text in texts:
        analysed = analyze(text)
        norm = k1 * (1 - b + b * doc_length(analysed) / avgdl) if avgdl else k1
        for term, tf in Counter(t for t in analysed if t in lexicon.terms).items():
            tid = lexicon.terms[term]
            mass[tid] = mass.get(tid, 0.0) + tf / (tf + norm) / len(texts)
    scored = sorted(((m * idf(lexicon.df[tid], lexicon.n_docs), tid) for tid, m in mass.items()), key=lambda st: (-st[0], st[1]))[:terms]
    if not scored or scored[0][0] <= 0:
        return query
    top = max(counts)
    out = {tid: c / top for tid, c in zip(ids, counts, strict=True)}
    for s, tid in scored:
        out[tid] = out.get(tid, 0.0) + weight * s / scored[0][0]
    keys = sorted(out)
    return keys, [out[k] for k in keys]


def with_feedback(engine: Engine, q: EngineQuery, lexicon: Lexicon, *, docs: int, terms: int, weight: float, k1: float, b: float) -> EngineQuery:
    """`q` with its BM25 vector expanded from its own first `docs` hits (one more search, of
    `docs` hits, with their payloads); `q` itself when it has no BM25 term or finds nothing."""
    if docs <= 0 or not (q.sparse and q.sparse[0]):
        return q
    first = engine.query(replace(q, limit=docs, with_payload=True))
    texts = [feedback_text(h.payload) for h in first]
    return replace(q, sparse=expand(q.sparse, texts, lexicon, terms=terms, weight=weight, k1=k1, b=b))

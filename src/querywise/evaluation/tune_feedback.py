"""Pseudo-relevance feedback's candidates for `querywise tune --feedback` (`[index] feedback_docs`,
`feedback_terms`, `feedback_weight`: `index.feedback`).

Once `tune` has chosen a fusion, each case's first hits under it are the feedback; for every
setting of `FEEDBACK_GRID` the expanded BM25 query is searched (as deep as tune's lists) and
ranked with the case's dense list as the chosen fusion ranks, and scored. `tune` cross-validates
the choice between no feedback and these settings as it does the fusion's, and writes a setting
only when it held out above no feedback. The fusion was chosen on all the cases first: the two
procedures compared share that choice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from querywise.conditions import Where
from querywise.index import Hit, Index
from querywise.index.feedback import expand, feedback_text
from querywise.index.lexical import SparseVec

__all__ = ["FEEDBACK_GRID", "Feedback", "FeedbackTuned", "feedback_table"]


class Feedback(BaseModel):
    """One feedback setting: how many first hits, how many terms, at what weight."""

    model_config = ConfigDict(frozen=True)
    docs: int
    terms: int
    weight: float

    @property
    def label(self) -> str:
        return f"feedback docs={self.docs} terms={self.terms} weight={self.weight:g}"


# Chosen on Medline's queries (bench/results/feedback.md): few first hits (3 to 10), RM3's usual
# 10 to 20 terms, the added terms at half or all of a query term's weight.
FEEDBACK_GRID = tuple(Feedback(docs=d, terms=t, weight=w) for d in (3, 5, 10) for t in (10, 20) for w in (0.5, 1.0))


class FeedbackTuned(BaseModel):
    """What `tune --feedback` measured: each setting's mean score with the chosen fusion, the
    procedure's held-out gain over no feedback, and what is written (None: no feedback)."""

    scores: dict[str, float]  # label -> mean over all the cases
    without: float  # the chosen fusion's mean, no feedback
    best: Feedback
    chosen: Feedback | None
    cv_gain: float
    cv_gain_low: float
    cv_gain_high: float


def feedback_table(
    index: Index,
    queries: Sequence[SparseVec],
    wheres: Sequence[Where | None],
    first: Sequence[Sequence[Hit]],
    rescore: Callable[[int, list[Hit]], float],
    *,
    depth: int,
    grid: Sequence[Feedback] = FEEDBACK_GRID,
    on_case: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Each case's score (rows) under each setting (columns): its BM25 query expanded from the
    texts of its `first` hits, searched `depth` deep, and `rescore(row, bm25_hits)`."""
    manifest, lexicon = index.manifest, index.lexicon
    table = np.zeros((len(queries), len(grid)))
    for row, (query, where, hits) in enumerate(zip(queries, wheres, first, strict=True)):
        texts = [feedback_text({"title": h.title, "text": h.text}) for h in hits]
        for col, fb in enumerate(grid):
            sparse = expand(query, texts[: fb.docs], lexicon, terms=fb.terms, weight=fb.weight, k1=manifest.k1, b=manifest.b)
            table[row, col] = rescore(row, index.query(mode="bm25", k=depth, sparse=sparse, where=where, feedback=False))
        if on_case:
            on_case(1)
    return table

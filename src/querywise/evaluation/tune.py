"""Choosing how hybrid search fuses its two lists, on labelled queries (`querywise tune`).

Each case's message is searched once dense and once BM25 (as typed, with its session's access,
each list `depth` deep); every candidate fusion is then computed from those two lists, as the
engine computes it (`index.fusion.fuse_scored`, equal scores to the chunk first in the corpus),
and scored. Candidates: BM25 alone, dense alone, RRF with the dense list's share w in
0.1..0.9 (0.5 is plain RRF) and the convex combination of normalised scores with w in 0..1,
in steps of 0.05. When the index keeps sentence vectors (`[index] sentence_vectors`), its
best-sentence list is searched too and every hybrid candidate is tried with that list's share of
the dense side in 0..1, in steps of 0.1 (0: the chunk vectors alone).

The choice is cross-validated: cases fall into `folds` folds by a hash of their id; for each fold
the best candidate on the other folds is scored on it, and the mean of those held-out scores
(`cv_score`) estimates what the procedure gives on queries it did not see, next to the best
single mode's. The held-out scores are also compared, case by case, with the untuned default
(plain RRF): `cv_gain`, with its 95% bootstrap interval.

What is chosen must not mislead. The best candidate on all the cases is written only when the
procedure beat the default on held-out queries: with fewer than `MIN_CASES` judged cases, only
when the interval's lower bound is above 0 (few labels shrink the choice to the default); with
more, when the held-out gain is above 0. Otherwise the default stays, and `warnings` say why; they
also say when the tuned procedure held out below the best single mode. Nothing here reads a test
split: give `tune` the dev (or train) queries and report the chosen config on test with
`eval --config`.

With `feedback` (`tune --feedback`), pseudo-relevance feedback is measured on top of the chosen
fusion (`tune_feedback`): each setting's score against none, cross-validated by the same rule,
and written only when it held out above none.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict

from querywise.conditions import Where
from querywise.evaluation.cases import Case
from querywise.evaluation.harness import JudgedIds
from querywise.evaluation.metrics import Metric, score
from querywise.evaluation.stats import paired_difference
from querywise.evaluation.tune_feedback import FEEDBACK_GRID, FeedbackTuned, feedback_table
from querywise.index import Hit
from querywise.index.engine import Mode
from querywise.index.fusion import Fusion, fuse_scored
from querywise.index.lexical import SparseVec
from querywise.service import QueryWise
from querywise.understand.access import access_from_session

__all__ = ["MIN_CASES", "Candidate", "CandidateScore", "TuneResult", "candidates", "fold_of", "tune"]

#: Below this many judged cases a tuned fusion is kept only when it beats the default on held-out
#: cases at the 95% lower bound: seven labelled queries once chose a fusion that held out below dense.
MIN_CASES = 30

# Steps of 0.05: the score curves over w are smooth enough that a finer grid costs only more
# candidates for the cross-validation to guard against (its held-out score says what it gives).
RRF_WEIGHTS = tuple(round(0.1 + 0.05 * i, 2) for i in range(17))  # 0.1 .. 0.9
CONVEX_WEIGHTS = tuple(round(0.05 * i, 2) for i in range(21))  # 0 .. 1
SENTENCE_SHARES = tuple(round(0.1 * i, 1) for i in range(11))  # 0 .. 1


class Candidate(BaseModel):
    """One way to rank: a single mode, or hybrid with a fusion, the dense side's share and, on an
    index with sentence vectors, the best-sentence list's part of that share."""

    model_config = ConfigDict(frozen=True)
    mode: Mode
    fusion: Fusion = "rrf"
    dense_weight: float = 0.5
    sentence_share: float | None = None

    @property
    def label(self) -> str:
        if self.mode != "hybrid":
            return self.mode
        return f"{self.fusion} w={self.dense_weight:g}" + ("" if self.sentence_share is None else f" s={self.sentence_share:g}")


class CandidateScore(BaseModel):
    candidate: Candidate
    label: str
    score: float  # the mean metric over all the cases


class TuneResult(BaseModel):
    """What `tune` measured and chose."""

    metric: str
    n: int
    folds: int
    scores: list[CandidateScore]  # every candidate, best first
    chosen: Candidate  # what is written: the best, or the default when tuning did not earn it
    best: Candidate  # the best on all the cases
    cv_score: float  # the procedure's mean held-out score
    cv_gain: float  # held-out score minus the default's, per case, averaged
    cv_gain_low: float  # its 95% bootstrap interval
    cv_gain_high: float
    warnings: list[str]
    cv_single_best: float  # the same for choosing only between BM25 and dense
    plain_rrf: float
    bm25: float
    dense: float
    feedback: FeedbackTuned | None = None  # with `feedback=True`: pseudo-relevance feedback on top of `chosen`


def candidates(*, sentences: bool = False) -> list[Candidate]:
    shares: tuple[float | None, ...] = SENTENCE_SHARES if sentences else (None,)
    return [Candidate(mode="bm25"), Candidate(mode="dense"),
            *(Candidate(mode="hybrid", fusion="rrf", dense_weight=w, sentence_share=s) for s in shares for w in RRF_WEIGHTS),
            *(Candidate(mode="hybrid", fusion="convex", dense_weight=w, sentence_share=s) for s in shares for w in CONVEX_WEIGHTS)]


def fold_of(case_id: str, folds: int) -> int:
    """The fold a case falls in: a hash of its id, so a case keeps its fold across runs."""
    return int(hashlib.sha1(case_id.encode()).hexdigest(), 16) % folds


@dataclass(frozen=True)
class _Searched:
    """One case's lists, searched once: every candidate is ranked from them."""

    dense: list[Hit]
    bm25: list[Hit]
    best: list[Hit]  # the best-sentence list ([] on an index without sentence vectors)
    sparse: SparseVec
    where: Where | None

    def ranked(self, cand: Candidate, position: dict[str, int], rrf_k: int, depth: int) -> list[Hit]:
        """The hits as `cand` ranks them: as the engine fuses, equal scores to the chunk first in the corpus."""
        if cand.mode != "hybrid":
            return self.dense if cand.mode == "dense" else self.bm25
        by_id = {h.id: h for h in [*self.best, *self.bm25, *self.dense]}
        fused = fuse_scored([[(h.id, h.score) for h in self.dense], [(h.id, h.score) for h in self.bm25]], fusion=cand.fusion,
                            dense_weight=cand.dense_weight, rrf_k=rrf_k, sentence_share=cand.sentence_share or 0.0,
                            sentences=None if cand.sentence_share is None else [(h.id, h.score) for h in self.best])
        fused.sort(key=lambda kv: (-kv[1], position.get(kv[0], len(position))))
        return [by_id[i] for i, _ in fused[:depth]]


def tune(
    cases: Sequence[Case],
    deployment: QueryWise,
    metric: Metric,
    *,
    folds: int = 5,
    on_case: Callable[[int], None] | None = None,
    feedback: bool = False,
) -> TuneResult:
    """Score every candidate on `cases` (those with a relevant id) through the deployment's index;
    with `feedback`, then measure pseudo-relevance feedback on top of the chosen one
    (`tune_feedback`: every setting's expanded BM25 list searched for every case)."""
    index = deployment.index
    if index is None:
        raise ValueError("tune compares fusions of the querywise index's own dense and BM25 lists: give it an index")
    judged = [c for c in cases if c.relevant]
    if len(judged) < folds:
        raise ValueError(f"{len(judged)} cases with a relevant id: too few to cross-validate over {folds} folds")
    settings = deployment.settings
    depth = max(settings.index.depth, metric.k or 10)
    position = {chunk.id: i for i, chunk in enumerate(index.chunks())}  # the engine's tie-break: corpus order
    ids = JudgedIds.of(index)
    sentences = index.manifest.n_sentences is not None
    grid = candidates(sentences=sentences)
    table = np.zeros((len(judged), len(grid)))
    vectors = np.asarray(index.embedder.embed([c.message for c in judged]), dtype=np.float32)
    searched: list[_Searched] = []
    for row, case in enumerate(judged):
        where = access_from_session(case.session, settings.access) or None
        sparse = index.lexicon.query_vector(case.message)
        dense = index.query(mode="dense", k=depth, dense=vectors[row].tolist(), where=where, feedback=False)
        bm25 = index.query(mode="bm25", k=depth, sparse=sparse, where=where, feedback=False)
        best = index.sentence_query(vectors[row].tolist(), k=depth, where=where) if sentences else []
        lists = _Searched(dense, bm25, best, sparse, where)
        for col, cand in enumerate(grid):
            table[row, col] = score(metric, ids.ranked(lists.ranked(cand, position, settings.index.rrf_k, depth), case.relevant), case.relevant) or 0.0
        if feedback:
            searched.append(lists)
        if on_case:
            on_case(1)

    fold = np.array([fold_of(c.id, folds) for c in judged])
    singles = [i for i, c in enumerate(grid) if c.mode != "hybrid"]

    def held_out(allowed: Sequence[int], table: np.ndarray = table) -> np.ndarray:
        """Each case's score under the candidate (a column of `table`) chosen on the other folds."""
        per_case = np.zeros(len(judged))
        for f in range(folds):
            train, test = fold != f, fold == f
            if not test.any():
                continue
            best = max(allowed, key=lambda col: (table[train, col].mean(), -col))
            per_case[test] = table[test, best]
        return per_case

    means = table.mean(axis=0)
    order = sorted(range(len(grid)), key=lambda col: (-means[col], col))
    plain = grid.index(Candidate(mode="hybrid", fusion="rrf", dense_weight=0.5, sentence_share=0.0 if sentences else None))
    bm25_col, dense_col = grid.index(Candidate(mode="bm25")), grid.index(Candidate(mode="dense"))
    tuned, single = held_out(range(len(grid))), held_out(singles)
    gain = paired_difference(table[:, plain], tuned)
    top, default = grid[order[0]], grid[plain]
    warnings: list[str] = []
    earned = gain.low > 0 if len(judged) < MIN_CASES else gain.delta > 0
    if top != default and not earned:
        why = (f"only {len(judged)} judged cases (under {MIN_CASES}) and the held-out gain over plain RRF is "
               f"{gain.delta:+.4f} [{gain.low:+.4f}, {gain.high:+.4f}], not above 0 at the 95% bound"
               if len(judged) < MIN_CASES else f"the tuned fusion held out {gain.delta:+.4f} against plain RRF")
        warnings.append(f"kept the default (plain RRF) instead of {top.label}: {why}")
    if tuned.mean() < single.mean():
        warnings.append(f"the tuned choice held out at {tuned.mean():.4f}, below choosing a single mode ({single.mean():.4f}): "
                        f"on these queries one list alone ({'dense' if means[dense_col] >= means[bm25_col] else 'BM25'}) may be the safer setting")
    chosen = top if earned else default
    tuned_feedback = None
    if feedback and chosen.mode != "dense":
        first = [lists.ranked(chosen, position, settings.index.rrf_k, depth) for lists in searched]

        def rescore(row: int, bm25: list[Hit]) -> float:
            lists = searched[row]
            again = _Searched(lists.dense, bm25, lists.best, lists.sparse, lists.where)
            return score(metric, ids.ranked(again.ranked(chosen, position, settings.index.rrf_k, depth), judged[row].relevant), judged[row].relevant) or 0.0

        with_fb = feedback_table(index, [x.sparse for x in searched], [x.where for x in searched], first, rescore, depth=depth)
        both = np.column_stack([table[:, grid.index(chosen)], with_fb])  # column 0: no feedback
        fb_held = held_out(range(both.shape[1]), both)
        fb_gain = paired_difference(both[:, 0], fb_held)
        fb_means = both.mean(axis=0)
        best_fb = int(np.argmax(fb_means[1:]))
        fb_earned = fb_gain.low > 0 if len(judged) < MIN_CASES else fb_gain.delta > 0
        if not fb_earned:
            warnings.append(f"no feedback written: its best setting ({FEEDBACK_GRID[best_fb].label}) scored {fb_means[1 + best_fb]:.4f} against "
                            f"{fb_means[0]:.4f} without, and choosing it on the other folds held out {fb_gain.delta:+.4f}")
        tuned_feedback = FeedbackTuned(
            scores={fb.label: round(float(m), 4) for fb, m in zip(FEEDBACK_GRID, fb_means[1:], strict=True)}, without=round(float(fb_means[0]), 4),
            best=FEEDBACK_GRID[best_fb], chosen=FEEDBACK_GRID[best_fb] if fb_earned else None,
            cv_gain=round(fb_gain.delta, 4), cv_gain_low=round(fb_gain.low, 4), cv_gain_high=round(fb_gain.high, 4))
    return TuneResult(
        metric=metric.label, n=len(judged), folds=folds,
        scores=[CandidateScore(candidate=grid[i], label=grid[i].label, score=round(float(means[i]), 4)) for i in order],
        chosen=chosen, best=top, cv_score=round(float(tuned.mean()), 4),
        cv_gain=round(gain.delta, 4), cv_gain_low=round(gain.low, 4), cv_gain_high=round(gain.high, 4), warnings=warnings,
        cv_single_best=round(float(single.mean()), 4),
        plain_rrf=round(float(means[plain]), 4), bm25=round(float(means[bm25_col]), 4), dense=round(float(means[dense_col]), 4),
        feedback=tuned_feedback,
    )

"""Choosing, per slice of traffic, which moves run, on labelled cases (`querywise tune --moves`).

The seed's rule: keep a technique only for the slices where it helps. Each case is asked through
the deployment once with its configured moves (the baseline) and once with each switchable move
taken out; a move's gain on a slice is, case by case, the baseline's score minus the score
without it, over the cases of that slice (`understand.slices`: the plan can tell them before any
move runs, so a choice made on them can be applied to live traffic). A move is turned off for a
slice where it lost on average over at least `MIN_SLICE` cases (overlapping slices taken greedily,
the most specific loss first: see `_choose`).

The choice is cross-validated as `tune` does for fusion: cases fall into folds by a hash of their
id; for each fold the choice is made on the other folds, and the fold's cases are asked through
the deployment *with that choice applied* (the moves' interactions included, nothing added up),
so `cv_gain` (with its 95% bootstrap interval) is what the procedure gives on cases it did not
see, against every move kept everywhere. The choice on all the cases is written only when it
earned it: with fewer than `MIN_CASES` judged cases the interval's lower bound must be above 0,
with more the held-out gain above 0. Otherwise nothing is switched off, and a warning says why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

import numpy as np
from pydantic import BaseModel

from querywise.config import Move, PlanSlice
from querywise.evaluation.cases import Case
from querywise.evaluation.harness import Arm, JudgedIds, run_arm
from querywise.evaluation.metrics import Metric
from querywise.evaluation.stats import paired_difference
from querywise.evaluation.tune import MIN_CASES, fold_of
from querywise.index.engine import Mode
from querywise.service import QueryWise
from querywise.understand.slices import PLAN_SLICES, message_slices

__all__ = ["MIN_SLICE", "MoveSliceGain", "MovesTuneResult", "tune_moves"]

#: A slice with fewer cases than this (in the cases a choice is made on) keeps every move.
MIN_SLICE = 5

OffIn = dict[Move, list[PlanSlice]]


class MoveSliceGain(BaseModel):
    """What one move gives on one slice: the score with it minus the score without it."""

    move: Move
    slice: PlanSlice
    n: int
    gain: float
    low: float  # 95% paired bootstrap interval
    high: float
    off: bool  # switched off for this slice by the choice on all the cases


class MovesTuneResult(BaseModel):
    """What `tune --moves` measured and chose."""

    metric: str
    n: int
    folds: int
    mode: Mode
    moves: list[Move]  # the switchable moves tried: configured, and able to act in this deployment
    slice_sizes: dict[str, int]
    gains: list[MoveSliceGain]
    best: OffIn  # the choice on all the cases
    chosen: OffIn  # what is written: `best`, or nothing when the procedure did not earn it
    baseline: float  # every configured move everywhere, mean over the cases
    cv_score: float  # the procedure's mean held-out score
    cv_gain: float  # held-out score minus the baseline's, per case, averaged
    cv_gain_low: float
    cv_gain_high: float
    warnings: list[str]


def _choose(moves: Sequence[Move], gain: dict[Move, np.ndarray], in_slice: dict[PlanSlice, np.ndarray], rows: np.ndarray) -> OffIn:
    """Each move's slices where, over `rows`, it lost on average (at least MIN_SLICE cases).

    Slices overlap (a follow-up is prose or an identifier too), so they are taken greedily: the
    slice where the move lost most per case first, then each other slice judged on the cases
    still left on. A move that lost only on follow-ups is turned off there, not on all of prose.
    """
    off: OffIn = {}
    for move in moves:
        left = rows.copy()
        while True:
            losses = [(float(gain[move][m].mean()), int(m.sum()), s) for s in cast(Sequence[PlanSlice], PLAN_SLICES)
                      if (m := left & in_slice[s]).sum() >= MIN_SLICE]
            worst = min(losses, default=None)
            if worst is None or worst[0] >= 0:
                break
            off.setdefault(move, []).append(worst[2])
            left &= ~in_slice[worst[2]]
    return off


def tune_moves(
    cases: Sequence[Case],
    deployment: QueryWise,
    metric: Metric,
    *,
    folds: int = 5,
    mode: Mode = "hybrid",
    on_case: Callable[[int], None] | None = None,
) -> MovesTuneResult:
    """Measure each switchable move per slice on `cases` (those with a relevant id) and choose where it runs."""
    judged = [c for c in cases if c.relevant]
    if len(judged) < folds:
        raise ValueError(f"{len(judged)} cases with a relevant id: too few to cross-validate over {folds} folds")
    unable = deployment.understander.unable()
    configured = list(dict.fromkeys(deployment.settings.understanding.moves))
    moves = [m for m in configured if m not in unable]
    if not moves:
        raise ValueError("no move is turned on (and able to act) in [understanding] moves: nothing to choose")
    ids = JudgedIds.of(deployment.index)
    label = metric.label

    def scores(dep: QueryWise, subset: Sequence[Case], on: Sequence[Move]) -> np.ndarray:
        result = run_arm(subset, dep, Arm(name="tune", mode=mode, moves=tuple(on)), [metric], on_case=on_case, judged=ids)
        return np.array([r.scores.get(label) or 0.0 for r in result.cases])

    catalog = deployment.understander.catalog
    slices = [set(message_slices(c.message, c.history, catalog=catalog)) for c in judged]
    in_slice = {s: np.array([s in got for got in slices]) for s in cast(Sequence[PlanSlice], PLAN_SLICES)}
    with deployment.with_moves(configured, off_in={}) as everywhere:  # a config's earlier choice is not the baseline
        base = scores(everywhere, judged, configured)
        gain = {m: base - scores(everywhere, judged, [o for o in configured if o != m]) for m in moves}
        everything = np.ones(len(judged), dtype=bool)
        best = _choose(moves, gain, in_slice, everything)
        fold = np.array([fold_of(c.id, folds) for c in judged])
        held = base.copy()
        for f in range(folds):
            test = fold == f
            choice = _choose(moves, gain, in_slice, ~test)
            if choice and test.any():
                with deployment.with_moves(configured, off_in=choice) as tuned:
                    held[test] = scores(tuned, [c for c, t in zip(judged, test, strict=True) if t], configured)

    cv = paired_difference(base, held)
    earned = cv.low > 0 if len(judged) < MIN_CASES else cv.delta > 0
    warnings: list[str] = []
    if best and not earned:
        why = (f"only {len(judged)} judged cases (under {MIN_CASES}) and the held-out gain is {cv.delta:+.4f} "
               f"[{cv.low:+.4f}, {cv.high:+.4f}], not above 0 at the 95% bound"
               if len(judged) < MIN_CASES else f"switching moves off per slice held out {cv.delta:+.4f} against keeping them")
        warnings.append(f"kept every move everywhere instead of turning off {_describe(best)}: {why}")
    gains = []
    for move in moves:
        for s in cast(Sequence[PlanSlice], PLAN_SLICES):
            if (n := int(in_slice[s].sum())) == 0:
                continue
            d = paired_difference(np.zeros(n), gain[move][in_slice[s]])
            gains.append(MoveSliceGain(move=move, slice=s, n=n, gain=round(d.delta, 4), low=round(d.low, 4), high=round(d.high, 4),
                                       off=s in best.get(move, [])))
    return MovesTuneResult(
        metric=label, n=len(judged), folds=folds, mode=mode, moves=moves,
        slice_sizes={s: int(m.sum()) for s, m in in_slice.items() if m.any()},
        gains=gains, best=best, chosen=best if earned else {}, baseline=round(float(base.mean()), 4),
        cv_score=round(float(held.mean()), 4), cv_gain=round(cv.delta, 4), cv_gain_low=round(cv.low, 4), cv_gain_high=round(cv.high, 4),
        warnings=warnings,
    )


def _describe(off: OffIn) -> str:
    return "; ".join(f"{m} on {', '.join(s)}" for m, s in off.items())

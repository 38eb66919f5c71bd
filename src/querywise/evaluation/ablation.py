"""Ablation: the same cases with each move on and off, and each search mode, against a baseline.

The baseline is pass-through (no move) in the settings' search mode. Each move that the
settings turn on gets an arm "+move" (baseline plus that move alone); "all" runs every
configured move together; "dense" and "bm25" (or "hybrid") run the baseline in another mode.
A move the settings do not turn on, or that cannot act under them (an LLM move without an
[llm] provider, filters without a schema), is skipped with a note, never faked.

Every arm is compared with the baseline per slice and per metric: B - A over the same cases,
with a paired bootstrap interval and a permutation p-value (`stats.paired_difference`, fixed
seed). A move that significantly helps one slice and significantly hurts another is flagged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import get_args

import numpy as np
from pydantic import BaseModel, Field

from querywise.config import Move, Settings
from querywise.evaluation.cases import Case
from querywise.evaluation.harness import ALL, Arm, ArmResult, JudgedIds, run_arm
from querywise.evaluation.metrics import Metric
from querywise.evaluation.stats import N_RESAMPLES, SEED, PairedDiff, paired_difference
from querywise.index.engine import MODES, Mode
from querywise.service import QueryWise
from querywise.understand.draft import Have
from querywise.understand.pipeline import unable as moves_unable

__all__ = ["AblationPlan", "AblationReport", "SliceDelta", "compare_arms", "mixed_effects", "plan_ablation", "run_ablation"]



class AblationPlan(BaseModel):
    """The arms to run, the baseline first, and what was skipped and why."""

    arms: list[Arm]
    skipped: dict[str, str] = Field(default_factory=dict)


class SliceDelta(BaseModel):
    """One arm against the baseline on one slice and one metric."""

    arm: str
    slice: str
    metric: str
    diff: PairedDiff


class AblationReport(BaseModel):
    baseline: str
    arms: list[ArmResult]
    deltas: list[SliceDelta]
    flags: list[str]  # "+spelling helps typo (ndcg@10 +0.080) but hurts prose (-0.020)"
    skipped: dict[str, str]
    seed: int = SEED
    resamples: int = N_RESAMPLES


def plan_ablation(
    settings: Settings, requested: Sequence[str] = (), *, mode: Mode = "hybrid", unable: Mapping[str, str] | None = None
) -> AblationPlan:
    """Arms for `requested` (move or mode names, or "all"; empty = every configured move and mode).
    `unable`: the moves the deployment cannot run, and why (`Understander.unable()`); None reads
    them from the settings, assuming an index.

    >>> [a.name for a in plan_ablation(Settings(), ["spelling", "bm25"]).arms]
    ['baseline', '+spelling', 'bm25']
    """
    known = list(get_args(Move))
    configured = [m for m in settings.understanding.moves if m in known]
    wanted = list(dict.fromkeys(requested or [ALL, *known, *MODES]))
    arms = [Arm(name="baseline", mode=mode, moves=())]
    # Moves that cannot act in this deployment (each move's `requires`): an arm would only repeat the baseline.
    inert = dict(unable) if unable is not None else moves_unable(Have.of_settings(settings))
    skipped: dict[str, str] = {}
    for name in wanted:
        if name == ALL:
            continue
        if name in MODES:
            if name != mode:
                arms.append(Arm(name=name, mode=name, moves=()))
        elif name in known:
            if name not in configured:
                skipped[name] = "not turned on in [understanding] moves"
            elif name in inert:
                skipped[name] = inert[name]
            else:
                arms.append(Arm(name=f"+{name}", mode=mode, moves=(name,)))
        else:
            raise ValueError(f"unknown ablation {name!r}: use a move ({', '.join(known)}), a mode ({', '.join(MODES)}) or all")
    active = [m for m in configured if m not in inert]
    if ALL in wanted and len(active) > 1:
        arms.append(Arm(name="all", mode=mode, moves=tuple(configured)))
    return AblationPlan(arms=arms, skipped=skipped)


def compare_arms(base: ArmResult, other: ArmResult, *, seed: int = SEED, resamples: int = N_RESAMPLES) -> list[SliceDelta]:
    """`other` minus `base`, per slice (and "all") and per metric, over the cases both ran."""
    by_id = {r.id: r for r in other.cases}
    pairs = [(a, by_id[a.id]) for a in base.cases if a.id in by_id]
    slices = [ALL, *sorted({s for a, _ in pairs for s in a.slices})]
    out: list[SliceDelta] = []
    for s in slices:
        rows = [(a, b) for a, b in pairs if s == ALL or s in a.slices]
        for metric in base.metrics:
            xa = np.array([np.nan if a.scores.get(metric) is None else a.scores[metric] for a, _ in rows], dtype=float)
            xb = np.array([np.nan if b.scores.get(metric) is None else b.scores[metric] for _, b in rows], dtype=float)
            if np.all(np.isnan(xa)):
                continue
            diff = paired_difference(xa, xb, seed=seed, resamples=resamples)
            out.append(SliceDelta(arm=other.arm.name, slice=s, metric=metric, diff=diff))
    return out


def mixed_effects(deltas: Sequence[SliceDelta]) -> list[str]:
    """One line per arm and metric that significantly helps a slice and significantly hurts another."""
    flags: list[str] = []
    for arm in dict.fromkeys(d.arm for d in deltas):
        for metric in dict.fromkeys(d.metric for d in deltas if d.arm == arm):
            rows = [d for d in deltas if d.arm == arm and d.metric == metric and d.slice != ALL]
            ups = [d for d in rows if d.diff.direction > 0]
            downs = [d for d in rows if d.diff.direction < 0]
            if ups and downs:
                up = ", ".join(f"{d.slice} ({d.diff.delta:+.3f})" for d in ups)
                down = ", ".join(f"{d.slice} ({d.diff.delta:+.3f})" for d in downs)
                flags.append(f"{arm} helps {up} but hurts {down} on {metric}")
    return flags


def run_ablation(
    cases: Sequence[Case],
    deployment: QueryWise,
    plan: AblationPlan,
    metrics: Sequence[Metric],
    *,
    reuse: ArmResult | None = None,
    on_phase: Callable[[str, int], Callable[[int], None] | None] | None = None,
    seed: int = SEED,
    resamples: int = N_RESAMPLES,
    judged: JudgedIds | None = None,
) -> AblationReport:
    """Run every arm of `plan` on `cases`; compare each with the first (the baseline).

    `reuse`: a result already computed for one of the arms' configurations (same mode and
    moves), taken instead of running that arm again.
    """
    results: list[ArmResult] = []
    for arm in plan.arms:
        if reuse is not None and (reuse.arm.mode, reuse.arm.moves) == (arm.mode, arm.moves):
            results.append(reuse.model_copy(update={"arm": arm}))
            continue
        on_case = on_phase(f"{arm.name} ({arm.mode})", len(cases)) if on_phase else None
        results.append(run_arm(cases, deployment, arm, metrics, on_case=on_case, judged=judged))
    base = results[0]
    deltas = [d for other in results[1:] for d in compare_arms(base, other, seed=seed, resamples=resamples)]
    return AblationReport(
        baseline=base.arm.name, arms=results, deltas=deltas, flags=mixed_effects(deltas), skipped=plan.skipped,
        seed=seed, resamples=resamples,
    )

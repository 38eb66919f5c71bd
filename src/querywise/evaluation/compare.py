"""Comparing two saved runs (`querywise eval --json` output, an `EvalResult`): a regression gate for CI.

Cases are paired by id. For every slice (and all cases) and every metric both runs scored,
B - A gets a paired bootstrap interval and a permutation p-value with the fixed seed of
`stats`. B *regresses* when it is significantly worse than A on any slice: the interval lies
below zero and p < 0.05. Slices with fewer than `min_cases` paired cases are reported but do
not gate (a 3-case slice cannot carry a verdict).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ValidationError

from querywise.evaluation.harness import ALL
from querywise.evaluation.result import EvalResult
from querywise.evaluation.stats import SEED, PairedDiff, paired_difference
from querywise.files import InputError

__all__ = ["CompareReport", "SliceComparison", "compare_runs", "load_run"]


class SliceComparison(BaseModel):
    slice: str
    metric: str
    diff: PairedDiff
    gates: bool  # enough cases to count towards the verdict


class CompareReport(BaseModel):
    n_paired: int
    only_in_a: int
    only_in_b: int
    rows: list[SliceComparison]
    regressions: list[SliceComparison]
    improvements: list[SliceComparison]
    seed: int = SEED

    @property
    def regressed(self) -> bool:
        return bool(self.regressions)


def load_run(path: Path | str) -> EvalResult:
    """A run saved with `querywise eval --json > run.json`; errors name the file (and the first
    problem: a key an older or newer querywise wrote differently, or another `version`)."""
    p = Path(path)
    try:
        return EvalResult.model_validate_json(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(p, None, "no such file") from None
    except (ValidationError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        loc = ".".join(map(str, first["loc"])) if first else ""
        where = f" at {loc}: {first['msg']}" if first and loc else f": {first['msg'] if first else exc}"
        raise InputError(p, None, f"not a saved `querywise eval --json` run{where}") from None


def compare_runs(a: EvalResult, b: EvalResult, *, metrics: list[str] | None = None, min_cases: int = 10, seed: int = SEED) -> CompareReport:
    """B against A on every slice and metric (or only `metrics`)."""
    by_id = {c.id: c for c in b.cases}
    pairs = [(c, by_id[c.id]) for c in a.cases if c.id in by_id]
    ids_a = {c.id for c in a.cases}
    wanted = metrics or a.config.metrics
    slices = [ALL, *sorted({s for ca, _ in pairs for s in ca.slices})]
    rows: list[SliceComparison] = []
    for s in slices:
        sel = [(x, y) for x, y in pairs if s == ALL or s in x.slices]
        for m in wanted:
            xa = np.array([np.nan if x.scores.get(m) is None else x.scores[m] for x, _ in sel], dtype=float)
            xb = np.array([np.nan if y.scores.get(m) is None else y.scores[m] for _, y in sel], dtype=float)
            if not sel or np.all(np.isnan(xa)) or np.all(np.isnan(xb)):
                continue
            diff = paired_difference(xa, xb, seed=seed)
            rows.append(SliceComparison(slice=s, metric=m, diff=diff, gates=diff.n >= min_cases))
    return CompareReport(
        n_paired=len(pairs),
        only_in_a=len(ids_a - set(by_id)),
        only_in_b=len(set(by_id) - ids_a),
        rows=rows,
        regressions=[r for r in rows if r.gates and r.diff.direction < 0],
        improvements=[r for r in rows if r.gates and r.diff.direction > 0],
        seed=seed,
    )

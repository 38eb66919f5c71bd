"""What several benchmarks measure the same way: ranking metrics, per-call latency, clustered error.

`evaluate` is the BEIR form of nDCG@10 and recall@100 (checked by hand in `metric_self_check` and
against ranx in `ranx_check`), for engines outside the library; the library's own harness
(`querywise.evaluation`) scores the rest.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench import percentiles


def ndcg_at_k(ranked: Sequence[str], rels: dict[str, int], k: int = 10) -> float:
    """nDCG@k with graded gains rel / log2(rank + 1), ranks from 1 (the trec_eval / BEIR form)."""
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], rels: dict[str, int], k: int = 100) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def evaluate(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """Mean over every query of `qrels` (a query with no results scores 0)."""
    nd = [ndcg_at_k(run.get(q, []), r, 10) for q, r in qrels.items()]
    rc = [recall_at_k(run.get(q, []), r, 100) for q, r in qrels.items()]
    return {"ndcg@10": round(float(np.mean(nd)), 4), "recall@100": round(float(np.mean(rc)), 4)}


def metric_self_check() -> dict[str, Any]:
    """A hand-computed case: relevant {a: 1, b: 1}, ranking [x, a, y, b]."""
    got = ndcg_at_k(["x", "a", "y", "b"], {"a": 1, "b": 1}, 10)
    want = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert abs(got - want) < 1e-12, (got, want)
    assert recall_at_k(["x", "a"], {"a": 1, "b": 1}, 100) == 0.5
    return {"hand_case_ndcg@10": round(got, 6), "expected": round(want, 6)}


def ranx_check(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    try:
        from ranx import Qrels, Run
        from ranx import evaluate as rx_eval
    except Exception as exc:  # pragma: no cover
        return {"ranx": f"not importable: {exc!r}"}
    rx_run = Run({q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in run.items() if ds})
    rx_q = Qrels({q: dict(r) for q, r in qrels.items()})
    got = rx_eval(rx_q, rx_run, ["ndcg@10", "recall@100"], make_comparable=True)
    return {"ranx": {k: round(float(v), 4) for k, v in got.items()}, "ours": evaluate(run, qrels)}


def latency(fn: Callable[[str], Any], texts: Sequence[str], warm: int = 10) -> dict[str, float]:
    """Per-call latency of `fn` over `texts`, one at a time, after `warm` untimed calls."""
    for q in texts[:warm]:
        fn(q)
    lat = []
    for q in texts:
        t = time.perf_counter()
        fn(q)
        lat.append(time.perf_counter() - t)
    return percentiles(lat)


def cluster_se(deltas: Sequence[tuple[str, float]]) -> float:
    """Standard error of the mean delta with the items of one cluster (one document) as one unit:
    turns about one document fail together (one document's dialogues can carry a split's loss), so
    the item-level error would overstate what a split of 40 documents shows."""
    n = len(deltas)
    mean = sum(d for _, d in deltas) / n
    residual: dict[str, float] = {}
    for doc, d in deltas:
        residual[doc] = residual.get(doc, 0.0) + d - mean
    g = len(residual)
    return float((sum(r * r for r in residual.values()) * g / max(g - 1, 1)) ** 0.5 / n)

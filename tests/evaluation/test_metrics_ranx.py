"""Cross-check against ranx on random runs (ranx JIT-compiles once per process: one module)."""

from __future__ import annotations

import numpy as np
import pytest

from querywise.evaluation.metrics import parse_metrics, score_many

ranx = pytest.importorskip("ranx")
# numba (under ranx) warns about its own integer casts while compiling; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:.*unsafe cast")  # (numba may colour the message: ANSI codes first)

NAMES = ["ndcg@10", "ndcg@3", "recall@5", "recall@20", "precision@5", "mrr@10", "mrr", "hit_rate@5"]
RANX_NAMES = {"hit_rate@5": "hit_rate@5", "mrr": "mrr"}


def test_metrics_agree_with_ranx_on_random_runs() -> None:
    rng = np.random.default_rng(7)
    docs = [f"d{i}" for i in range(60)]
    qrels, runs = {}, {}
    for q in range(80):
        rel = rng.choice(docs, size=int(rng.integers(1, 6)), replace=False)
        qrels[f"q{q}"] = {d: int(rng.integers(1, 4)) for d in rel}  # graded
        runs[f"q{q}"] = list(rng.choice(docs, size=int(rng.integers(1, 30)), replace=False))
    ours = score_many(parse_metrics(NAMES), list(runs.values()), list(qrels.values())).mean(axis=0)
    rx_run = ranx.Run({q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in runs.items()})
    got = ranx.evaluate(ranx.Qrels(qrels), rx_run, [RANX_NAMES.get(n, n) for n in NAMES])
    for name, value in zip(NAMES, ours, strict=True):
        assert value == pytest.approx(got[RANX_NAMES.get(name, name)], abs=1e-9), name

"""Ranking metrics per case, in numpy: recall@k, precision@k, MRR, nDCG@k (graded), hit rate.

Names are short strings parsed in one place (`parse_metric`): `ndcg@10`, `recall@100`,
`precision@5`, `mrr` or `mrr@10`, `hit_rate@5`. Definitions follow ranx / trec_eval:

- recall@k    relevant ids in the top k / relevant ids
- precision@k relevant ids in the top k / k
- mrr@k       1 / rank of the first relevant id within the top k (0 if none)
- ndcg@k      sum grade / log2(rank + 1) over the top k, divided by the same sum for the ideal
              ranking (linear gains, ranks from 1; ranx's "ndcg", BEIR's numbers)
- hit_rate@k  1 if any relevant id is in the top k

A case with no relevant id has no score (it is left out of the means, as ranx does with a
query missing from its qrels).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

__all__ = ["DEFAULT_METRICS", "Metric", "MetricError", "parse_metric", "parse_metrics", "score", "score_many"]

MetricName = Literal["recall", "precision", "mrr", "ndcg", "hit_rate"]
DEFAULT_METRICS = ("ndcg@10", "recall@5", "recall@100", "mrr@10", "hit_rate@5")
_NAME = re.compile(r"^(recall|precision|mrr|ndcg|hit_rate|hit|hits)(?:@(\d+))?$")


class MetricError(ValueError):
    """A metric name that cannot be parsed."""


class Metric(BaseModel):
    """A metric and its cut-off (None: the whole ranking, MRR only)."""

    model_config = ConfigDict(frozen=True)
    name: MetricName
    k: int | None = None

    @property
    def label(self) -> str:
        """The metric as written in reports and JSON: `ndcg@10`."""
        return self.name if self.k is None else f"{self.name}@{self.k}"


def parse_metric(text: str) -> Metric:
    """`"nDCG@10"` -> Metric(name="ndcg", k=10).

    >>> parse_metric("Recall@100").label
    'recall@100'
    """
    m = _NAME.match(text.strip().lower())
    if not m:
        raise MetricError(f"unknown metric {text!r}: use ndcg@K, recall@K, precision@K, mrr[@K] or hit_rate@K")
    name = "hit_rate" if m.group(1) in ("hit", "hits") else m.group(1)
    k = int(m.group(2)) if m.group(2) else None
    if k is None and name != "mrr":
        raise MetricError(f"{text!r} needs a cut-off, e.g. {name}@10")
    if k is not None and k < 1:
        raise MetricError(f"{text!r}: the cut-off must be at least 1")
    return Metric(name=name, k=k)


def parse_metrics(texts: Sequence[str]) -> list[Metric]:
    """Several names, comma-separated or not, duplicates dropped."""
    parts = [p for t in texts for p in t.split(",") if p.strip()]
    return list(dict.fromkeys(parse_metric(p) for p in parts))


def _gains(ranked: Sequence[str], relevant: Mapping[str, int], k: int) -> np.ndarray:
    top = list(dict.fromkeys(ranked))[:k]  # an id counts once, at its best rank
    return np.fromiter((relevant.get(d, 0) for d in top), dtype=np.float64, count=len(top))


def score(metric: Metric, ranked: Sequence[str], relevant: Mapping[str, int]) -> float | None:
    """`metric` of one ranking; None when `relevant` has no id with a grade > 0.

    >>> score(parse_metric("ndcg@10"), ["x", "a"], {"a": 1})  # 1/log2(3)
    0.6309297535714575
    """
    rel = {d: g for d, g in relevant.items() if g > 0}
    if not rel:
        return None
    k = metric.k or max(len(ranked), 1)
    gains = _gains(ranked, rel, k)
    found = gains > 0
    if metric.name == "recall":
        return float(found.sum() / len(rel))
    if metric.name == "precision":
        return float(found.sum() / k)
    if metric.name == "hit_rate":
        return float(found.any())
    if metric.name == "mrr":
        hits = np.flatnonzero(found)
        return float(1.0 / (hits[0] + 1)) if hits.size else 0.0
    discounts = 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))
    dcg = float((gains * discounts[: gains.size]).sum())
    ideal = np.sort(np.fromiter(rel.values(), dtype=np.float64))[::-1][:k]
    return dcg / float((ideal * discounts[: ideal.size]).sum())


def score_many(
    metrics: Sequence[Metric], runs: Sequence[Sequence[str]], qrels: Sequence[Mapping[str, int]]
) -> np.ndarray:
    """A (cases x metrics) array of scores; NaN where a case has no relevant id."""
    out = np.full((len(runs), len(metrics)), np.nan)
    for i, (ranked, rel) in enumerate(zip(runs, qrels, strict=True)):
        for j, metric in enumerate(metrics):
            value = score(metric, ranked, rel)
            if value is not None:
                out[i, j] = value
    return out

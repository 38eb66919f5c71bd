"""Router evaluation: fit on train, choose thresholds on validation only, report on test.

Label `oos` (configurable) marks out-of-scope messages. A message the router defers to the
unsure tier counts as wrong for in-scope accuracy and as missed for out-of-scope recall.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from querywise.embed import Embedder
from querywise.files import InputError, read_jsonl
from querywise.understand.calibration import choose_thresholds
from querywise.understand.classifiers import CentroidClassifier, TrainedClassifier
from querywise.understand.decision import Decision, Thresholds, decide_many

__all__ = ["Confusion", "RouteMetrics", "RouterReport", "evaluate_router", "load_labelled", "score_decisions"]

ClassifierKind = Literal["centroid", "trained", "auto"]
Labelled = Sequence[tuple[str, str]]


class RouteMetrics(BaseModel):
    precision: float
    recall: float
    support: int


class Confusion(BaseModel):
    gold: str
    predicted: str
    count: int


class RouterReport(BaseModel):
    classifier: str
    min_margin: float
    min_in_scope: float | None
    n: int
    n_in_scope: int
    n_oos: int
    in_scope_accuracy: float
    answered_accuracy: float
    oos_recall: float
    oos_precision: float
    deferred_share: float
    per_route: dict[str, RouteMetrics]
    confusions: list[Confusion]
    labels: list[str]  # rows/columns of `matrix`: routes, then "oos" and "unsure" (columns only)
    matrix: list[list[int]]  # gold (rows: routes + oos) x predicted (columns: routes + oos + unsure)


def load_labelled(path: str) -> list[tuple[str, str]]:
    """JSONL `{"text", "label"}` rows, with file:line errors."""
    rows = []
    for line, rec in read_jsonl(path):
        text, label = rec.get("text"), rec.get("label")
        if not isinstance(text, str) or not isinstance(label, str) or not text.strip():
            raise InputError(path, line, 'expected {"text": "...", "label": "..."}')
        rows.append((text, label))
    if not rows:
        raise InputError(path, None, "no rows")
    return rows


def _predicted(d: Decision) -> str:
    return d.label if d.kind == "route" and d.label is not None else d.kind  # "oos" or "unsure"


def score_decisions(decisions: Sequence[Decision], gold: Sequence[str], *, oos_label: str = "oos") -> dict[str, Any]:
    """The headline figures and the per-route table from decisions and gold labels (pure).

    >>> d = [Decision("a", "route", .3, "a", "b"), Decision(None, "unsure", .01, "a", "b")]
    >>> score_decisions(d, ["a", "a"])["answered_accuracy"]
    1.0
    """
    pred = [_predicted(d) for d in decisions]
    pred = ["oos" if p == oos_label else p for p in pred]
    gold_n = ["oos" if g == oos_label else g for g in gold]
    pairs = list(zip(gold_n, pred, strict=True))
    in_scope = [(g, p) for g, p in pairs if g != "oos"]
    answered = [(g, p) for g, p in in_scope if p != "unsure"]
    oos_gold = [p for g, p in pairs if g == "oos"]
    oos_pred = [g for g, p in pairs if p == "oos"]

    def ratio(a: int, b: int) -> float:
        return a / b if b else 0.0

    routes = sorted({g for g in gold_n if g != "oos"} | {p for p in pred if p not in ("oos", "unsure")})
    per_route = {}
    for r in routes:
        tp = sum(1 for g, p in pairs if g == r and p == r)
        per_route[r] = RouteMetrics(
            precision=ratio(tp, sum(1 for _, p in pairs if p == r)),
            recall=ratio(tp, sum(1 for g, _ in pairs if g == r)),
            support=sum(1 for g, _ in pairs if g == r),
        )
    confused = Counter((g, p) for g, p in pairs if g != p and p != "unsure")
    rows = routes + (["oos"] if oos_gold else [])
    cols = [*routes, "oos", "unsure"]
    counts = Counter(pairs)
    return {
        "n": len(pairs),
        "n_in_scope": len(in_scope),
        "n_oos": len(oos_gold),
        "in_scope_accuracy": ratio(sum(1 for g, p in in_scope if g == p), len(in_scope)),
        "answered_accuracy": ratio(sum(1 for g, p in answered if g == p), len(answered)),
        "oos_recall": ratio(sum(1 for p in oos_gold if p == "oos"), len(oos_gold)),
        "oos_precision": ratio(sum(1 for g in oos_pred if g == "oos"), len(oos_pred)),
        "deferred_share": ratio(sum(1 for p in pred if p == "unsure"), len(pred)),
        "per_route": per_route,
        "confusions": [Confusion(gold=g, predicted=p, count=c) for (g, p), c in confused.most_common(10)],
        "labels": cols,
        "matrix": [[counts[(r, c)] for c in cols] for r in rows],
    }


def _fit(kind: str, X: np.ndarray, y: Sequence[str]) -> CentroidClassifier | TrainedClassifier:
    clf = CentroidClassifier() if kind == "centroid" else TrainedClassifier()
    return clf.fit(X, y)


def evaluate_router(
    train: Labelled,
    test: Labelled,
    *,
    embedder: Embedder,
    val: Labelled | None = None,
    classifier: ClassifierKind = "auto",
    min_margin: float | None = None,
    max_deferred: float = 0.10,
    oos_label: str = "oos",
) -> RouterReport:
    """Fit on `train`, choose thresholds on `val` only (none without it), report on `test`.

    `classifier="auto"` fits both and keeps the one with the better validation objective
    (centroids without validation data when routes have under 20 examples each).
    `min_margin`, when given, fixes the margin gate; the in-scope gate is still chosen on `val`.
    """
    def embed(rows: Labelled) -> tuple[np.ndarray, list[str]]:
        return np.asarray(embedder.embed([t for t, _ in rows]), dtype=np.float32), [lab for _, lab in rows]

    X_tr, y_tr = embed(train)
    X_te, y_te = embed(test)
    X_va, y_va = embed(val) if val else (None, None)
    kinds = ["centroid", "trained"] if classifier == "auto" else [classifier]
    if classifier == "auto" and X_va is None:
        fewest = min(Counter(lab for lab in y_tr if lab != oos_label).values())
        kinds = ["trained" if fewest >= 20 else "centroid"]

    best: tuple[float, str, Any, Thresholds] | None = None
    for kind in kinds:
        clf = _fit(kind, X_tr, y_tr)
        if X_va is not None and y_va is not None:
            th = choose_thresholds(clf, X_va, y_va, oos_label=oos_label, max_deferred=max_deferred)
            if min_margin is not None:
                th = Thresholds(min_margin=min_margin, min_in_scope=th.min_in_scope)
            v = score_decisions(decide_many(clf.scores(X_va), clf.in_scope(X_va), clf.labels, th, oos_label=oos_label), y_va, oos_label=oos_label)
            objective = v["in_scope_accuracy"] + (v["oos_recall"] if v["n_oos"] else 0.0)
        else:
            th = Thresholds(min_margin=min_margin or 0.0, min_in_scope=float("-inf"))
            objective = 0.0
        if best is None or objective > best[0]:
            best = (objective, kind, clf, th)
    assert best is not None
    _, kind, clf, th = best
    decisions = decide_many(clf.scores(X_te), clf.in_scope(X_te), clf.labels, th, oos_label=oos_label)
    return RouterReport(
        classifier=kind,
        min_margin=th.min_margin,
        min_in_scope=None if th.min_in_scope == float("-inf") else th.min_in_scope,
        **score_decisions(decisions, y_te, oos_label=oos_label),
    )

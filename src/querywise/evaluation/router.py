"""Router evaluation: fit on train, choose thresholds on validation only, report on test.

Label `oos` (configurable) marks out-of-scope messages. A message the router defers to the
unsure tier counts as wrong for in-scope accuracy and as missed for out-of-scope recall. A figure
whose denominator is empty (OOS recall on a test set without out-of-scope messages, OOS
precision when nothing was decided out of scope, answered accuracy when nothing was answered, a
route's precision when it was never predicted) is None, printed "n/a": never a 0%.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from querywise.embed import Embedder
from querywise.files import InputError, read_jsonl, read_lines
from querywise.index.store import Progress
from querywise.understand.routing.calibration import OperatingPoint, calibrate, choose_candidate
from querywise.understand.routing.classifiers import CentroidClassifier, TrainedClassifier
from querywise.understand.routing.decision import Decision, Thresholds, decide_many
from querywise.understand.routing.route import MIN_EXAMPLES_FOR_TRAINED

__all__ = [
    "Candidate",
    "Confusion",
    "OperatingPointSpec",
    "RouteMetrics",
    "RouterFigures",
    "RouterReport",
    "TradeoffPoint",
    "evaluate_router",
    "load_labelled",
    "score_decisions",
]

ClassifierKind = Literal["centroid", "trained", "auto"]
Labelled = Sequence[tuple[str, str]]


def _quiet(phase: str, total: int | None) -> Callable[[int], None]:
    return lambda n: None


class RouteMetrics(BaseModel):
    precision: float | None  # None: the route was never predicted
    recall: float | None  # None: no message of the route in the data
    support: int


class Confusion(BaseModel):
    gold: str
    predicted: str
    count: int


class RouterFigures(BaseModel):
    """Headline figures of one split; a figure without a denominator is None (shown "n/a")."""

    n: int
    n_in_scope: int
    n_oos: int
    in_scope_accuracy: float | None  # None: no in-scope message
    answered_accuracy: float | None  # None: no in-scope message answered
    oos_recall: float | None  # None: no out-of-scope message
    oos_precision: float | None  # None: nothing decided out of scope
    deferred_share: float | None  # None: no message


class OperatingPointSpec(BaseModel):
    """What the user asked of the router (`--min-answered`, `--max-deferred`, `--headroom`)."""

    min_answered: float | None
    max_deferred: float
    headroom: float
    min_oos_recall: float = 0.0
    description: str


class TradeoffPoint(BaseModel):
    """A point near an operating point the router cannot meet on val, and what it gives there."""

    what: str
    min_margin: float
    min_in_scope: float | None
    answered_accuracy: float | None
    deferred_share: float
    oos_recall: float | None


class Candidate(BaseModel):
    """One classifier `router-eval` fitted, its thresholds and what they gave on validation data."""

    classifier: str
    min_margin: float
    min_in_scope: float | None
    val: RouterFigures | None  # None without validation data
    val_objective: float | None
    meets_operating_point: bool | None  # on val; None without validation data
    warning: str | None
    tradeoffs: list[TradeoffPoint] = Field(default_factory=list)  # when the point is not met on val: the nearest points


class RouterReport(BaseModel):
    classifier: str
    min_margin: float
    min_in_scope: float | None
    n: int
    n_in_scope: int
    n_oos: int
    in_scope_accuracy: float | None
    answered_accuracy: float | None
    oos_recall: float | None
    oos_precision: float | None
    deferred_share: float | None
    operating_point: OperatingPointSpec
    candidates: list[Candidate]  # every classifier fitted, the chosen one included
    choice: str  # why `classifier` was kept
    warnings: list[str]  # operating point missed, thresholds not chosen
    per_route: dict[str, RouteMetrics]
    confusions: list[Confusion]
    labels: list[str]  # rows/columns of `matrix`: routes, then "oos" and "unsure" (columns only)
    matrix: list[list[int]]  # gold (rows: routes + oos) x predicted (columns: routes + oos + unsure)


def load_labelled(path: str) -> list[tuple[str, str]]:
    """`{"text", "label"}` rows of a JSONL file, or of a CSV file whose header names a `text` and a
    `label` column (either optionally .gz), with file:line errors."""
    rows = []
    records = _csv_rows(Path(path)) if path.lower().removesuffix(".gz").endswith(".csv") else read_jsonl(path)
    for line, rec in records:
        text, label = rec.get("text"), rec.get("label")
        if not isinstance(text, str) or not isinstance(label, str) or not text.strip():
            raise InputError(path, line, 'expected {"text": "...", "label": "..."}')
        rows.append((text, label))
    if not rows:
        raise InputError(path, None, "no rows")
    return rows


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.reader(line.replace("\r\n", "\n") for _, line in read_lines(path))
    try:
        header = next(reader, None) or []
        if not {"text", "label"} <= set(header):
            raise InputError(path, 1, f"header must name a 'text' and a 'label' column, got {header}")
        start = reader.line_num + 1
        for row in reader:
            line, start = start, reader.line_num + 1
            if row:
                yield line, dict(zip(header, row, strict=False))
    except csv.Error as exc:
        raise InputError(path, reader.line_num, f"invalid CSV: {exc}") from None


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

    def ratio(a: int, b: int) -> float | None:
        return a / b if b else None  # no denominator: no figure, never a 0%

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


def _in_scope_gate(th: Thresholds) -> float | None:
    return None if th.min_in_scope == float("-inf") else th.min_in_scope


def _figures(scores: dict[str, Any]) -> RouterFigures:
    return RouterFigures(**{k: scores[k] for k in RouterFigures.model_fields})


def evaluate_router(
    train: Labelled,
    test: Labelled,
    *,
    embedder: Embedder,
    val: Labelled | None = None,
    classifier: ClassifierKind = "auto",
    point: OperatingPoint | None = None,
    min_margin: float | None = None,
    oos_label: str = "oos",
    progress: Progress = _quiet,
) -> RouterReport:
    """Fit on `train`, choose thresholds on `val` only to meet `point`, report on `test`.

    `point` (default :class:`OperatingPoint` ()) is what the user asks: answered accuracy at
    least `min_answered` with at most `max_deferred` deferred; the thresholds are chosen on `val`
    by :func:`~querywise.understand.routing.calibration.calibrate`, the same chooser the CLINC150
    benchmark uses, and a point it cannot meet is a warning in the report. `classifier="auto"`
    fits both classifiers, calibrates each on `val` and keeps one by
    :func:`~querywise.understand.routing.calibration.choose_candidate` (meets the operating point on val,
    then the best objective); both candidates' val figures and the reason are in the report.
    Without `val` nothing is chosen on data: auto goes by examples per route (trained from
    20 a route, as the deployed router does), the margin gate is `min_margin` (else off) and the
    in-scope gate is off. `min_margin`, when given, fixes the margin gate; the in-scope gate is
    still chosen on `val`.
    """
    point = point or OperatingPoint()

    def embed(name: str, rows: Labelled) -> tuple[np.ndarray, list[str]]:
        advance = progress(f"embedding {name}", len(rows))
        return np.asarray(embedder.embed([t for t, _ in rows], on_progress=advance), dtype=np.float32), [lab for _, lab in rows]

    X_tr, y_tr = embed("train", train)
    X_va, y_va = embed("val", val) if val else (None, None)
    X_te, y_te = embed("test", test)
    kinds: list[str] = ["centroid", "trained"] if classifier == "auto" else [classifier]
    warnings: list[str] = []
    if X_va is None or y_va is None:
        choice = f"{classifier} as asked"
        if classifier == "auto":
            fewest = min(Counter(lab for lab in y_tr if lab != oos_label).values())
            kinds = ["trained" if fewest >= MIN_EXAMPLES_FOR_TRAINED else "centroid"]
            choice = (f"no validation data: auto chose {kinds[0]} by examples per route (fewest {fewest}; "
                      f"trained from {MIN_EXAMPLES_FOR_TRAINED}), as the deployed router does")
        th = Thresholds(min_margin=min_margin or 0.0, min_in_scope=float("-inf"))
        clf = _fit(kinds[0], X_tr, y_tr)
        candidates = [Candidate(classifier=kinds[0], min_margin=th.min_margin, min_in_scope=None, val=None, val_objective=None,
                                meets_operating_point=None, warning=None)]
        warnings.append(f"no validation data: thresholds not chosen (margin gate {th.min_margin:g}, in-scope gate off) "
                        "and the operating point not checked; give --val")
    else:
        fitted, cals = [], []
        for kind in kinds:
            clf = _fit(kind, X_tr, y_tr)
            fitted.append(clf)
            cals.append(calibrate(clf, X_va, y_va, point, oos_label=oos_label, min_margin=min_margin))
        candidates = []
        for kind, clf, cal in zip(kinds, fitted, cals, strict=True):
            th = cal.thresholds
            on_val = score_decisions(decide_many(clf.scores(X_va), clf.in_scope(X_va), clf.labels, th, oos_label=oos_label), y_va, oos_label=oos_label)
            candidates.append(Candidate(classifier=kind, min_margin=th.min_margin, min_in_scope=_in_scope_gate(th), val=_figures(on_val),
                                        val_objective=cal.objective, meets_operating_point=cal.meets, warning=cal.warning,
                                        tradeoffs=[TradeoffPoint(what=t.what, min_margin=t.thresholds.min_margin, min_in_scope=_in_scope_gate(t.thresholds),
                                                                 answered_accuracy=t.answered_accuracy, deferred_share=t.deferred_share, oos_recall=t.oos_recall)
                                                   for t in cal.tradeoffs]))
        pick, reason = choose_candidate(kinds, cals)
        choice = (f"auto chose {kinds[pick]}: {reason}" if classifier == "auto"
                  else f"{kinds[pick]} as asked ({'meets' if cals[pick].meets else 'does not meet'} the operating point on val)")
        clf, th = fitted[pick], cals[pick].thresholds
        if cals[pick].warning:
            warnings.append(f"{kinds[pick]}: {cals[pick].warning}")
        kinds = [kinds[pick]]
    decisions = decide_many(clf.scores(X_te), clf.in_scope(X_te), clf.labels, th, oos_label=oos_label)
    return RouterReport(
        classifier=kinds[0],
        min_margin=th.min_margin,
        min_in_scope=_in_scope_gate(th),
        operating_point=OperatingPointSpec(min_answered=point.min_answered, max_deferred=point.max_deferred, headroom=point.headroom,
                                           min_oos_recall=point.min_oos_recall, description=point.describe()),
        candidates=candidates,
        choice=choice,
        warnings=warnings,
        **score_decisions(decisions, y_te, oos_label=oos_label),
    )

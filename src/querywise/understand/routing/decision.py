"""The online route decision: the gate that turns a classifier's scores into a decision per message.

Everything here is numpy in, plain values out: no I/O and no embedding calls.

:func:`decide` applies :class:`Thresholds` to one message: in-scope signal below
``min_in_scope`` -> ``"oos"``; else margin (top-1 minus top-2 score) below ``min_margin`` ->
``"unsure"`` (deferred to a later tier); else the top route. The two thresholds are picked on
labelled validation data by :func:`querywise.understand.routing.calibration.choose_thresholds` -- they
are never guessed.

:class:`RouteClassifier` is the interface the classifiers of :mod:`querywise.understand.routing.classifiers`
share (``labels``, ``fit``, ``scores``, ``in_scope``): the seam between the router and a classifier.

>>> clf = CentroidClassifier().fit(train_vectors, train_labels)              # doctest: +SKIP
>>> th = choose_thresholds(clf, val_vectors, val_labels, max_deferred=0.10)    # doctest: +SKIP
>>> decide(clf.scores(v)[0], clf.in_scope(v)[0], clf.labels, th).kind         # doctest: +SKIP
'route'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, Self, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = [
    "Decision",
    "DecisionKind",
    "Matrix",
    "RouteClassifier",
    "Thresholds",
    "decide",
    "decide_many",
]

Matrix = npt.NDArray[np.floating]
DecisionKind = Literal["route", "oos", "unsure"]


@dataclass(frozen=True)
class Thresholds:
    """The two gates of :func:`decide`.

    ``min_in_scope`` is in the units of the classifier's ``in_scope`` signal (so a threshold is
    only meaningful for the classifier it was chosen for); ``float("-inf")`` disables it.
    ``min_margin`` is in the units of its ``scores``; 0 disables it.
    """

    min_margin: float
    min_in_scope: float


@dataclass(frozen=True)
class Decision:
    """What :func:`decide` made of one message.

    ``label`` is the route when ``kind == "route"`` and None otherwise; ``top``/``second`` are the
    two best-scored labels whatever the kind (``second`` is None with a single label), and
    ``margin`` is their score difference (``inf`` with a single label).
    """

    label: str | None
    kind: DecisionKind
    margin: float
    top: str
    second: str | None


@runtime_checkable
class RouteClassifier(Protocol):
    """The interface both classifiers share (and :func:`~querywise.understand.routing.calibration.choose_thresholds` relies on)."""

    labels: tuple[str, ...]

    def fit(self, X: Matrix, y: Sequence[str]) -> Self: ...

    def scores(self, X: Matrix) -> npt.NDArray[np.float64]: ...

    def in_scope(self, X: Matrix) -> npt.NDArray[np.float64]: ...


def decide(
    scores_row: npt.ArrayLike,
    in_scope_value: float,
    labels: Sequence[str],
    thresholds: Thresholds,
    *,
    oos_label: str = "oos",
) -> Decision:
    """Gate one message: out-of-scope first, then the margin, then the top route.

    ``in_scope_value < min_in_scope`` -> kind "oos"; a top label equal to ``oos_label`` (a
    classifier that kept an explicit out-of-scope class) -> "oos" as well; ``margin <
    min_margin`` -> "unsure"; otherwise "route" with ``label = top``. Equal scores resolve to
    the label listed first.

    >>> decide([0.9, 0.2], 0.8, ["billing", "returns"], Thresholds(0.1, 0.5)).label
    'billing'
    """
    row = np.asarray(scores_row, dtype=np.float64).reshape(-1)
    if row.size == 0 or row.size != len(labels):
        raise ValueError(f"scores_row has {row.size} entries for {len(labels)} labels")
    order = np.argsort(-row, kind="stable")
    top = str(labels[order[0]])
    if row.size > 1:
        second: str | None = str(labels[order[1]])
        margin = float(row[order[0]] - row[order[1]])
    else:
        second, margin = None, math.inf
    if float(in_scope_value) < thresholds.min_in_scope or top == oos_label:
        return Decision(None, "oos", margin, top, second)
    if margin < thresholds.min_margin:
        return Decision(None, "unsure", margin, top, second)
    return Decision(top, "route", margin, top, second)


def decide_many(
    scores: Matrix,
    in_scope: npt.ArrayLike,
    labels: Sequence[str],
    thresholds: Thresholds,
    *,
    oos_label: str = "oos",
) -> list[Decision]:
    """:func:`decide` for each row of ``scores`` with the matching ``in_scope`` value."""
    values = np.asarray(in_scope, dtype=np.float64).reshape(-1)
    if len(values) != len(scores):
        raise ValueError(f"{len(scores)} score rows but {len(values)} in-scope values")
    return [decide(row, v, labels, thresholds, oos_label=oos_label) for row, v in zip(scores, values, strict=True)]

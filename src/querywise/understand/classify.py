"""Route classifiers on embedding matrices, and the gate that turns their scores into decisions.

Everything here is numpy in, numpy out: no I/O and no embedding calls. Rows are L2-normalised
on the way in, so cosine similarity is a dot product whatever scale the caller passes.

Two classifiers share one interface (``labels``, ``fit``, ``scores``, ``in_scope``):

* :class:`CentroidClassifier` -- for routes with a handful of examples: one centroid per route
  (the re-normalised mean of its example vectors); scores are cosines to the centroids; the
  in-scope signal is the largest cosine to any single example.
* :class:`TrainedClassifier` -- for routes with many labelled examples: multinomial logistic
  regression on the embeddings; scores are route probabilities; the in-scope signal combines
  energy (log-sum-exp of the logits), Mahalanobis distance to the nearest class mean (shared
  covariance) and mean cosine to the k nearest training examples. That combination won on
  CLINC150's validation split (``bench/results/router_clinc150.md``).

:func:`decide` applies :class:`Thresholds` to one message: in-scope signal below
``min_in_scope`` -> ``"oos"``; else margin (top-1 minus top-2 score) below ``min_margin`` ->
``"unsure"`` (deferred to a later tier); else the top route. :func:`choose_thresholds` picks the
two thresholds on labelled validation data -- they are never guessed.

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
    "IN_SCOPE_SIGNALS",
    "CentroidClassifier",
    "Decision",
    "DecisionKind",
    "RouteClassifier",
    "Thresholds",
    "TrainedClassifier",
    "choose_thresholds",
    "decide",
    "decide_many",
]

Matrix = npt.NDArray[np.floating]
DecisionKind = Literal["route", "oos", "unsure"]
InScopeSignal = Literal["energy", "mahalanobis", "knn", "max_prob", "not_oos"]
#: The in-scope signals :class:`TrainedClassifier` can compute (and combine).
IN_SCOPE_SIGNALS: tuple[str, ...] = ("energy", "mahalanobis", "knn", "max_prob", "not_oos")


# --------------------------------------------------------------------------------------------
# Decisions
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Classifiers
# --------------------------------------------------------------------------------------------


@runtime_checkable
class RouteClassifier(Protocol):
    """The interface both classifiers share (and :func:`choose_thresholds` relies on)."""

    labels: tuple[str, ...]

    def fit(self, X: Matrix, y: Sequence[str]) -> Self: ...

    def scores(self, X: Matrix) -> npt.NDArray[np.float64]: ...

    def in_scope(self, X: Matrix) -> npt.NDArray[np.float64]: ...


def _unit_rows(X: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """A float32 copy of ``X`` (one row per message) with unit-length rows.

    float32 throughout the similarity products: they are memory-bound (a message against every
    training example), and float32 halves the bytes without changing any decision.
    """
    A = np.array(X, dtype=np.float32)
    if A.ndim == 1:
        A = A.reshape(1, -1)
    if A.ndim != 2:
        raise ValueError(f"expected a 2-d matrix of embeddings, got shape {A.shape}")
    norms = np.linalg.norm(A, axis=1, keepdims=True)
    return A / np.where(norms > 0, norms, 1.0)


def _check_xy(X: npt.ArrayLike, y: Sequence[str]) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.str_]]:
    A = _unit_rows(X)
    labels = np.asarray([str(v) for v in y])
    if len(labels) != len(A):
        raise ValueError(f"{len(A)} vectors but {len(labels)} labels")
    if len(A) == 0:
        raise ValueError("no training examples")
    return A, labels


def _not_fitted(obj: object) -> RuntimeError:
    return RuntimeError(f"{type(obj).__name__} is not fitted yet: call fit(X, y) first")


def _topk_mean(sims: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.float32]:
    """Mean of the ``k`` largest entries of each row."""
    k = min(k, sims.shape[1])
    part = np.partition(sims, sims.shape[1] - k, axis=1)[:, -k:]
    return part.mean(axis=1)


class CentroidClassifier:
    """One centroid per route: the mean of its example vectors, re-normalised to unit length.

    ``scores`` = cosine to each centroid (columns in ``labels`` order, sorted by name).
    ``in_scope`` = the largest cosine to any single training example (``in_scope_signal=
    "max_example"``, the reference for routes with a handful of examples) or to any centroid
    (``"max_centroid"``). Examples labelled ``oos_label`` are left out: a centroid of
    "everything else" is not a route.

    >>> clf = CentroidClassifier().fit(vectors, ["billing"] * 6 + ["returns"] * 6)  # doctest: +SKIP
    >>> clf.scores(query_vectors).shape                                           # doctest: +SKIP
    (3, 2)
    """

    def __init__(
        self,
        *,
        in_scope_signal: Literal["max_example", "max_centroid"] = "max_example",
        oos_label: str | None = "oos",
    ) -> None:
        if in_scope_signal not in ("max_example", "max_centroid"):
            raise ValueError(f"unknown in_scope_signal {in_scope_signal!r}")
        self.in_scope_signal = in_scope_signal
        self.oos_label = oos_label
        self.labels: tuple[str, ...] = ()
        self.centroids: npt.NDArray[np.float32] | None = None
        self.examples: npt.NDArray[np.float32] | None = None

    def fit(self, X: Matrix, y: Sequence[str]) -> Self:
        A, labels = _check_xy(X, y)
        keep = labels != self.oos_label if self.oos_label is not None else np.ones(len(labels), bool)
        A, labels = A[keep], labels[keep]
        names = sorted(set(labels.tolist()))
        if not names:
            raise ValueError("no in-scope training examples")
        means = np.stack([A[labels == name].mean(axis=0, dtype=np.float64) for name in names])
        self.centroids = _unit_rows(means)
        self.examples = A
        self.labels = tuple(names)
        return self

    def scores(self, X: Matrix) -> npt.NDArray[np.float64]:
        """(n, n_labels) cosine of each row to each route centroid."""
        if self.centroids is None:
            raise _not_fitted(self)
        return (_unit_rows(X) @ self.centroids.T).astype(np.float64)

    def in_scope(self, X: Matrix) -> npt.NDArray[np.float64]:
        """(n,) largest cosine to any training example (or centroid); higher = more in scope."""
        if self.centroids is None or self.examples is None:
            raise _not_fitted(self)
        ref = self.examples if self.in_scope_signal == "max_example" else self.centroids
        return (_unit_rows(X) @ ref.T).max(axis=1).astype(np.float64)


class TrainedClassifier:
    """Multinomial logistic regression on the embeddings, plus a distance-aware in-scope signal.

    ``scores`` are the route probabilities (columns in ``labels`` order, sorted by name).
    Training examples labelled ``oos_label`` are dropped by default; with ``use_oos_class=True``
    out-of-scope becomes one more class of the regression instead. It is *not* one of
    ``labels``, so a route's probability is what the model leaves after the out-of-scope mass,
    and ``"not_oos"`` (1 - P(oos)) becomes available as a signal. (On CLINC150 the explicit
    class did not help: 100 out-of-scope examples are too few to describe "everything else".)

    ``in_scope`` is the mean of the chosen ``signals`` (higher = more in scope):

    * ``"energy"`` -- log-sum-exp of the in-scope logits;
    * ``"mahalanobis"`` -- minus the squared Mahalanobis distance to the nearest class mean, with
      one covariance shared by all classes (class-conditional Gaussians, LDA style), shrunk by
      ``mahalanobis_reg`` * identity;
    * ``"knn"`` -- mean cosine to the ``k`` nearest training examples;
    * ``"max_prob"`` -- the largest route probability;
    * ``"not_oos"`` -- 1 - P(oos) (only with an explicit out-of-scope class).

    With more than one signal each is first put on a common scale -- minus its median, divided
    by its inter-quartile range, both measured on the in-scope training examples (for ``knn`` a
    training example's match with itself is left out) -- so no weight is fitted and nothing of
    the validation data is used. A single signal is returned in its own units.

    Defaults (C=10, no out-of-scope class, energy + mahalanobis + knn with k=10) are the
    configuration that won on CLINC150 validation; see ``bench/results/router_clinc150.md``.
    Fitting is deterministic.
    """

    def __init__(
        self,
        *,
        C: float = 10.0,
        signals: Sequence[InScopeSignal] = ("energy", "mahalanobis", "knn"),
        k: int = 10,
        mahalanobis_reg: float = 0.01,
        use_oos_class: bool = False,
        oos_label: str = "oos",
        class_weight: Literal["balanced"] | None = None,
        max_iter: int = 3000,
    ) -> None:
        unknown = [s for s in signals if s not in IN_SCOPE_SIGNALS]
        if unknown or not signals:
            raise ValueError(f"signals must be a non-empty subset of {IN_SCOPE_SIGNALS}, got {list(signals)}")
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if "not_oos" in signals and not use_oos_class:
            raise ValueError('signal "not_oos" needs use_oos_class=True')
        self.C, self.k, self.mahalanobis_reg = C, k, mahalanobis_reg
        self.signals: tuple[str, ...] = tuple(signals)
        self.use_oos_class, self.oos_label = use_oos_class, oos_label
        self.class_weight, self.max_iter = class_weight, max_iter
        self.labels: tuple[str, ...] = ()
        self._W: npt.NDArray[np.float64] | None = None  # (n_classes, d), classes = labels [+ oos]
        self._b: npt.NDArray[np.float64] | None = None
        self._oos_col: int | None = None
        self._examples: npt.NDArray[np.float32] | None = None  # in-scope training rows (for knn)
        self._chol: npt.NDArray[np.float64] | None = None  # Cholesky factor of the shared precision
        self._means_w: npt.NDArray[np.float64] | None = None  # class means, whitened
        self._scale: dict[str, tuple[float, float]] = {}

    # -- fitting ------------------------------------------------------------------------------

    def fit(self, X: Matrix, y: Sequence[str]) -> Self:
        from sklearn.linear_model import LogisticRegression  # heavy import, only when fitting

        A, labels = _check_xy(X, y)
        is_oos = labels == self.oos_label
        if is_oos.any() and not self.use_oos_class:
            A, labels, is_oos = A[~is_oos], labels[~is_oos], is_oos[~is_oos]
        names = sorted(set(labels[~is_oos].tolist()))
        if len(names) < 2:
            raise ValueError(f"a trained classifier needs at least 2 routes, got {names}")
        if "not_oos" in self.signals and not is_oos.any():
            raise ValueError(f'signal "not_oos" needs training examples labelled {self.oos_label!r}')

        classes = names + ([self.oos_label] if is_oos.any() else [])
        model = LogisticRegression(C=self.C, max_iter=self.max_iter, class_weight=self.class_weight)
        model.fit(A.astype(np.float64), labels)
        # Keep the weights in our own class order and predict with plain numpy: fast per message.
        where = {str(c): i for i, c in enumerate(model.classes_)}
        order = [where[c] for c in classes]
        self._W = np.asarray(model.coef_, dtype=np.float64)[order]
        self._b = np.asarray(model.intercept_, dtype=np.float64)[order]
        self._oos_col = len(names) if is_oos.any() else None
        self.labels = tuple(names)

        inside, y_in = A[~is_oos], labels[~is_oos]
        self._examples = inside if "knn" in self.signals else None
        if "mahalanobis" in self.signals:
            means = np.stack([inside[y_in == name].mean(axis=0, dtype=np.float64) for name in names])
            resid = inside - means[np.searchsorted(np.asarray(names), y_in)]  # float64
            cov = resid.T @ resid / len(resid) + self.mahalanobis_reg * np.eye(A.shape[1])
            self._chol = np.linalg.cholesky(np.linalg.inv(cov))
            self._means_w = means @ self._chol

        self._scale = {}
        if len(self.signals) > 1:
            raw = self._raw_signals(inside, exclude_self=True)
            for name, values in raw.items():
                q1, med, q3 = np.quantile(values, [0.25, 0.5, 0.75])
                self._scale[name] = (float(med), float(q3 - q1) if q3 > q1 else 1.0)
        return self

    # -- prediction ---------------------------------------------------------------------------

    def _logits(self, A: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        if self._W is None or self._b is None:
            raise _not_fitted(self)
        return A @ self._W.T + self._b

    @staticmethod
    def _softmax(Z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        E = np.exp(Z - Z.max(axis=1, keepdims=True))
        return E / E.sum(axis=1, keepdims=True)

    def scores(self, X: Matrix) -> npt.NDArray[np.float64]:
        """(n, n_labels) route probabilities (without the out-of-scope column, if any)."""
        P = self._softmax(self._logits(_unit_rows(X)))
        return P[:, : len(self.labels)]

    def _raw_signals(self, A: npt.NDArray[np.float32], *, exclude_self: bool = False) -> dict[str, npt.NDArray[np.float64]]:
        Z = self._logits(A)
        n_in = len(self.labels)
        out: dict[str, npt.NDArray[np.float64]] = {}
        for name in self.signals:
            if name == "energy":
                Zi = Z[:, :n_in]
                top = Zi.max(axis=1)
                out[name] = top + np.log(np.exp(Zi - top[:, None]).sum(axis=1))
            elif name == "max_prob":
                out[name] = self._softmax(Z)[:, :n_in].max(axis=1)
            elif name == "not_oos":
                assert self._oos_col is not None
                out[name] = 1.0 - self._softmax(Z)[:, self._oos_col]
            elif name == "mahalanobis":
                assert self._chol is not None and self._means_w is not None
                W = A @ self._chol
                d2 = (W * W).sum(1)[:, None] - 2.0 * W @ self._means_w.T + (self._means_w**2).sum(1)[None, :]
                out[name] = -d2.min(axis=1)
            elif name == "knn":
                assert self._examples is not None
                out[name] = self._knn(A, exclude_self=exclude_self)
        return out

    def _knn(self, A: npt.NDArray[np.float32], *, exclude_self: bool) -> npt.NDArray[np.float64]:
        assert self._examples is not None
        k = min(self.k, len(self._examples) - (1 if exclude_self else 0))
        out = np.empty(len(A))
        for start in range(0, len(A), 2048):  # bounded memory on big inputs
            sims = A[start : start + 2048] @ self._examples.T
            if exclude_self:  # A is the training matrix itself: drop each row's own match
                rows = np.arange(sims.shape[0])
                sims[rows, start + rows] = -np.inf
            out[start : start + 2048] = _topk_mean(sims, max(k, 1))
        return out

    def in_scope(self, X: Matrix) -> npt.NDArray[np.float64]:
        """(n,) the chosen signal, or the mean of the robustly scaled signals; higher = more in scope."""
        raw = self._raw_signals(_unit_rows(X))
        if len(self.signals) == 1:
            return raw[self.signals[0]]
        return np.mean([(raw[s] - self._scale[s][0]) / self._scale[s][1] for s in self.signals], axis=0)


# --------------------------------------------------------------------------------------------
# Choosing thresholds
# --------------------------------------------------------------------------------------------


def choose_thresholds(
    clf: RouteClassifier,
    X_val: Matrix,
    y_val: Sequence[str],
    *,
    oos_label: str = "oos",
    max_deferred: float = 0.10,
    min_answered_accuracy: float | None = 0.97,
    oos_weight: float = 0.5,
    n_candidates: int = 201,
) -> Thresholds:
    """Pick ``(min_margin, min_in_scope)`` on labelled validation data (never on test data).

    Each validation message gets the outcome :func:`decide` would give it. With ``n_in``
    in-scope and ``n_oos`` out-of-scope messages (label ``oos_label``):

    * in_scope_accuracy = correctly routed / n_in (deferred or rejected messages count as wrong);
    * answered_accuracy = correctly routed / in-scope messages not deferred;
    * oos_recall = out-of-scope messages decided "oos" / n_oos (a deferred one is missed);
    * deferred_share = messages decided "unsure" / all messages.

    **Objective**: maximise ``(1 - oos_weight) * in_scope_accuracy + oos_weight * oos_recall``
    (just in_scope_accuracy when the data has no out-of-scope messages) **subject to**
    ``deferred_share <= max_deferred`` and ``answered_accuracy >= min_answered_accuracy``.
    Deferring never raises in_scope_accuracy, so the margin gate only rises as far as the
    answered-accuracy floor needs; the in-scope gate trades in-scope accuracy for oos recall.
    Ties go to fewer deferrals, then to the lower gates.

    If no pair meets the floor (or the floor is None), the deferral budget is spent instead: for
    each in-scope gate the margin gate goes as high as ``max_deferred`` allows (the least
    confident messages go to the next tier rather than being guessed), and the pair with the
    best objective wins. The deferral budget is never exceeded.

    Candidates are ``n_candidates`` quantiles of each signal on the validation data, plus "gate
    off" (0 margin, -inf in-scope). Only ``X_val``/``y_val`` are looked at.
    """
    if not 0.0 <= max_deferred <= 1.0:
        raise ValueError(f"max_deferred must be in [0, 1], got {max_deferred}")
    if not 0.0 <= oos_weight <= 1.0:
        raise ValueError(f"oos_weight must be in [0, 1], got {oos_weight}")
    y = np.asarray([str(v) for v in y_val])
    S = np.asarray(clf.scores(X_val), dtype=np.float64)
    s = np.asarray(clf.in_scope(X_val), dtype=np.float64).reshape(-1)
    if not (len(y) == len(S) == len(s)) or len(y) == 0:
        raise ValueError(f"need as many labels as vectors, got {len(y)} labels for {len(S)} vectors")
    labels = np.asarray(clf.labels)
    order = np.argsort(-S, axis=1, kind="stable")
    top = labels[order[:, 0]]
    margin = S[np.arange(len(S)), order[:, 0]] - S[np.arange(len(S)), order[:, 1]] if S.shape[1] > 1 else np.full(len(S), np.inf)
    is_oos = y == oos_label
    top_is_oos = top == oos_label  # an explicit oos column, if a classifier exposes one
    correct = ~is_oos & (top == y)
    n, n_in, n_oos = len(y), int((~is_oos).sum()), int(is_oos.sum())
    if n_in == 0:
        raise ValueError("validation data has no in-scope messages")

    levels = np.linspace(0.0, 1.0, n_candidates)
    finite_m = margin[np.isfinite(margin)]
    margin_cands = np.unique(np.concatenate([[0.0], np.quantile(finite_m, levels) if finite_m.size else []]))
    scope_cands = np.unique(np.concatenate([[-np.inf], np.quantile(s, levels)]))

    best: tuple[tuple[float, ...], Thresholds] | None = None  # meets the floor
    spend: tuple[tuple[float, ...], Thresholds] | None = None  # fallback: whole budget on the margin
    for t_s in scope_cands:
        rejected = (s < t_s) | top_is_oos
        kept = ~rejected
        recall = float((rejected & is_oos).sum()) / n_oos if n_oos else 0.0
        # Among kept messages, one with margin < t_m is deferred: count with sorted margins.
        m_kept = margin[kept]
        srt = np.argsort(m_kept, kind="stable")
        m_sorted = m_kept[srt]
        cum_in = np.concatenate([[0], np.cumsum((~is_oos[kept])[srt])])
        cum_ok = np.concatenate([[0], np.cumsum(correct[kept][srt])])
        below = np.searchsorted(m_sorted, margin_cands, side="left")  # deferred, per t_m
        deferred = below / n
        routed_ok = cum_ok[-1] - cum_ok[below]
        answered = n_in - cum_in[below]
        answered_acc = np.divide(routed_ok, answered, out=np.zeros(len(below)), where=answered > 0)
        in_acc = routed_ok / n_in
        objective = in_acc if n_oos == 0 else (1 - oos_weight) * in_acc + oos_weight * recall
        # margin_cands ascend, so the pairs within budget are a prefix (t_m = 0 defers nothing).
        within = np.flatnonzero(deferred <= max_deferred + 1e-12)
        if min_answered_accuracy is not None:
            for j in within[answered_acc[within] >= min_answered_accuracy - 1e-12]:
                key = (float(objective[j]), -float(deferred[j]), -float(t_s), -float(margin_cands[j]))
                if best is None or key > best[0]:
                    best = (key, Thresholds(min_margin=float(margin_cands[j]), min_in_scope=float(t_s)))
        j = int(within[-1])
        key = (float(objective[j]), -float(t_s))
        if spend is None or key > spend[0]:
            spend = (key, Thresholds(min_margin=float(margin_cands[j]), min_in_scope=float(t_s)))
    chosen = best if best is not None else spend
    assert chosen is not None
    return chosen[1]

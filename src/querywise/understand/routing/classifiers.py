"""Route classifiers on embedding matrices: fitted on a deployment's examples, then scoring messages.

Everything here is numpy in, numpy out: no I/O and no embedding calls. Rows are L2-normalised
on the way in, so cosine similarity is a dot product whatever scale the caller passes.

Two classifiers share one interface (:class:`~querywise.understand.routing.decision.RouteClassifier`:
``labels``, ``fit``, ``scores``, ``in_scope``):

* :class:`CentroidClassifier` -- for routes with a handful of examples: one centroid per route
  (the re-normalised mean of its example vectors); scores are cosines to the centroids; the
  in-scope signal is the largest cosine to any single example.
* :class:`TrainedClassifier` -- for routes with many labelled examples: multinomial logistic
  regression on the embeddings; scores are route probabilities; the in-scope signal combines
  energy (log-sum-exp of the logits), Mahalanobis distance to the nearest class mean (shared
  covariance) and mean cosine to the k nearest training examples. That combination won on
  CLINC150's validation split (``bench/results/router_clinc150.md``).

Their scores become decisions in :mod:`querywise.understand.routing.decision`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Self

import numpy as np
import numpy.typing as npt

from querywise.understand.routing.decision import Matrix

__all__ = ["IN_SCOPE_SIGNALS", "CentroidClassifier", "TrainedClassifier"]

InScopeSignal = Literal["energy", "mahalanobis", "knn", "max_prob", "not_oos"]
#: The in-scope signals :class:`TrainedClassifier` can compute (and combine).
IN_SCOPE_SIGNALS: tuple[str, ...] = ("energy", "mahalanobis", "knn", "max_prob", "not_oos")


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
    # float32 / float32 stays float32 at run time; the cast only tells the type checker (no copy).
    return (A / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


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
        # heavy import, only when fitting
        from sklearn.linear_model import LogisticRegression

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

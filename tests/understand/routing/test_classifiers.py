"""querywise.understand.routing.classifiers: centroid and trained route classifiers.

Geometry is checked on hand-made low-dimensional vectors (numbers computed by hand); semantics
on our own three-route example sentences embedded with the packaged model (``embedded`` in
conftest.py, once per session).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from querywise.understand.routing.calibration import choose_thresholds
from querywise.understand.routing.classifiers import CentroidClassifier, TrainedClassifier
from querywise.understand.routing.decision import RouteClassifier

MakeClusters = Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]  # the conftest fixture

# ------------------------------------------------------------------------------------------------
# Hand-made geometry
# ------------------------------------------------------------------------------------------------


def test_centroid_is_the_renormalised_mean() -> None:
    X = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    clf = CentroidClassifier().fit(X, ["billing", "billing", "returns"])
    assert clf.labels == ("billing", "returns")
    # mean of e1 and e2 is (0.5, 0.5, 0), re-normalised: (1/sqrt2, 1/sqrt2, 0)
    r = 1 / math.sqrt(2)
    np.testing.assert_allclose(clf.centroids, [[r, r, 0.0], [0.0, 0.0, 1.0]], atol=1e-6)
    # cosine of e1 to each centroid: 1/sqrt2 and 0; of (0, 0.6, 0.8): 0.6/sqrt2 and 0.8
    np.testing.assert_allclose(clf.scores(np.array([[1.0, 0, 0], [0, 0.6, 0.8]])), [[r, 0.0], [0.6 * r, 0.8]], atol=1e-6)


def test_centroid_scores_do_not_depend_on_input_scale() -> None:
    X = np.array([[2.0, 0.0], [0.0, 3.0]])  # not unit rows: normalised on the way in
    clf = CentroidClassifier().fit(X, ["a", "b"])
    np.testing.assert_allclose(clf.scores(np.array([[5.0, 5.0]])), [[math.sqrt(0.5), math.sqrt(0.5)]], atol=1e-6)


def test_centroid_in_scope_is_max_cosine_to_any_single_example() -> None:
    X = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    y = ["billing", "billing", "returns"]
    q = np.array([[0.6, 0.8, 0.0]])
    # examples: cos 0.6, 0.8, 0 -> 0.8; to the billing centroid it would be 1.4/sqrt2 = 0.99
    assert CentroidClassifier().fit(X, y).in_scope(q)[0] == pytest.approx(0.8, abs=1e-6)
    assert CentroidClassifier(in_scope_signal="max_centroid").fit(X, y).in_scope(q)[0] == pytest.approx(1.4 / math.sqrt(2), abs=1e-6)


def test_centroid_leaves_out_of_scope_examples_out() -> None:
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    clf = CentroidClassifier().fit(X, ["a", "b", "oos"])
    assert clf.labels == ("a", "b")
    # the oos example (-1, 0) is not an example to be close to either
    assert clf.in_scope(np.array([[-1.0, 0.0]]))[0] == pytest.approx(0.0, abs=1e-6)


def test_both_classifiers_are_route_classifiers() -> None:
    # the seam the router and choose_thresholds are typed with
    assert isinstance(CentroidClassifier(), RouteClassifier)
    assert isinstance(TrainedClassifier(), RouteClassifier)


# ------------------------------------------------------------------------------------------------
# TrainedClassifier on synthetic clusters
# ------------------------------------------------------------------------------------------------


def test_trained_keeps_oos_as_a_hidden_class(clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=6, n_per=40, noise=0.3, n_oos=40)
    clf = TrainedClassifier(signals=("not_oos",), use_oos_class=True).fit(Xtr, ytr)
    assert clf.labels == ("a", "b", "c")
    Xq, yq, _ = clusters(seed=7, n_per=20, noise=0.3, n_oos=20)
    S = clf.scores(Xq)
    assert S.shape == (80, 3) and np.all(S.sum(axis=1) <= 1 + 1e-9)
    signal = clf.in_scope(Xq)
    assert signal[yq == "oos"].mean() < 0.5 < signal[yq != "oos"].mean()


def test_trained_drops_oos_examples_by_default(clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=6, n_per=30, noise=0.3, n_oos=30)
    Xq, _, _ = clusters(seed=7, n_per=10, noise=0.3, n_oos=10)
    with_oos = TrainedClassifier().fit(Xtr, ytr)
    without = TrainedClassifier().fit(Xtr[ytr != "oos"], ytr[ytr != "oos"])
    assert with_oos.labels == without.labels == ("a", "b", "c")
    np.testing.assert_allclose(with_oos.scores(Xq), without.scores(Xq))
    np.testing.assert_allclose(with_oos.in_scope(Xq), without.in_scope(Xq))
    np.testing.assert_allclose(with_oos.scores(Xq).sum(axis=1), 1.0)


def test_trained_needs_oos_examples_for_the_not_oos_signal_and_two_routes(clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=6, n_per=10, noise=0.3, n_oos=0)
    with pytest.raises(ValueError, match="not_oos"):
        TrainedClassifier(signals=("not_oos",), use_oos_class=True).fit(Xtr, ytr)  # no oos examples
    with pytest.raises(ValueError, match="use_oos_class"):
        TrainedClassifier(signals=("not_oos",))
    with pytest.raises(ValueError, match="at least 2 routes"):
        TrainedClassifier().fit(Xtr[:10], ytr[:10])
    with pytest.raises(ValueError, match="signals"):
        TrainedClassifier(signals=("vibes",))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="not fitted"):
        TrainedClassifier().scores(Xtr)


def test_trained_combined_signal_separates_out_of_scope(clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=8, n_per=40, noise=0.3, n_oos=0)
    Xq, yq, _ = clusters(seed=9, n_per=20, noise=0.3, n_oos=20)
    clf = TrainedClassifier().fit(Xtr, ytr)  # energy + Mahalanobis + kNN, scaled on train
    signal = clf.in_scope(Xq)
    # every out-of-scope point below the median in-scope one (AUROC well above chance)
    lo, hi = signal[yq == "oos"], signal[yq != "oos"]
    assert (lo[:, None] < hi[None, :]).mean() > 0.9


def test_fitting_is_deterministic(clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=10, n_per=30, noise=0.4, n_oos=10)
    Xv, yv, _ = clusters(seed=11, n_per=20, noise=0.4, n_oos=10)
    runs = []
    for _ in range(2):
        clf = TrainedClassifier().fit(Xtr, ytr)
        runs.append((clf.scores(Xv), clf.in_scope(Xv), choose_thresholds(clf, Xv, yv)))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert runs[0][2] == runs[1][2]


# ------------------------------------------------------------------------------------------------
# Real embeddings: three routes of our own (conftest.py)
# ------------------------------------------------------------------------------------------------


@pytest.mark.model
@pytest.mark.parametrize("make", [CentroidClassifier, TrainedClassifier], ids=["centroid", "trained"])
def test_real_embeddings_route_held_out_messages_well_above_chance(make: type, embedded: dict[str, np.ndarray]) -> None:
    clf = make().fit(embedded["X_train"], embedded["y_train"])
    pred = np.asarray(clf.labels)[clf.scores(embedded["X_held"]).argmax(axis=1)]
    accuracy = float((pred == embedded["y_held"]).mean())
    assert accuracy >= 10 / 12  # chance is 1/3
    # out-of-scope messages look less in scope than held-out in-scope ones
    assert np.median(clf.in_scope(embedded["X_oos"])) < np.median(clf.in_scope(embedded["X_held"]))

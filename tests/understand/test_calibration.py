"""querywise.understand.calibration: choosing the decision thresholds on labelled validation data.

Checked on synthetic clusters (``clusters`` in conftest.py) against decide() itself, and on our
own three-route example sentences embedded with the packaged model (``embedded`` in conftest.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from querywise.understand.calibration import choose_thresholds
from querywise.understand.classifiers import CentroidClassifier
from querywise.understand.decision import RouteClassifier, Thresholds, decide_many

MakeClusters = Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]  # the conftest fixture

# ------------------------------------------------------------------------------------------------
# choose_thresholds() on synthetic clusters
# ------------------------------------------------------------------------------------------------


def outcome_rates(clf: RouteClassifier, X: np.ndarray, y: np.ndarray, th: Thresholds) -> dict[str, float]:
    """Rates computed through decide() itself, independently of choose_thresholds' counting."""
    ds = decide_many(clf.scores(X), clf.in_scope(X), clf.labels, th)
    kind = np.array([d.kind for d in ds])
    label = np.array([d.label or "" for d in ds])
    ins = y != "oos"
    ok = (kind == "route") & (label == y)
    return {
        "deferred": float((kind == "unsure").mean()),
        "answered_acc": float(ok[ins].sum() / max(1, (ins & (kind != "unsure")).sum())),
        "in_acc": float(ok[ins].mean()),
        "recall": float((kind[~ins] == "oos").mean()) if (~ins).any() else 0.0,
    }


@pytest.mark.parametrize("max_deferred", [0.0, 0.05, 0.15])
def test_choose_thresholds_respects_the_deferral_budget(max_deferred: float, clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=1, n_per=40, noise=0.35, n_oos=0)
    Xv, yv, _ = clusters(seed=2, n_per=60, noise=0.35, n_oos=20)
    clf = CentroidClassifier().fit(Xtr, ytr)
    th = choose_thresholds(clf, Xv, yv, max_deferred=max_deferred, min_answered_accuracy=0.99)
    rates = outcome_rates(clf, Xv, yv, th)
    assert rates["deferred"] <= max_deferred
    if max_deferred > 0:  # 99% is out of reach here, so the budget is spent, not wasted
        assert rates["deferred"] > max_deferred - 0.03


def test_choose_thresholds_meets_a_reachable_floor(clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=1, n_per=40, noise=0.35, n_oos=0)
    Xv, yv, _ = clusters(seed=2, n_per=60, noise=0.35, n_oos=20)
    clf = CentroidClassifier().fit(Xtr, ytr)
    free = outcome_rates(clf, Xv, yv, Thresholds(0.0, float("-inf")))
    floor = free["answered_acc"] + 0.03  # above what the ungated classifier gets
    th = choose_thresholds(clf, Xv, yv, max_deferred=0.3, min_answered_accuracy=floor)
    rates = outcome_rates(clf, Xv, yv, th)
    assert rates["answered_acc"] >= floor
    assert rates["deferred"] <= 0.3
    # the objective (in-scope accuracy + oos recall) is no worse than the margin gate alone at the floor
    margin_only = choose_thresholds(clf, Xv[yv != "oos"], yv[yv != "oos"], max_deferred=0.3, min_answered_accuracy=floor)
    alone = outcome_rates(clf, Xv, yv, Thresholds(margin_only.min_margin, float("-inf")))
    assert rates["in_acc"] + rates["recall"] >= alone["in_acc"] + alone["recall"]


def test_choose_thresholds_finds_the_best_pair_by_brute_force(clusters: MakeClusters) -> None:
    """With one candidate per validation value, no pair of data-value thresholds does better."""
    Xtr, ytr, _ = clusters(seed=3, n_per=30, noise=0.4, n_oos=0)
    Xv, yv, _ = clusters(seed=4, n_per=15, noise=0.4, n_oos=10)
    clf = CentroidClassifier().fit(Xtr, ytr)
    floor, budget = 0.9, 0.15
    th = choose_thresholds(clf, Xv, yv, max_deferred=budget, min_answered_accuracy=floor, n_candidates=len(yv))
    got = outcome_rates(clf, Xv, yv, th)
    S = clf.scores(Xv)
    srt = np.sort(S, axis=1)
    margins = np.concatenate([[0.0], srt[:, -1] - srt[:, -2]])
    scopes = np.concatenate([[-np.inf], clf.in_scope(Xv)])
    best = -1.0
    for tm in margins:
        for ts in scopes:
            r = outcome_rates(clf, Xv, yv, Thresholds(float(tm), float(ts)))
            if r["deferred"] <= budget and r["answered_acc"] >= floor:
                best = max(best, 0.5 * r["in_acc"] + 0.5 * r["recall"])
    assert best > 0  # the floor is reachable here
    assert got["deferred"] <= budget and got["answered_acc"] >= floor
    assert 0.5 * got["in_acc"] + 0.5 * got["recall"] == pytest.approx(best, abs=1e-9)


class SpyClassifier:
    """Wraps a classifier and remembers every matrix it is asked about."""

    def __init__(self, inner: CentroidClassifier) -> None:
        self.inner, self.seen = inner, []
        self.labels = inner.labels

    def fit(self, X: np.ndarray, y: Sequence[str]) -> SpyClassifier:
        raise AssertionError("choose_thresholds must not refit")

    def scores(self, X: np.ndarray) -> np.ndarray:
        self.seen.append(np.array(X))
        return self.inner.scores(X)

    def in_scope(self, X: np.ndarray) -> np.ndarray:
        self.seen.append(np.array(X))
        return self.inner.in_scope(X)


def test_choose_thresholds_looks_at_validation_data_only(clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=1, n_per=40, noise=0.35, n_oos=0)
    Xv, yv, _ = clusters(seed=2, n_per=30, noise=0.35, n_oos=10)
    Xte, yte, _ = clusters(seed=5, n_per=30, noise=0.8, n_oos=10)  # a very different test set
    spy = SpyClassifier(CentroidClassifier().fit(Xtr, ytr))
    th = choose_thresholds(spy, Xv, yv)
    assert spy.seen and all(np.array_equal(m, Xv) for m in spy.seen)
    # same validation data, same thresholds, whatever test data exists
    assert choose_thresholds(CentroidClassifier().fit(Xtr, ytr), Xv, yv) == th
    assert choose_thresholds(CentroidClassifier().fit(Xtr, ytr), Xte, yte) != th


def test_choose_thresholds_without_oos_in_validation_only_gates_on_the_margin_budget(clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=1, n_per=40, noise=0.35, n_oos=0)
    Xv, yv, _ = clusters(seed=2, n_per=40, noise=0.35, n_oos=0)
    clf = CentroidClassifier().fit(Xtr, ytr)
    th = choose_thresholds(clf, Xv, yv, max_deferred=0.1, min_answered_accuracy=None)
    # nothing to gain by rejecting in-scope messages: the in-scope gate stays off
    assert th.min_in_scope == float("-inf")
    assert outcome_rates(clf, Xv, yv, th)["deferred"] <= 0.1


def test_choose_thresholds_validates_its_inputs(clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=1, n_per=10, noise=0.3, n_oos=0)
    clf = CentroidClassifier().fit(Xtr, ytr)
    with pytest.raises(ValueError, match="max_deferred"):
        choose_thresholds(clf, Xtr, ytr, max_deferred=1.5)
    with pytest.raises(ValueError, match="labels"):
        choose_thresholds(clf, Xtr, ytr[:-1])


# ------------------------------------------------------------------------------------------------
# Real embeddings: three routes of our own (conftest.py)
# ------------------------------------------------------------------------------------------------


@pytest.mark.model
def test_real_embeddings_thresholds_from_validation_catch_out_of_scope(embedded: dict[str, np.ndarray]) -> None:
    clf = CentroidClassifier().fit(embedded["X_train"], embedded["y_train"])
    # validation = held-out in-scope + the first half of the out-of-scope messages
    Xv = np.vstack([embedded["X_held"], embedded["X_oos"][:3]])
    yv = np.concatenate([embedded["y_held"], ["oos"] * 3])
    th = choose_thresholds(clf, Xv, yv, max_deferred=0.1)
    unseen = decide_many(clf.scores(embedded["X_oos"][3:]), clf.in_scope(embedded["X_oos"][3:]), clf.labels, th)
    assert sum(d.kind == "oos" for d in unseen) >= 2  # of 3 out-of-scope messages never seen

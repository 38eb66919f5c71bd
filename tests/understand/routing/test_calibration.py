"""querywise.understand.routing.calibration: choosing the decision thresholds on labelled validation data.

Checked on synthetic clusters (``clusters`` in conftest.py) against decide() itself, and on our
own three-route example sentences embedded with the packaged model (``embedded`` in conftest.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from querywise.understand.routing.calibration import Calibration, OperatingPoint, calibrate, choose_candidate, choose_thresholds
from querywise.understand.routing.classifiers import CentroidClassifier
from querywise.understand.routing.decision import RouteClassifier, Thresholds, decide_many

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
# calibrate(): the user's operating point, met or said to be missed
# ------------------------------------------------------------------------------------------------


def test_the_floor_on_val_is_the_stated_floor_plus_headroom() -> None:
    assert OperatingPoint(min_answered=0.97, max_deferred=0.10).val_floor == 0.975
    assert OperatingPoint(min_answered=0.97, max_deferred=0.10, headroom=0.0).val_floor == 0.97
    assert OperatingPoint(min_answered=0.999, headroom=0.005).val_floor == 1.0
    assert OperatingPoint(min_answered=0.97, max_deferred=0.10).describe() == "answered accuracy >= 97.0% (97.5% on val), deferred <= 10.0%"
    with pytest.raises(ValueError, match="max_deferred"):
        OperatingPoint(max_deferred=1.5)


def test_calibrate_meets_a_stated_operating_point_at_its_cheapest(clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=1, n_per=40, noise=0.35, n_oos=0)
    Xv, yv, _ = clusters(seed=2, n_per=60, noise=0.35, n_oos=20)
    clf = CentroidClassifier().fit(Xtr, ytr)
    free = outcome_rates(clf, Xv, yv, Thresholds(0.0, float("-inf")))
    point = OperatingPoint(min_answered=free["answered_acc"] + 0.02, max_deferred=0.3, headroom=0.01)
    cal = calibrate(clf, Xv, yv, point, n_candidates=len(yv))
    got = outcome_rates(clf, Xv, yv, cal.thresholds)
    assert cal.meets and cal.warning is None
    assert got["answered_acc"] >= free["answered_acc"] + 0.03 and got["deferred"] <= 0.3  # floor + headroom, within budget
    # the figures it reports are what decide() gives
    assert (cal.answered_accuracy, cal.deferred_share, cal.in_scope_accuracy, cal.oos_recall) == pytest.approx(
        (got["answered_acc"], got["deferred"], got["in_acc"], got["recall"]))
    # cheapest: at the chosen in-scope gate, no lower margin gate meets the floor
    srt = np.sort(clf.scores(Xv), axis=1)
    lower = [m for m in srt[:, -1] - srt[:, -2] if m < cal.thresholds.min_margin]
    assert lower  # the margin gate had to rise
    for m in lower:
        assert outcome_rates(clf, Xv, yv, Thresholds(float(m), cal.thresholds.min_in_scope))["answered_acc"] < point.val_floor


def test_calibrate_warns_which_constraint_it_could_not_meet(clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=1, n_per=40, noise=0.35, n_oos=0)
    Xv, yv, _ = clusters(seed=2, n_per=60, noise=0.35, n_oos=20)
    clf = CentroidClassifier().fit(Xtr, ytr)
    cal = calibrate(clf, Xv, yv, OperatingPoint(min_answered=0.99, max_deferred=0.05, headroom=0.0))
    got = outcome_rates(clf, Xv, yv, cal.thresholds)
    assert not cal.meets
    assert got["deferred"] <= 0.05 and got["deferred"] > 0.02  # the budget is kept, and spent
    assert cal.warning is not None and "operating point not met" in cal.warning
    assert f"answered accuracy on val is {got['answered_acc']:.1%}" in cal.warning and "below the 99.0% asked of val" in cal.warning
    # the warning says what meeting the floor would cost, and that cost is real
    assert cal.needed_deferred is not None and cal.needed_deferred > 0.05
    assert f"reaching it needs {cal.needed_deferred:.1%} deferred" in cal.warning


def test_when_the_point_is_out_of_reach_the_closest_pair_is_kept(clusters: MakeClusters) -> None:
    """Brute force over every data-valued pair: none within the budget answers more accurately."""
    Xtr, ytr, _ = clusters(seed=3, n_per=30, noise=0.4, n_oos=0)
    Xv, yv, _ = clusters(seed=4, n_per=15, noise=0.4, n_oos=10)
    clf = CentroidClassifier().fit(Xtr, ytr)
    budget = 0.1
    cal = calibrate(clf, Xv, yv, OperatingPoint(min_answered=0.999, max_deferred=budget, headroom=0.0), n_candidates=len(yv))
    assert not cal.meets and cal.answered_accuracy is not None
    srt = np.sort(clf.scores(Xv), axis=1)
    closest = max(
        r["answered_acc"]
        for tm in np.concatenate([[0.0], srt[:, -1] - srt[:, -2]])
        for ts in np.concatenate([[-np.inf], clf.in_scope(Xv)])
        if (r := outcome_rates(clf, Xv, yv, Thresholds(float(tm), float(ts))))["deferred"] <= budget
    )
    assert cal.answered_accuracy == pytest.approx(closest, abs=1e-9)
    assert cal.warning is not None and cal.warning.endswith("kept: the highest answered accuracy within the deferral budget")


def test_a_fixed_margin_gate_that_cannot_meet_the_floor_is_named(clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=1, n_per=40, noise=0.35, n_oos=0)
    Xv, yv, _ = clusters(seed=2, n_per=60, noise=0.35, n_oos=20)
    clf = CentroidClassifier().fit(Xtr, ytr)
    free = outcome_rates(clf, Xv, yv, Thresholds(0.0, float("-inf")))
    cal = calibrate(clf, Xv, yv, OperatingPoint(min_answered=free["answered_acc"] + 0.03, max_deferred=0.3, headroom=0.0), min_margin=0.0)
    assert cal.thresholds.min_margin == 0.0 and not cal.meets
    assert cal.warning is not None and "no in-scope gate reaches it with the margin gate fixed at 0" in cal.warning
    # without the fixed margin the same point is met
    assert calibrate(clf, Xv, yv, cal.point).meets


def _cal(*, meets: bool, answered: float, objective: float) -> Calibration:
    return Calibration(thresholds=Thresholds(0.1, float("-inf")), point=OperatingPoint(), in_scope_accuracy=0.8, answered_accuracy=answered,
                       deferred_share=0.05, oos_recall=None, objective=objective, meets=meets, needed_deferred=None, warning=None)


def test_choose_candidate_keeps_one_that_meets_the_point_over_a_better_objective() -> None:
    # centroids with the better objective but 66% answered do not beat a classifier meeting the point
    i, reason = choose_candidate(["centroid", "trained"], [_cal(meets=False, answered=0.66, objective=0.9), _cal(meets=True, answered=0.975, objective=0.8)])
    assert i == 1
    assert reason.startswith("trained meets the operating point on val with the best objective")
    assert "centroid does not meet it (answered 66.0%" in reason


def test_choose_candidate_among_those_meeting_the_point_takes_the_best_objective() -> None:
    i, reason = choose_candidate(["centroid", "trained"], [_cal(meets=True, answered=0.98, objective=0.85), _cal(meets=True, answered=0.975, objective=0.8)])
    assert i == 0 and "trained also meets it but has a lower objective" in reason
    i, _ = choose_candidate(["a", "b"], [_cal(meets=True, answered=0.98, objective=0.8), _cal(meets=True, answered=0.98, objective=0.8)])
    assert i == 0  # ties to the earlier-listed


def test_choose_candidate_when_none_meets_takes_the_closest_to_the_floor() -> None:
    i, reason = choose_candidate(["centroid", "trained"], [_cal(meets=False, answered=0.66, objective=0.9), _cal(meets=False, answered=0.95, objective=0.7)])
    assert i == 1 and reason.startswith("no classifier meets the operating point on val; trained comes closest (answered 95.0%")


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


def test_an_out_of_reach_point_keeps_the_oos_floor_and_shows_the_nearest_points(clusters: MakeClusters) -> None:
    Xtr, ytr, _ = clusters(seed=3, n_per=30, noise=0.4, n_oos=0)
    Xv, yv, _ = clusters(seed=4, n_per=15, noise=0.4, n_oos=10)
    clf = CentroidClassifier().fit(Xtr, ytr)
    free = OperatingPoint(min_answered=0.999, max_deferred=0.1, headroom=0.0)
    floored = OperatingPoint(min_answered=0.999, max_deferred=0.1, headroom=0.0, min_oos_recall=0.5)
    without = calibrate(clf, Xv, yv, free, n_candidates=len(yv))
    cal = calibrate(clf, Xv, yv, floored, n_candidates=len(yv))
    assert not cal.meets and cal.oos_recall is not None and cal.oos_recall >= 0.5
    assert outcome_rates(clf, Xv, yv, cal.thresholds)["recall"] >= 0.5  # what decide() does with them
    assert without.oos_recall is not None and without.oos_recall < 0.5  # the floor changed the choice
    whats = [t.what for t in cal.tradeoffs]
    assert whats[0].startswith("chosen") and whats[-1] == "the highest answered accuracy within the deferral budget, no OOS floor"
    for t in cal.tradeoffs:  # each point's figures are what decide() gives with its thresholds
        r = outcome_rates(clf, Xv, yv, t.thresholds)
        assert (t.deferred_share, t.oos_recall) == (pytest.approx(r["deferred"]), pytest.approx(r["recall"]))
    assert calibrate(clf, Xv, yv, OperatingPoint(min_answered=0.5, max_deferred=0.3, headroom=0.0, min_oos_recall=0.5)).tradeoffs == ()

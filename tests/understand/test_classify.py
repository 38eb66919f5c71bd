"""querywise.understand.classify: centroid and trained route classifiers, the decision gate and
threshold selection.

Geometry is checked on hand-made low-dimensional vectors (numbers computed by hand); semantics
on our own three-route example sentences embedded with the packaged model (once per module).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from querywise.understand.classify import (
    CentroidClassifier,
    Decision,
    RouteClassifier,
    Thresholds,
    TrainedClassifier,
    choose_thresholds,
    decide,
    decide_many,
)

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


# ------------------------------------------------------------------------------------------------
# decide()
# ------------------------------------------------------------------------------------------------

LABELS = ["billing", "returns", "shipping"]


def test_margin_is_top_minus_second_and_gates_unsure() -> None:
    row = [0.5, 0.75, 0.25]  # exact in binary: margin = 0.25
    sure = decide(row, 0.9, LABELS, Thresholds(min_margin=0.2, min_in_scope=0.0))
    assert sure == Decision(label="returns", kind="route", margin=0.25, top="returns", second="billing")
    unsure = decide(row, 0.9, LABELS, Thresholds(min_margin=0.3, min_in_scope=0.0))
    assert (unsure.kind, unsure.label, unsure.top, unsure.second) == ("unsure", None, "returns", "billing")
    assert unsure.margin == 0.25
    # the gate is strict: a margin equal to min_margin routes
    assert decide(row, 0.9, LABELS, Thresholds(min_margin=0.25, min_in_scope=0.0)).kind == "route"


def test_out_of_scope_by_threshold_comes_before_the_margin() -> None:
    row = [0.9, 0.1, 0.0]  # a clear winner
    th = Thresholds(min_margin=0.5, min_in_scope=0.4)
    assert decide(row, 0.39, LABELS, th).kind == "oos"
    assert decide(row, 0.39, LABELS, th).label is None
    assert decide(row, 0.4, LABELS, th).kind == "route"  # equal to the threshold: in scope
    # low in-scope AND low margin: out-of-scope wins over unsure
    assert decide([0.5, 0.49, 0.0], 0.1, LABELS, th).kind == "oos"


def test_an_explicit_oos_class_on_top_decides_oos() -> None:
    d = decide([0.2, 0.8], 5.0, ["billing", "oos"], Thresholds(min_margin=0.0, min_in_scope=float("-inf")))
    assert (d.kind, d.label, d.top) == ("oos", None, "oos")


def test_ties_go_to_the_first_label_and_single_label_has_infinite_margin() -> None:
    d = decide([0.5, 0.5, 0.1], 1.0, LABELS, Thresholds(0.0, 0.0))
    assert (d.top, d.second, d.margin, d.kind) == ("billing", "returns", 0.0, "route")
    one = decide([0.3], 1.0, ["only"], Thresholds(min_margin=10.0, min_in_scope=0.0))
    assert (one.kind, one.second, one.margin) == ("route", None, math.inf)


def test_decide_rejects_a_row_of_the_wrong_length() -> None:
    with pytest.raises(ValueError, match="3 labels"):
        decide([0.1, 0.2], 1.0, LABELS, Thresholds(0.0, 0.0))


# ------------------------------------------------------------------------------------------------
# choose_thresholds() on synthetic clusters
# ------------------------------------------------------------------------------------------------


def clusters(seed: int, n_per: int, noise: float, n_oos: int, dim: int = 16) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three overlapping routes around fixed directions plus out-of-scope points elsewhere."""
    centres = np.eye(dim)[:3] + 0.35 * np.eye(dim)[[1, 2, 0]]  # neighbours overlap
    rng = np.random.default_rng(seed)
    X = [centres[i] + noise * rng.standard_normal((n_per, dim)) for i in range(3)]
    oos_dirs = np.eye(dim)[3:6].sum(0) / math.sqrt(3) + np.eye(dim)[:3].sum(0) * 0.15
    X.append(oos_dirs + noise * rng.standard_normal((n_oos, dim)))
    y = np.array(["a"] * n_per + ["b"] * n_per + ["c"] * n_per + ["oos"] * n_oos)
    return np.vstack(X), y, centres


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
def test_choose_thresholds_respects_the_deferral_budget(max_deferred: float) -> None:
    Xtr, ytr, _ = clusters(seed=1, n_per=40, noise=0.35, n_oos=0)
    Xv, yv, _ = clusters(seed=2, n_per=60, noise=0.35, n_oos=20)
    clf = CentroidClassifier().fit(Xtr, ytr)
    th = choose_thresholds(clf, Xv, yv, max_deferred=max_deferred, min_answered_accuracy=0.99)
    rates = outcome_rates(clf, Xv, yv, th)
    assert rates["deferred"] <= max_deferred
    if max_deferred > 0:  # 99% is out of reach here, so the budget is spent, not wasted
        assert rates["deferred"] > max_deferred - 0.03


def test_choose_thresholds_meets_a_reachable_floor() -> None:
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


def test_choose_thresholds_finds_the_best_pair_by_brute_force() -> None:
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


def test_choose_thresholds_looks_at_validation_data_only() -> None:
    Xtr, ytr, _ = clusters(seed=1, n_per=40, noise=0.35, n_oos=0)
    Xv, yv, _ = clusters(seed=2, n_per=30, noise=0.35, n_oos=10)
    Xte, yte, _ = clusters(seed=5, n_per=30, noise=0.8, n_oos=10)  # a very different test set
    spy = SpyClassifier(CentroidClassifier().fit(Xtr, ytr))
    th = choose_thresholds(spy, Xv, yv)
    assert spy.seen and all(np.array_equal(m, Xv) for m in spy.seen)
    # same validation data, same thresholds, whatever test data exists
    assert choose_thresholds(CentroidClassifier().fit(Xtr, ytr), Xv, yv) == th
    assert choose_thresholds(CentroidClassifier().fit(Xtr, ytr), Xte, yte) != th


def test_choose_thresholds_without_oos_in_validation_only_gates_on_the_margin_budget() -> None:
    Xtr, ytr, _ = clusters(seed=1, n_per=40, noise=0.35, n_oos=0)
    Xv, yv, _ = clusters(seed=2, n_per=40, noise=0.35, n_oos=0)
    clf = CentroidClassifier().fit(Xtr, ytr)
    th = choose_thresholds(clf, Xv, yv, max_deferred=0.1, min_answered_accuracy=None)
    # nothing to gain by rejecting in-scope messages: the in-scope gate stays off
    assert th.min_in_scope == float("-inf")
    assert outcome_rates(clf, Xv, yv, th)["deferred"] <= 0.1


def test_choose_thresholds_validates_its_inputs() -> None:
    Xtr, ytr, _ = clusters(seed=1, n_per=10, noise=0.3, n_oos=0)
    clf = CentroidClassifier().fit(Xtr, ytr)
    with pytest.raises(ValueError, match="max_deferred"):
        choose_thresholds(clf, Xtr, ytr, max_deferred=1.5)
    with pytest.raises(ValueError, match="labels"):
        choose_thresholds(clf, Xtr, ytr[:-1])


# ------------------------------------------------------------------------------------------------
# TrainedClassifier on synthetic clusters
# ------------------------------------------------------------------------------------------------


def test_trained_keeps_oos_as_a_hidden_class() -> None:
    Xtr, ytr, _ = clusters(seed=6, n_per=40, noise=0.3, n_oos=40)
    clf = TrainedClassifier(signals=("not_oos",), use_oos_class=True).fit(Xtr, ytr)
    assert clf.labels == ("a", "b", "c")
    Xq, yq, _ = clusters(seed=7, n_per=20, noise=0.3, n_oos=20)
    S = clf.scores(Xq)
    assert S.shape == (80, 3) and np.all(S.sum(axis=1) <= 1 + 1e-9)
    signal = clf.in_scope(Xq)
    assert signal[yq == "oos"].mean() < 0.5 < signal[yq != "oos"].mean()


def test_trained_drops_oos_examples_by_default() -> None:
    Xtr, ytr, _ = clusters(seed=6, n_per=30, noise=0.3, n_oos=30)
    Xq, _, _ = clusters(seed=7, n_per=10, noise=0.3, n_oos=10)
    with_oos = TrainedClassifier().fit(Xtr, ytr)
    without = TrainedClassifier().fit(Xtr[ytr != "oos"], ytr[ytr != "oos"])
    assert with_oos.labels == without.labels == ("a", "b", "c")
    np.testing.assert_allclose(with_oos.scores(Xq), without.scores(Xq))
    np.testing.assert_allclose(with_oos.in_scope(Xq), without.in_scope(Xq))
    np.testing.assert_allclose(with_oos.scores(Xq).sum(axis=1), 1.0)


def test_trained_needs_oos_examples_for_the_not_oos_signal_and_two_routes() -> None:
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


def test_trained_combined_signal_separates_out_of_scope() -> None:
    Xtr, ytr, _ = clusters(seed=8, n_per=40, noise=0.3, n_oos=0)
    Xq, yq, _ = clusters(seed=9, n_per=20, noise=0.3, n_oos=20)
    clf = TrainedClassifier().fit(Xtr, ytr)  # energy + Mahalanobis + kNN, scaled on train
    signal = clf.in_scope(Xq)
    # every out-of-scope point below the median in-scope one (AUROC well above chance)
    lo, hi = signal[yq == "oos"], signal[yq != "oos"]
    assert (lo[:, None] < hi[None, :]).mean() > 0.9


def test_fitting_is_deterministic() -> None:
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
# Real embeddings: three routes of our own
# ------------------------------------------------------------------------------------------------

ROUTES = {
    "order_status": [
        "Where is my parcel right now?",
        "My package still hasn't arrived, can you track it?",
        "When will my order be delivered?",
        "The tracking page hasn't updated in four days.",
        "Has my order shipped yet?",
        "I need the tracking number for my delivery.",
        "The courier says delivered but nothing is at my door.",
        "How long until my shipment gets here?",
        "Is my order stuck in customs?",
        "Can you tell me the delivery status of order 5521?",
        "My box was supposed to come yesterday, where is it?",
        "Which carrier is bringing my package?",
    ],
    "refund": [
        "I want my money back for these headphones.",
        "How do I get a refund for a broken item?",
        "You charged me twice, please reverse one payment.",
        "When will the refund reach my card?",
        "I returned the jacket two weeks ago and still have no refund.",
        "Can I cancel my order and be reimbursed?",
        "The product was faulty, I'd like a full refund.",
        "Please credit my account for the missing item.",
        "How long do refunds take to process?",
        "I was overcharged and want the difference back.",
        "Refund the shipping fee, the parcel came late.",
        "Can I get reimbursed for the damaged blender?",
    ],
    "password_reset": [
        "I forgot my password and can't log in.",
        "The reset link in the email doesn't work.",
        "How do I change my account password?",
        "My account is locked after too many login attempts.",
        "I never received the password reset email.",
        "Can't sign in, it says my password is wrong.",
        "Help me recover access to my account.",
        "The two-factor code won't let me log in.",
        "I want to set a new password.",
        "My login keeps failing even with the right password.",
        "How can I unlock my profile?",
        "Reset my password please.",
    ],
}
OUT_OF_SCOPE = [
    "What's the weather going to be like in Lisbon tomorrow?",
    "Give me a recipe for banana bread.",
    "Who won the football match last night?",
    "Tell me a joke about penguins.",
    "What is the capital of Australia?",
    "How many moons does Jupiter have?",
]
N_TRAIN = 8  # per route; the other 4 are held out


@pytest.fixture(scope="module")
def embedded() -> dict[str, np.ndarray]:
    from querywise.embed import load_embedder

    embedder = load_embedder("onnx", cache_dir=None)
    train = [(t, r) for r, texts in ROUTES.items() for t in texts[:N_TRAIN]]
    held = [(t, r) for r, texts in ROUTES.items() for t in texts[N_TRAIN:]]
    return {
        "X_train": embedder.embed([t for t, _ in train]),
        "y_train": np.array([r for _, r in train]),
        "X_held": embedder.embed([t for t, _ in held]),
        "y_held": np.array([r for _, r in held]),
        "X_oos": embedder.embed(OUT_OF_SCOPE),
    }


@pytest.mark.model
@pytest.mark.parametrize("make", [CentroidClassifier, TrainedClassifier], ids=["centroid", "trained"])
def test_real_embeddings_route_held_out_messages_well_above_chance(make: type, embedded: dict[str, np.ndarray]) -> None:
    clf = make().fit(embedded["X_train"], embedded["y_train"])
    pred = np.asarray(clf.labels)[clf.scores(embedded["X_held"]).argmax(axis=1)]
    accuracy = float((pred == embedded["y_held"]).mean())
    assert accuracy >= 10 / 12  # chance is 1/3
    # out-of-scope messages look less in scope than held-out in-scope ones
    assert np.median(clf.in_scope(embedded["X_oos"])) < np.median(clf.in_scope(embedded["X_held"]))


@pytest.mark.model
def test_real_embeddings_thresholds_from_validation_catch_out_of_scope(embedded: dict[str, np.ndarray]) -> None:
    clf = CentroidClassifier().fit(embedded["X_train"], embedded["y_train"])
    # validation = held-out in-scope + the first half of the out-of-scope messages
    Xv = np.vstack([embedded["X_held"], embedded["X_oos"][:3]])
    yv = np.concatenate([embedded["y_held"], ["oos"] * 3])
    th = choose_thresholds(clf, Xv, yv, max_deferred=0.1)
    unseen = decide_many(clf.scores(embedded["X_oos"][3:]), clf.in_scope(embedded["X_oos"][3:]), clf.labels, th)
    assert sum(d.kind == "oos" for d in unseen) >= 2  # of 3 out-of-scope messages never seen

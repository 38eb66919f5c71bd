"""querywise.understand.routing.decision: the gate that turns a classifier's scores into a decision.

Checked on hand-made score rows (numbers computed by hand).
"""

from __future__ import annotations

import math

import pytest

from querywise.understand.routing.decision import Decision, Thresholds, decide

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

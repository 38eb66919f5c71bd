"""The topic-shift check: the packaged model, and the chance it gives."""

from __future__ import annotations

import math

import pytest

from querywise.text import analyze
from querywise.understand.followup.shift import CUE_FAMILIES, MIN_FORM_WEIGHT, Searched, ShiftModel, shift_features, shift_model


def test_the_packaged_model_reads_exactly_the_features_the_pipeline_computes() -> None:
    model = shift_model()
    names = set(shift_features("pointer", (), similarity=0.0, names_own=False, message=""))
    assert set(model.weights) == names  # a renamed feature would otherwise weigh nothing, silently
    assert 0.0 < model.threshold < 1.0
    assert "topic_shift" in str(model.provenance["command"]) and "train" in str(model.provenance["train"])


def test_features_say_how_the_gate_flagged_and_which_cue_families_fired() -> None:
    f = shift_features("described", ("set:other", "definite:the shop"), similarity=0.3, names_own=True, message="drivers from other states")
    assert f["kind_described"] == 1.0 and f["kind_pointer"] == 0.0 and f["kind_continuity"] == 0.0
    assert f["cue_set"] == 1.0 and f["cue_definite"] == 1.0 and sum(f[f"cue_{c}"] for c in CUE_FAMILIES) == 2.0
    assert f["similarity"] == 0.3 and f["names_own"] == 1.0 and f["log_terms"] == math.log1p(len(analyze("drivers from other states")))


def test_the_chance_is_the_logistic_of_the_weighted_features() -> None:
    model = ShiftModel(weights={"similarity": -4.0, "names_own": 1.0}, intercept=0.5, threshold=0.5)
    assert model.chance({"similarity": 0.0, "names_own": 1.0}) == 1 / (1 + math.exp(-1.5))
    assert model.chance({"similarity": 0.9, "names_own": 1.0}) < 0.5 < model.chance({"similarity": 0.1, "names_own": 1.0})
    assert model.chance({}) == 1 / (1 + math.exp(-0.5))  # a feature not given weighs nothing


def test_under_the_threshold_a_form_loses_weight_linearly_over_the_ramp() -> None:
    model = ShiftModel(weights={}, intercept=0.0, threshold=0.7, ramp=0.4, replace_below=0.1, hedge_weight=4.0)
    assert model.form_weight(0.2, 1.0) == 1.0  # under the ramp: the full weight
    assert model.form_weight(0.5, 1.0) == pytest.approx(0.5) and model.form_weight(0.5, 4.0) == pytest.approx(2.0)
    assert model.form_weight(0.7, 1.0) == model.form_weight(0.9, 1.0) == 0.0  # a new subject: the message alone
    assert model.form_weight(0.69, 1.0) == 0.0  # 0.025: under MIN_FORM_WEIGHT, not worth a search
    assert model.form_weight(0.69, 4.0) == pytest.approx(0.1) and MIN_FORM_WEIGHT <= 0.1
    assert model.replaces(0.05) and not model.replaces(0.1) and not model.replaces(0.5)


def test_without_a_hedge_the_model_is_a_threshold() -> None:
    model = ShiftModel(weights={}, intercept=0.0, threshold=0.6)  # the defaults: no ramp, a pointer always replaces
    assert model.form_weight(0.59, 0.5) == 0.5 and model.form_weight(0.6, 0.5) == 0.0
    assert model.replaces(0.59) and not model.replaces(0.6)


def test_the_packaged_hedge_is_a_policy_chosen_on_train_and_val() -> None:
    model = shift_model()
    assert 0.0 <= model.replace_below <= model.threshold and model.ramp < model.threshold and model.hedge_weight > 0
    assert "95% bound" in str(model.provenance["policy"])


def test_searched_says_how_the_message_and_its_form_are_searched_at_a_chance() -> None:
    model = ShiftModel(weights={}, intercept=0.0, threshold=0.7, ramp=0.4, replace_below=0.1, hedge_weight=4.0)
    assert model.searched(None, pointer=True, base=0.5) == Searched("instead")  # the check off: a pointer replaces
    assert model.searched(None, pointer=False, base=0.5) == Searched("beside", 0.5)
    assert model.searched(0.05, pointer=True, base=0.5) == Searched("instead")
    assert model.searched(0.2, pointer=True, base=0.5) == Searched("leads", 0.25)  # the message beside at 1 / 4
    assert model.searched(0.5, pointer=True, base=0.5).weight == pytest.approx(0.5)  # 1 / (4 x 0.5)
    assert model.searched(0.5, pointer=False, base=0.5) == Searched("beside", pytest.approx(0.25))
    assert model.searched(0.69, pointer=False, base=0.5).how == model.searched(0.8, pointer=True, base=0.5).how == "as_typed"

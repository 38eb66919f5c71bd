"""The topic-shift check: the packaged model, and the chance it gives."""

from __future__ import annotations

import math

from querywise.text import analyze
from querywise.understand.followup.shift import CUE_FAMILIES, ShiftModel, shift_features, shift_model


def test_the_packaged_model_reads_exactly_the_features_the_pipeline_computes() -> None:
    model = shift_model()
    names = set(shift_features("pointer", (), similarity=0.0, names_own=False, message=""))
    assert set(model.weights) == names  # a renamed feature would otherwise weigh nothing, silently
    assert 0.0 < model.threshold < 1.0
    assert "bench.topic_shift" in str(model.provenance["command"]) and "train" in str(model.provenance["train"])


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

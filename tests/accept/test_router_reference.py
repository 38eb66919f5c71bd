"""Issue 3: the reference router (centroids of 6 examples a route, identifier rule first)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from querywise.config import IdentifierRule, RouteSpec, RoutingSettings
from querywise.understand.routing.route import Router, load_examples


def _router(reference: dict[str, Any], embedder: Any, *, min_margin: float, rules: bool = True) -> Router:
    pattern = reference["identifier_pattern"].split(" (")[0]  # "(case-insensitive)" is a note
    routing = RoutingSettings(
        routes=[RouteSpec(name=name, examples=examples) for name, examples in reference["route_examples"].items()]
        + [RouteSpec(name="exact_lookup")],
        rules=[IdentifierRule(pattern=pattern, route="exact_lookup")] if rules else [],
        classifier="centroid",
        min_margin=min_margin,
    )
    return Router(routing, load_examples(routing), embedder)


def _margins(note: str, kind: str) -> dict[str, float]:
    """Messages and margins listed after `kind:` in the reference's route notes."""
    section = note.split(f"{kind}:")[1].split(". ")[0]
    return {m: float(v) for m, v in re.findall(r"'(.+?)'(?: -> \w+)? \((?:margin )?([\d.]+)\)", section)}


def test_margin_005_right_wrong_deferred(reference: dict[str, Any], embedder: Any) -> None:
    router = _router(reference, embedder, min_margin=0.05)
    expected = reference["expected"]["route"]["min_margin_0.05"]
    note = reference["expected"]["route_notes"]
    right, wrong, deferred = 0, {}, {}
    for row in reference["route_held_out"]:
        d = router.route(row["message"])
        if d.deferred:
            deferred[row["message"]] = round(d.margin or 0, 3)
        elif d.route == row["route"]:
            right += 1
        else:
            wrong[row["message"]] = round(d.margin or 0, 3)
    assert (right, len(wrong), len(deferred)) == (expected["right"], expected["wrong"], expected["sent_to_llm"])
    assert wrong == _margins(note, "Wrong")
    assert deferred == _margins(note, "Sent to LLM")


def test_margin_0_gets_8_of_12(reference: dict[str, Any], embedder: Any) -> None:
    router = _router(reference, embedder, min_margin=0.0)
    right = sum(router.route(r["message"]).route == r["route"] for r in reference["route_held_out"])
    assert right == reference["expected"]["route"]["min_margin_0.0"]["right"] == 8


def test_the_identifier_rule_is_case_insensitive(reference: dict[str, Any], embedder: Any) -> None:
    d = _router(reference, embedder, min_margin=0.05).route("is xk-4471 in stock")
    assert (d.route, d.source) == ("exact_lookup", "rule")
    without = _router(reference, embedder, min_margin=0.05, rules=False).route("is xk-4471 in stock")
    assert without.route == "account" and round(without.margin or 0, 3) == 0.197


@pytest.mark.parametrize(
    ("message", "max_sim"),
    [("what's the capital of Peru", 0.088), ("thanks, that's all", 0.274),
     ("can I still add CarePlus to my purchase", 0.241), ("does the aero x2 fold flat", 0.254)],
)
def test_out_of_scope_signal_is_the_max_similarity_to_the_examples(reference: dict[str, Any], embedder: Any, message: str, max_sim: float) -> None:
    router = _router(reference, embedder, min_margin=0.05)
    assert f"{max_sim}" in reference["expected"]["route_notes"]
    assert round(router.route(message).in_scope or 0, 3) == max_sim
    vector = np.asarray(embedder.embed([message])[0])
    assert round(float(router.classifier.in_scope(vector.reshape(1, -1))[0]), 3) == max_sim  # type: ignore[union-attr]

"""Issue #34 item 4 on the reference help centre (its catalog and chunks, the default moves): the
seed's two-product exercises -- two candidates covered or asked about, never one picked; "Which
one ...?" a comparison naming both; "And the Pro?" the previous question about the Pro."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from querywise.config import AmbiguitySettings, DeploymentSettings, RouteSpec, RoutingSettings, Settings
from querywise.index import Index
from querywise.plan import Ask, Cover
from querywise.service import QueryWise

COMPARE = ["Compare the Aero X2 and the Pulse Buds."]
BOTH = ["Aero X2", "Pulse Buds"]


def _settings(reference: dict[str, Any], catalog: Path, **ambiguity: float) -> Settings:
    routes = [RouteSpec(name=name, examples=examples, search=name == "kb_search") for name, examples in reference["route_examples"].items()]
    return Settings(routing=RoutingSettings(routes=routes, classifier="centroid", min_margin=0.05, default_route="kb_search"),
                    deployment=DeploymentSettings(catalog=catalog), ambiguity=AmbiguitySettings(**ambiguity))


@pytest.fixture(scope="module")
def default(reference: dict[str, Any], reference_index: Index, reference_catalog: Path) -> Any:
    with QueryWise(_settings(reference, reference_catalog), reference_index) as qw:
        yield qw


def test_a_pointer_with_two_candidates_covers_both_and_finds_both(default: QueryWise) -> None:
    result = default.ask("does it cover water damage?", history=COMPARE, k=5)
    assert result.plan.action == Cover(readings=BOTH)
    searched = [q.text for q in result.plan.queries if q.kind == "standalone"]
    assert len(searched) == 2 and all(any(name in text for text in searched) for name in BOTH)
    step = result.plan.step("follow_up")
    assert step is not None and step.details["candidates"] == BOTH


def test_the_ask_policy_offers_each_reading(reference: dict[str, Any], reference_index: Index, reference_catalog: Path) -> None:
    with QueryWise(_settings(reference, reference_catalog, cost_ask=3.0), reference_index) as qw:
        plan = qw.plan("does it cover water damage?", history=COMPARE)
    assert isinstance(plan.action, Ask)
    assert plan.action.options == ["does the Aero X2 cover water damage?", "does the Pulse Buds cover water damage?"]


def test_which_one_searches_a_comparison_naming_both(default: QueryWise) -> None:
    result = default.ask("Which one charges faster?", history=COMPARE, k=5)
    compared = [q.text for q in result.plan.queries if q.kind == "standalone"]
    assert len(compared) == 1 and all(name in compared[0] for name in BOTH)
    assert {"aero-battery", "buds-battery"} <= {h.id for h in result.hits}


def test_and_the_pro_asks_the_warranty_question_of_the_pro(default: QueryWise) -> None:
    result = default.ask("And the Pro?", history=["What's the warranty on the Aero X2?"], k=5)
    assert result.plan.queries[0].text == "What's the warranty on the Aero X2 Pro?"
    assert result.hits[0].id == "aero-pro-warranty"

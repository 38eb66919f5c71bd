"""Issue 33: the reference help centre as a default deployment (its catalog, its router, the
default moves, exact lookup included) asks its eight hand-written standalone rewrites as plain
search ranks them: a standalone message is passed through, and no move pushes its chunk down."""

from __future__ import annotations

import json
from typing import Any

import pytest

from querywise.config import DeploymentSettings, RouteSpec, RoutingSettings, Settings
from querywise.index import Index
from querywise.service import QueryWise


@pytest.fixture(scope="module")
def deployment(reference: dict[str, Any], reference_index: Index, tmp_path_factory: pytest.TempPathFactory) -> Any:
    catalog = tmp_path_factory.mktemp("catalog") / "catalog.jsonl"
    catalog.write_text("".join(json.dumps({**e, "id": str(e["id"])}) + "\n" for e in reference["catalog"]), encoding="utf-8")
    routes = [RouteSpec(name=name, examples=examples, search=name == "kb_search") for name, examples in reference["route_examples"].items()]
    settings = Settings(routing=RoutingSettings(routes=routes, classifier="centroid", min_margin=0.05, default_route="kb_search"),
                        deployment=DeploymentSettings(catalog=catalog))
    with QueryWise(settings, reference_index) as qw:
        yield qw


def _rank(ids: list[str], gold: str) -> int | None:
    return ids.index(gold) + 1 if gold in ids else None


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_the_rewrites_rank_through_ask_as_plain_search(reference: dict[str, Any], deployment: QueryWise, mode: str) -> None:
    n = len(deployment.index)  # type: ignore[arg-type]
    asked = [_rank([h.id for h in deployment.ask(f["standalone"], k=n, mode=mode).hits], f["relevant"]) for f in reference["follow_ups"]]  # type: ignore[arg-type]
    searched = [_rank([h.id for h in deployment.search(f["standalone"], k=n, mode=mode)], f["relevant"]) for f in reference["follow_ups"]]  # type: ignore[arg-type]
    assert asked == searched
    if mode == "dense":
        assert searched == reference["expected"]["follow_up_ranks"]["standalone rewrite"]


def test_no_model_name_is_taken_for_a_part_number(reference: dict[str, Any], deployment: QueryWise) -> None:
    for f in reference["follow_ups"]:
        plan = deployment.plan(f["standalone"])
        assert not [q for q in plan.queries if q.kind == "exact"], plan.queries
        assert plan.action.type != "ask" or "part number" not in plan.action.question  # type: ignore[union-attr]

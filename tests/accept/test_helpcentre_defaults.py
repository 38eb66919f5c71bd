"""Issue 33: the reference help centre as a default deployment (its catalog, its router, the
default moves, exact lookup included) asks its eight hand-written standalone rewrites as plain
search ranks them: a standalone message is passed through, and no move pushes its chunk down."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from querywise.config import DeploymentSettings, RouteSpec, RoutingSettings, Settings
from querywise.index import Index
from querywise.service import QueryWise


@pytest.fixture(scope="module")
def deployment(reference: dict[str, Any], reference_index: Index, reference_catalog: Path) -> Any:
    routes = [RouteSpec(name=name, examples=examples, search=name == "kb_search") for name, examples in reference["route_examples"].items()]
    settings = Settings(routing=RoutingSettings(routes=routes, classifier="centroid", min_margin=0.05, default_route="kb_search"),
                        deployment=DeploymentSettings(catalog=reference_catalog))
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


def test_the_typo_rows_through_the_index_bm25_and_the_default_moves(reference: dict[str, Any], deployment: QueryWise) -> None:
    """The reference's BM25 column is rank_bm25 over plain tokens (tests/accept/test_helpcentre_retrieval.py
    reproduces it); the index's BM25 stems and drops stop words, so its ranks are its own, pinned here."""
    index = deployment.index
    assert index is not None
    n = len(index)
    rows = reference["expected"]["typo_ranks_bm25_dense"]["rows"]
    bm25 = [_rank([h.id for h in index.search(query, mode="bm25", k=n)], gold) for query, gold, _, _ in rows]
    assert bm25 == [5, 2, 1, 1, 3, 2]  # reference (plain tokens): [3, 1, 1, 1, 2, 1]
    words = {w for text in reference["chunks"].values() for w in re.findall(r"[a-z0-9]+", text.lower())}
    for (typo, gold, _, _), (correct, same, _, _) in zip(rows[::2], rows[1::2], strict=True):
        unknown, other = (set(re.findall(r"[a-z0-9]+", q.lower())) - words for q in (typo, correct))
        assert gold == same and unknown - other and not other - unknown  # rows come as (misspelled, spelled right)
        asked = _rank([h.id for h in deployment.ask(typo, k=n, mode="hybrid").hits], gold)
        assert asked == _rank([h.id for h in deployment.ask(correct, k=n, mode="hybrid").hits], gold), typo  # the spelling move closes the gap

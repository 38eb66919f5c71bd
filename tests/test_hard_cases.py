"""The plan's hard cases (exact lookups, filters on a mixed corpus, ...) through the front door,
on the demo shop: the plan a user sees, and what it retrieves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from querywise import PlanResult, QueryWise, build_index, load_settings
from querywise.conditions import describe
from querywise.demo import demo_corpus, demo_file

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def qw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueryWise]:
    settings = load_settings(demo_file("querywise.toml"))
    settings = settings.model_copy(update={"cache_dir": tmp_path_factory.mktemp("cache")})
    with build_index(demo_corpus(), Path(tmp_path_factory.mktemp("demo")) / "ix", settings=settings) as index, QueryWise(settings, index) as q:
        yield q


def ask(qw: QueryWise, message: str, market: str = "eu") -> PlanResult:
    return qw.ask(message, session={"market": market}, k=10)


def ids(result: PlanResult, n: int = 10) -> list[str]:
    return [h.id for h in result.hits[:n]]


@pytest.mark.parametrize("typed", ["WS4402 price", "ws-4402 price", "WS 4402 price"])
def test_an_identifier_is_one_part_however_it_is_typed(qw: QueryWise, typed: str) -> None:
    result = ask(qw, typed)
    assert result.plan.route == "exact_lookup" and result.plan.action.type == "answer"  # no "not a part number we know"
    exact = [q for q in result.plan.queries if q.kind == "exact"]
    assert [q.text for q in exact] == ["WS-4402"]
    step = result.plan.step("execute")
    assert step is not None and step.details["exact"]["WS-4402"][:2] == ["tide-4-straps", "product:tide-sport-strap-20"]
    assert ids(result, 2) == ["tide-4-straps", "product:tide-sport-strap-20"]  # the chunks that hold the part, first


def test_exact_lookup_finds_the_chunk_that_holds_the_part(qw: QueryWise) -> None:
    result = ask(qw, "is et-2280 in stock")
    assert ids(result, 1) == ["reed-2-sport-swim-tips"]  # not price-match-conditions
    lookup = result.plan.step("exact_lookup")
    assert lookup is not None and lookup.status == "ran" and lookup.details["identifiers"] == {"et-2280": "ET-2280"}


def test_an_identifier_the_index_lacks_is_offered_its_near_misses(qw: QueryWise) -> None:
    result = ask(qw, "WS-4403 price")
    assert result.plan.action.type == "ask"
    assert [q.kind for q in result.plan.queries if q.kind == "exact"] == []


def test_a_typo_does_not_change_the_route_and_the_message_is_still_searched(qw: QueryWise) -> None:
    result = ask(qw, "how do i do a firmwear update on my Solace 7 Pro")
    assert result.plan.route == "kb_search"
    assert [q.kind for q in result.plan.queries] == ["original", "spelling"]
    route = result.plan.step("route")
    assert route is not None and "firmware" in route.reason  # routed on the corrected copy, and says so
    assert "solace-7-pro-firmware" in ids(result, 3)


def test_a_filter_on_a_mixed_corpus_judges_help_articles_by_their_products(qw: QueryWise) -> None:
    result = ask(qw, "smartwatch under $300 released after 2024 that I can swim with", market="us")
    said = [describe(c) for c in result.plan.filters.conditions]
    assert "price_usd < 300 (without price_usd: products naming a catalog entry that meets it, or neither field)" in said
    assert {"stride-overview", "tide-4-lite-water"} <= set(ids(result, 5))  # help articles, which carry no price
    step = result.plan.step("filters")
    assert step is not None and "catalog entries" in step.details["without_field"]["price_usd"]
    # and every hit meets the filters as the engine ran them
    assert all(result.plan.filters.matches(h.payload) for h in result.hits)

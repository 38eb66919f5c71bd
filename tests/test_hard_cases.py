"""The plan's hard cases (exact lookups, filters on a mixed corpus, ...) through the front door,
on the demo shop: the plan a user sees, and what it retrieves."""

from __future__ import annotations

import pytest

from querywise import PlanResult, QueryWise, load_settings
from querywise.conditions import describe
from querywise.demo import demo_file

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def qw(demo_deployment: QueryWise) -> QueryWise:
    return demo_deployment


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


def test_a_price_field_in_cents_gets_the_stated_price_in_cents() -> None:
    settings = load_settings(demo_file("querywise.toml"))
    fields = dict(settings.filters.fields)
    fields["price_usd"] = fields["price_usd"].model_copy(update={"unit": "usd_cents", "max": 1_000_000})
    settings = settings.model_copy(update={"filters": settings.filters.model_copy(update={"fields": fields})})
    with QueryWise(settings) as q:
        plan = q.plan("headphones under $200", session={"market": "eu"})
    assert [describe(c).split(" (without")[0] for c in plan.filters.conditions] == ["category = headphones", "price_usd < 20000"]
    step = plan.step("filters")
    assert step is not None and "200 usd = 20000 usd_cents" in step.reason


def test_an_unconvertible_amount_is_shown_dropped_by_plan() -> None:
    from typer.testing import CliRunner

    from querywise.cli import app

    result = CliRunner().invoke(app, ["plan", "headphones under 200 yen", "--config", str(demo_file("querywise.toml")), "--session", "market=eu"])
    assert result.exit_code == 0, result.output
    assert "dropped price_usd 'under 200 yen': cannot convert jpy to usd: no rate in the table" in " ".join(result.output.split())


def test_like_x_but_cheaper_searches_x_s_description_without_x_below_its_price(qw: QueryWise) -> None:
    result = ask(qw, "Headphones like the Solace 7 Pro but cheaper")
    kinds = {q.kind: q.text for q in result.plan.queries}
    assert kinds["semantic"] == "Headphones" and kinds["similar"].startswith("Flagship over-ear noise cancelling headphones")
    said = [describe(c).split(" (without")[0] for c in result.plan.filters.conditions]
    assert said == ["category = headphones", "price_usd < 349", "products not in (Halden Solace 7 Pro, halden-solace-7-pro)"]
    step = result.plan.step("filters")
    assert step is not None and "Halden Solace 7 Pro's catalog price_usd 349" in step.reason  # which catalog value
    top = ids(result, 4)
    assert "product:halden-solace-7-pro" not in ids(result) and top[0].startswith("product:halden-")
    assert all(h.payload.get("price_usd", 0) < 349 for h in result.hits)


def test_a_group_is_compared_member_by_member_of_the_kind_asked(qw: QueryWise) -> None:
    result = ask(qw, "headphones like the Halden ones but cheaper")
    price = [describe(c).split(" (without")[0] for c in result.plan.filters.conditions if c.field == "price_usd"]
    assert price == ["price_usd < 119"]  # the cheapest Halden headphones, not its $12 ear tips


def test_someone_else_s_account_fails_closed_whatever_the_route() -> None:
    settings = load_settings(demo_file("querywise.toml"))
    access = settings.access.model_copy(update={"fields": {**settings.access.fields, "customer": "customer_id"}, "optional": ["customer"], "account": "customer"})
    settings = settings.model_copy(update={"access": access})
    with QueryWise(settings) as q:
        husband = q.plan("show me the order history for customer 88123, I'm her husband", session={"market": "eu", "customer": "40001"})
        other_id = q.plan("show me the order history for customer 88123", session={"market": "eu", "customer": "40001"})
        own = q.plan("show me the order history for customer 40001", session={"market": "eu", "customer": "40001"})
        wife = q.plan("does my wife's order include the Solace 7 Pro warranty?", session={"market": "eu"})  # a search route
        second = q.plan("how long is the warranty on the Solace 7, and show me my wife's orders", session={"market": "eu"})
    for plan in (husband, other_id, wife, second):
        assert plan.action.type == "ask" and plan.queries == []
        step = plan.step("third_party")
        assert step is not None and step.status == "ran"
    assert other_id.step("third_party").details["rule"] == "another account id"  # type: ignore[union-attr]
    assert own.step("third_party") is None


def test_ordinary_questions_naming_a_relative_are_answered(qw: QueryWise) -> None:
    result = ask(qw, "can I buy a gift card for my wife?")
    assert result.plan.action.type == "answer" and result.plan.step("third_party") is None


def test_two_asks_for_two_routes_serve_the_first_and_name_the_other(qw: QueryWise) -> None:
    result = ask(qw, "Compare the Solace 7 and the Solace 7 Pro, and cancel my order")
    plan = result.plan
    assert plan.route == "kb_search" and [q.text for q in plan.queries] == ["Compare the Solace 7 and the Solace 7 Pro"]
    assert [(x.text, x.route) for x in plan.left] == [("cancel my order", "account")]
    assert {"product:halden-solace-7", "product:halden-solace-7-pro"} & set(ids(result, 5))
    step = plan.step("several_intents")
    assert step is not None and "left for a follow-up" in (step.changed or "")


def test_asks_for_one_route_stay_one_message(qw: QueryWise) -> None:
    plan = ask(qw, "how long is the warranty on the Solace 7, and can I extend it").plan
    assert plan.left == [] and plan.step("several_intents") is None


def test_where_users_have_no_accounts_a_relative_s_data_is_an_ordinary_question() -> None:
    from querywise import Settings

    with QueryWise(Settings()) as q:  # no [access] account, no high-stakes route
        plan = q.plan("how do I get a copy of my husband's benefit records?")
    assert plan.step("third_party") is None and plan.queries

"""Ambiguity: linking on the demo catalog (shared aliases S7, Tide, Reed, Knoll), the cost
decision, the wording of the action, and failing closed on high-stakes routes."""

from __future__ import annotations

from pathlib import Path

import pytest

import querywise.demo
from querywise.catalog import Catalog, Entity, Mention
from querywise.config import load_settings
from querywise.plan import Answer, Ask, Assume, Cover
from querywise.understand.ambiguity import (
    HISTORY_MASS,
    Costs,
    Decision,
    Reading,
    build_action,
    cover_possible,
    decide,
    disambiguate,
    link_mentions,
)

DEMO = Path(querywise.demo.__file__).parent


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    settings = load_settings(DEMO / "querywise.toml")
    assert settings.deployment.catalog is not None
    return Catalog.load(settings.deployment.catalog)


def names(readings: tuple[Reading, ...]) -> list[tuple[str, float]]:
    return [(r.name, round(r.probability, 3)) for r in readings]


# --- decide -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p_top", "cost_wrong", "cover", "choice", "costs"),
    [
        (0.95, 30, True, "assume", {"assume": 1.5, "ask": 8.0, "cover": 5.0}),  # 0.05 x 30
        (0.7, 30, True, "cover", {"assume": 9.0, "ask": 8.0, "cover": 5.0}),  # 0.3 x 30
        (0.7, 30, False, "ask", {"assume": 9.0, "ask": 8.0}),
        (0.7, 300, False, "ask", {"assume": 90.0, "ask": 8.0}),
        (0.99, 300, False, "assume", {"assume": 3.0, "ask": 8.0}),
        (0.5, 8, False, "assume", {"assume": 4.0, "ask": 8.0}),
    ],
)
def test_decide_picks_the_least_expected_cost(p_top: float, cost_wrong: float, cover: bool, choice: str, costs: dict[str, float]) -> None:
    d = decide(p_top, cost_wrong=cost_wrong, cost_ask=8, cost_cover=5, cover_possible=cover)
    assert (d.choice, d.costs) == (choice, costs)


def test_ties_go_to_the_option_that_cannot_be_wrong() -> None:
    # assume 0.25 x 20 = 5 = cover
    assert decide(0.75, cost_wrong=20, cost_ask=8, cost_cover=5, cover_possible=True).choice == "cover"
    # assume 0.4 x 20 = 8 = ask
    assert decide(0.6, cost_wrong=20, cost_ask=8, cost_cover=5, cover_possible=False).choice == "ask"
    # ask 5 = cover 5
    assert decide(0.0, cost_wrong=20, cost_ask=5, cost_cover=5, cover_possible=True).choice == "cover"


def test_a_single_reading_is_answered() -> None:
    assert decide(1.0, cost_wrong=300, cost_ask=8, cost_cover=5, cover_possible=True).choice == "answer"


@pytest.mark.parametrize("p_top", [-0.1, 1.5])
def test_decide_rejects_a_non_probability(p_top: float) -> None:
    with pytest.raises(ValueError, match="probability"):
        decide(p_top, cost_wrong=30, cost_ask=8, cost_cover=5, cover_possible=True)


def test_decide_rejects_negative_costs() -> None:
    with pytest.raises(ValueError, match="negative"):
        decide(0.5, cost_wrong=30, cost_ask=-1, cost_cover=5, cover_possible=True)


# --- linking ------------------------------------------------------------------------------------


def test_s7_without_history_is_an_even_split(catalog: Catalog) -> None:
    (m,) = link_mentions("how long is the warranty on the S7?", [], catalog)
    assert m.text == "S7" and not m.partial and m.answers_differ
    assert names(m.readings) == [("Halden Solace 7", 0.5), ("Halden Solace 7 Pro", 0.5)]


def test_s7_after_the_history_named_the_pro_leans_to_the_pro(catalog: Catalog) -> None:
    history = ["How long is the warranty on the Solace 7 Pro?", "does it fold?"]
    (m,) = link_mentions("what is the battery life of the S7?", history, catalog)
    assert names(m.readings) == [("Halden Solace 7 Pro", HISTORY_MASS), ("Halden Solace 7", round(1 - HISTORY_MASS, 3))]
    assert m.top.reason == "named earlier in the conversation"


def test_the_more_recent_turn_weighs_more_when_both_were_named(catalog: Catalog) -> None:
    history = ["warranty on the Solace 7?", "and on the Solace 7 Pro?"]
    (m,) = link_mentions("is the S7 foldable?", history, catalog)
    assert names(m.readings) == [("Halden Solace 7 Pro", 0.667), ("Halden Solace 7", 0.333)]


def test_an_ambiguous_history_mention_is_no_evidence(catalog: Catalog) -> None:
    (m,) = link_mentions("battery of the Tide?", ["is the Tide waterproof?"], catalog)
    assert names(m.readings) == [("Corra Tide 4", 0.5), ("Corra Tide 4 Pro", 0.5)]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("how many days does the Tide last on a charge?", {"Corra Tide 4", "Corra Tide 4 Pro"}),
        ("can I swim with the Reed?", {"Halden Reed 2", "Halden Reed 2 Sport"}),
        ("how long does the Knoll play?", {"Bramble Knoll", "Bramble Knoll Max"}),
    ],
)
def test_the_demo_shared_aliases_are_ambiguous(catalog: Catalog, message: str, expected: set[str]) -> None:
    (m,) = link_mentions(message, [], catalog)
    assert m.ambiguous and {r.name for r in m.readings} == expected
    assert sum(r.probability for r in m.readings) == pytest.approx(1.0)


def test_a_partial_mention_links_to_names_containing_it() -> None:
    cat = Catalog([Entity("x3", "Vela X3"), Entity("x3p", "Vela X3 Pro"), Entity("buds", "Pico Buds")])
    (m,) = link_mentions("what is the warranty on the X3?", [], cat)
    assert m.partial and (m.start, m.end) == (28, 30)
    # The prior: each word of the name left unsaid halves the weight (Vela | Vela, Pro).
    assert names(m.readings) == [("Vela X3", 0.667), ("Vela X3 Pro", 0.333)]
    (pro,) = link_mentions("is the x3 pro waterproof", [], cat)
    assert [r.name for r in pro.readings] == ["Vela X3 Pro"] and not pro.ambiguous


def test_a_partial_family_name_links_every_member(catalog: Catalog) -> None:
    (m,) = link_mentions("does the Solace have noise cancelling?", [], catalog)
    assert m.partial and len(m.readings) > 3
    assert {"Halden Solace 7", "Halden Solace 7 Pro", "Halden Solace 7 Lite", "Halden Solace 5"} <= {r.name for r in m.readings}


@pytest.mark.parametrize(
    "message",
    [
        "do Halden headphones have a warranty?",  # a brand is not a product mention
        "where is my order 40128833 with 7 items?",  # bare numbers name nothing
        "is the pro version worth it?",  # a variant word alone names nothing
        "what is the return window for opened earbuds?",
    ],
)
def test_words_that_name_nothing_are_not_mentions(catalog: Catalog, message: str) -> None:
    assert link_mentions(message, [], catalog) == []


def test_answers_differ_only_when_the_asked_field_differs(catalog: Catalog) -> None:
    (brand,) = link_mentions("what brand is the S7?", [], catalog)
    assert not brand.answers_differ and brand.differing_fields == ()
    (price,) = link_mentions("how much is the S7?", [], catalog)
    assert price.answers_differ and price.differing_fields == ("price_usd",)
    # Warranty is not a catalog field: different products, so the answers may differ.
    (warranty,) = link_mentions("warranty on the S7?", [], catalog)
    assert warranty.answers_differ and warranty.differing_fields == ()


def test_field_words_from_the_deployment_count_as_asking(catalog: Catalog) -> None:
    (m,) = link_mentions("how many bucks for the S7?", [], catalog, field_words={"price_usd": ["bucks"]})
    assert m.differing_fields == ("price_usd",)


# --- actions ------------------------------------------------------------------------------------


def test_cover_is_impossible_for_many_readings_or_long_answers(catalog: Catalog) -> None:
    (family,) = link_mentions("does the Solace have noise cancelling?", [], catalog)
    assert cover_possible(family, family.text) == (False, f"{len(family.readings)} readings: more than 3 to cover")
    (s7,) = link_mentions("how do I pair the S7 with my laptop?", [], catalog)
    ok, why = cover_possible(s7, "how do I pair the S7 with my laptop?")
    assert not ok and "procedure" in why
    (short,) = link_mentions("battery of the S7?", [], catalog)
    assert cover_possible(short, "battery of the S7?") == (True, "")


def test_ask_is_one_question_with_the_catalog_names(catalog: Catalog) -> None:
    (m,) = link_mentions("how do I reset the S7?", [], catalog)
    action = build_action(m.readings, Decision("ask", {}, ""))
    assert action == Ask(question="Which one do you mean: Solace 7 or Solace 7 Pro?", options=["Solace 7", "Solace 7 Pro"])


def test_three_options_are_listed_with_commas() -> None:
    cat = Catalog([Entity("a", "Vela X3"), Entity("b", "Vela X3 Pro"), Entity("c", "Vela X3 Lite")])
    (m,) = link_mentions("X3 battery", [], cat)
    action = build_action(m.readings, Decision("ask", {}, ""))
    assert isinstance(action, Ask) and action.question == "Which one do you mean: Vela X3, Vela X3 Pro or Vela X3 Lite?"


def test_assume_and_cover_wording(catalog: Catalog) -> None:
    (m,) = link_mentions("battery of the S7?", ["is the Solace 7 Pro foldable?"], catalog)
    assert build_action(m.readings, Decision("assume", {}, "")) == Assume(text="Assuming you mean the Solace 7 Pro.")
    assert build_action(m.readings, Decision("cover", {}, "")) == Cover(readings=["Solace 7 Pro", "Solace 7"])
    assert build_action(m.readings, Decision("answer", {}, "")) == Answer()


# --- the move -----------------------------------------------------------------------------------


def test_s7_question_without_history_covers_both(catalog: Catalog) -> None:
    d = disambiguate("how long is the warranty on the S7?", [], catalog, route="kb_search", high_stakes=["account"])
    assert d.action == Cover(readings=["Solace 7", "Solace 7 Pro"])
    assert d.decision is not None and d.decision.costs == {"assume": 15.0, "ask": 8.0, "cover": 5.0}


def test_s7_question_with_history_naming_the_pro_assumes_it(catalog: Catalog) -> None:
    history = ["Is the Solace 7 Pro good for flights?"]
    d = disambiguate("how long is the warranty on the S7?", history, catalog, route="kb_search", high_stakes=["account"])
    assert d.action == Assume(text="Assuming you mean the Solace 7 Pro.")
    assert d.decision is not None and d.decision.costs["assume"] == pytest.approx(3.0)
    step = d.trace_step()
    assert step.move == "ambiguity" and step.status == "ran"
    assert step.details["readings"] == [["Halden Solace 7 Pro", 0.9], ["Halden Solace 7", 0.1]]


def test_a_procedure_on_an_even_split_asks(catalog: Catalog) -> None:
    d = disambiguate("how do I pair the S7?", [], catalog, route="kb_search")
    assert isinstance(d.action, Ask) and d.action.options == ["Solace 7", "Solace 7 Pro"]


def test_high_stakes_routes_price_a_wrong_answer_higher(catalog: Catalog) -> None:
    history = ["Is the Solace 7 Pro good for flights?"]
    costs = Costs()
    low = disambiguate("how do I reset the S7?", history, catalog, route="kb_search", high_stakes=["account"], costs=costs)
    high = disambiguate("how do I reset the S7?", history, catalog, route="account", high_stakes=["account"], costs=costs)
    assert isinstance(low.action, Assume)  # 0.1 x 30 = 3 < 8
    assert isinstance(high.action, Ask)  # 0.1 x 300 = 30 > 8


def test_no_ambiguity_passes_through(catalog: Catalog) -> None:
    d = disambiguate("how long is the warranty on the Solace 7 Pro?", [], catalog, route="kb_search")
    assert d.action == Answer() and d.reason == "no ambiguous mention" and d.trace_step().status == "skipped"
    agree = disambiguate("what brand is the S7?", [], catalog, route="kb_search")
    assert agree.action == Answer() and "agree" in agree.reason


class BrokenCatalog(Catalog):
    """A catalog whose matcher fails, as a corrupt or half-loaded one would."""

    def mentions(self, text: str) -> list[Mention]:
        raise RuntimeError("matcher not built")


def test_errors_fail_closed_on_high_stakes_routes() -> None:
    broken = BrokenCatalog([Entity("a", "Vela X3")])
    d = disambiguate("cancel my X3 order", [], broken, route="account", high_stakes=["account"])
    assert isinstance(d.action, Ask) and d.failed
    assert "failed closed" in d.reason and "matcher not built" in d.reason
    assert d.trace_step().status == "fallback"


def test_errors_pass_through_on_other_routes() -> None:
    broken = BrokenCatalog([Entity("a", "Vela X3")])
    d = disambiguate("warranty on the X3", [], broken, route="kb_search", high_stakes=["account"])
    assert d.action == Answer() and d.failed and "passing through" in d.reason

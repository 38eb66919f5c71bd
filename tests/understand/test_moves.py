"""The moves as objects: one closed set of names, one loop that writes the skipped steps, and a
typed reason when nothing is searched (no embedding model: routes come from rules)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import pytest

from querywise.config import Move, Settings, SpellingSettings
from querywise.config.understanding import IdentifierRule, RouteSpec, RoutingSettings, UnderstandingSettings
from querywise.corpus import load_corpus
from querywise.demo import demo_file
from querywise.evaluation.ablation import plan_ablation
from querywise.execute import execute
from querywise.files import InputError
from querywise.index.analysis import analyse
from querywise.understand.draft import Have
from querywise.understand.pipeline import MOVES, Understander, unable

ROUTING = RoutingSettings(
    routes=[RouteSpec(name="kb", search=True), RouteSpec(name="account")],
    rules=[IdentifierRule(pattern=r"\bcancel my order\b", route="account")],
    default_route="kb",
)


def _understander(hash_embedder: Any, moves: list[str] | None = None) -> Understander:
    s = Settings(routing=ROUTING)
    if moves is not None:
        s = s.model_copy(update={"understanding": UnderstandingSettings(moves=moves)})  # type: ignore[arg-type]
    return Understander(s, embedder=hash_embedder)


def test_the_config_switches_moves_and_nothing_else() -> None:
    names = [m.name for m in MOVES]
    assert len(names) == len(set(names))
    assert set().union(*(m.switches for m in MOVES)) == set(get_args(Move))
    # llm_filters asks the plan call for filters and applies its answer: the only shared switch
    assert [m.name for m in MOVES if "llm_filters" in m.switches] == ["llm_plan", "llm_filters"]


def test_a_route_that_does_not_search_says_so_in_the_plan_and_execute_reads_it(hash_embedder: Any) -> None:
    plan = _understander(hash_embedder).plan("please cancel my order")
    assert plan.route == "account" and plan.queries == []
    assert plan.unsearched == "route account does not search"
    assert plan.trace[-1].move == "retrieve" and plan.trace[-1].reason == plan.unsearched
    # the moves after the stop leave no step
    assert not {"filters", "spelling", "exact_lookup", "ambiguity"} & {s.move for s in plan.trace}


def test_several_intents_is_a_move_off_means_off(hash_embedder: Any) -> None:
    message = "how long is the warranty on the Vela X3, and cancel my order"
    on = _understander(hash_embedder).plan(message)
    assert [(a.text, a.route) for a in on.left] == [("cancel my order", "account")]
    assert on.queries[0].text == "how long is the warranty on the Vela X3"
    off = _understander(hash_embedder, moves=[]).plan(message)
    assert off.left == [] and off.route == "account"  # the whole message, routed as a whole
    assert off.step("several_intents").reason == "turned off in [understanding] moves"  # type: ignore[union-attr]


def test_no_question_is_lost_when_the_first_ask_does_not_search(hash_embedder: Any) -> None:
    plan = _understander(hash_embedder).plan("cancel my order, and how long is the warranty on the Vela X3")
    assert plan.route == "kb" and plan.queries[0].text == "how long is the warranty on the Vela X3"
    assert [(a.text, a.route) for a in plan.left] == [("cancel my order", "account")]


def test_an_ask_that_leans_on_the_one_before_searches_the_whole_message_beside(hash_embedder: Any) -> None:
    message = "how long is the warranty on the Vela X3, and then cancel my order for it"
    plan = _understander(hash_embedder).plan(message)
    assert [(q.text, q.kind) for q in plan.queries] == [("how long is the warranty on the Vela X3", "original"), (message, "original")]
    step = plan.step("several_intents")
    assert step is not None and "points back at the ask before it" in (step.details["unsure"] or "")
    assert [a.route for a in plan.left] == ["account"]


def test_every_searchable_ask_is_searched(hash_embedder: Any) -> None:
    routing = ROUTING.model_copy(update={"rules": [*ROUTING.rules, IdentifierRule(pattern=r"\bshipping\b", route="shipping")],
                                         "routes": [*ROUTING.routes, RouteSpec(name="shipping", search=True)]})
    u = Understander(Settings(routing=routing), embedder=hash_embedder)
    plan = u.plan("how long is the warranty on the Vela X3, and what does shipping to Norway cost")
    assert [(q.text, q.kind) for q in plan.queries] == [("how long is the warranty on the Vela X3", "original"),
                                                        ("what does shipping to Norway cost", "part")]
    assert plan.left == []


def test_a_move_the_deployment_cannot_run_is_skipped_with_what_it_requires(hash_embedder: Any) -> None:
    plan = _understander(hash_embedder).plan("how long is the warranty on the Vela X3")  # no index: no vocabulary
    assert plan.step("spelling").reason == "no index vocabulary to correct against"  # type: ignore[union-attr]
    assert plan.step("ambiguity").reason == "no catalog configured"  # type: ignore[union-attr]
    assert plan.step("several_intents") is None  # one ask: nothing to say
    assert [q.text for q in plan.queries] == ["how long is the warranty on the Vela X3"]


def test_the_ablation_skips_what_the_moves_require(hash_embedder: Any) -> None:
    s = Settings(routing=ROUTING)
    plan = plan_ablation(s, ["ambiguity", "spelling", "hyde"])
    assert plan.skipped == {"ambiguity": "no catalog configured", "hyde": "not turned on in [understanding] moves"}
    assert [a.name for a in plan.arms] == ["baseline", "+spelling"]
    # a deployment without an index: the understander's own reasons
    u = _understander(hash_embedder)
    assert u.unable()["spelling"] == "no index vocabulary to correct against"
    assert unable(Have.of_settings(s)) == {"filters": "no filter schema configured", "ambiguity": "no catalog configured",
                                           **dict.fromkeys(("llm_rewrite", "llm_route", "llm_filters", "multi_query", "hyde", "query2doc", "step_back"),
                                                           "no [llm] provider configured")}
    assert "spelling" in plan_ablation(s, ["spelling"], unable=u.unable()).skipped


def test_execute_of_an_unsearched_plan_names_its_reason(hash_embedder: Any) -> None:
    plan = _understander(hash_embedder).plan("cancel my order")
    result = execute(plan, _NoRetriever())
    assert result.hits == [] and result.empty_because == ["route account does not search"]


class _NoRetriever:
    """A retriever that fails the test if asked anything."""

    name = "none"

    def search(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an unsearched plan searched")


def test_spelling_reads_the_query_log_the_settings_name(hash_embedder: Any, tmp_path: Path) -> None:
    lexicon = analyse([c.search_text for c in load_corpus(demo_file("helpcentre.jsonl"))]).lexicon
    log = tmp_path / "plans.jsonl"
    log.write_text("\n".join(json.dumps({"message": m}) for m in ["do you sell cases", "cases for the knoll", "leather cases"]) + "\n")

    def spelled(settings: Settings) -> list[str]:
        plan = Understander(settings, embedder=hash_embedder, lexicon=lexicon).plan("casse")
        return [q.text for q in plan.queries if q.kind == "spelling"]

    assert spelled(Settings()) == ["case"]  # the help centre's own counts
    assert spelled(Settings(spelling=SpellingSettings(query_log=log))) == ["cases"]  # what users type weighs in
    log.write_text('{"message": "cases"}\n{"text": "no message here"}\n')
    with pytest.raises(InputError, match=r"plans.jsonl:2: a query log line needs a \"message\" string"):
        Understander(Settings(spelling=SpellingSettings(query_log=log)), embedder=hash_embedder, lexicon=lexicon)

"""The LLM tier inside the pipeline: gating, the one plan call, the unsure-route tier, clarify
and assume outcomes, enrichments next to the original, the single-turn cache and the overlap.

Scripted provider and the hashing embedder: fast, and every step is the real pipeline's.
"""

from __future__ import annotations

from typing import Any

import pytest

from querywise.config import (
    AccessSettings,
    IdentifierRule,
    LLMSettings,
    RouteSpec,
    RoutingSettings,
    Settings,
    UnderstandingSettings,
)
from querywise.llm.scripted import ScriptedProvider
from querywise.llm.structured import conversation_key
from querywise.understand.pipeline import Understander

ROUTES = [
    RouteSpec(name="kb_search", search=True, description="help-centre questions",
              examples=["how long is the warranty on the headphones", "what is the warranty", "does the warranty cover water damage",
                        "my headphones got wet am I covered", "how do I pair my headphones"]),
    RouteSpec(name="account", description="the user's own orders", examples=["where is my order", "cancel my order please", "refund my order"]),
]  # fmt: skip
LLM_MOVES = ["follow_up", "filters", "spelling", "ambiguity", "llm_rewrite", "llm_route"]
HISTORY = ["How long is the warranty on the Vela X3 headphones?"]


def make(embedder: Any, records: list[dict[str, Any]], *, moves: list[str] = LLM_MOVES, min_margin: float = 0.0, **llm: Any) -> tuple[Understander, ScriptedProvider]:
    provider = ScriptedProvider.from_records(records)
    s = Settings(
        routing=RoutingSettings(routes=ROUTES, min_margin=min_margin, rules=[IdentifierRule(pattern=r"\bQR-?\d{4}\b", route="kb_search")]),
        access=AccessSettings(fields={"market": "markets"}, optional=["market"]),  # these tests are not about access
        understanding=UnderstandingSettings(moves=moves),  # type: ignore[arg-type]
        llm=LLMSettings(**llm),
    )
    return Understander(s, embedder=embedder, provider=provider), provider


def plan_rec(message: str, history: list[str], output: dict[str, Any]) -> dict[str, Any]:
    return {"task": "plan", "input": conversation_key(message, history), "output": output}


def test_without_llm_moves_the_plan_is_unchanged(hash_embedder: Any) -> None:
    u, provider = make(hash_embedder, [], moves=["follow_up", "filters", "spelling", "ambiguity"])
    plan = u.plan("does it cover water damage?", history=HISTORY)
    assert [s.move for s in plan.trace] == ["follow_up", "several_intents", "route", "filters", "spelling", "exact_lookup", "ambiguity"]
    assert plan.queries[0].text == "does the warranty on the Vela X3 headphones cover water damage?"  # the referent, placed
    assert provider.calls == []


def test_follow_up_goes_to_the_one_call_and_its_rewrite_replaces_the_message(hash_embedder: Any) -> None:
    rewrite = "Does the warranty on the Vela X3 headphones cover water damage?"
    u, provider = make(hash_embedder, [plan_rec("does it cover water damage?", HISTORY, {"standalone": rewrite})])
    plan = u.plan("does it cover water damage?", history=HISTORY)
    assert [(q.text, q.kind) for q in plan.queries] == [(rewrite, "standalone")]
    step = plan.step("llm_plan")
    assert step is not None and step.status == "ran" and step.llm_calls == 1 and "standalone rewrite" in step.reason
    assert step.details["guard"] == "kept every term, invented none" and step.llm is not None and step.llm.cache == "never"
    assert len(provider.calls) == 1 and provider.calls[0].name == "plan"
    assert plan.step("route_standalone") is not None and plan.route == "kb_search"  # the classifier saw the rewrite
    # Conversational: asked again, it is called again (never cached).
    u.plan("does it cover water damage?", history=HISTORY)
    assert len(provider.calls) == 2


@pytest.mark.parametrize(
    ("message", "history", "why"),
    [
        ("how long is the warranty on the Vela X3 headphones?", [], "first turn without references"),
        ("is QR-5126 in stock?", HISTORY, "identifier lookup"),
        ("cancel my order please", [], "does not search"),
    ],
)
def test_gating_sends_nothing_to_the_llm(hash_embedder: Any, message: str, history: list[str], why: str) -> None:
    u, provider = make(hash_embedder, [])
    plan = u.plan(message, history=history)
    step = plan.step("llm_plan")
    assert step is not None and step.status == "skipped" and why in step.reason
    assert provider.calls == []
    report = u.tier.budget.report()
    assert report.requests == 1 and report.requests_with_llm == 0


def test_a_reference_resolved_deterministically_is_not_sent_when_the_llm_rewrite_is_off(hash_embedder: Any) -> None:
    u, provider = make(hash_embedder, [], moves=["follow_up", "filters", "llm_route"])
    plan = u.plan("does it cover water damage?", history=HISTORY)
    assert plan.step("llm_plan").status == "skipped" and provider.calls == []  # type: ignore[union-attr]
    assert plan.queries[0].kind == "standalone"  # previous turn + message


def test_unsure_route_goes_to_the_llm_tier(hash_embedder: Any) -> None:
    message = "what's the capital of Peru"
    u, _ = make(hash_embedder, [plan_rec(message, [], {"route": "account"})], min_margin=2.0)  # everything is unsure
    plan = u.plan(message)
    assert plan.step("route").routing.deferred and "sent to the LLM tier" in plan.step("route").reason  # type: ignore[union-attr]
    assert plan.route == "account" and plan.queries == []
    assert "route = account" in (plan.step("llm_plan").changed or "")  # type: ignore[union-attr]


@pytest.mark.parametrize("high_stakes", [["account"], []])
def test_an_unsure_message_that_could_be_high_stakes_fails_closed_and_searches_nothing(hash_embedder: Any, high_stakes: list[str]) -> None:
    """The policy is decided on the routes the message could have, not on the default that
    replaced the unsure one; a fail-closed plan asks and retrieves nothing."""
    u, provider = make(hash_embedder, [], min_margin=2.0)  # everything is unsure; the LLM answers nothing
    u = Understander(u.settings.model_copy(update={"routing": u.settings.routing.model_copy(update={"high_stakes": high_stakes})}),
                     embedder=hash_embedder, provider=provider)
    plan = u.plan("my headphones got wet, am I covered?")
    assert plan.route == "kb_search"  # the top route is the search one
    step = plan.step("llm_plan")
    assert step is not None and step.llm is not None and step.llm.fallback == "not_scripted"
    if high_stakes:
        assert step.llm.policy == "closed" and plan.action.type == "ask" and plan.queries == []
        assert plan.step("retrieve") is not None
    else:
        assert step.llm.policy == "open" and plan.action.type == "answer" and plan.queries[0].kind == "original"


def test_clarify_outcome_asks_and_assumption_is_stated(hash_embedder: Any) -> None:
    history = ["Compare the warranty on the Vela X3 and the Vela X3 Pro."]
    ask = {"standalone": None, "clarifying_question": "The Vela X3 or the Vela X3 Pro?", "options": ["Vela X3", "Vela X3 Pro"]}
    assume = {"standalone": "Does the Vela X3 warranty cover sweat?", "assumption": "Assuming you mean the Vela X3"}
    u, _ = make(hash_embedder, [plan_rec("does it cover rain?", history, ask), plan_rec("does it cover sweat?", history, assume)])
    asked = u.plan("does it cover rain?", history=history)
    assert asked.action.type == "ask" and asked.action.options == ["Vela X3", "Vela X3 Pro"]  # type: ignore[union-attr]
    assumed = u.plan("does it cover sweat?", history=history)
    assert assumed.action.type == "assume" and assumed.action.text == "Assuming you mean the Vela X3"  # type: ignore[union-attr]


def test_a_rejected_rewrite_falls_back_to_the_deterministic_path_and_is_counted(hash_embedder: Any) -> None:
    invented = "Does the warranty on the Vela X3 Pro headphones cover water damage?"
    u, _ = make(hash_embedder, [plan_rec("does it cover water damage?", HISTORY, {"standalone": invented})])
    plan = u.plan("does it cover water damage?", history=HISTORY)
    step = plan.step("llm_plan")
    assert step is not None and step.status == "fallback" and step.llm is not None and step.llm.fallback == "guard_rejected"
    assert "Vela X3 Pro" in step.reason and plan.queries[0].text == "does the warranty on the Vela X3 headphones cover water damage?"
    assert u.tier.budget.report().fallbacks == {"guard_rejected": 1}


def test_enrichments_are_searched_next_to_the_original_and_cached_single_turn(hash_embedder: Any) -> None:
    q = "my headphones got wet, am I covered?"
    records = [
        {"task": "multi_query", "input": q, "output": {"variants": ["headphone water damage warranty", "liquid damage coverage"]}},
        {"task": "hyde", "input": q, "output": {"passage": "Liquid damage is not covered by the standard warranty."}},
        {"task": "query2doc", "input": q, "output": {"passage": "Warranty terms: water exposure voids coverage."}},
        {"task": "step_back", "input": q, "output": {"question": "What does the headphone warranty cover?"}},
    ]
    u, provider = make(hash_embedder, records, moves=["follow_up", "filters", "multi_query", "hyde", "query2doc", "step_back"], n_variants=2)
    plan = u.plan(q)
    assert [(x.kind, x.mode) for x in plan.queries] == [("original", None), ("multi", None), ("multi", None), ("hyde", "dense"), ("query2doc", "bm25"), ("step_back", None)]
    assert plan.queries[0].text == q and plan.queries[4].text.startswith(q + " ")
    assert len(provider.calls) == 4
    again = u.plan(q)
    assert again.queries == plan.queries and len(provider.calls) == 4  # single-turn: served from the cache
    assert all(again.step(m).llm.cache == "hit" for m in ("multi_query", "hyde", "query2doc", "step_back"))  # type: ignore[union-attr]
    assert u.tier.budget.report().cache_hits == 4


def test_a_failed_enrichment_fails_open(hash_embedder: Any) -> None:
    u, _ = make(hash_embedder, [], moves=["follow_up", "hyde"])
    plan = u.plan("my headphones got wet, am I covered?")
    assert [q.kind for q in plan.queries] == ["original"]
    assert plan.step("hyde").status == "fallback" and plan.step("hyde").llm.fallback == "not_scripted"  # type: ignore[union-attr]


def test_llm_moves_without_a_provider_say_so_and_change_nothing(hash_embedder: Any) -> None:
    s = Settings(routing=RoutingSettings(routes=ROUTES, min_margin=0.0), understanding=UnderstandingSettings(moves=["follow_up", "llm_rewrite", "hyde"]))
    u = Understander(s, embedder=hash_embedder)
    assert u.tier is None
    plan = u.plan("does it cover water damage?", history=HISTORY)
    assert plan.step("llm_plan").reason == plan.step("hyde").reason == "no [llm] provider configured"  # type: ignore[union-attr]
    # the deterministic standalone form, with at most the message as typed beside it (the topic-shift hedge)
    assert plan.queries[0].kind == "standalone" and [q.text for q in plan.queries[1:]] in ([], ["does it cover water damage?"])

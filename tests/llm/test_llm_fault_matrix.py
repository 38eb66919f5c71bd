"""The fault matrix: every fault of the fake provider, through the real SDK clients and the real
pipeline, on a fail-open route (kb_search) and a fail-closed route (account, high stakes).

No crash; the right fallback per route policy; every fallback counted once under its reason;
and no model output ever changes access.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from querywise.config import (
    AccessSettings,
    FilterField,
    FilterSettings,
    LLMSettings,
    RouteSpec,
    RoutingSettings,
    Settings,
    UnderstandingSettings,
)
from querywise.demo import demo_file
from querywise.llm.fake_server import FakeLLMServer, Reply
from querywise.understand.access import access_from_session
from querywise.understand.pipeline import Understander

KB = (["How long is the warranty on the Halden Solace 7?"], "does it cover water damage?")
ACCOUNT = (["Where is my order 55120?"], "can you cancel it?")
GOOD = {
    "kb_search": {"standalone": "Does the warranty on the Halden Solace 7 cover water damage?"},
    "account": {"standalone": "Can you cancel order 55120?"},
}
INVENTED = {
    "kb_search": {"standalone": "Does the warranty on the Halden Solace 7 Pro cover water damage?"},  # a product nobody named
    "account": {"standalone": "Can you cancel order 55121?"},  # a number nobody said
}
SESSION = {"market": "eu"}

# fault -> (reply for a route, the fallback reason it must be counted under, or None: no fallback)
MATRIX: dict[str, tuple[Callable[[str], Reply], str | None]] = {
    "timeout": (lambda r: Reply(output=GOOD[r], fault="timeout"), "timeout"),
    "429": (lambda r: Reply(fault="429"), "rate_limited"),
    "500": (lambda r: Reply(fault="500"), "server_error"),
    "malformed_json": (lambda r: Reply(output=GOOD[r], fault="malformed_json"), "malformed_json"),
    "refusal": (lambda r: Reply(fault="refusal"), "refusal"),
    "max_tokens": (lambda r: Reply(output=GOOD[r], fault="max_tokens"), "max_tokens"),
    "extra_fields": (lambda r: Reply(output={**GOOD[r], "confidence": 0.93}), "schema_violation"),
    "wrong_enum": (lambda r: Reply(output={**GOOD[r], "route": "billing"}), "schema_violation"),
    "invented_product": (lambda r: Reply(output=INVENTED[r]), "guard_rejected"),
    "smuggled_access": (lambda r: Reply(output={**GOOD[r], "filters": {"markets": "us"}}), None),
}


def settings() -> Settings:
    base = Settings()
    return base.model_copy(
        update={
            "deployment": base.deployment.model_copy(update={"catalog": demo_file("catalog.jsonl")}),
            "routing": RoutingSettings(
                routes=[
                    RouteSpec(name="kb_search", search=True, description="help-centre questions",
                              examples=["How long is the warranty on the headphones?", "does the warranty cover water damage", "how do I pair my headphones"]),
                    # A high-stakes route that searches (order-policy documents): it fails closed.
                    RouteSpec(name="account", search=True, description="the user's own orders",
                              examples=["where is my order", "can you cancel my order", "cancel order please", "I want a refund for my order"]),
                ],
                min_margin=0.0, high_stakes=["account"],
            ),
            "access": AccessSettings(fields={"market": "markets"}),
            "filters": FilterSettings(fields={"category": FilterField(type="enum", catalog_field="category")}),
            "understanding": UnderstandingSettings(moves=["follow_up", "filters", "spelling", "ambiguity", "llm_rewrite", "llm_route", "llm_filters"]),
            "llm": LLMSettings(timeouts={"kb_search": 0.3, "account": 0.3}, max_retries=0),
        }
    )


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_fault_matrix(kind: str, fake: FakeLLMServer, make_provider: Callable[..., Any], hash_embedder: Any) -> None:
    s = settings()
    u = Understander(s, embedder=hash_embedder, provider=make_provider(kind, max_retries=0))
    expected: Counter[str] = Counter()
    for route, (history, message) in (("kb_search", KB), ("account", ACCOUNT)):
        # The good answer first: the LLM is used, nothing falls back.
        fake.respond_with(Reply(output=GOOD[route]))
        plan = u.plan(message, history=history, session=SESSION)
        assert plan.route == route and plan.step("llm_plan").status == "ran"  # type: ignore[union-attr]
        assert plan.queries[0].text == GOOD[route]["standalone"] and plan.queries[0].kind == "standalone"
        deterministic = f"{history[-1]} {message}"
        for fault, (reply, reason) in MATRIX.items():
            fake.respond_with(reply(route))
            plan = u.plan(message, history=history, session=SESSION)  # never raises
            step = plan.step("llm_plan")
            assert step is not None, fault
            assert plan.access == access_from_session(SESSION, s.access), fault  # no output touches access
            if reason is None:  # the smuggled access filter is dropped by the validator, the rest is used
                assert step.status == "ran", fault
                assert any("markets" in d and "session" in d for d in step.details["dropped"]), step.details
                assert plan.queries[0].text == GOOD[route]["standalone"]
                continue
            expected[reason] += 1
            assert step.status == "fallback" and step.llm is not None and step.llm.fallback == reason, (fault, step)
            if route == "account":  # fail-closed: ask, never guess
                assert plan.action.type == "ask" and plan.action.question == s.llm.fail_closed_question, fault  # type: ignore[union-attr]
                assert step.llm is not None and step.llm.policy == "closed"
            else:  # fail-open: the deterministic plan (here: previous turn + message), answered
                assert plan.action.type == "answer", fault
                assert [q.text for q in plan.queries][:1] == [deterministic], fault
                assert step.llm is not None and step.llm.policy == "open"
    report = u.tier.budget.report()
    assert report.fallbacks == dict(expected)  # every fallback counted, once, under its reason
    assert report.dropped == {"access": 2}
    assert report.calls == 2 * (len(MATRIX) + 1)
    assert report.fallback_rate == pytest.approx(sum(expected.values()) / report.calls, abs=1e-6)
    assert report.warning is not None and "fallback rate" in report.warning
    u.close()

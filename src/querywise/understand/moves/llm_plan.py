"""The LLM tier's plan call: one structured call for the standalone rewrite, an unsure route and
the filters (`understand.llm_plan`), made only when the gate needs one; its answer passes the
rewrite guard and the filter validator, and a failure falls back by the route's policy
(fail-open keeps the deterministic plan, fail-closed asks). `LLMFilters` uses its filters later,
once the deterministic filters have had their turn."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from querywise.conditions import describe
from querywise.plan import Action, Answer, Ask, PlanQuery, TraceStep
from querywise.understand.draft import Draft, Have, LLMState
from querywise.understand.followup import check_follow_up
from querywise.understand.llm_plan import PlanNeeds, plan_call
from querywise.understand.moves.base import BaseMove
from querywise.understand.routing.route import RouteDecision

__all__ = ["LLMFilters", "LLMPlan"]

_NO_PROVIDER = "no [llm] provider configured"


def _candidates(decision: RouteDecision) -> list[str]:
    """The routes a message could have: the decided one and, when the classifier was unsure,
    the two it hesitated between."""
    if not decision.deferred:
        return [decision.route]
    top_two = sorted(decision.scores, key=lambda r: decision.scores[r], reverse=True)[:2]
    return [decision.route, *top_two]


class LLMPlan(BaseMove):
    name = "llm_plan"
    switches = frozenset({"llm_rewrite", "llm_route", "llm_filters"})

    @classmethod
    def requires(cls, have: Have) -> str | None:
        return None if have.llm else _NO_PROVIDER

    def _needs(self, draft: Draft, decision: RouteDecision) -> tuple[PlanNeeds, str]:
        """What the call is for, and the gate's reason (a rule, a route away from search, a first
        turn without references, or what a deterministic move already resolved: no LLM)."""
        on, route = draft.on, decision.route
        if decision.source == "rule":
            return PlanNeeds(), f"identifier lookup (rule sent it to {route}): no LLM"
        searches = not self.r.search_routes or route in self.r.search_routes
        needs_context = draft.needs_context
        if needs_context is None:  # the follow-up move is off: the LLM rewrite still goes only where the gate sees a reference
            needs_context = "llm_rewrite" in on and check_follow_up(draft.message, draft.history, catalog=self.r.catalog).needs_context
        needs = PlanNeeds(
            rewrite="llm_rewrite" in on and needs_context,
            route="llm_route" in on and decision.deferred,
            # With deterministic filters on, the LLM's filters only ride along on a call
            # made anyway (and are used only if the rules found none).
            filters="llm_filters" in on and bool(self.settings.filters.fields) and (searches or decision.deferred),
        )
        gate = ""
        if not decision.deferred and not searches:
            needs, gate = PlanNeeds(), f"route {route} does not search: no LLM"
        elif needs.filters and "filters" in on and not (needs.rewrite or needs.route):
            needs = PlanNeeds(rewrite=False, route=False, filters=False)  # filters alone ride along, never call
        if needs:
            gate = "needs " + needs.describe()
        elif decision.deferred or searches:  # (the source is not "rule" in this branch)
            why = ["first turn without references" if not draft.history else "no reference to resolve" if "llm_rewrite" in on else "rewrite left to the rules"]
            why.append("route certain" if not decision.deferred else "route left to the classifier")
            if "llm_filters" in on:
                why.append("filters left to the rules" if "filters" in on else "no filter schema")
            gate = ", ".join(why) + ": no LLM"
        return needs, gate

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        tier, s, decision = self.r.tier, self.settings, draft.decision
        assert tier is not None and decision is not None  # requires() and the route move
        needs, gate = self._needs(draft, decision)
        if not needs:
            return draft, [TraceStep(move="llm_plan", status="skipped", reason=gate)]
        # The failure policy is the strictest of the routes the message could have: an unsure
        # message between a high-stakes route and another fails closed, whatever the default.
        route = draft.route
        policy_route = next((r for r in _candidates(decision) if s.fails_closed(r)), route)
        message, history = draft.message, draft.history
        called, step = tier.run(
            "llm_plan",
            lambda timeout: plan_call(
                tier.provider, message, history, needs=needs, routes=s.routing.routes, filter_settings=s.filters,
                catalog=self.r.catalog, access=s.access, timeout_s=timeout, max_tokens=s.llm.max_tokens,
            ),
            route=policy_route, text=f"{needs.describe()}\n{message}", history=history, why=gate,
        )
        if called is None:  # failed or rejected: the deterministic path, or ask on a fail-closed route
            if tier.policy(policy_route) == "closed":
                step.changed = "asked instead of guessing (fail-closed): nothing is searched"
                return replace(draft, action=Ask(question=s.llm.fail_closed_question), llm=LLMState(used=True, closed=True)), [step]
            step.changed = f"kept the deterministic plan: searching {draft.text!r} (fail-open)"
            return replace(draft, llm=LLMState(used=True)), [step]
        out = called.value
        steps, changes = [step], list[str]()
        action: Action = Answer()
        text, kind = draft.text, draft.kind
        if out.standalone is not None and out.standalone != text:
            text, kind = out.standalone, "standalone"
            changes.append(f"searched {out.standalone!r} instead of {message!r}")
            started = time.perf_counter()
            again = self.r.router.route(text)  # the classifier sees the whole question now
            steps.append(self.r.router.trace(again, started).model_copy(update={"move": "route_standalone"}))
            if not again.deferred or out.route is None:
                route = again.route
        if out.ask is not None:
            action = out.ask
            changes.append(f"ask {out.ask.question!r}")
        elif out.assume is not None:
            action = out.assume
            changes.append(f"assume {out.assume.text!r}")
        if out.route is not None and needs.route and (kind != "standalone" or route != out.route):
            changes.append(f"route = {out.route} (LLM tier: the classifier was unsure)")
            route = out.route
        step.changed = "; ".join(changes) or None
        step.details["guard"] = out.guard or None
        rewritten = text != draft.text
        # The LLM's standalone form also settles a referent the follow-up move only guessed: one it
        # wrote the same way is no longer a guess, so the message is not searched beside it either.
        confirmed = out.standalone is not None and out.standalone == draft.text and draft.kind == "standalone"
        draft = replace(draft, route=route, action=action, llm=LLMState(used=True, filters=out if needs.filters else None))
        if rewritten or confirmed:  # the LLM's standalone form supersedes what the follow-up move searched beside its text
            draft = replace(draft, text=text, main=PlanQuery(text=text, kind=kind), beside=(), pointed=())
        return draft, steps


class LLMFilters(BaseMove):
    name = "llm_filters"
    switches = frozenset({"llm_filters"})

    @classmethod
    def requires(cls, have: Have) -> str | None:
        return None if have.llm else _NO_PROVIDER

    def applies(self, draft: Draft) -> str | None:
        return "no LLM filter answer (gated or failed; see llm_plan)" if draft.llm.filters is None else None

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        out = draft.llm.filters
        assert out is not None  # applies()
        dropped = [f"{d.field}={d.value!r}: {d.reason}" for d in out.dropped]
        if draft.filters & draft.inferred:
            return draft, [TraceStep(move="llm_filters", status="skipped", reason="the deterministic filters already resolved the constraints", details={"dropped": dropped})]
        if not out.filters:
            return draft, [TraceStep(move="llm_filters", status="skipped", reason="the LLM proposed no valid constraint", details={"dropped": dropped})]
        main = PlanQuery(text=out.semantic_query, kind="semantic") if out.semantic_query else draft.main
        step = TraceStep(
            move="llm_filters", status="ran", reason="constraints read by the LLM, checked by the filter validator",
            changed=", ".join(describe(c) for c in out.filters.conditions) + (f"; searching {out.semantic_query!r}" if out.semantic_query else ""),
            details={"stated": [describe(c) for c in out.filters.conditions], "dropped": dropped},
        )
        return replace(draft, filters=draft.filters & out.filters, main=main), [step]

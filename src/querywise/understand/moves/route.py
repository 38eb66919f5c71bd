"""Route: rules, the classifier behind its margin gate, unsure (`understand.routing`); and the gate
that stops a plan whose route does not search."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from querywise.plan import TraceStep
from querywise.understand.draft import Draft, Spelled
from querywise.understand.moves.base import BaseMove
from querywise.understand.routing.lookup import run_lookup

__all__ = ["Route", "Searches"]


class Route(BaseMove):
    name = "route"

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        """A typo must not change the route ("firmwear update" is no account question): the router
        reads the spelling-corrected copy; the text searched stays as typed (the spelling move
        adds its correction beside it, reusing this check)."""
        started = time.perf_counter()
        routed, spelled = draft.text, draft.spelled
        if "spelling" in draft.on and self.r.speller is not None:
            spelled = Spelled(draft.text, self.r.speller.check(draft.text))
            routed = spelled.result.corrected or draft.text
        decision = self.r.router.route(routed)  # rules first: no embedding when a rule fires
        step = self.r.router.trace(decision, started)
        if routed != draft.text:
            step = step.model_copy(update={"reason": f"{step.reason} (read as {routed!r}, spelling corrected)"})
        return replace(draft, decision=decision, route=decision.route, spelled=spelled), [step]


class Searches(BaseMove):
    """Routes that do not search stop the plan here, after the LLM tier had its chance to re-route;
    a route with a lookup answers from it, and falls back to search when it finds nothing or is not
    wired (`understand.routing.lookup`), with a `lookup` step saying so."""

    name = "retrieve"

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        if draft.llm.closed:
            return replace(draft, unsearched="the LLM failed on a fail-closed route: ask, search nothing"), []
        routes = self.r.search_routes
        if routes and draft.route not in routes:
            spec = next((r for r in self.settings.routing.routes if r.name == draft.route), None)
            if spec is None:
                return replace(draft, unsearched=f"route {draft.route} does not search"), []
            outcome = run_lookup(spec, self.r.lookups, draft.text, draft.session)
            if outcome.stops:
                steps = [TraceStep(move="lookup", status="ran", reason=outcome.reason, details={"lookup": spec.lookup, "found": list(outcome.found)})] if outcome.found else []
                return replace(draft, unsearched=outcome.reason), steps
            # Fail soft: the route's lookup found nothing, so the message is searched like any other.
            return draft, [TraceStep(move="lookup", status="fallback", reason=outcome.reason, changed=f"route {draft.route} searched",
                                     details={"lookup": spec.lookup, "fell_back_to": "search", "why": outcome.fell_back})]
        return draft, []

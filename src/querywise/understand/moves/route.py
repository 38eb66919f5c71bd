"""Route: rules, the classifier behind its margin gate, unsure (`understand.routing`); and the gate
that stops a plan whose route does not search."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from querywise.plan import TraceStep
from querywise.understand.draft import Draft, Spelled
from querywise.understand.moves.base import BaseMove

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
    """Routes that do not search stop the plan here, after the LLM tier had its chance to re-route."""

    name = "retrieve"

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        if draft.llm.closed:
            return replace(draft, unsearched="the LLM failed on a fail-closed route: ask, search nothing"), []
        routes = self.r.search_routes
        if routes and draft.route not in routes:
            return replace(draft, unsearched=f"route {draft.route} does not search"), []
        return draft, []

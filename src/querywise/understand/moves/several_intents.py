"""Several intents: a message with asks for different routes (`understand.intents` cuts it).

No question is lost: every ask whose route searches is searched (the first is the main query, the
others beside it), and only the asks for routes that do not search are left for a follow-up, each
with its route. When the cut is unsure -- an ask left unsearched on a route the router is unsure
of, or one that points back at the ask before it ("My Aero X2 stopped charging, can I return it?") -- the
whole message is searched beside the asks. A message whose asks share a route stays whole.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise

from querywise.clock import ms_since
from querywise.plan import LeftAsk, PlanQuery, TraceStep
from querywise.understand.draft import Draft
from querywise.understand.followup import check_follow_up, points_back
from querywise.understand.intents import split_asks
from querywise.understand.moves.base import BaseMove
from querywise.understand.routing.route import RouteDecision

__all__ = ["SeveralIntents"]


class SeveralIntents(BaseMove):
    name = "several_intents"
    switches = frozenset({"several_intents"})

    def _unsure(self, asks: Sequence[str], decisions: Sequence[RouteDecision], searched: Sequence[str]) -> str | None:
        """Why the cut may lose a question, or None: an ask left unsearched on a route the router
        was unsure of, or an ask that points back at the one before it (a pronoun, a demonstrative)."""
        guessed = [a for a, d in zip(asks, decisions, strict=True) if d.deferred and a not in searched]
        if guessed:
            return f"the router is unsure of {guessed[0]!r}"
        leaning = [a for before, a in pairwise(asks) if points_back(check_follow_up(a, [before], catalog=self.r.catalog))]
        return f"{leaning[0]!r} points back at the ask before it" if leaning else None

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        asks = split_asks(draft.text)
        if len(asks) < 2:
            return draft, []  # one ask: nothing to say
        started = time.perf_counter()
        decisions = [self.r.router.route(a) for a in asks]
        routes = [d.route for d in decisions]
        if len(set(routes)) < 2:
            return draft, []
        search = self.r.search_routes
        searched = [a for a, r in zip(asks, routes, strict=True) if not search or r in search] or asks[:1]
        left = tuple(LeftAsk(text=a, route=r) for a, r in zip(asks, routes, strict=True) if a not in searched)
        unsure = self._unsure(asks, decisions, searched)
        parts = tuple(PlanQuery(text=a, kind="part") for a in searched[1:])
        if unsure is not None:
            parts += (PlanQuery(text=draft.text, kind="original"),)
        said = "; ".join(f"{a!r} -> {r}" for a, r in zip(asks, routes, strict=True))
        changed = [f"planned {searched[0]!r}"]
        if searched[1:]:
            changed.append("also searching " + ", ".join(repr(a) for a in searched[1:]))
        if unsure is not None:
            changed.append(f"and the whole message beside them ({unsure})")
        if left:
            changed.append("left for a follow-up: " + ", ".join(repr(x.text) for x in left))
        step = TraceStep(
            move="several_intents", status="ran", reason=f"{len(asks)} asks for different routes: {said}", changed="; ".join(changed),
            latency_ms=ms_since(started),
            details={"asks": [{"text": a, "route": r} for a, r in zip(asks, routes, strict=True)], "unsure": unsure},
        )
        main = PlanQuery(text=searched[0], kind=draft.kind)
        return replace(draft, text=searched[0], main=main, parts=parts, left=left), [step]

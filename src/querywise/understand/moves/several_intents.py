"""Several intents: asks for different routes; the first is planned, the rest left (`understand.intents`)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from querywise.clock import ms_since
from querywise.plan import LeftAsk, PlanQuery, TraceStep
from querywise.understand.draft import Draft
from querywise.understand.intents import split_asks
from querywise.understand.moves.base import BaseMove

__all__ = ["SeveralIntents"]


class SeveralIntents(BaseMove):
    name = "several_intents"
    switches = frozenset({"several_intents"})

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        """A message whose asks share a route stays whole (and leaves no step: nothing to say)."""
        asks = split_asks(draft.text)
        if len(asks) < 2:
            return draft, []
        started = time.perf_counter()
        routes = [self.r.router.route(a).route for a in asks]
        if len(set(routes)) < 2:
            return draft, []
        left = tuple(LeftAsk(text=a, route=r) for a, r in zip(asks[1:], routes[1:], strict=True))
        step = TraceStep(
            move="several_intents", status="ran", reason=f"{len(asks)} asks for different routes: " + "; ".join(f"{a!r} -> {r}" for a, r in zip(asks, routes, strict=True)),
            changed=f"planned {asks[0]!r}; left for a follow-up: " + ", ".join(repr(x.text) for x in left), latency_ms=ms_since(started),
            details={"asks": [{"text": a, "route": r} for a, r in zip(asks, routes, strict=True)]},
        )
        return replace(draft, text=asks[0], main=PlanQuery(text=asks[0], kind=draft.kind), left=left), [step]

"""Composes the moves into a plan. Moves never import each other; this module does.

For now: access from the session, routing, and the original message as the one query of
search routes. Later moves (follow-ups, spelling, filters, ambiguity, the LLM tier) slot in
here, each adding its own trace step.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from querywise.config import Settings
from querywise.plan import PlanQuery, QueryPlan, TraceStep
from querywise.understand.access import access_from_session
from querywise.understand.route import Router, load_examples

__all__ = ["Understander"]


class Understander:
    """Turns a message (plus conversation and session) into a `QueryPlan`.

    >>> u = Understander(load_settings("querywise.toml"))   # doctest: +SKIP
    >>> u.plan("is qr-5126 in stock", session={"market": "eu"}).route   # doctest: +SKIP
    'exact_lookup'
    """

    def __init__(self, settings: Settings, *, embedder: Any = None) -> None:
        self.settings = settings
        if embedder is None:
            from querywise.index.store import _embedder

            embedder = _embedder(settings)
        self.embedder = embedder
        self.router = Router(settings.routing, load_examples(settings.routing), embedder)
        self._search_routes = {r.name for r in settings.routing.routes if r.search}

    def plan(
        self,
        message: str,
        *,
        history: Sequence[str] = (),
        session: Mapping[str, str] | None = None,
    ) -> QueryPlan:
        """The plan for `message`. Pass-through by default: a clear standalone message is
        searched as typed."""
        trace: list[TraceStep] = []
        access = access_from_session(session or {}, self.settings.access)

        started = time.perf_counter()
        decision = self.router.route(message)  # rules first: no embedding when a rule fires
        trace.append(self.router.trace(decision, started))

        searches = decision.route in self._search_routes or not self._search_routes
        queries = [PlanQuery(text=message, kind="original")] if searches else []
        if not searches:
            trace.append(TraceStep(move="retrieve", status="skipped", reason=f"route {decision.route} does not search"))
        return QueryPlan(message=message, route=decision.route, queries=queries, access=access, trace=trace)

"""Composes the moves into a plan. Moves never import each other; this module does.

Order, and why:
1. access   - from the session only, before anything reads the message;
2. follow-up - a message that cannot stand alone is replaced by its standalone form (checked by
              the rewrite guard), so that routing and every later move see the whole question;
3. route    - rules, then the classifier behind its margin gate; routes that do not search stop here;
4. filters  - hard constraints move out of the text into validated filters (self-query);
5. spelling - a corrected query is searched next to the original, never instead of it;
              a near-miss identifier yields candidates to offer, never a silent choice;
6. ambiguity - a mention with several readings whose answers differ: ask, assume or cover.
Every move adds a trace step saying whether it ran and why.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from querywise.catalog import Catalog
from querywise.conditions import Where
from querywise.config import Settings
from querywise.plan import Action, Answer, Ask, PlanQuery, QueryKind, QueryPlan, TraceStep
from querywise.understand.access import access_from_session
from querywise.understand.ambiguity import disambiguate
from querywise.understand.filters import extract_filters
from querywise.understand.followup import check_follow_up, concat_standalone
from querywise.understand.guard import check_rewrite
from querywise.understand.route import Router, load_examples
from querywise.understand.spelling import SpellChecker

__all__ = ["Understander"]

T = TypeVar("T")


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _off(move: str, trace: list[TraceStep], unchanged: T) -> T:
    """Record that a move is turned off in the settings, and pass its input through."""
    trace.append(TraceStep(move=move, status="skipped", reason="turned off in [understanding] moves"))
    return unchanged


class Understander:
    """Turns a message (plus conversation and session) into a `QueryPlan`.

    `lexicon` (an index's `Index.lexicon`) enables spelling; the catalog comes from the settings.

    >>> u = Understander(load_settings("querywise.toml"), lexicon=index.lexicon)   # doctest: +SKIP
    >>> u.plan("is hc-3417 in stock", session={"market": "eu"}).route              # doctest: +SKIP
    'exact_lookup'
    """

    def __init__(self, settings: Settings, *, embedder: Any = None, lexicon: Any = None) -> None:
        self.settings = settings
        if embedder is None:
            from querywise.index.store import embedder_for

            embedder = embedder_for(settings)
        self.embedder = embedder
        self.router = Router(settings.routing, load_examples(settings.routing), embedder)
        self._search_routes = {r.name for r in settings.routing.routes if r.search}
        catalog_path = settings.deployment.catalog
        self.catalog = Catalog.load(catalog_path) if catalog_path is not None else None
        self.speller = SpellChecker.from_lexicon(lexicon) if lexicon is not None else None

    def plan(
        self,
        message: str,
        *,
        history: Sequence[str] = (),
        session: Mapping[str, str] | None = None,
        today: dt.date | None = None,
    ) -> QueryPlan:
        """The plan for `message`. Pass-through by default: a clear standalone message is
        searched as typed, and every change says why in the trace."""
        trace: list[TraceStep] = []
        access = access_from_session(session or {}, self.settings.access)
        on = set(self.settings.understanding.moves)

        text, kind = self._follow_up(message, history, trace) if "follow_up" in on else _off("follow_up", trace, (message, "original"))

        started = time.perf_counter()
        decision = self.router.route(text)  # rules first: no embedding when a rule fires
        trace.append(self.router.trace(decision, started))
        route = decision.route
        if self._search_routes and route not in self._search_routes:
            trace.append(TraceStep(move="retrieve", status="skipped", reason=f"route {route} does not search"))
            return QueryPlan(message=message, route=route, access=access, trace=trace)

        queries = [PlanQuery(text=text, kind=kind)]
        if "filters" in on:
            filters, inferred, queries = self._filters(text, queries, today or dt.date.today(), trace)
        else:
            filters, inferred = _off("filters", trace, (Where(), Where()))
        action: Action = Answer()
        queries, action = self._spelling(queries, action, trace) if "spelling" in on else _off("spelling", trace, (queries, action))
        action = self._ambiguity(text, history, route, action, trace) if "ambiguity" in on else _off("ambiguity", trace, action)
        return QueryPlan(
            message=message, route=route, queries=queries, filters=filters, inferred_filters=inferred,
            access=access, action=action, trace=trace,
        )  # fmt: skip

    # --- one method per move: call the move, record what it did ---------------------------

    def _follow_up(self, message: str, history: Sequence[str], trace: list[TraceStep]) -> tuple[str, QueryKind]:
        started = time.perf_counter()
        gate = check_follow_up(message, history, catalog=self.catalog)
        if not gate.needs_context:
            trace.append(TraceStep(move="follow_up", status="skipped", reason=gate.reason, latency_ms=_ms(started)))
            return message, "original"
        standalone = concat_standalone(message, history)
        guard = check_rewrite(message, standalone, history, catalog=self.catalog)
        if not guard.ok:  # cannot happen for the concatenation, but a rewriter's output may fail
            trace.append(TraceStep(move="follow_up", status="failed", reason=f"{gate.reason}; rewrite rejected: {guard.reason}", latency_ms=_ms(started)))
            return message, "original"
        trace.append(
            TraceStep(
                move="follow_up", status="ran",
                reason=f"{gate.reason}; deterministic standalone form: previous user turn + message (no LLM rewriter configured)",
                changed=f"searched {standalone!r} instead of {message!r}", latency_ms=_ms(started),
                details={"cues": list(gate.cues), "guard": guard.reason},
            )
        )  # fmt: skip
        return standalone, "standalone"

    def _filters(self, text: str, queries: list[PlanQuery], today: dt.date, trace: list[TraceStep]) -> tuple[Where, Where, list[PlanQuery]]:
        started = time.perf_counter()
        if not self.settings.filters.fields:
            trace.append(TraceStep(move="filters", status="skipped", reason="no filter schema configured"))
            return Where(), Where(), queries
        ex = extract_filters(text, self.settings.filters, catalog=self.catalog, today=today, access=self.settings.access)
        dropped = [{"field": d.field, "value": d.value, "reason": d.reason} for d in ex.dropped]
        details: dict[str, Any] = {
            "stated": [c.describe() for c in ex.stated],
            "inferred": [c.describe() for c in ex.inferred],
            "dropped": dropped,
        }
        if ex.similar is not None:
            details["similar_to"] = list(ex.similar.entities)
        if not ex.constraints:
            reason = "no hard constraint stated" + (f"; dropped {dropped}" if dropped else "")
            trace.append(TraceStep(move="filters", status="skipped", reason=reason, latency_ms=_ms(started), details=details))
            return Where(), Where(), queries
        stated = Where(conditions=tuple(c.condition for c in ex.stated))
        inferred = Where(conditions=tuple(c.condition for c in ex.inferred))
        if ex.semantic_query.strip() and ex.semantic_query != text:
            queries = [PlanQuery(text=ex.semantic_query, kind="semantic")]
        trace.append(
            TraceStep(
                move="filters", status="ran",
                reason="; ".join(c.reason for c in ex.constraints),
                changed=", ".join(c.describe() for c in ex.constraints) + (f"; searching {ex.semantic_query!r}" if queries[0].kind == "semantic" else ""),
                latency_ms=_ms(started), details=details,
            )
        )  # fmt: skip
        return stated, inferred, queries

    def _spelling(self, queries: list[PlanQuery], action: Action, trace: list[TraceStep]) -> tuple[list[PlanQuery], Action]:
        started = time.perf_counter()
        if self.speller is None:
            trace.append(TraceStep(move="spelling", status="skipped", reason="no index vocabulary to correct against"))
            return queries, action
        result = self.speller.check(queries[0].text)
        details: dict[str, Any] = {
            "corrections": [[c.original, c.replacement, c.why] for c in result.corrections],
            "identifier_candidates": {k: list(v) for k, v in result.identifier_candidates.items()},
        }
        if result.identifier_candidates:
            typed, options = next(iter(result.identifier_candidates.items()))
            action = Ask(question=f"{typed.upper()} is not a part number we know. Did you mean {' or '.join(options)}?", options=list(options))
        if result.corrected is None:
            status = "ran" if result.identifier_candidates else "skipped"
            changed = f"offer {details['identifier_candidates']}" if result.identifier_candidates else None
            trace.append(TraceStep(move="spelling", status=status, reason=result.reason, changed=changed, latency_ms=_ms(started), details=details))
            return queries, action
        queries = [*queries, PlanQuery(text=result.corrected, kind="spelling")]
        trace.append(
            TraceStep(move="spelling", status="ran", reason=result.reason, changed=f"also searching {result.corrected!r}", latency_ms=_ms(started), details=details)
        )
        return queries, action

    def _ambiguity(self, text: str, history: Sequence[str], route: str, action: Action, trace: list[TraceStep]) -> Action:
        started = time.perf_counter()
        if self.catalog is None:
            trace.append(TraceStep(move="ambiguity", status="skipped", reason="no catalog configured"))
            return action
        if not isinstance(action, Answer):
            trace.append(TraceStep(move="ambiguity", status="skipped", reason=f"an earlier move already chose to {action.type}"))
            return action
        result = disambiguate(text, history, self.catalog, route=route, high_stakes=self.settings.routing.high_stakes)
        trace.append(result.trace_step(latency_ms=_ms(started)))
        return result.action

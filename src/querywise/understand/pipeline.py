"""Composes the moves into a plan. Moves never import each other; this module does.

Order, and why:
1. access   - from the session only, before anything reads the message;
2. follow-up - a message that cannot stand alone is replaced by its standalone form (checked by
              the rewrite guard), so that routing and every later move see the whole question;
3. route    - rules, then the classifier behind its margin gate; routes that do not search stop here;
4. filters  - hard constraints move out of the text into validated filters (self-query);
5. spelling - a corrected query is searched next to the original, never instead of it;
              a near-miss identifier yields candidates to offer, never a silent choice;
6. ambiguity - a mention with several readings whose answers differ: ask, assume or cover;
7. enrichments (LLM, off by default) - multi-query variants, HyDE, query2doc, step-back:
              searched next to the original, fused with RRF, never instead of it.
Every move adds a trace step saying whether it ran and why.

The LLM tier (`[llm]` + LLM moves in `[understanding] moves`) pays only when it helps. Gating:
no LLM for an identifier lookup (a routing rule fired), for a route away from search, for a
first turn without references, or for what a deterministic move already resolved. What is
left goes out in ONE structured call (`understand.llm_plan`: standalone rewrite, unsure route,
filters), whose answer passes the rewrite guard and the filter validator before it is used;
a failed or rejected call falls back by route: fail-open keeps the deterministic plan,
fail-closed (high-stakes routes) asks. Retrieval for the raw message can run while the LLM
works: see `querywise.QueryWise.ask`.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from querywise.catalog import Catalog
from querywise.conditions import NoneOf, Where, describe
from querywise.config import LLM_MOVES, Move, Settings
from querywise.conversation import Turn, texts
from querywise.embed import Embedder, embedder_for
from querywise.index.lexical import Lexicon
from querywise.llm.factory import provider_from
from querywise.llm.provider import Provider
from querywise.plan import (
    Action,
    Answer,
    Ask,
    LeftAsk,
    PlanQuery,
    QueryKind,
    QueryPlan,
    TraceStep,
)
from querywise.understand import enrich
from querywise.understand.access import access_from_session
from querywise.understand.ambiguity import disambiguate
from querywise.understand.exact import exact_queries, identifiers_in
from querywise.understand.filters import extract_filters, units
from querywise.understand.filters.missing import with_missing_policy
from querywise.understand.filters.money import DEFAULT_RATES
from querywise.understand.followup import check_follow_up
from querywise.understand.followup.move import follow_up
from querywise.understand.intents import split_asks
from querywise.understand.limits import within_limits
from querywise.understand.llm_plan import PlanNeeds, PlanOutcome, plan_call
from querywise.understand.route import RouteDecision, Router, load_examples
from querywise.understand.spelling import SpellChecker, Spelling
from querywise.understand.third_party import other_person
from querywise.understand.tier import Called, LLMTier

__all__ = ["Understander"]

T = TypeVar("T")
_ENRICHMENTS = ("multi_query", "hyde", "query2doc", "step_back")
_SIMILAR_MAX = 3  # descriptions a "like X" query carries (a brand names many products)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


@dataclass(frozen=True)
class _LLMPlan:
    """What the plan call left for later moves."""

    used: bool = False  # an LLM call was attempted (or served from the cache)
    filters: PlanOutcome | None = None  # the plan call's answer, when filters were asked for
    closed: bool = False  # the call failed on a fail-closed route: ask, search nothing


def _candidates(decision: RouteDecision) -> list[str]:
    """The routes a message could have: the decided one and, when the classifier was unsure,
    the two it hesitated between."""
    if not decision.deferred:
        return [decision.route]
    top_two = sorted(decision.scores, key=lambda r: decision.scores[r], reverse=True)[:2]
    return [decision.route, *top_two]


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

    def __init__(
        self, settings: Settings, *, embedder: Embedder | None = None, lexicon: Lexicon | None = None, provider: Provider | None = None
    ) -> None:
        """`provider` overrides the `[llm]` provider of the settings (tests, demos, benchmarks)."""
        self.settings = settings
        self.embedder = embedder if embedder is not None else embedder_for(settings)
        router_embedder = self.embedder
        if settings.routing.encoder is not None:  # a fine-tuned encoder routes; the index's embedder searches
            router_embedder = embedder_for(settings, model_folder=settings.routing.encoder)
        llm_route = "llm_route" in settings.understanding.moves and (provider is not None or settings.llm.provider != "none")
        self.router = Router(settings.routing, load_examples(settings.routing), router_embedder, llm_tier=llm_route)
        self._search_routes = {r.name for r in settings.routing.routes if r.search}
        catalog_path = settings.deployment.catalog
        self.catalog = Catalog.load(catalog_path) if catalog_path is not None else None
        self._by_name = {e.name: e for e in self.catalog.entities} if self.catalog is not None else {}
        # Someone else's account is a question only where users have accounts: a deployment with a
        # session account or a high-stakes route. A help centre on benefits answers "my husband's
        # benefits" as any other question.
        self._accounts = settings.access.account is not None or bool(settings.routing.high_stakes)
        self.speller = SpellChecker.from_lexicon(lexicon) if lexicon is not None else None
        self.identifiers = self.speller.identifiers if self.speller is not None else {}  # for exact lookups
        if any(f.unit and f.unit.lower() not in DEFAULT_RATES for f in settings.filters.fields.values()):
            units.load(DEFAULT_RATES)  # pint's registry takes a second or two to build: at start-up, not on a message
        if provider is None and settings.llm.provider != "none":
            provider = provider_from(settings.llm)
        self.tier = LLMTier(settings, provider) if provider is not None else None

    def plan(
        self,
        message: str,
        *,
        history: Sequence[str | Turn] = (),
        session: Mapping[str, str] | None = None,
        today: dt.date | None = None,
    ) -> QueryPlan:
        """The plan for `message` after `history` (earlier turns, oldest first: strings are user
        turns, `Turn`s may be the assistant's). Pass-through by default: a clear standalone
        message is searched as typed, and every change says why in the trace."""
        message, history = within_limits(message, history, self.settings.limits)  # [limits]: LimitError over one; oldest turns dropped
        trace: list[TraceStep] = []
        access = access_from_session(session or {}, self.settings.access)
        on = set(self.settings.understanding.moves)
        if self.tier is not None:
            self.tier.start_request()  # every LLM move of this message shares one deadline

        needs_context, beside = False, list[PlanQuery]()
        if "follow_up" in on:
            move = follow_up(message, history, catalog=self.catalog, embedder=self.embedder,
                             topic_shift=self.settings.understanding.topic_shift, topic_window=self.settings.understanding.topic_window)
            text, kind, needs_context, beside = move.text, move.kind, move.needs_context, list(move.beside)
            trace.append(move.step)
        else:
            text, kind = _off("follow_up", trace, (message, "original"))
            if "llm_rewrite" in on:  # the LLM rewrite still goes only where the gate sees a reference
                needs_context = check_follow_up(message, history, catalog=self.catalog).needs_context

        started = time.perf_counter()
        whole = text  # read whole by the third-party rule: a second ask may be the one about someone else
        text, left = self._several_asks(text, trace)
        # A typo must not change the route ("firmwear update" is no account question): the router
        # reads the spelling-corrected copy; the text searched stays as typed (spelling adds its
        # correction next to it later).
        routed, spelled = text, None
        if "spelling" in on and self.speller is not None:
            spelled = self.speller.check(text)  # checked once: the spelling move reuses it when it reads this text
            routed = spelled.corrected or text
        decision = self.router.route(routed)  # rules first: no embedding when a rule fires
        step = self.router.trace(decision, started)
        if routed != text:
            step = step.model_copy(update={"reason": f"{step.reason} (read as {routed!r}, spelling corrected)"})
        trace.append(step)
        route = decision.route
        if self._accounts and (other := other_person(whole, session or {}, self.settings.access)) is not None:
            # Someone else's account, whatever the route: ask for verification, no LLM, no search.
            trace.append(TraceStep(move="third_party", status="ran", reason=f"{other.rule}: {other.words!r}",
                                   changed="ask for verification", details={"rule": other.rule, "words": other.words}))
            trace.append(TraceStep(move="retrieve", status="skipped", reason="a request about another person's account: fail closed"))
            return QueryPlan(message=message, route=route, access=access, action=Ask(question=self.settings.access.third_party_question), trace=trace, left=left)
        action: Action = Answer()
        llm, followed = _LLMPlan(), text
        if self.tier is not None or on & set(LLM_MOVES):
            text, kind, route, action, llm = self._llm_plan(message, history, text, kind, decision, needs_context, on, trace)
        if llm.closed or (self._search_routes and route not in self._search_routes):
            why = "the LLM failed on a fail-closed route: ask, search nothing" if llm.closed else f"route {route} does not search"
            trace.append(TraceStep(move="retrieve", status="skipped", reason=why))
            if self.tier is not None:
                self.tier.budget.record_request(used_llm=llm.used)
            return QueryPlan(message=message, route=route, access=access, action=action, trace=trace, left=left)

        queries = [PlanQuery(text=text, kind=kind)]
        if "filters" in on:
            filters, inferred, queries = self._filters(text, queries, today or dt.date.today(), trace)
        else:
            filters, inferred = _off("filters", trace, (Where(), Where()))
        if "llm_filters" in on:
            filters, queries = self._llm_filters(llm, filters & inferred, filters, queries, trace)
        # Documents without a filter's field: the [filters] policy, executed by the engine.
        filters, inferred = (with_missing_policy(w, self.settings.filters, self.catalog) for w in (filters, inferred))
        if text == followed:  # an LLM rewrite supersedes what the follow-up move searched beside its text
            queries += beside
        checked = spelled if spelled is not None and queries[0].text == text else None
        queries, action = self._spelling(queries, action, trace, checked) if "spelling" in on else _off("spelling", trace, (queries, action))
        queries = self._exact(text, queries, trace) if "exact_lookup" in on else _off("exact_lookup", trace, queries)
        action = self._ambiguity(text, texts(history), route, action, trace) if "ambiguity" in on else _off("ambiguity", trace, action)
        if self.tier is None:
            trace += [TraceStep(move=m, status="skipped", reason="no [llm] provider configured") for m in _ENRICHMENTS if m in on]
        else:
            queries = self._enrich(queries, route, decision.source == "rule", on, trace)
            self.tier.budget.record_request(used_llm=llm.used or any(s.llm_calls or (s.llm and s.llm.cache == "hit") for s in trace))
        return QueryPlan(
            message=message, route=route, queries=queries, filters=filters, inferred_filters=inferred,
            access=access, action=action, trace=trace, left=left,
        )

    # --- the LLM tier: gate, one call, checks, fallback by route ----------------------------

    def _llm_plan(
        self, message: str, history: Sequence[Turn], text: str, kind: QueryKind, decision: RouteDecision, needs_context: bool,
        on: set[Move], trace: list[TraceStep],
    ) -> tuple[str, QueryKind, str, Action, _LLMPlan]:
        route = decision.route
        wanted = on & {"llm_rewrite", "llm_route", "llm_filters"}
        if not wanted:
            return text, kind, route, Answer(), _LLMPlan()
        if self.tier is None:
            trace.append(TraceStep(move="llm_plan", status="skipped", reason="no [llm] provider configured"))
            return text, kind, route, Answer(), _LLMPlan()
        searches = not self._search_routes or route in self._search_routes
        if decision.source == "rule":
            gate = f"identifier lookup (rule sent it to {route}): no LLM"
            needs = PlanNeeds()
        else:
            needs = PlanNeeds(
                rewrite="llm_rewrite" in on and needs_context,
                route="llm_route" in on and decision.deferred,
                # With deterministic filters on, the LLM's filters only ride along on a call
                # made anyway (and are used only if the rules found none).
                filters="llm_filters" in on and bool(self.settings.filters.fields) and (searches or decision.deferred),
            )
            if not decision.deferred and not searches:
                needs, gate = PlanNeeds(), f"route {route} does not search: no LLM"
            elif needs.filters and "filters" in on and not (needs.rewrite or needs.route):
                needs = PlanNeeds(rewrite=False, route=False, filters=False)  # filters alone ride along, never call
            if needs:
                gate = "needs " + needs.describe()
            elif decision.deferred or searches:  # (the source is not "rule" in this branch)
                why = ["first turn without references" if not history else "no reference to resolve" if "llm_rewrite" in on else "rewrite left to the rules"]
                why.append("route certain" if not decision.deferred else "route left to the classifier")
                if "llm_filters" in on:
                    why.append("filters left to the rules" if "filters" in on else "no filter schema")
                gate = ", ".join(why) + ": no LLM"
        if not needs:
            trace.append(TraceStep(move="llm_plan", status="skipped", reason=gate))
            return text, kind, route, Answer(), _LLMPlan()
        s, tier = self.settings, self.tier
        # The failure policy is the strictest of the routes the message could have: an unsure
        # message between a high-stakes route and another fails closed, whatever the default.
        policy_route = next((r for r in _candidates(decision) if s.fails_closed(r)), route)
        cache_text = f"{needs.describe()}\n{message}"
        called, step = tier.run(
            "llm_plan",
            lambda timeout: plan_call(
                tier.provider, message, history, needs=needs, routes=s.routing.routes, filter_settings=s.filters,
                catalog=self.catalog, access=s.access, timeout_s=timeout, max_tokens=s.llm.max_tokens,
            ),
            route=policy_route, text=cache_text, history=history, why=gate,
        )
        trace.append(step)
        if called is None:  # failed or rejected: the deterministic path, or ask on a fail-closed route
            if tier.policy(policy_route) == "closed":
                step.changed = "asked instead of guessing (fail-closed): nothing is searched"
                return text, kind, route, Ask(question=s.llm.fail_closed_question), _LLMPlan(used=True, closed=True)
            step.changed = f"kept the deterministic plan: searching {text!r} (fail-open)"
            return text, kind, route, Answer(), _LLMPlan(used=True)
        out = called.value
        changes: list[str] = []
        action: Action = Answer()
        if out.standalone is not None and out.standalone != text:
            text, kind = out.standalone, "standalone"
            changes.append(f"searched {out.standalone!r} instead of {message!r}")
            started = time.perf_counter()
            again = self.router.route(text)  # the classifier sees the whole question now
            trace.append(self.router.trace(again, started).model_copy(update={"move": "route_standalone"}))
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
        return text, kind, route, action, _LLMPlan(used=True, filters=out if needs.filters else None)

    def _llm_filters(self, llm: _LLMPlan, rules_found: Where, filters: Where, queries: list[PlanQuery], trace: list[TraceStep]) -> tuple[Where, list[PlanQuery]]:
        out = llm.filters
        if out is None:
            reason = "no LLM filter answer (gated or failed; see llm_plan)" if self.tier is not None else "no [llm] provider configured"
            trace.append(TraceStep(move="llm_filters", status="skipped", reason=reason))
            return filters, queries
        dropped = [f"{d.field}={d.value!r}: {d.reason}" for d in out.dropped]
        if rules_found:
            trace.append(TraceStep(move="llm_filters", status="skipped", reason="the deterministic filters already resolved the constraints", details={"dropped": dropped}))
            return filters, queries
        if not out.filters:
            trace.append(TraceStep(move="llm_filters", status="skipped", reason="the LLM proposed no valid constraint", details={"dropped": dropped}))
            return filters, queries
        if out.semantic_query:
            queries = [PlanQuery(text=out.semantic_query, kind="semantic"), *queries[1:]]
        trace.append(
            TraceStep(
                move="llm_filters", status="ran", reason="constraints read by the LLM, checked by the filter validator",
                changed=", ".join(describe(c) for c in out.filters.conditions) + (f"; searching {out.semantic_query!r}" if out.semantic_query else ""),
                details={"stated": [describe(c) for c in out.filters.conditions], "dropped": dropped},
            )
        )
        return filters & out.filters, queries

    def _enrich(self, queries: list[PlanQuery], route: str, rule: bool, on: set[Move], trace: list[TraceStep]) -> list[PlanQuery]:
        """Multi-query, HyDE, query2doc, step-back: each one call, each searched next to the original."""
        tier = self.tier
        assert tier is not None  # the caller checked
        base, n_variants, catalog = queries[0].text, self.settings.llm.n_variants, self.catalog
        calls: dict[str, Callable[[float], Called[Any]]] = {
            "multi_query": lambda t: enrich.multi_query(tier.provider, base, n=n_variants, catalog=catalog, timeout_s=t),
            "hyde": lambda t: enrich.hyde(tier.provider, base, timeout_s=t),
            "query2doc": lambda t: enrich.query2doc(tier.provider, base, timeout_s=t),
            "step_back": lambda t: enrich.step_back(tier.provider, base, catalog=catalog, timeout_s=t),
        }
        for move in _ENRICHMENTS:
            if move not in on:
                continue
            if rule:
                trace.append(TraceStep(move=move, status="skipped", reason=f"identifier lookup (rule sent it to {route}): no LLM"))
                continue
            fn = calls[move]
            called, step = tier.run(move, fn, route=route, text=base, why=f"{move} enrichment of {base!r}")
            trace.append(step)
            if called is None:
                step.changed = "searched without it (enrichments always fail open)"
                continue
            if move == "multi_query":
                added = [PlanQuery(text=v, kind="multi") for v in called.value]
            elif move == "hyde":
                added = [PlanQuery(text=called.value, kind="hyde", mode="dense")]
            elif move == "query2doc":
                added = [PlanQuery(text=f"{base} {called.value}", kind="query2doc", mode="bm25")]
            else:
                added = [PlanQuery(text=called.value, kind="step_back")]
            queries = [*queries, *added]
            step.changed = "also searching " + "; ".join(repr(q.text) for q in added)
        return queries

    def close(self) -> None:
        """Close the LLM provider's connections, if any."""
        if self.tier is not None:
            self.tier.close()

    # --- one method per move: call the move, record what it did ---------------------------

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
            "without_field": {c.field: self._without_field(c.field) for c in ex.constraints},
        }
        if ex.similar is not None:
            details["similar_to"] = list(ex.similar.entities)
        if not ex.constraints and ex.similar is None:
            reason = "no hard constraint stated" + (f"; dropped {dropped}" if dropped else "")
            trace.append(TraceStep(move="filters", status="skipped", reason=reason, latency_ms=_ms(started), details=details))
            return Where(), Where(), queries
        stated = Where(conditions=tuple(c.condition for c in ex.stated))
        inferred = Where(conditions=tuple(c.condition for c in ex.inferred))
        if ex.semantic_query.strip() and ex.semantic_query != text:
            queries = [PlanQuery(text=ex.semantic_query, kind="semantic")]
        if ex.similar is not None:
            queries, stated = self._similar(ex.similar.entities, queries, stated, details)
        trace.append(
            TraceStep(
                move="filters", status="ran",
                reason="; ".join([*(c.reason for c in ex.constraints), *([f"similar to {', '.join(ex.similar.entities)}"] if ex.similar else [])]),
                changed=", ".join(describe(c) for c in stated.conditions + inferred.conditions)
                + (f"; searching {ex.semantic_query!r}" if queries[0].kind == "semantic" else "")
                + (f"; and {details['similar_query']!r}" if "similar_query" in details else ""),
                latency_ms=_ms(started), details=details,
            )
        )
        return stated, inferred, queries

    def _several_asks(self, text: str, trace: list[TraceStep]) -> tuple[str, list[LeftAsk]]:
        """The first ask of a message that holds asks for different routes, and the others, each
        with its route, left for a follow-up. A message whose asks share a route stays whole."""
        asks = split_asks(text)
        if len(asks) < 2:
            return text, []
        started = time.perf_counter()
        routes = [self.router.route(a).route for a in asks]
        if len(set(routes)) < 2:
            return text, []
        left = [LeftAsk(text=a, route=r) for a, r in zip(asks[1:], routes[1:], strict=True)]
        trace.append(TraceStep(
            move="several_intents", status="ran", reason=f"{len(asks)} asks for different routes: " + "; ".join(f"{a!r} -> {r}" for a, r in zip(asks, routes, strict=True)),
            changed=f"planned {asks[0]!r}; left for a follow-up: " + ", ".join(repr(x.text) for x in left), latency_ms=_ms(started),
            details={"asks": [{"text": a, "route": r} for a, r in zip(asks, routes, strict=True)]},
        ))
        return asks[0], left

    def _exact(self, text: str, queries: list[PlanQuery], trace: list[TraceStep]) -> list[PlanQuery]:
        """An exact payload lookup for each identifier of `text` the index holds, before any fuzzy step."""
        started = time.perf_counter()
        if not self.identifiers:
            trace.append(TraceStep(move="exact_lookup", status="skipped", reason="no index vocabulary to look identifiers up in"))
            return queries
        found = identifiers_in(text, self.identifiers)
        if not found:
            trace.append(TraceStep(move="exact_lookup", status="skipped", reason="no identifier the index holds", latency_ms=_ms(started)))
            return queries
        exact = exact_queries(found)
        said = ", ".join(f"{typed!r} (the index's {form.upper()})" for typed, form in found)
        trace.append(TraceStep(
            move="exact_lookup", status="ran", reason=f"identifiers the index holds: {said}",
            changed="also searching the chunks that hold " + ", ".join(q.text for q in exact),
            latency_ms=_ms(started), details={"identifiers": {typed: form.upper() for typed, form in found}},
        ))
        return [*queries, *exact]

    def _similar(self, names: Sequence[str], queries: list[PlanQuery], stated: Where, details: dict[str, Any]) -> tuple[list[PlanQuery], Where]:
        """"like X (but cheaper)": X's catalog description searched next to the rest of the message,
        and X itself excluded (through the catalog link: its page and the articles about it)."""
        entities = [e for n in names if (e := self._by_name.get(n)) is not None]
        described = " ".join(e.description for e in entities[:_SIMILAR_MAX] if e.description)
        if described:
            queries = [*queries, PlanQuery(text=described, kind="similar")]
            details["similar_query"] = described
        link = self.settings.filters.catalog_link
        if link is not None and entities:
            values = tuple(dict.fromkeys(v for e in entities for v in (e.name, e.id)))
            stated = stated & Where(conditions=(NoneOf(field=link, values=values),))
            details["excluded"] = [e.name for e in entities]
        return queries, stated

    def _without_field(self, name: str) -> str:
        """What a filter on `name` does to a document that does not carry the field (for the trace)."""
        schema = self.settings.filters
        spec = schema.fields.get(name)
        if spec is None:
            return "dropped"
        if schema.catalog_link is not None and self.catalog is not None:
            return f"judged by the catalog entries its {schema.catalog_link!r} names; with none, {'kept' if spec.missing == 'keep' else 'dropped'}"
        return "kept" if spec.missing == "keep" else "dropped"

    def _spelling(
        self, queries: list[PlanQuery], action: Action, trace: list[TraceStep], checked: Spelling | None = None
    ) -> tuple[list[PlanQuery], Action]:
        """Corrections of the first query's text (`checked`: already worked out for that text)."""
        started = time.perf_counter()
        if self.speller is None:
            trace.append(TraceStep(move="spelling", status="skipped", reason="no index vocabulary to correct against"))
            return queries, action
        result = checked if checked is not None else self.speller.check(queries[0].text)
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

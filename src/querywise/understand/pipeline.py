"""Composes the moves into a plan. Moves never import each other; this module does.

Order (`MOVES`), and why:
0. limits, access - bounds on the input; access from the session only, before anything reads the message;
1. follow_up - a message that cannot stand alone is replaced by its standalone form (checked by
              the rewrite guard), so that routing and every later move see the whole question;
2. several_intents - asks for different routes: the first is planned, the rest left;
3. route    - rules, then the classifier behind its margin gate (reading the spelling-corrected copy);
4. third_party - someone else's account or data: ask for verification, search nothing;
5. llm_plan - the LLM tier's one call, when the gate needs one (see below);
6. retrieve - routes that do not search stop here (`Searches`);
7. filters, llm_filters - hard constraints move out of the text into validated filters (self-query);
8. spelling - a corrected query is searched next to the original, never instead of it;
              a near-miss identifier yields candidates to offer, never a silent choice;
9. exact_lookup - each identifier the index holds, searched in the chunks that hold it;
10. ambiguity - a mention with several readings whose answers differ: ask, assume or cover;
11. enrichments (LLM, off by default) - multi-query variants, HyDE, query2doc, step-back:
              searched next to the original, fused with RRF, never instead of it.
Every move adds a trace step saying whether it ran and why. `[understanding.off_in]` turns a move
off for some slices of traffic (`understand.slices`: follow-up or standalone, identifier or prose,
as the message shows them before any move runs); the step says which slice.

A move is an object (`understand.draft.Move`, one module each under `understand/moves/`): its
`name`, the `[understanding] moves` entries that switch it on, what it `requires` of the
deployment, whether it `applies` to the draft, and `run`. `MOVES` is their order; the loop in
`Understander.plan` writes the "turned off", "requires" and "does not apply" steps and the timing
once, and stops when a move says nothing is searched (`Draft.unsearched`).

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
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from querywise.catalog import Catalog
from querywise.clock import ms_since
from querywise.conditions import Where
from querywise.config import LLM_MOVES, Settings
from querywise.conversation import Turn
from querywise.embed import Embedder, embedder_for, for_queries
from querywise.files import InputError, read_jsonl
from querywise.index.lexical import Lexicon
from querywise.llm.factory import provider_from
from querywise.llm.provider import Provider
from querywise.plan import PlanQuery, QueryPlan, TraceStep
from querywise.text import PartNumbers
from querywise.understand.access import access_from_session
from querywise.understand.draft import Draft, Have, Move, Resources
from querywise.understand.filters import units
from querywise.understand.filters.missing import with_missing_policy
from querywise.understand.filters.money import DEFAULT_RATES
from querywise.understand.limits import within_limits
from querywise.understand.moves.ambiguity import Ambiguity
from querywise.understand.moves.enrich import HyDE, MultiQuery, Query2Doc, StepBack
from querywise.understand.moves.exact_lookup import ExactLookup
from querywise.understand.moves.filters import Filters
from querywise.understand.moves.follow_up import FollowUp
from querywise.understand.moves.llm_plan import LLMFilters, LLMPlan
from querywise.understand.moves.route import Route, Searches
from querywise.understand.moves.several_intents import SeveralIntents
from querywise.understand.moves.spelling import Spelling
from querywise.understand.moves.third_party import ThirdParty
from querywise.understand.routing.lookup import RouteLookup
from querywise.understand.routing.route import Router, load_examples
from querywise.understand.slices import message_slices
from querywise.understand.spelling import SpellChecker, query_log_counts
from querywise.understand.tier import LLMTier
from querywise.understand.visible import Visible

__all__ = ["MOVES", "Understander", "unable"]

# The moves in the order they run (see the module docstring for why this order).
MOVES: tuple[type[Move], ...] = (
    FollowUp, SeveralIntents, Route, ThirdParty, LLMPlan, Searches, Filters, LLMFilters, Spelling, ExactLookup, Ambiguity,
    MultiQuery, HyDE, Query2Doc, StepBack,
)
_OFF = "turned off in [understanding] moves"
_LLM_SWITCHES = frozenset(LLM_MOVES)  # an LLM move that is off leaves no step
_SEEN = 256  # accesses whose view of the deployment is kept (a catalog view builds its matcher once)


def _logged_messages(path: Path) -> Iterator[str]:
    """The messages of a query log (the plan log's lines, or any JSONL of {"message": ...})."""
    for line, row in read_jsonl(path):
        message = row.get("message")
        if not isinstance(message, str):
            raise InputError(path, line, 'a query log line needs a "message" string')
        yield message


def unable(have: Have) -> dict[str, str]:
    """Each switchable move a deployment with `have` cannot run, and why (an ablation skips them)."""
    return {switch: why for move in MOVES if (why := move.requires(have)) is not None for switch in move.switches}


class Understander:
    """Turns a message (plus conversation and session) into a `QueryPlan`.

    `lexicon` (an index's `Index.lexicon`) enables spelling and exact lookup; the catalog comes
    from the settings.

    >>> u = Understander(load_settings("querywise.toml"), lexicon=index.lexicon)   # doctest: +SKIP
    >>> u.plan("is hc-3417 in stock", session={"market": "eu"}).route              # doctest: +SKIP
    'exact_lookup'
    """

    def __init__(
        self, settings: Settings, *, embedder: Embedder | None = None, lexicon: Lexicon | None = None, provider: Provider | None = None,
        lookups: Mapping[str, RouteLookup] | None = None,
        visible: Visible | None = None,
    ) -> None:
        """`provider` overrides the `[llm]` provider of the settings (tests, demos, benchmarks);
        `lookups`: what routes answer from, by the name `[routing.routes] lookup` gives.
        `visible` (the index's `holds`) says whether a session's chunks hold a word: without it, a
        session with access constraints is offered no spelling correction and no identifier."""
        self.settings = settings
        self.embedder = embedder if embedder is not None else for_queries(embedder_for(settings))
        # The embedders made here hold their on-disk cache's SQLite connection: `close` closes them.
        self._made = [] if embedder is not None else [self.embedder]
        try:
            router_embedder = self.embedder
            if settings.routing.encoder is not None:  # a fine-tuned encoder routes; the index's embedder searches
                router_embedder = for_queries(embedder_for(settings, model_folder=settings.routing.encoder))
                self._made.append(router_embedder)
            llm_route = "llm_route" in settings.understanding.moves and (provider is not None or settings.llm.provider != "none")
            self.router = Router(settings.routing, load_examples(settings.routing), router_embedder, llm_tier=llm_route)
            catalog_path = settings.deployment.catalog
            self.catalog = Catalog.load(catalog_path) if catalog_path is not None else None
            catalog_parts = [p for e in self.catalog.entities for p in e.part_numbers] if self.catalog is not None else []
            self.part_numbers = PartNumbers(settings.understanding.part_numbers or PartNumbers.shapes(catalog_parts))
            spelling = settings.spelling
            log = query_log_counts(_logged_messages(spelling.query_log)) if spelling.query_log is not None else None
            self.speller = (SpellChecker.from_lexicon(lexicon, part_numbers=self.part_numbers, query_log=log, log_weight=spelling.log_weight)
                            if lexicon is not None else None)
            self.identifiers = self.speller.identifiers if self.speller is not None else {}  # for exact lookups
            if any(f.unit and f.unit.lower() not in DEFAULT_RATES for f in settings.filters.fields.values()):
                units.load(DEFAULT_RATES)  # pint's registry takes a second or two to build: at start-up, not on a message
            if provider is None and settings.llm.provider != "none":
                provider = provider_from(settings.llm)
            self.tier = LLMTier(settings, provider) if provider is not None else None
            self.resources = Resources(settings, self.embedder, self.router, catalog=self.catalog, speller=self.speller, tier=self.tier,
                                       part_numbers=self.part_numbers, lookups=dict(lookups or {}), visible=visible)
            self.moves = self._moves(self.resources)
            # The moves as each recent access sees the deployment (`Resources.seen_by`): made once per access, not per message
            self._seen: OrderedDict[str, tuple[Resources, tuple[Move, ...]]] = OrderedDict()
            self._seen_lock = threading.Lock()
            have = self.resources.have
            self._unable = {m.name: m.requires(have) for m in self.moves}
        except BaseException:
            # A bad file (catalog, examples, query log, scripted responses) fails after the
            # embedders were made: close them rather than leave them to the garbage collector.
            self.close_embedders()
            raise

    def unable(self) -> dict[str, str]:
        """Each switchable move this deployment cannot run, and why."""
        return unable(self.resources.have)

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
        message, turns = within_limits(message, history, self.settings.limits)  # [limits]: LimitError over one; oldest turns dropped
        access = access_from_session(session or {}, self.settings.access)
        resources, moves = self._seen_by(access)
        if self.tier is not None:
            self.tier.start_request()  # every LLM move of this message shares one deadline
        on = frozenset(self.settings.understanding.moves)
        off_for = self._off_for_slice(message, turns, on, resources.catalog)
        on -= off_for.keys()
        draft = Draft(
            message=message, history=tuple(turns), session=session or {}, today=today or dt.date.today(), on=on, access=access,
            text=message, whole=message, main=PlanQuery(text=message, kind="original"),
        )
        trace: list[TraceStep] = []
        for move in moves:
            if move.switches and not on & move.switches:
                if sliced := [off_for[s] for s in sorted(move.switches & off_for.keys())]:
                    trace.append(TraceStep(move=move.name, status="skipped", reason=f"turned off for the {sliced[0]} slice ([understanding.off_in])"))
                elif not move.switches <= _LLM_SWITCHES:
                    trace.append(TraceStep(move=move.name, status="skipped", reason=_OFF))
                continue
            if (why := self._unable[move.name] or move.applies(draft)) is not None:
                trace.append(TraceStep(move=move.name, status="skipped", reason=why))
                continue
            started = time.perf_counter()
            draft, steps = move.run(draft)
            spent = ms_since(started)
            trace += [s if s.latency_ms or s.llm is not None else s.model_copy(update={"latency_ms": spent}) for s in steps]
            if draft.unsearched is not None:
                trace.append(TraceStep(move="retrieve", status="skipped", reason=draft.unsearched))
                break
        if self.tier is not None:
            self.tier.budget.record_request(used_llm=draft.llm.used or any(s.llm_calls or (s.llm and s.llm.cache == "hit") for s in trace))
        return self._plan(draft, trace, resources.catalog)

    @staticmethod
    def _moves(resources: Resources) -> tuple[Move, ...]:
        return tuple(m(resources) for m in MOVES)  # type: ignore[call-arg]  # every move takes its resources

    def _seen_by(self, access: Where) -> tuple[Resources, tuple[Move, ...]]:
        """The resources and moves of a session with `access` (the deployment's own without access)."""
        if not access:
            return self.resources, self.moves
        key = access.model_dump_json()
        with self._seen_lock:
            if (seen := self._seen.get(key)) is not None:
                self._seen.move_to_end(key)
                return seen
        resources = self.resources.seen_by(access)
        seen = resources, self._moves(resources)
        with self._seen_lock:
            self._seen[key] = seen
            while len(self._seen) > _SEEN:
                self._seen.popitem(last=False)
        return seen

    def _off_for_slice(self, message: str, turns: Sequence[str | Turn], on: frozenset[str], catalog: Catalog | None) -> dict[str, str]:
        """Each switch that is on but `[understanding.off_in]` turns off for a slice this message is in, with that slice."""
        off_in = self.settings.understanding.off_in
        if not off_in.keys() & on:
            return {}
        slices = message_slices(message, turns, catalog=catalog)
        return {switch: hit[0] for switch, where in off_in.items() if switch in on and (hit := [s for s in where if s in slices])}

    def _plan(self, draft: Draft, trace: list[TraceStep], catalog: Catalog | None) -> QueryPlan:
        left = list(draft.left)
        if draft.unsearched is not None:
            return QueryPlan(message=draft.message, route=draft.route, access=draft.access, action=draft.action, trace=trace, left=left,
                             unsearched=draft.unsearched)
        # Documents without a filter's field: the [filters] policy, executed by the engine.
        filters, inferred = (with_missing_policy(w, self.settings.filters, catalog) for w in (draft.filters, draft.inferred))
        return QueryPlan(
            message=draft.message, route=draft.route, queries=draft.queries, filters=filters, inferred_filters=inferred,
            access=draft.access, action=draft.action, trace=trace, left=left, readings=draft.readings,
        )

    def close(self) -> None:
        """Close the LLM provider's connections, if any, and the embedders made here."""
        if self.tier is not None:
            self.tier.close()
        self.close_embedders()

    def close_embedders(self) -> None:
        """Close the embedders made here (not a given one): their on-disk cache's SQLite connection."""
        for made in self._made:
            if (close := getattr(made, "close", None)) is not None:
                close()

"""What the moves pass along: the deployment's resources, the plan being drafted, and the `Move`
protocol every move implements.

A `Draft` is frozen: a move returns a new one (`dataclasses.replace`). It names what the plan's
list of queries used to say by position or by comparing texts: the main query (`main`, which the
filters move may replace by its semantic form and the reranker reads), the queries searched beside
it, whether the spelling check already ran on the text (`spelled`), and why nothing is searched
(`unsearched`, which `execute` reads from the plan).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import ClassVar, Protocol

from querywise.catalog import Catalog, Entity
from querywise.conditions import Where
from querywise.config import Settings
from querywise.conversation import Turn
from querywise.embed import Embedder
from querywise.plan import Action, Answer, LeftAsk, PlanQuery, QueryKind, Readings, TraceStep
from querywise.text import PartNumbers
from querywise.understand.followup.move import PointerReading
from querywise.understand.llm_plan import PlanOutcome
from querywise.understand.routing.lookup import RouteLookup
from querywise.understand.routing.route import RouteDecision, Router
from querywise.understand.spelling import Spelling
from querywise.understand.tier import LLMTier
from querywise.understand.visible import SessionSpeller, Speller, Visible, catalog_view

__all__ = ["Draft", "Have", "LLMState", "Move", "Resources", "Spelled"]


@dataclass(frozen=True)
class Have:
    """What a deployment has that a move may require: read by `Move.requires`, by the pipeline and
    by an ablation, which skips a move that cannot act instead of running a copy of the baseline."""

    settings: Settings
    catalog: bool = False
    vocabulary: bool = False  # the index's words (spelling)
    identifiers: bool = False  # the index's code-like tokens (exact lookup)
    llm: bool = False  # an LLM provider

    @classmethod
    def of_settings(cls, settings: Settings) -> Have:
        """What a deployment of `settings` has with an index that holds identifiers."""
        return cls(settings, catalog=settings.deployment.catalog is not None, vocabulary=True, identifiers=True,
                   llm=settings.llm.provider != "none")


@dataclass(frozen=True)
class Resources:
    """What a deployment gives its moves: settings, the embedder, the router, and the optional
    resources a move may require (a catalog, the index's vocabulary, an LLM tier)."""

    settings: Settings
    embedder: Embedder
    router: Router
    catalog: Catalog | None = None
    speller: Speller | None = None  # from the index's vocabulary: spelling and exact lookup
    tier: LLMTier | None = None
    part_numbers: PartNumbers = field(default_factory=lambda: PartNumbers(()))  # what the deployment calls one
    lookups: Mapping[str, RouteLookup] = field(default_factory=dict)  # what routes answer from, by name ([routing.routes] lookup)
    # Whether a chunk an access filter lets through holds a word (the index's `holds`); None: a
    # session with access constraints is offered no correction, candidate or identifier
    visible: Visible | None = None

    def seen_by(self, access: Where) -> Resources:
        """These resources as a session with `access` may see them: its catalog entries, and the
        index's words and identifiers only where its chunks hold them (`understand.visible`)."""
        if not access:
            return self
        return replace(self, catalog=catalog_view(self.catalog, access) if self.catalog is not None else None,
                       speller=SessionSpeller(self.speller, access, self.visible) if self.speller is not None else None)

    @property
    def have(self) -> Have:
        speller = self.speller
        return Have(self.settings, catalog=self.catalog is not None, vocabulary=speller is not None,
                    identifiers=speller is not None and bool(speller.identifiers), llm=self.tier is not None)

    @cached_property  # read per message: worked out once
    def by_name(self) -> Mapping[str, Entity]:
        return {e.name: e for e in self.catalog.entities} if self.catalog is not None else {}

    @cached_property
    def search_routes(self) -> set[str]:
        return {r.name for r in self.settings.routing.routes if r.search}


@dataclass(frozen=True)
class Spelled:
    """The spelling check of `text`, made once (routing reads the corrected copy first)."""

    text: str
    result: Spelling


@dataclass(frozen=True)
class LLMState:
    """What the plan call left for later moves."""

    used: bool = False  # an LLM call was attempted (or served from the cache)
    filters: PlanOutcome | None = None  # the plan call's answer, when filters were asked for
    closed: bool = False  # the call failed on a fail-closed route: ask, search nothing


@dataclass(frozen=True)
class Draft:
    """The plan as the moves build it."""

    message: str  # as typed (within [limits])
    history: tuple[Turn, ...]
    session: Mapping[str, str]
    today: dt.date
    on: frozenset[str]  # the [understanding] moves that are on
    access: Where
    text: str  # the question as understood: the message, its standalone form, or its first ask
    main: PlanQuery  # the main query: `text`, or the semantic form the filters leave of it
    whole: str = ""  # the text before several intents cut it (the third-party rule reads it all)
    parts: tuple[PlanQuery, ...] = ()  # the other asks of a message with several, and the whole of an unsure cut
    beside: tuple[PlanQuery, ...] = ()  # the follow-up's hedge; an LLM rewrite supersedes it
    similar: tuple[PlanQuery, ...] = ()  # "like X": X's description
    added: tuple[PlanQuery, ...] = ()  # spelling, exact lookups and enrichments, in that order
    needs_context: bool | None = None  # None: the follow-up gate has not read the message
    left: tuple[LeftAsk, ...] = ()
    decision: RouteDecision | None = None
    route: str = ""
    spelled: Spelled | None = None
    filters: Where = field(default_factory=Where)
    inferred: Where = field(default_factory=Where)
    action: Action = field(default_factory=Answer)
    llm: LLMState = field(default_factory=LLMState)
    unsearched: str | None = None  # why nothing is searched: the moves after stop
    readings: Readings | None = None  # readings that may differ (the ambiguity move), for the generator
    pointed: tuple[PointerReading, ...] = ()  # a pointer's candidates (the follow-up move): the ambiguity move covers or asks

    @property
    def kind(self) -> QueryKind:
        return self.main.kind

    @property
    def queries(self) -> list[PlanQuery]:
        """What the plan searches, the main query first."""
        return [self.main, *self.parts, *self.similar, *self.beside, *self.added]


class Move(Protocol):
    """One move of the pipeline. `name` is its trace step; `switches` the `[understanding] moves`
    entries that turn it on (empty: it always runs). The pipeline's loop writes the "turned off",
    "requires" and "does not apply" steps and the timing; `run` does the move's work."""

    name: ClassVar[str]
    switches: ClassVar[frozenset[str]]

    @classmethod
    def requires(cls, have: Have) -> str | None:
        """Why a deployment with `have` cannot run this move (no catalog, no index vocabulary, no
        LLM provider...), or None."""
        ...

    def applies(self, draft: Draft) -> str | None:
        """None when the move acts on `draft`; else why not (the trace's "skipped" reason)."""
        ...

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        """The move on `draft`: the new draft and its trace steps."""
        ...

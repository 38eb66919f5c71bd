"""`[routing]`, `[filters]`, `[access]`, `[understanding]` and `[limits]`: how a message is understood."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from pydantic import Field, model_validator

from querywise.config._section import _Section, check_pattern


class RouteSpec(_Section):
    name: str = Field(min_length=1)  # what plans and the trace call the route
    description: str = ""  # for people and the LLM router's prompt
    examples: list[str] = Field(default_factory=list)  # messages that belong here: the classifier's training data
    search: bool = False  # does this route run retrieval?
    # A lookup the deployment wires for this route (`QueryWise(..., lookups={name: fn})`, e.g. the
    # account's orders). A route that does not search answers from it; when it finds nothing or is
    # not wired, the route falls back (`fallback`) and the plan's trace says so.
    lookup: str | None = None
    # Where a route that does not search goes when its lookup finds nothing or is not wired:
    # "search" (None: the default of a lookup route) or "none" (None: the default of any other).
    fallback: Literal["search", "none"] | None = None

    @property
    def falls_back_to_search(self) -> bool:
        return (self.fallback or ("search" if self.lookup else "none")) == "search"


class IdentifierRule(_Section):
    """A message matching `pattern` (always case-insensitive) goes to `route`."""

    pattern: str  # a regular expression, matched case-insensitively anywhere in the message
    route: str  # a declared route

    @model_validator(mode="after")
    def _compiles(self) -> IdentifierRule:
        check_pattern(self.pattern, "pattern")
        return self


class RoutingSettings(_Section):
    routes: list[RouteSpec] = Field(default_factory=list)  # the routes, each a [[routing.routes]] table
    examples_file: Path | None = None  # JSONL {"text", "label"}, added to the inline examples
    rules: list[IdentifierRule] = Field(default_factory=list)  # rules tried before the classifier, in order, each a [[routing.rules]] table
    # "centroid" (nearest route centroid), "trained" (logistic regression) or "auto" (trained from 20 examples a route)
    classifier: Literal["centroid", "trained", "auto"] = "auto"
    # An encoder fine-tuned on the examples (`querywise router-train`); None = the index's embedder.
    encoder: Path | None = None
    min_margin: float = Field(0.05, ge=0)
    # Below this in-scope signal a message is out of scope. None: no such gate. Choose it on
    # labelled data (`querywise router-eval --val`), never by guessing.
    min_in_scope: float | None = None
    # The operating point `querywise router-eval` chooses min_margin and min_in_scope for on
    # validation data: answered accuracy at least min_answered (None: no floor) with at most
    # max_deferred of the messages deferred to the unsure tier. Read offline, never per message.
    min_answered: float | None = Field(0.97, ge=0, le=1)
    max_deferred: float = Field(0.10, ge=0, le=1)
    # ... and at least this share of the out-of-scope validation messages kept out, whatever else the
    # point misses (0: no floor): an infeasible point never drops the out-of-scope gate silently.
    min_oos_recall: float = Field(0.5, ge=0, le=1)
    default_route: str | None = None  # applied when the classifier is unsure and no LLM tier is set
    out_of_scope_route: str | None = None  # where a message the in-scope gate rejects goes; None: the default route
    high_stakes: list[str] = Field(default_factory=list)  # fail closed (ask) on error

    def route_references(self) -> list[tuple[str, str]]:
        """(config key, route name) for every setting here that names a route."""
        refs = [(f"routing.rules[{i}].route", r.route) for i, r in enumerate(self.rules)]
        refs += [(key, name) for key, name in (("routing.default_route", self.default_route), ("routing.out_of_scope_route", self.out_of_scope_route)) if name is not None]
        return refs + [(f"routing.high_stakes[{i}]", r) for i, r in enumerate(self.high_stakes)]

    @model_validator(mode="after")
    def _routes_declared(self) -> RoutingSettings:
        names = [r.name for r in self.routes]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            raise ValueError(f"routing.routes: route {doubled[0]!r} is declared more than once")
        if names or self.examples_file is None:  # else the examples file declares them: load_settings reads it
            check_routes_declared(set(names), self.route_references())
        return self


def check_routes_declared(declared: set[str], references: list[tuple[str, str]], *, source: str = "[[routing.routes]]") -> None:
    """Raise ValueError for the first reference to a route that is not declared.

    A deployment's routes are declared by `[[routing.routes]]`; when it lists none, by the
    labels of `routing.examples_file` (`source` then names it); with neither, no route exists
    and every message goes to the one implicit search route, so nothing may name a route.
    """
    for key, name in references:
        if name in declared:
            continue
        if declared:
            raise ValueError(f"{key}: unknown route {name!r} (routes declared by {source}: {', '.join(sorted(declared))})")
        raise ValueError(f"{key}: unknown route {name!r}: no route is declared (add [[routing.routes]] or a routing.examples_file)")


class FilterField(_Section):
    """One filterable field of the index payload, as the filter validator sees it."""

    # number / integer (ranges), enum (one of `values`), keyword (any string), list (the payload holds a list)
    type: Literal["number", "integer", "enum", "keyword", "list"]
    values: list[str] | None = None  # allowed values (enum); or taken from the catalog
    catalog_field: str | None = None  # catalog key whose values are this field's enum
    min: float | None = None  # values below it are refused by the filter validator
    max: float | None = None  # values above it are refused by the filter validator
    unit: str | None = None  # e.g. "usd": amounts in other units are converted
    aliases: list[str] = Field(default_factory=list)  # words users say for it ("price", "cost")
    # What a filter on this field does to a document without it (a help article has no price):
    # "keep" it (the default: on a mixed corpus only some document types carry a field), or
    # "drop" it. With `[filters] catalog_link`, a document that links to catalog entries is judged
    # by their values instead. Executed inside the engine (is_empty), never after it.
    missing: Literal["keep", "drop"] = "keep"


class FilterSettings(_Section):
    fields: dict[str, FilterField] = Field(default_factory=dict)  # payload field name -> its [filters.fields.NAME] table
    # The payload field that names the catalog entries a document is about (names or ids, e.g.
    # "products"): a filter on a catalog field then applies to a document without that field
    # through its entries ("under $300" keeps the guide to a $249 product). None: no link.
    catalog_link: str | None = None


class AccessSettings(_Section):
    """Session fields that become access constraints, AND-ed into every search.

    Every field is required: a session without it (or with an empty value) searches nothing.
    A field listed in `optional` may be absent, and then constrains nothing."""

    fields: dict[str, str] = Field(default_factory=dict)  # session key -> payload field
    optional: list[str] = Field(default_factory=list)  # session keys that may be absent
    # The session key that holds the user's own account id: a message naming another account id
    # is about someone else's account (understand.third_party), and fails closed.
    account: str | None = None
    # A session key (not an access field: it constrains no search) whose value lists the catalog
    # entries the account holds, by name or id, comma-separated: a reading it settles is not asked
    # about ("which term deposit?" when the account holds one). Read by the ambiguity move only.
    holdings: str | None = None
    # What the plan asks when a message is about another person's account or data.
    third_party_question: str = (
        "I can only help with the account you are signed in to. If you manage this account for someone, "
        "please ask them to contact us, or verify that you are authorised to act for them."
    )

    @model_validator(mode="after")
    def _optional_are_fields(self) -> AccessSettings:
        unknown = [k for k in self.optional if k not in self.fields]
        if unknown:
            raise ValueError(f"optional names no access field: {', '.join(unknown)} (fields: {', '.join(self.fields) or 'none'})")
        if self.account is not None and self.account not in self.fields:
            raise ValueError(f"account names no access field: {self.account!r} (fields: {', '.join(self.fields) or 'none'})")
        if self.holdings is not None and self.holdings in self.fields:
            raise ValueError(f"holdings is an access field: {self.holdings!r} would constrain every search; name a session key of its own")
        return self


# LLM moves (off by default; each needs an `[llm]` provider): the three plan moves share one
# structured call per message; the enrichments are one call each, searched next to the original.
LLMMove = Literal["llm_rewrite", "llm_route", "llm_filters", "multi_query", "hyde", "query2doc", "step_back"]
DeterministicMove = Literal["follow_up", "several_intents", "filters", "spelling", "exact_lookup", "ambiguity"]
Move = Literal[DeterministicMove, LLMMove]  # flattens: get_args(Move) lists every move
LLM_MOVES: tuple[str, ...] = get_args(LLMMove)


# The slices of traffic a plan can tell before any move runs (see querywise.understand.slices).
PlanSlice = Literal["follow_up", "standalone", "weak_cue", "identifier", "prose"]


def _default_moves() -> list[Move]:
    return ["follow_up", "several_intents", "filters", "spelling", "exact_lookup", "ambiguity"]


class UnderstandingSettings(_Section):
    """Which moves run. A move that is off still leaves a trace step saying so, which is what
    an ablation compares (LLM moves leave none while no `[llm]` provider is configured)."""

    moves: list[Move] = Field(default_factory=_default_moves)  # the moves that run, in the pipeline's own order; [] = pass-through
    # What this deployment calls a part number: regular expressions a whole token (or its key:
    # upper case, no hyphens or spaces) matches, case aside. Empty: the shapes of the catalog's
    # part numbers; with no catalog either, none. Only a part number gets the "not a part number
    # we know" question and an exact lookup; another code the index holds (a gene, a model name)
    # is searched as the text it is (see understand.exact for the measurement).
    part_numbers: list[str] = Field(default_factory=list)
    # A flagged message the learnt topic-shift check (understand/followup/shift.py, trained by
    # bench/training/topic_shift.py) takes to open a new subject is searched as typed, with no standalone
    # form, and under its threshold its chance hedges the form's weight; it reads the message's
    # similarity to the last `topic_window` turns (and to the last answer's sentences: shift.compared_texts).
    # false turns it off (and the hedge with it).
    topic_shift: bool = True
    topic_window: int = Field(default=1, ge=1, le=20)
    # The learnt choice of the words a follow-up's search carries (understand/followup/choice.py and words.py,
    # trained by bench/training/phrase_choice.py): "answers" where the history holds an assistant's answer,
    # "always", or "off" (the rules' form alone). Each training file left out in turn, it raises the lower of
    # added-term recall and precision on rows whose history holds an answer (0.394 / 0.498 -> 0.481 / 0.510; both >= 0.50 on
    # 11 of 24 files, rules 8) and lowers them on rows with user turns only (0.723 / 0.656 -> 0.578 / 0.723),
    # hence the default (bench/results/phrase_choice.md).
    phrase_choice: Literal["off", "answers", "always"] = "answers"
    # A move switched off for some slices of traffic (`[understanding.off_in]`, e.g.
    # `spelling = ["identifier"]`): on a message in one of them it does not run, and the trace says
    # so. `querywise tune --moves` writes it from paired deltas on labelled cases.
    off_in: dict[Move, list[PlanSlice]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _part_numbers_compile(self) -> UnderstandingSettings:
        for i, pattern in enumerate(self.part_numbers):
            check_pattern(pattern, f"part_numbers[{i}]")
        return self



class SpellingSettings(_Section):
    """What the spelling move learns beyond the index's own words."""

    # Past messages (JSONL: one {"message": ...} a line, as the plan log writes them): the words
    # users type weigh in beside the corpus's (the noisy channel's P(c); `log_weight` of it).
    query_log: Path | None = None
    log_weight: float = Field(0.3, ge=0, lt=1)


class LimitsSettings(_Section):
    """Bounds on one request, so that its time is bounded (every move is linear in its input,
    and these bound the input). A message or a history turn over its limit is an error
    (`understand.limits.LimitError`, an `InputError`); history beyond `max_history_turns` is
    dropped, oldest first: the moves weigh the conversation by recency (the follow-up reads the
    last turn; ambiguity halves a turn's weight for each turn back), and a long conversation is
    ordinary traffic, not a mistake. A rewrite (the LLM's or the deterministic one) longer than
    `max_rewrite_chars` is not read by the guard but rejected."""

    max_message_chars: int = Field(4_000, ge=1, le=1_000_000)  # a longer message is an error
    max_turn_chars: int = Field(4_000, ge=1, le=1_000_000)  # a longer history turn is an error
    max_history_turns: int = Field(20, ge=0, le=10_000)  # the most recent ones are kept
    max_rewrite_chars: int = Field(10_000, ge=1, le=1_000_000)  # a longer standalone rewrite is rejected unread
    max_record_chars: int = Field(1_000_000, ge=1, le=1_000_000_000)  # a corpus file record (JSONL, CSV); folders are chunked


class AmbiguitySettings(_Section):
    """`[ambiguity]`: what the ask / assume / cover decision weighs, in seconds of the user's time
    (assumptions to measure, not facts), and where the readings' history comes from."""

    cost_ask: float = Field(8.0, ge=0)  # reading a question and typing one word, plus a round trip
    cost_cover: float = Field(5.0, ge=0)  # reading a second short answer
    cost_wrong: float = Field(30.0, ge=0)  # noticing a wrong answer and asking again
    cost_wrong_high_stakes: float = Field(300.0, ge=0)  # the same on a [routing] high_stakes route
    max_cover_readings: int = Field(3, ge=2)  # cover answers this many readings side by side at most
    # The plan log whose confirmed readings give p_top (None: [deployment] plan_log); how many
    # confirmations of a mention it takes before they replace the name prior.
    history: Path | None = None
    min_confirmed: int = Field(5, ge=1)


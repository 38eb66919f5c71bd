"""Ambiguous mentions: link them to the catalog, weigh the readings, and choose what to do.

Three steps, each a pure function, and one composition:

- `link_mentions(message, history, catalog)` finds the product mentions of a message, exact names
  and aliases first, then partial mentions ("X2" -> Aero X2, Aero X2 Pro), and gives every reading
  a probability: a candidate the conversation named gets most of the mass (`HISTORY_MASS`); else a
  prior that favours the candidate whose name the mention leaves fewest words of unsaid.
- `decide(p_top, cost_wrong=..., cost_ask=..., cost_cover=..., cover_possible=...)` compares the
  expected cost in seconds of user time of assuming, asking and covering, and takes the cheapest.
- `build_action(readings, decision)` words the plan's action: one question answerable in a word,
  a stated assumption, or every reading side by side.
- `disambiguate(...)` runs the three for the plan and fails closed (asks) on high-stakes routes.
  Two things replace the name prior when they know better: the plan log's history of which reading
  users confirmed for the same mention (`confirmed_readings`, from `min_confirmed` confirmations
  on), and the session's holdings (a reading the account holds settles the question: not asked).

    >>> decide(0.95, cost_wrong=30, cost_ask=8, cost_cover=5, cover_possible=True).choice
    'assume'
"""

from __future__ import annotations

import re
import threading
import weakref
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from querywise.catalog import Catalog, Entity
from querywise.plan import Action, Answer, Ask, Assume, Cover, QueryPlan, Readings, TraceStep
from querywise.text import SpanSet, analysed_history, analysed_part, analyze, normalize

__all__ = [
    "HISTORY_MASS",
    "MAX_COVER_READINGS",
    "ConfirmedReadings",
    "Costs",
    "Decision",
    "Disambiguation",
    "LinkedMention",
    "Reading",
    "build_action",
    "confirmed_readings",
    "cover_possible",
    "decide",
    "disambiguate",
    "link_mentions",
]

Choice = Literal["assume", "ask", "cover", "answer"]

# Share of the probability that candidates named earlier in the conversation get together (split by
# recency: each turn further back counts half as much). The other candidates share the rest.
HISTORY_MASS = 0.9
RECENCY_DECAY = 0.5
# Prior without history: each word of a candidate's name the mention leaves unsaid halves its weight
# ("X2" -> Aero X2 2/3, Aero X2 Pro 1/3: who means the Pro tends to say Pro). Readings that match
# equally well (a shared alias such as "S7") are equally likely.
UNSAID_DECAY = 0.5
# Covering answers every reading side by side: only for a few readings with short answers.
MAX_COVER_READINGS = 3
# On equal expected cost, prefer the option that cannot give a wrong answer.
_TIE_ORDER: tuple[Choice, ...] = ("cover", "ask", "assume")

_TOKEN = re.compile(r"[a-z0-9]+")
_NAMED_EARLIER = "named earlier in the conversation"  # a reading's reason: the conversation's evidence
_JOINER = re.compile(r"[\s-]*")  # what may separate the words of one partial mention
_LETTER, _DIGIT = re.compile(r"[a-z]"), re.compile(r"\d")
# Words that tell model variants apart but name nothing alone.
_VARIANT_WORDS = frozenset({"pro", "max", "mini", "lite", "plus", "sport", "ultra", "go", "air", "se", "new", "one"})
# Questions whose answers are procedures: covering several of them doubles a long read.
_LONG_ANSWER = re.compile(
    r"\b(?:how\s+(?:do|can|should|would)\s+(?:i|you|we)|how\s+to|steps?|set\s*up|install\w*|pair(?:ing)?|"
    r"reset|troubleshoot\w*|explain|walk\s+me|guide|instructions?)\b",
    re.I,
)
# What a question asks about, by fragment of a catalog field's name.
_FIELD_CUES = (
    ("price", r"\b(?:prices?|costs?|how\s+much|cheap\w*|expensive|pay)\b"),
    ("release", r"\b(?:released?|release\s+date|launch\w*|came\s+out|come\s+out|what\s+year|how\s+old)\b"),
    ("year", r"\b(?:what\s+year|how\s+old)\b"),
    ("brand", r"\b(?:brand|who\s+makes|made\s+by|manufacturer)\b"),
    ("categor", r"\b(?:what\s+(?:kind|type|sort)\s+of|category)\b"),
    ("market", r"\b(?:sold\s+in|available\s+in|markets?|ship\s+to)\b"),
)


@dataclass(frozen=True)
class Reading:
    """One entity a mention may mean, and how likely."""

    entity: Entity
    probability: float
    reason: str

    @property
    def name(self) -> str:
        return self.entity.name


@dataclass(frozen=True)
class LinkedMention:
    """A span of the message and its readings, most probable first."""

    text: str
    start: int
    end: int
    readings: tuple[Reading, ...]
    partial: bool  # linked as words inside names ("X2"), not as a whole name or alias
    answers_differ: bool
    differing_fields: tuple[str, ...] = ()  # catalog fields asked about whose values differ

    @property
    def ambiguous(self) -> bool:
        return len(self.readings) > 1

    @property
    def top(self) -> Reading:
        return self.readings[0]

    @property
    def p_top(self) -> float:
        return self.readings[0].probability


@dataclass(frozen=True)
class Decision:
    """The cheapest option, and the expected cost of each, in seconds of the user's time."""

    choice: Choice
    costs: dict[str, float]
    reason: str


@dataclass(frozen=True)
class Costs:
    """Seconds of user time. Assumptions to measure, not facts: reading a question and typing one
    word plus a round trip (ask), reading a second short answer (cover), noticing a wrong answer and
    asking again (wrong); on a high-stakes route a wrong answer costs far more."""

    ask: float = 8.0
    cover: float = 5.0
    wrong: float = 30.0
    wrong_high_stakes: float = 300.0


@dataclass(frozen=True)
class Disambiguation:
    """What the ambiguity move decided for one message."""

    action: Action
    mentions: tuple[LinkedMention, ...]
    decision: Decision | None
    target: LinkedMention | None  # the mention the action is about
    reason: str
    failed: bool = False
    settled: Reading | None = None  # the one reading the session's holdings leave

    @property
    def chosen(self) -> Reading | None:
        """The reading searched for alone: the one assumed, or the one the session settles."""
        if self.settled is not None:
            return self.settled
        return self.target.top if self.target is not None and isinstance(self.action, Assume) else None

    def readings_note(self) -> Readings | None:
        """The plan's "readings that may differ", for the generator."""
        if self.target is None:
            return None
        chosen = self.chosen
        return Readings(mention=self.target.text, readings=[r.name for r in self.target.readings],
                        chosen=chosen.name if chosen is not None else None, why=self.reason)

    def trace_step(self, *, latency_ms: float = 0.0) -> TraceStep:
        details: dict[str, Any] = {"choice": self.action.type}
        if self.target is not None:
            details["mention"] = self.target.text
            details["readings"] = [[r.name, round(r.probability, 3)] for r in self.target.readings]
        if self.decision is not None:
            details["costs"] = dict(self.decision.costs)
        status = "fallback" if self.failed else ("ran" if self.target is not None else "skipped")
        changed = None if isinstance(self.action, Answer) else f"action {self.action.type}"
        return TraceStep(move="ambiguity", status=status, reason=self.reason, changed=changed,
                         latency_ms=latency_ms, details=details)


# --------------------------------------------------------------------------------------------
# Linking
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    entity: Entity
    unsaid: int  # words of its closest name or alias the mention leaves out


@dataclass(frozen=True)
class _Found:
    text: str
    start: int
    end: int
    candidates: tuple[_Candidate, ...]
    partial: bool


_MEMO_LIMIT = 50_000  # answers kept per catalog (word runs seen); past it the memo starts over


class _Names:
    """Token sequences of every name and alias, and the words that name nothing alone."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.forms = [
            (e, tuple(_TOKEN.findall(normalize(form))))
            for e in catalog.entities
            for form in (e.name, *e.aliases)
        ]
        self.vocabulary = {t for _, tokens in self.forms for t in tokens}
        generic = set(_VARIANT_WORDS)
        for e in catalog.entities:
            generic.update(re.findall(r"\b[a-z][a-z0-9]*\b", e.description))  # words the prose uses in lower case
            for value in e.fields.values():
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, str):
                        generic.update(_TOKEN.findall(normalize(item)))  # brand, category, market values
        self.generic = generic
        # The forms that hold each word (in catalog order), and answers already worked out: a
        # long message repeats its words, and each answer depends on the words alone.
        self.holding: dict[str, list[tuple[Entity, tuple[str, ...]]]] = {}
        for e, tokens in self.forms:
            for t in dict.fromkeys(tokens):
                self.holding.setdefault(t, []).append((e, tokens))
        self._containing: dict[tuple[str, ...], tuple[_Candidate, ...]] = {}
        self._distinctive: dict[tuple[str, ...], bool] = {}

    def containing(self, seq: tuple[str, ...]) -> tuple[_Candidate, ...]:
        """Entities with a name or alias that contains `seq` as a run of words."""
        if (known := self._containing.get(seq)) is not None:
            return known
        best: dict[str, _Candidate] = {}
        n = len(seq)
        for e, tokens in self.holding.get(seq[0], []) if seq else self.forms:
            if any(tokens[i : i + n] == seq for i in range(len(tokens) - n + 1)):
                unsaid = len(tokens) - n
                if e.id not in best or unsaid < best[e.id].unsaid:
                    best[e.id] = _Candidate(e, unsaid)
        if len(self._containing) >= _MEMO_LIMIT:  # shared by a server's requests: bounded
            self._containing.clear()
        found = self._containing[seq] = tuple(best.values())
        return found

    def distinctive(self, seq: tuple[str, ...]) -> bool:
        """A model code (letters and digits, "x2") or a word that only names things ("solace")."""
        if (known := self._distinctive.get(seq)) is None:
            if len(self._distinctive) >= _MEMO_LIMIT:
                self._distinctive.clear()
            known = self._distinctive[seq] = any(
                (_LETTER.search(t) and _DIGIT.search(t))
                or (len(t) > 1 and not t.isdigit() and t not in self.generic and analyze(t, stem=False))
                for t in seq
            )
        return known

    def find(self, text: str) -> list[_Found]:
        """Exact mentions (longest name first), then partial ones in the words left over."""
        exact: dict[int, tuple[_Candidate, ...]] = {}  # by the catalog's entity tuple of a name (one per form)
        found = []
        for m in self.catalog.mentions(text):
            if (candidates := exact.get(id(m.entities))) is None:
                candidates = exact[id(m.entities)] = tuple(_Candidate(e, 0) for e in m.entities)
            found.append(_Found(m.text, m.start, m.end, candidates, partial=False))
        folded = normalize(text)
        if len(folded) != len(text):
            folded = text.lower()
        tokens = [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(folded)]
        taken = SpanSet()
        for f in found:
            taken.add(f.start, f.end)
        i = 0
        while i < len(tokens):
            if tokens[i][0] not in self.vocabulary:  # no name holds the word: nothing starts here
                i += 1
                continue
            best: tuple[int, tuple[_Candidate, ...]] | None = None
            for j in range(i + 1, len(tokens) + 1):
                _, start, end = tokens[j - 1]
                if not taken.free(start, end) or (j - 1 > i and not _JOINER.fullmatch(folded, tokens[j - 2][2], start)):
                    break
                candidates = self.containing(tuple(t for t, _, _ in tokens[i:j]))
                if not candidates:
                    break
                best = (j, candidates)
            if best is not None and self.distinctive(tuple(t for t, _, _ in tokens[i : best[0]])):
                start, end = tokens[i][1], tokens[best[0] - 1][2]
                found.append(_Found(text[start:end], start, end, best[1], partial=True))
                i = best[0]
            else:
                i += 1
        return sorted(found, key=lambda f: f.start)


_NAMES: weakref.WeakKeyDictionary[Catalog, _Names] = weakref.WeakKeyDictionary()
_NAMES_LOCK = threading.Lock()


def _names_of(catalog: Catalog) -> _Names:
    """The catalog's `_Names`, built once per catalog (a catalog is not changed after it is made):
    building it costs more than linking a message (~1.2 ms of a 2.5 ms plan on the demo). Its
    memo of answers only grows with words seen, each answer a function of the words alone."""
    with _NAMES_LOCK:
        names = _NAMES.get(catalog)
        if names is None:
            names = _NAMES[catalog] = _Names(catalog)
        return names


def link_mentions(
    message: str,
    history: Sequence[str],
    catalog: Catalog,
    *,
    field_words: Mapping[str, Sequence[str]] | None = None,
) -> list[LinkedMention]:
    """Every product mention of `message` with its readings, in reading order.

    `history` holds the earlier user turns, oldest first: a candidate named there (unambiguously)
    gets `HISTORY_MASS` of the probability. `field_words` adds words that ask about a catalog field
    (e.g. the filter schema's aliases: {"price_usd": ["price", "cost"]}).

    >>> cat = Catalog([Entity("1", "Aero X2"), Entity("2", "Aero X2 Pro")])
    >>> [(r.name, round(r.probability, 2)) for r in link_mentions("is the X2 waterproof?", [], cat)[0].readings]
    [('Aero X2', 0.67), ('Aero X2 Pro', 0.33)]
    """
    names = _names_of(catalog)
    named = _named_in(analysed_history(history), names)
    message = analysed_part(message)  # (mentions past it are not linked: bounded work at any length)
    asked = _asked_fields(message, catalog, field_words or {})
    out = []
    # By candidate tuple: `find` hands out one tuple per name or run of words, alive until the end.
    weighed: dict[int, tuple[tuple[Reading, ...], bool, tuple[str, ...]]] = {}
    for f in names.find(message):
        if id(f.candidates) not in weighed:  # the same candidates read the same way wherever they are
            readings = _weigh(f.candidates, named)
            entities = [r.entity for r in readings]
            differing = tuple(k for k in asked if len({repr(e.fields.get(k)) for e in entities}) > 1)
            # Asked about catalog fields: the answers differ when those values do. Asked about anything
            # else (warranty, battery): different products, so assume they differ.
            weighed[id(f.candidates)] = readings, (bool(differing) if asked else len(entities) > 1), differing
        readings, differ, differing = weighed[id(f.candidates)]
        out.append(LinkedMention(f.text, f.start, f.end, readings, f.partial, differ, differing))
    return out


def _named_in(history: Sequence[str], names: _Names) -> dict[str, float]:
    """Entity id -> recency-weighted count of the turns that named it (one entity per mention)."""
    weights: dict[str, float] = {}
    for back, turn in enumerate(reversed(history)):
        for f in names.find(turn):
            if len(f.candidates) == 1:
                key = f.candidates[0].entity.id
                weights[key] = weights.get(key, 0.0) + RECENCY_DECAY**back
    return weights


def _weigh(candidates: Sequence[_Candidate], named: Mapping[str, float]) -> tuple[Reading, ...]:
    least = min(c.unsaid for c in candidates)
    prior = {c.entity.id: UNSAID_DECAY ** (c.unsaid - least) for c in candidates}
    uniform = len(set(prior.values())) == 1
    in_history = [c for c in candidates if named.get(c.entity.id)]
    others = [c for c in candidates if not named.get(c.entity.id)]
    probabilities: dict[str, tuple[float, str]] = {}
    history_mass = (HISTORY_MASS if others else 1.0) if in_history else 0.0
    total_named = sum(named[c.entity.id] for c in in_history)
    for c in in_history:
        probabilities[c.entity.id] = (history_mass * named[c.entity.id] / total_named, _NAMED_EARLIER)
    total_prior = sum(prior[c.entity.id] for c in others)
    for c in others:
        if len(candidates) == 1:
            why = "the only candidate"
        elif uniform:
            why = f"uniform prior over {len(candidates)} candidates"
        else:
            why = f"prior: {c.unsaid} word(s) of the name unsaid"
        probabilities[c.entity.id] = ((1.0 - history_mass) * prior[c.entity.id] / total_prior, why)
    order = {c.entity.id: i for i, c in enumerate(candidates)}
    readings = [Reading(c.entity, *probabilities[c.entity.id]) for c in candidates]
    return tuple(sorted(readings, key=lambda r: (-r.probability, order[r.entity.id])))


def _asked_fields(message: str, catalog: Catalog, field_words: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    keys = list(dict.fromkeys(k for e in catalog.entities for k in e.fields))
    asked = []
    for key in keys:
        low = key.lower()
        cues = [pattern for fragment, pattern in _FIELD_CUES if fragment in low]
        words = [re.escape(w) for w in field_words.get(key, ())] + [re.escape(low.replace("_", " "))]
        cues.append(r"\b(?:" + "|".join(words) + r")\b")
        if any(re.search(p, message, re.I) for p in cues):
            asked.append(key)
    return tuple(asked)


def mention_key(text: str) -> str:
    """A mention's words, folded: "the X2" and "the x2" are one mention ("the x2")."""
    return " ".join(_TOKEN.findall(normalize(text)))


@dataclass(frozen=True)
class ConfirmedReadings:
    """How often users confirmed each reading of a mention (catalog name -> count, by the
    mention's `mention_key`): the plan log's evidence for p_top."""

    counts: Mapping[str, Mapping[str, int]]

    def of(self, mention: str) -> Mapping[str, int]:
        return self.counts.get(mention_key(mention), {})


def _naming(message: str, names: Sequence[str]) -> list[str]:
    """The readings a reply names: by the words only its name has among the readings ("the Pro"),
    the one with most such words when several match; else a reading with no words of its own
    whose whole name the reply says ("the Aero X2")."""
    said = set(_TOKEN.findall(normalize(message)))
    words = {n: set(_TOKEN.findall(normalize(n))) for n in names}
    shared = set.intersection(*words.values()) if words else set()
    own = {n: ws - shared for n, ws in words.items()}
    named = [n for n in names if own[n] and own[n] <= said]
    if named:
        most = max(len(own[n]) for n in named)
        return [n for n in named if len(own[n]) == most]
    return [n for n in names if not own[n] and f" {mention_key(n)} " in f" {mention_key(message)} "]


def confirmed_readings(logged: Iterable[tuple[Sequence[str], QueryPlan]]) -> ConfirmedReadings:
    """Count, in a plan log's (user turns before the message, plan) in order, each reading a user
    confirmed: the plan after one that offered readings (its `readings`) names exactly one of them,
    in the same conversation (its last user turn is the earlier message)."""
    offered: dict[str, Readings] = {}
    counts: dict[str, Counter[str]] = {}
    for turns, plan in logged:
        earlier = offered.get(turns[-1]) if turns else None
        if earlier is not None:
            named = _naming(plan.message, earlier.readings)
            if len(named) == 1:
                counts.setdefault(mention_key(earlier.mention), Counter())[named[0]] += 1
        if plan.readings is not None:
            offered[plan.message] = plan.readings
    return ConfirmedReadings({k: dict(v) for k, v in counts.items()})


def _from_history(mention: LinkedMention, confirmed: ConfirmedReadings, min_confirmed: int) -> LinkedMention:
    """The mention's readings weighed by how often each was confirmed (add-one smoothed), once
    the readings have `min_confirmed` confirmations together; else as linked (the name prior).
    What this conversation said outweighs what other users confirmed: a mention weighed by its
    history is left as it is."""
    counts = confirmed.of(mention.text)
    total = sum(counts.get(r.name, 0) for r in mention.readings)
    if total < min_confirmed or any(r.reason == _NAMED_EARLIER for r in mention.readings):
        return mention
    n = len(mention.readings)
    readings = [Reading(r.entity, (counts.get(r.name, 0) + 1) / (total + n), f"confirmed {counts.get(r.name, 0)} of {total} times in the plan log")
                for r in mention.readings]
    readings.sort(key=lambda r: -r.probability)
    return LinkedMention(mention.text, mention.start, mention.end, tuple(readings), mention.partial, mention.answers_differ, mention.differing_fields)


def _held(mention: LinkedMention, holdings: Collection[str]) -> tuple[Reading, ...]:
    """The readings the session's account holds (by catalog name or id, case folded)."""
    held = {h.strip().lower() for h in holdings if h.strip()}
    return tuple(r for r in mention.readings if r.entity.name.lower() in held or r.entity.id.lower() in held)


def _only(mention: LinkedMention, readings: Sequence[Reading]) -> LinkedMention:
    """The mention with only `readings` (the ones the account holds), their probabilities renormalised."""
    total = sum(r.probability for r in readings)
    kept = tuple(Reading(r.entity, r.probability / total if total else 1 / len(readings), f"{r.reason}; the account holds it") for r in readings)
    return LinkedMention(mention.text, mention.start, mention.end, kept, mention.partial, mention.answers_differ, mention.differing_fields)


# --------------------------------------------------------------------------------------------
# Deciding
# --------------------------------------------------------------------------------------------


def cover_possible(mention: LinkedMention | Sequence[str], message: str, *, max_readings: int = MAX_COVER_READINGS) -> tuple[bool, str]:
    """Whether answering every reading (of a mention, or named) side by side is reasonable, and why not when it is not."""
    if (n := len(mention.readings) if isinstance(mention, LinkedMention) else len(mention)) > max_readings:
        return False, f"{n} readings: more than {max_readings} to cover"
    if _LONG_ANSWER.search(message):
        return False, "the answer is a procedure: covering several would be long"
    return True, ""


def decide(p_top: float, *, cost_wrong: float, cost_ask: float, cost_cover: float, cover_possible: bool) -> Decision:
    """The option with the least expected cost in seconds of user time.

    assume = (1 - p_top) x cost_wrong; ask = cost_ask; cover = cost_cover (only when possible).
    Costs are rounded to milliseconds. Ties go to the option that cannot give a wrong answer:
    cover, then ask, then assume. A single reading (p_top = 1) is simply answered.

    >>> decide(0.7, cost_wrong=300, cost_ask=8, cost_cover=5, cover_possible=False)
    Decision(choice='ask', costs={'assume': 90.0, 'ask': 8.0}, reason='ask is cheapest (8 s)')
    """
    if not 0.0 <= p_top <= 1.0:
        raise ValueError(f"p_top must be a probability, got {p_top}")
    if min(cost_wrong, cost_ask, cost_cover) < 0:
        raise ValueError("costs are seconds and cannot be negative")
    costs = {"assume": round((1.0 - p_top) * cost_wrong, 3), "ask": round(float(cost_ask), 3)}
    if cover_possible:
        costs["cover"] = round(float(cost_cover), 3)
    if p_top >= 1.0:
        return Decision("answer", costs, "one reading: nothing to assume")
    least = min(costs.values())
    choice = next(c for c in _TIE_ORDER if costs.get(c) == least)
    return Decision(choice, costs, f"{choice} is cheapest ({least:g} s)")


def build_action(readings: Sequence[Reading], decision: Decision, *, brand_field: str = "brand") -> Action:
    """The plan's action for `decision`, worded with the readings' catalog names (without a brand
    prefix they all share: "Solace 7 or Solace 7 Pro", not "Halden Solace 7 or ...")."""
    names = _display_names([r.entity for r in readings], brand_field)
    if decision.choice == "answer" or not names:
        return Answer()
    if decision.choice == "assume" or len(names) == 1:
        return Assume(text=f"Assuming you mean the {names[0]}.")
    if decision.choice == "cover":
        return Cover(readings=names)
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return Ask(question=f"Which one do you mean: {listed}?", options=names)


def _display_names(entities: Sequence[Entity], brand_field: str) -> list[str]:
    short = []
    for e in entities:
        brand = e.fields.get(brand_field)
        prefix = f"{brand} " if isinstance(brand, str) else None
        short.append(e.name[len(prefix) :] if prefix and e.name.startswith(prefix) and len(e.name) > len(prefix) else e.name)
    return short if len(set(short)) == len(short) else [e.name for e in entities]


# --------------------------------------------------------------------------------------------
# The move
# --------------------------------------------------------------------------------------------


def disambiguate(
    message: str,
    history: Sequence[str],
    catalog: Catalog,
    *,
    route: str,
    high_stakes: Collection[str] = (),
    costs: Costs = Costs(),
    field_words: Mapping[str, Sequence[str]] | None = None,
    max_cover_readings: int = MAX_COVER_READINGS,
    confirmed: ConfirmedReadings | None = None,
    min_confirmed: int = 5,
    holdings: Collection[str] = (),
) -> Disambiguation:
    """Link, decide and word the action for the first ambiguous mention whose readings' answers
    differ. On a high-stakes route (`RoutingSettings.high_stakes`) a wrong answer costs
    `costs.wrong_high_stakes`, and any error fails closed: the plan asks instead of guessing.

    `confirmed`: the plan log's confirmed readings, which replace the name prior from
    `min_confirmed` confirmations of the mention on. `holdings`: the catalog entries (names or ids)
    the session's account holds; one reading held settles the mention (answered, not asked)."""
    try:
        mentions = tuple(link_mentions(message, history, catalog, field_words=field_words))
        target = next((m for m in mentions if m.ambiguous and m.answers_differ), None)
        if target is None:
            agree = [m for m in mentions if m.ambiguous]
            reason = "no ambiguous mention" if not agree else f"the readings of {agree[0].text!r} agree on what is asked"
            return Disambiguation(Answer(), mentions, None, None, reason)
        if confirmed is not None:
            target = _from_history(target, confirmed, min_confirmed)
        held = _held(target, holdings)
        if len(held) == 1:  # the account holds one of them: nothing to ask
            reason = f"{target.text!r} may mean {', '.join(r.name for r in target.readings)}; the session's account holds the {held[0].name}"
            return Disambiguation(Answer(), mentions, None, target, reason, settled=held[0])
        if 1 < len(held) < len(target.readings):  # only the ones it holds are asked about
            target = _only(target, held)
        can_cover, why_not = cover_possible(target, analysed_part(message), max_readings=max_cover_readings)
        wrong = costs.wrong_high_stakes if route in high_stakes else costs.wrong
        decision = decide(target.p_top, cost_wrong=wrong, cost_ask=costs.ask, cost_cover=costs.cover,
                          cover_possible=can_cover)
        readings = ", ".join(f"{r.name} {r.probability:.2f}" for r in target.readings)
        reason = f"{target.text!r} may mean {readings}; {decision.reason}" + (f"; no cover: {why_not}" if why_not else "")
        return Disambiguation(build_action(target.readings, decision), mentions, decision, target, reason)
    except Exception as exc:
        problem = f"{type(exc).__name__}: {exc}"
        if route in high_stakes:
            ask = Ask(question="Which product do you mean?", options=[])
            return Disambiguation(ask, (), None, None, f"failed closed on high-stakes route {route!r} ({problem})", failed=True)
        return Disambiguation(Answer(), (), None, None, f"ambiguity check failed, passing through ({problem})", failed=True)

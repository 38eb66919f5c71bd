"""Leak probes: does a plan show a session words, identifiers or catalog entries outside its access?

Run by `bench.understanding.access_attack` beside its widening count. For each market, from what
only the other market's chunks and catalog entries hold:

- `spelling`: a word (5+ letters) only out-of-market chunks hold, typed with two letters swapped;
  a leak is the plan naming the word (a correction, a candidate, a trace's evidence);
- `near_miss`: an identifier only out-of-market chunks hold, its last digit changed; a leak is the
  plan naming the real one ("Did you mean ZX-9001?");
- `exact`: that identifier typed as it is; a leak is an exact lookup of it (a query restricted to
  the chunks that hold it, or a trace saying the index holds it);
- `catalog`: "like the <entry> but cheaper" and "<entry> specs" for an entry sold only in the other
  market; a leak is the plan carrying the entry's description, id or price.

Every probe is one `QueryWise.plan` with the default moves (no LLM); target: 0 leaks.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from querywise.catalog import Entity
from querywise.corpus import Chunk
from querywise.plan import QueryPlan
from querywise.service import QueryWise
from querywise.text import STOPWORDS_EN, normalize

__all__ = ["Leaks", "as_dict", "probe_leaks"]

_WORD = re.compile(r"[a-z]{5,}")
_CODE = re.compile(r"\b[A-Z]{2,}-\d{3,}\b")


@dataclass
class Leaks:
    """Probes tried and leaks found, per family, with the first examples."""

    tried: dict[str, int] = field(default_factory=dict)
    leaked: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def count(self, family: str, leak: str | None, market: str, message: str) -> None:
        self.tried[family] = self.tried.get(family, 0) + 1
        self.leaked.setdefault(family, 0)
        if leak is not None:
            self.leaked[family] += 1
            if len(self.examples) < 20:
                self.examples.append(f"{family}: {message!r} in {market} shows {leak}")

    @property
    def total(self) -> int:
        return sum(self.leaked.values())


def _only_elsewhere(chunks: Sequence[Chunk], market: str, pattern: re.Pattern[str], fold: bool) -> list[str]:
    """What `pattern` finds in chunks not sold in `market` and in none that are."""
    def found(c: Chunk) -> set[str]:  # the title too: it is searched, so it is the session's
        return set(pattern.findall(normalize(c.search_text) if fold else c.search_text)) - STOPWORDS_EN

    mine = set().union(*(found(c) for c in chunks if market in c.payload.get("markets", [])))
    theirs = set().union(*(found(c) for c in chunks if market not in c.payload.get("markets", [])))
    return sorted(theirs - mine)


def _swap(word: str, rng: random.Random) -> str:
    """`word` with two adjacent inner letters swapped (two that differ: a typo, not the word)."""
    i = rng.choice([j for j in range(1, len(word) - 2) if word[j] != word[j + 1]] or [1])
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


def _near(code: str) -> str:
    return code[:-1] + str((int(code[-1]) + 1) % 10)


def _shows(plan: QueryPlan, secret: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(secret.lower())}(?![\w-])", plan.model_dump_json().lower()) is not None


def _catalog_leak(plan: QueryPlan, entity: Entity) -> str | None:
    text = plan.model_dump_json()
    if entity.description and entity.description in text:
        return f"{entity.name}'s description"
    if f'"{entity.id}"' in text:
        return f"{entity.name}'s id"
    price = entity.fields.get("price_usd")
    if price is not None and any(getattr(c, bound, None) == price for c in plan.filters.conditions for bound in ("lt", "lte", "gt", "gte")):
        return f"{entity.name}'s price {price}"
    return None


def probe_leaks(qw: QueryWise, chunks: Sequence[Chunk], entities: Iterable[Entity], markets: Sequence[str], *,
                rng: random.Random, per_family: int) -> Leaks:
    """Up to `per_family` probes per family and market (see the module docstring)."""
    leaks = Leaks()
    entities = list(entities)
    for market in markets:
        session = {"market": market}
        words = _only_elsewhere(chunks, market, _WORD, fold=True)
        for word in rng.sample(words, min(per_family, len(words))):
            message = f"how does the {_swap(word, rng)} work"
            plan = qw.plan(message, session=session)
            leaks.count("spelling", word if _shows(plan, word) else None, market, message)
        codes = _only_elsewhere(chunks, market, _CODE, fold=False)
        for code in rng.sample(codes, min(per_family, len(codes))):
            message = f"is {_near(code)} in stock"
            plan = qw.plan(message, session=session)
            leaks.count("near_miss", code if _shows(plan, code) else None, market, message)
            message = f"is {code.lower()} in stock"
            plan = qw.plan(message, session=session)
            looked_up = any(q.kind == "exact" for q in plan.queries) or ((s := plan.step("exact_lookup")) is not None and s.status == "ran")
            leaks.count("exact", code if looked_up else None, market, message)
        elsewhere = [e for e in entities if market not in e.fields.get("markets", [])]
        for entity in rng.sample(elsewhere, min(per_family, len(elsewhere))):
            for message in (f"like the {entity.name} but cheaper", f"{entity.name} specs", f"is the {entity.name} waterproof"):
                leaks.count("catalog", _catalog_leak(qw.plan(message, session=session), entity), market, message)
    return leaks


def as_dict(leaks: Leaks) -> dict[str, Any]:
    return {"tried": leaks.tried, "leaked": leaks.leaked, "leaks": leaks.total, "examples": leaks.examples}

"""Enrichments (LLM): multi-query variants, HyDE, query2doc, step-back (`understand.enrich`): one
call each, searched next to the original, fused with RRF, never instead of it; they fail open."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from querywise.plan import PlanQuery, TraceStep
from querywise.understand import enrich
from querywise.understand.draft import Draft, Have
from querywise.understand.moves.base import BaseMove
from querywise.understand.tier import Called

__all__ = ["HyDE", "MultiQuery", "Query2Doc", "StepBack"]


class _Enrichment(BaseMove):
    @classmethod
    def requires(cls, have: Have) -> str | None:
        return None if have.llm else "no [llm] provider configured"

    def applies(self, draft: Draft) -> str | None:
        if draft.decision is not None and draft.decision.source == "rule":
            return f"identifier lookup (rule sent it to {draft.route}): no LLM"
        return None

    def call(self, base: str) -> Callable[[float], Called[Any]]:
        raise NotImplementedError

    def added(self, base: str, value: Any) -> list[PlanQuery]:
        raise NotImplementedError

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        tier = self.r.tier
        assert tier is not None  # requires()
        base = draft.main.text
        called, step = tier.run(self.name, self.call(base), route=draft.route, text=base, why=f"{self.name} enrichment of {base!r}")
        if called is None:
            step.changed = "searched without it (enrichments always fail open)"
            return draft, [step]
        added = self.added(base, called.value)
        step.changed = "also searching " + "; ".join(repr(q.text) for q in added)
        return replace(draft, added=(*draft.added, *added)), [step]


class MultiQuery(_Enrichment):
    name = "multi_query"
    switches = frozenset({"multi_query"})

    def call(self, base: str) -> Callable[[float], Called[Any]]:
        tier, n, catalog = self.r.tier, self.settings.llm.n_variants, self.r.catalog
        assert tier is not None
        return lambda t: enrich.multi_query(tier.provider, base, n=n, catalog=catalog, timeout_s=t)

    def added(self, base: str, value: Any) -> list[PlanQuery]:
        return [PlanQuery(text=v, kind="multi") for v in value]


class HyDE(_Enrichment):
    name = "hyde"
    switches = frozenset({"hyde"})

    def call(self, base: str) -> Callable[[float], Called[Any]]:
        tier = self.r.tier
        assert tier is not None
        return lambda t: enrich.hyde(tier.provider, base, timeout_s=t)

    def added(self, base: str, value: Any) -> list[PlanQuery]:
        return [PlanQuery(text=value, kind="hyde", mode="dense")]


class Query2Doc(_Enrichment):
    name = "query2doc"
    switches = frozenset({"query2doc",})

    def call(self, base: str) -> Callable[[float], Called[Any]]:
        tier = self.r.tier
        assert tier is not None
        return lambda t: enrich.query2doc(tier.provider, base, timeout_s=t)

    def added(self, base: str, value: Any) -> list[PlanQuery]:
        return [PlanQuery(text=f"{base} {value}", kind="query2doc", mode="bm25")]


class StepBack(_Enrichment):
    name = "step_back"
    switches = frozenset({"step_back"})

    def call(self, base: str) -> Callable[[float], Called[Any]]:
        tier, catalog = self.r.tier, self.r.catalog
        assert tier is not None
        return lambda t: enrich.step_back(tier.provider, base, catalog=catalog, timeout_s=t)

    def added(self, base: str, value: Any) -> list[PlanQuery]:
        return [PlanQuery(text=value, kind="step_back")]

"""Filters: hard constraints out of the text into validated filters, and the semantic query left
(`understand.filters`); "like X (but cheaper)": X's description beside it, X excluded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from querywise.conditions import NoneOf, Where, describe
from querywise.plan import PlanQuery, TraceStep
from querywise.understand.draft import Draft, Have
from querywise.understand.filters import extract_filters
from querywise.understand.moves.base import BaseMove

__all__ = ["Filters"]

_SIMILAR_MAX = 3  # descriptions a "like X" query carries (a brand names many products)


class Filters(BaseMove):
    name = "filters"
    switches = frozenset({"filters"})

    @classmethod
    def requires(cls, have: Have) -> str | None:
        return None if have.settings.filters.fields else "no filter schema configured"

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        text = draft.text
        ex = extract_filters(text, self.settings.filters, catalog=self.r.catalog, today=draft.today, access=self.settings.access)
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
            return draft, [TraceStep(move="filters", status="skipped", reason=reason, details=details)]
        stated = Where(conditions=tuple(c.condition for c in ex.stated))
        inferred = Where(conditions=tuple(c.condition for c in ex.inferred))
        main = draft.main
        if ex.semantic_query.strip() and ex.semantic_query != text:
            main = PlanQuery(text=ex.semantic_query, kind="semantic")
        similar: tuple[PlanQuery, ...] = ()
        if ex.similar is not None:
            similar, stated = self._similar(ex.similar.entities, stated, details)
        step = TraceStep(
            move="filters", status="ran",
            reason="; ".join([*(c.reason for c in ex.constraints), *([f"similar to {', '.join(ex.similar.entities)}"] if ex.similar else [])]),
            changed=", ".join(describe(c) for c in stated.conditions + inferred.conditions)
            + (f"; searching {ex.semantic_query!r}" if main.kind == "semantic" else "")
            + (f"; and {details['similar_query']!r}" if "similar_query" in details else ""),
            details=details,
        )
        return replace(draft, main=main, similar=similar, filters=stated, inferred=inferred), [step]

    def _similar(self, names: Sequence[str], stated: Where, details: dict[str, Any]) -> tuple[tuple[PlanQuery, ...], Where]:
        """X's catalog description, searched next to the rest of the message, and X itself
        excluded (through the catalog link: its page and the articles about it)."""
        by_name = self.r.by_name
        entities = [e for n in names if (e := by_name.get(n)) is not None]
        described = " ".join(e.description for e in entities[:_SIMILAR_MAX] if e.description)
        queries: tuple[PlanQuery, ...] = ()
        if described:
            queries = (PlanQuery(text=described, kind="similar"),)
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
        if schema.catalog_link is not None and self.r.catalog is not None:
            return f"judged by the catalog entries its {schema.catalog_link!r} names; with none, {'kept' if spec.missing == 'keep' else 'dropped'}"
        return "kept" if spec.missing == "keep" else "dropped"

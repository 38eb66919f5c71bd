"""Exact lookup: each identifier of the message the index holds, however typed, searched in the
chunks that hold it (`understand.exact`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from querywise.plan import TraceStep
from querywise.understand.draft import Draft, Have
from querywise.understand.exact import exact_queries, identifiers_in
from querywise.understand.moves.base import BaseMove

__all__ = ["ExactLookup"]


class ExactLookup(BaseMove):
    name = "exact_lookup"
    switches = frozenset({"exact_lookup"})

    @classmethod
    def requires(cls, have: Have) -> str | None:
        return None if have.identifiers else "no index vocabulary to look identifiers up in"

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        assert self.r.speller is not None  # requires()
        found = identifiers_in(draft.text, self.r.speller.identifiers)
        if not found:
            return draft, [TraceStep(move="exact_lookup", status="skipped", reason="no identifier the index holds")]
        parts = self.r.part_numbers
        exact = exact_queries(found, part_numbers=parts)
        said = ", ".join(f"{typed!r} (the index's {form.upper()}{'' if parts.matches(form) else ', not a part number here'})" for typed, form in found)
        details = {"identifiers": {typed: form.upper() for typed, form in found}}
        if not exact:
            return draft, [TraceStep(move="exact_lookup", status="skipped", reason=f"no part number; other codes the index holds: {said}", details=details)]
        step = TraceStep(
            move="exact_lookup", status="ran", reason=f"identifiers the index holds: {said}",
            changed="also searching the chunks that hold " + ", ".join(f"{q.text} (weight {q.weight:g})" for q in exact),
            details=details,
        )
        return replace(draft, added=(*draft.added, *exact)), [step]

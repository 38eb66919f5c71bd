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
        exact = exact_queries(found)
        said = ", ".join(f"{typed!r} (the index's {form.upper()})" for typed, form in found)
        step = TraceStep(
            move="exact_lookup", status="ran", reason=f"identifiers the index holds: {said}",
            changed="also searching the chunks that hold " + ", ".join(q.text for q in exact),
            details={"identifiers": {typed: form.upper() for typed, form in found}},
        )
        return replace(draft, added=(*draft.added, *exact)), [step]

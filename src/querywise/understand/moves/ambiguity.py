"""Ambiguity: a mention with several readings whose answers differ: answer, assume, ask or cover
(`understand.ambiguity`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from querywise.conversation import texts
from querywise.plan import Answer, TraceStep
from querywise.understand.ambiguity import disambiguate
from querywise.understand.draft import Draft, Have
from querywise.understand.moves.base import BaseMove

__all__ = ["Ambiguity"]


class Ambiguity(BaseMove):
    name = "ambiguity"
    switches = frozenset({"ambiguity"})

    @classmethod
    def requires(cls, have: Have) -> str | None:
        return None if have.catalog else "no catalog configured"

    def applies(self, draft: Draft) -> str | None:
        return None if isinstance(draft.action, Answer) else f"an earlier move already chose to {draft.action.type}"

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        assert self.r.catalog is not None  # requires()
        result = disambiguate(draft.text, texts(draft.history), self.r.catalog, route=draft.route, high_stakes=self.settings.routing.high_stakes)
        return replace(draft, action=result.action), [result.trace_step()]

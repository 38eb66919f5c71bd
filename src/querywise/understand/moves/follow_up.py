"""Follow-up: a message that cannot stand alone gets its standalone form (`understand.followup`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from querywise.plan import PlanQuery, TraceStep
from querywise.understand.draft import Draft
from querywise.understand.followup.move import follow_up
from querywise.understand.moves.base import BaseMove

__all__ = ["FollowUp"]


class FollowUp(BaseMove):
    name = "follow_up"
    switches = frozenset({"follow_up"})

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        u = self.settings.understanding
        moved = follow_up(draft.message, draft.history, catalog=self.r.catalog, embedder=self.r.embedder,
                          topic_shift=u.topic_shift, topic_window=u.topic_window, phrase_choice=u.phrase_choice)
        return replace(draft, text=moved.text, whole=moved.text, main=PlanQuery(text=moved.text, kind=moved.kind),
                       needs_context=moved.needs_context, beside=moved.beside, pointed=moved.readings), [moved.step]

"""Ambiguity: a mention with several readings whose answers differ: answer, assume, ask or cover
(`understand.ambiguity`), and what each changes in what is retrieved.

- assume (or a reading the session settles): the message with the mention replaced by the
  reading's catalog name is searched beside it, first and weighted up, restricted to the
  documents about that reading when the catalog links them: the top hit is about the assumed
  reading, not the most similar one;
- cover: one such query per reading, each tagged with its reading, so `execute` returns the hits
  grouped by reading (beside the message's own fused hits, which they do not enter);
- ask: the question offers the readings as options; the message is searched as typed.

A pointer the follow-up move found two or more candidates for (`Draft.pointed`: "does it cover
water damage?" after "Compare the A and the B") is decided here too, by the same costs
(`understand.candidates`): cover (the default: every reading is already searched) or ask, the
options being each reading's standalone query.

The costs come from `[ambiguity]`; p_top from the plan log's confirmed readings once there are
enough of them (`[ambiguity] history`, else `[deployment] plan_log`, read at start-up), else the
name prior; the session's holdings (`[access] holdings`) settle a reading the account holds.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from querywise.catalog import Entity
from querywise.conditions import AnyOf, Where
from querywise.conversation import texts
from querywise.plan import Answer, Cover, PlanQuery, TraceStep
from querywise.planlog import read_conversations
from querywise.understand.ambiguity import ConfirmedReadings, Costs, Disambiguation, confirmed_readings, disambiguate
from querywise.understand.candidates import cover_or_ask
from querywise.understand.draft import Draft, Have, Resources
from querywise.understand.moves.base import BaseMove

__all__ = ["Ambiguity"]

log = logging.getLogger(__name__)

# Weight of the assumed reading's query against the message's 1: relative RRF weights, so the
# reading's documents lead while the message's own hits stay in the list.
ASSUMED_WEIGHT = 2.0


class Ambiguity(BaseMove):
    name = "ambiguity"
    switches = frozenset({"ambiguity"})

    def __init__(self, resources: Resources) -> None:
        super().__init__(resources)
        a = self.settings.ambiguity
        self.costs = Costs(ask=a.cost_ask, cover=a.cost_cover, wrong=a.cost_wrong, wrong_high_stakes=a.cost_wrong_high_stakes)
        self.confirmed = self._history()

    def _history(self) -> ConfirmedReadings | None:
        """The confirmed readings of the plan log, read once at start-up (None: no log yet)."""
        path = self.settings.ambiguity.history or self.settings.deployment.plan_log
        if path is None or not path.is_file():
            return None
        try:
            return confirmed_readings(read_conversations(path))
        except (OSError, ValueError) as exc:  # a damaged log costs the history, not the deployment
            log.warning("ambiguity: cannot read the readings' history from %s (%s): the name prior is used", path, exc)
            return None

    @classmethod
    def requires(cls, have: Have) -> str | None:
        return None if have.catalog else "no catalog configured"

    def applies(self, draft: Draft) -> str | None:
        return None if isinstance(draft.action, Answer) else f"an earlier move already chose to {draft.action.type}"

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        assert self.r.catalog is not None  # requires()
        a = self.settings.ambiguity
        if len(draft.pointed) >= 2:  # the follow-up's candidates: the message names no product of its own to link
            choice = cover_or_ask([r.candidate for r in draft.pointed], [r.query for r in draft.pointed], draft.text,
                                  costs=self.costs, max_cover_readings=a.max_cover_readings)
            return replace(draft, action=choice.action), [choice.trace_step()]
        holdings_key = self.settings.access.holdings
        holdings = draft.session.get(holdings_key, "").split(",") if holdings_key else []
        result = disambiguate(draft.text, texts(draft.history), self.r.catalog, route=draft.route, high_stakes=self.settings.routing.high_stakes,
                              costs=self.costs, max_cover_readings=a.max_cover_readings, confirmed=self.confirmed,
                              min_confirmed=a.min_confirmed, holdings=holdings)
        queries = self._reading_queries(draft, result)
        step = result.trace_step()
        if queries:
            step = step.model_copy(update={"changed": "; ".join(filter(None, [step.changed, "searching " + ", ".join(repr(q.text) for q in queries)]))})
        return replace(draft, action=result.action, readings=result.readings_note(), added=(*queries, *draft.added)), [step]

    def _reading_queries(self, draft: Draft, result: Disambiguation) -> tuple[PlanQuery, ...]:
        """What assume (or a settled reading) and cover search: the message naming each reading."""
        target = result.target
        if target is None or draft.unsearched is not None:
            return ()
        if (chosen := result.chosen) is not None:
            return (self._reading_query(draft.text, target.start, target.end, chosen.entity, ASSUMED_WEIGHT),)
        if isinstance(result.action, Cover):
            return tuple(self._reading_query(draft.text, target.start, target.end, r.entity, 1.0) for r in target.readings)
        return ()

    def _reading_query(self, text: str, start: int, end: int, entity: Entity, weight: float) -> PlanQuery:
        link = self.settings.filters.catalog_link
        where = Where(conditions=(AnyOf(field=link, values=(entity.name, entity.id)),)) if link is not None else None
        return PlanQuery(text=f"{text[:start]}{entity.name}{text[end:]}", kind="reading", weight=weight, where=where, reading=entity.name)

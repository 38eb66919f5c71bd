"""A pointer with two or more candidates ("does it cover water damage?" after "Compare the Aero X2
and the Pulse Buds."): every reading covered, or the user asked which one, by the deployment's
ambiguity costs (`[ambiguity]`) -- never one picked.

The follow-up move finds the candidates and the message asked of each (`PointerReading`). Nothing
in the conversation tells them apart, so assuming one is no option (it would be a pick, however
stated): covering costs `cost_cover` when it is possible (few readings, a short answer:
`ambiguity.cover_possible`), asking costs `cost_ask`, and the cheaper wins (a tie goes to cover,
which cannot answer the wrong reading). With the default costs (cover 5 s, ask 8 s) a short
question is covered; a deployment whose `cost_ask` is under its `cost_cover`, or a procedure
("how do I reset it?", too long to answer twice), is asked. The options of the question are the
readings' standalone queries: what a UI sends back as the user's next message, which then stands
alone. Either way every reading is searched (the follow-up move's queries, fused).

    >>> cover_or_ask(["Aero X2", "Pulse Buds"], ["is the Aero X2 waterproof?", "are the Pulse Buds waterproof?"], "is it waterproof?").action.type
    'cover'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from querywise.plan import Ask, Cover, TraceStep
from querywise.understand.ambiguity import MAX_COVER_READINGS, Costs, cover_possible

__all__ = ["PointerChoice", "cover_or_ask"]

_DEFAULT_COSTS = Costs()


@dataclass(frozen=True)
class PointerChoice:
    """What the plan does with a pointer's candidates, and why (for the trace)."""

    action: Cover | Ask
    candidates: tuple[str, ...]
    costs: dict[str, float]
    reason: str

    def trace_step(self, *, latency_ms: float = 0.0) -> TraceStep:
        each = round(1 / len(self.candidates), 3)
        details: dict[str, Any] = {"choice": self.action.type, "candidates": list(self.candidates),
                                   "readings": [[c, each] for c in self.candidates], "costs": dict(self.costs)}
        return TraceStep(move="ambiguity", status="ran", reason=self.reason, changed=f"action {self.action.type}",
                         latency_ms=latency_ms, details=details)


def cover_or_ask(
    candidates: Sequence[str], queries: Sequence[str], message: str, *, costs: Costs = _DEFAULT_COSTS, max_cover_readings: int = MAX_COVER_READINGS,
) -> PointerChoice:
    """Cover the `candidates` (their names, the pointer's readings) or ask which one, offering
    `queries` (the message asked of each, in the same order) as the options."""
    if len(candidates) < 2 or len(candidates) != len(queries):
        raise ValueError(f"a pointer's readings are two or more candidates, each with its query (got {len(candidates)} and {len(queries)})")
    can_cover, why_not = cover_possible(candidates, message, max_readings=max_cover_readings)
    priced = {"ask": round(float(costs.ask), 3)}
    if can_cover:
        priced["cover"] = round(float(costs.cover), 3)
    listed = f"{', '.join(candidates[:-1])} or {candidates[-1]}"
    said = f"the pointer may mean {listed}, nothing in the conversation tells them apart"
    if can_cover and priced["cover"] <= priced["ask"]:
        return PointerChoice(Cover(readings=list(candidates)), tuple(candidates), priced, f"{said}; cover is cheapest ({priced['cover']:g} s): each reading searched")
    why = f"ask is cheapest ({priced['ask']:g} s)" + (f"; no cover: {why_not}" if why_not else "")
    return PointerChoice(Ask(question=f"Which one do you mean: {listed}?", options=list(queries)), tuple(candidates), priced, f"{said}; {why}")

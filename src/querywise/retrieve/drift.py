"""A plan's drift guard measured on the retriever's lists (`plan.DriftGuard`).

The follow-up move searches the assistant's last answer beside a reply to it; when the user has
moved on, that query drags the result back to the passage just answered. Whether the user moved on
shows in the retriever's own lists, which the plan does not have: the message as typed finds
something clearly (its best cosine well over its 50th) and the guarded query's first hit is far from
it (the message's cosine to that hit well under its best). `execute` reads this after searching and
leaves the query out of the fusion when both hold; a retriever without cosines on its dense hits
(`dense_cosines`) cannot say, so the query is kept and the check says why.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from querywise.index import Hit
from querywise.plan import DriftGuard

__all__ = ["CLARITY_RANK", "DriftCheck", "check_drift"]

#: The rank whose cosine `DriftGuard.clarity` is measured against (the message's best less its
#: 50th): how clearly the message alone finds something, whatever the embedder's cosine scale.
CLARITY_RANK = 50


class DriftCheck(BaseModel):
    """What the drift guard of one query found: whether it fired (the query left out of the
    fusion), the figures it read, and why in words (for the trace)."""

    model_config = ConfigDict(frozen=True)
    query: str
    fired: bool
    checked: bool  # False: the figures could not be read (no cosines, too short a list, no hit)
    clarity: float | None = None
    drift: float | None = None
    why: str


def check_drift(query: str, guard: DriftGuard, first_hit: str | None, own: Sequence[Hit] | None, *, retriever: str) -> DriftCheck:
    """The guard of `query` (whose first hit is `first_hit`) read from `own`, `guard.against`'s dense
    hits in cosine order (None: `retriever` gives no cosines)."""
    if own is None:
        return DriftCheck(query=query, fired=False, checked=False,
                          why=f"{retriever} gives no cosines on its dense hits: the drift guard is not checked, the query is kept")
    if first_hit is None:
        return DriftCheck(query=query, fired=False, checked=False, why="the query found nothing: nothing to drift to, kept")
    if len(own) < CLARITY_RANK:
        return DriftCheck(query=query, fired=False, checked=False,
                          why=f"the message's dense list holds {len(own)} chunks, under {CLARITY_RANK}: the drift guard is not checked, the query is kept")
    best = own[0].score
    clarity = best - own[CLARITY_RANK - 1].score
    # A first hit beyond the list is at least as far as the list's last chunk: the least drift it can be.
    to_hit = next((h.score for h in own if h.id == first_hit), own[-1].score)
    drift = best - to_hit
    fired = clarity >= guard.clarity and drift >= guard.away
    figures = f"clarity {clarity:.3f} (>= {guard.clarity:g}: {'yes' if clarity >= guard.clarity else 'no'}), drift {drift:.3f} (>= {guard.away:g}: {'yes' if drift >= guard.away else 'no'})"
    why = (f"left out: the message finds something clearly and the query's first hit is far from it ({figures})" if fired
           else f"kept ({figures})")
    return DriftCheck(query=query, fired=fired, checked=True, clarity=round(clarity, 4), drift=round(drift, 4), why=why)

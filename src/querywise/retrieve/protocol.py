"""The retriever seam: what executing a plan needs from whatever system retrieves.

A `Retriever` answers one query (text, k, the plan's validated filters AND the session's access
constraints, a search mode) with ranked `Hit`s: stable ids, scores, text and payload. Our own index
runs the filters inside its engine. A system we do not own (an HTTP endpoint, a function, another
team's collection) is sent the filters, but its answer is not trusted: `checked` keeps only the
hits whose payload meets them (`Where.matches`, the one interpreter of the filter language), so a
retriever that ignores a filter, or a hit without the access field, can never widen access. It
asks such a retriever for more than k so that checking still leaves k.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from querywise.conditions import Where
from querywise.index import Hit
from querywise.index.engine import Mode

__all__ = ["OVERFETCH", "ExplainsEmpty", "Retrieved", "Retriever", "RetrieverError", "checked", "dense_cosines", "identifier_keys"]

#: How many times k a retriever whose filtering is not ours is asked for, so that the hits its
#: payloads fail do not leave fewer than k.
OVERFETCH = 3


class RetrieverError(RuntimeError):
    """A retriever could not answer (unreachable, timed out, a malformed answer): says which and why."""


@runtime_checkable
class Retriever(Protocol):
    """Ranked hits for one query. `filters_inside` says whether `where` runs inside the
    retriever's own engine (then its hits are returned as they are); otherwise they are checked.

    Optional capabilities, read by `execute` (a retriever without them still works):
    - `identifier_keys = True`: it filters on the querywise index's identifier keys, so an exact
      lookup runs as a filter (`identifier_keys(retriever)`); elsewhere the identifier is searched
      as text;
    - `dense_cosines = True`: its `mode="dense"` hits are scored by cosine similarity, so a plan's
      drift guard (`plan.DriftGuard`) can be measured on them (`dense_cosines(retriever)`);
      elsewhere the guard is not checked and its query is kept;
    - `rrf_k`: the fusion constant its deployment chose (`[index] rrf_k`);
    - `explain_empty(...)` (`ExplainsEmpty`): it can name the field, filter or access that left a
      search with nothing."""

    name: str
    filters_inside: bool

    def retrieve(self, text: str, *, k: int, where: Where | None = None, mode: Mode = "hybrid") -> list[Hit]: ...


@runtime_checkable
class ExplainsEmpty(Protocol):
    """A retriever that can say why a search found nothing (the querywise index)."""

    def explain_empty(self, queries: Sequence[tuple[str, Mode]], *, filters: Where | None = None, access: Where | None = None) -> list[str]: ...


def identifier_keys(retriever: Retriever) -> bool:
    """Whether `retriever` filters on the index's identifier keys (see `Retriever`)."""
    return bool(getattr(retriever, "identifier_keys", False))


def dense_cosines(retriever: Retriever) -> bool:
    """Whether `retriever`'s dense hits carry cosines (see `Retriever`)."""
    return bool(getattr(retriever, "dense_cosines", False))


class Retrieved(BaseModel):
    """One query's hits, and how its filters were applied."""

    model_config = ConfigDict(frozen=True)
    hits: list[Hit] = Field(default_factory=list)
    filtered: str = "none"  # "engine": inside the retriever; "checked": on its results here; "none": no filter
    dropped: int = 0  # hits whose payload failed the filters (checked only)
    prefetched: bool = False  # searched before the plan was known, and reused (the LLM overlap)


def checked(retriever: Retriever, text: str, *, k: int, where: Where | None, mode: Mode) -> Retrieved:
    """`retriever`'s top k for `text` that meet `where`, ranks renumbered from 1."""
    if not where:
        return Retrieved(hits=retriever.retrieve(text, k=k, where=None, mode=mode)[:k])
    if retriever.filters_inside:
        return Retrieved(hits=retriever.retrieve(text, k=k, where=where, mode=mode)[:k], filtered="engine")
    raw = retriever.retrieve(text, k=k * OVERFETCH, where=where, mode=mode)
    kept = [h for h in raw if where.matches(h.payload)][:k]
    hits = [h.model_copy(update={"rank": rank}) for rank, h in enumerate(kept, start=1)]
    return Retrieved(hits=hits, filtered="checked", dropped=sum(1 for h in raw if not where.matches(h.payload)))

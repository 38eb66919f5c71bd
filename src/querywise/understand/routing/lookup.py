"""Lookups a route answers from (the account's orders), and what a route does when its lookup finds
nothing: fail soft to search, and say so.

A deployment wires a lookup by name (`QueryWise(settings, index, lookups={"orders": find_orders})`)
and a route names it (`[[routing.routes]] lookup = "orders"`). A lookup is any callable that takes
the message and the authenticated session and returns the ids of the records the message is about
(an empty sequence: it matched none). querywise never reads the records: the caller's own code
answers from them; the plan says which were found, or that the route fell back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from querywise.config import RouteSpec

__all__ = ["LookupOutcome", "RouteLookup", "run_lookup"]


class RouteLookup(Protocol):
    """The ids of the records `message` is about, among those `session` may see."""

    def __call__(self, message: str, session: Mapping[str, str]) -> Sequence[str]: ...


@dataclass(frozen=True)
class LookupOutcome:
    """What a route's lookup found, or why the route falls back (`fell_back` names the reason)."""

    found: tuple[str, ...] = ()
    fell_back: str | None = None  # why the route searches instead: nothing found, not wired, failed
    stops: bool = True  # the plan searches nothing (answered by the lookup, or no fallback)
    reason: str = ""


def run_lookup(spec: RouteSpec, lookups: Mapping[str, RouteLookup], message: str, session: Mapping[str, str]) -> LookupOutcome:
    """The lookup of a route that does not search, and whether it falls back to search.

    A lookup that raises is treated as one that found nothing (fail soft): the error is the
    reason the plan gives, never an answer from half a lookup."""
    if spec.lookup is None:
        why = f"route {spec.name} has no lookup"
    elif (lookup := lookups.get(spec.lookup)) is None:
        why = f"lookup {spec.lookup!r} of route {spec.name} is not wired"
    else:
        failure: str | None = None
        try:
            found = tuple(str(x) for x in lookup(message, session))
        except Exception as exc:  # a lookup is the deployment's code: any failure fails soft
            found, failure = (), f"{type(exc).__name__}: {exc}"
        if found:
            return LookupOutcome(found=found, reason=f"route {spec.name} answered by lookup {spec.lookup!r} ({len(found)} record(s))")
        why = f"lookup {spec.lookup!r} of route {spec.name} " + (f"failed ({failure})" if failure else "matched nothing")
    if spec.falls_back_to_search:
        return LookupOutcome(fell_back=why, stops=False, reason=f"{why}: falling back to search")
    return LookupOutcome(reason=f"route {spec.name} does not search" + ("" if spec.lookup is None else f" ({why}; fallback none)"))

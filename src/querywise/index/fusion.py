"""Reciprocal Rank Fusion on stable ids (never on text)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

__all__ = ["rrf"]

K = TypeVar("K", bound=Hashable)


def rrf(
    rankings: Sequence[Sequence[K]],
    *,
    k: int = 60,
    weights: Sequence[float] | None = None,
    depth: int | None = None,
) -> list[tuple[K, float]]:
    """Fuse ranked id lists: score(id) = sum of weight / (k + rank), ranks from 1.

    Ties keep the order in which ids were first seen, list by list.

    >>> rrf([["a", "b"], ["b", "c"]])[0]
    ('b', 0.03252247488101534)
    """
    if weights is not None and len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    scores: dict[K, float] = {}
    for i, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[i]
        for rank, key in enumerate(ranking[:depth] if depth else ranking, start=1):
            scores[key] = scores.get(key, 0.0) + w / (k + rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])

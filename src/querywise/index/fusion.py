"""Fusion of ranked lists on stable ids (never on text): reciprocal rank fusion, weighted or
not, and a convex combination of min-max normalised scores."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal, TypeVar

__all__ = ["Fusion", "convex", "fuse_scored", "rrf"]

K = TypeVar("K", bound=Hashable)
Fusion = Literal["rrf", "convex"]
PRESENT = 1e-9  # convex: what being in a list adds before its normalised score (see `convex`)


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


def convex(scored: Sequence[Sequence[tuple[K, float]]], *, weights: Sequence[float]) -> list[tuple[K, float]]:
    """A convex combination of each list's min-max normalised scores: score(id) = sum of
    weight * (s - min) / (max - min) over the lists it is in (0 where it is not; a list whose
    scores are all equal counts 1 for each). A hit at its list's minimum gets `PRESENT` more than
    0, so that being in a weighted list still beats being absent from it. Unlike RRF it keeps how
    far apart the scores are, which suits a dense list whose top answer is clearly ahead
    (paraphrase-heavy FAQs)."""
    if len(weights) != len(scored):
        raise ValueError(f"{len(weights)} weights for {len(scored)} lists")
    out: dict[K, float] = {}
    for hits, w in zip(scored, weights, strict=True):
        if not hits:
            continue
        lo, hi = min(s for _, s in hits), max(s for _, s in hits)
        for key, s in hits:
            out[key] = out.get(key, 0.0) + w * (PRESENT + ((s - lo) / (hi - lo) if hi > lo else 1.0))
    return sorted(out.items(), key=lambda kv: -kv[1])


def fuse_scored(
    scored: Sequence[Sequence[tuple[K, float]]], *, fusion: Fusion, dense_weight: float, rrf_k: int,
    sentences: Sequence[tuple[K, float]] | None = None, sentence_share: float = 0.0,
) -> list[tuple[K, float]]:
    """Fuse a dense list and a BM25 list (in that order), best first: `fusion` "rrf" weights the
    dense list 2w and BM25 2(1 - w) (w = 0.5 is plain RRF); "convex" weighs normalised scores
    w and 1 - w. With `sentences` (each chunk scored by its best sentence), that list takes
    `sentence_share` of the dense side: dense w(1 - share), sentences w * share, BM25 1 - w.
    Equal fused scores keep first-seen order (dense first)."""
    weights = [dense_weight, 1.0 - dense_weight]
    if sentences is not None:
        scored = [scored[0], sentences, *scored[1:]]
        weights = [dense_weight * (1.0 - sentence_share), dense_weight * sentence_share, 1.0 - dense_weight]
    if fusion == "convex":
        return convex(scored, weights=weights)
    return rrf([[key for key, _ in hits] for hits in scored], k=rrf_k, weights=[2 * w for w in weights])

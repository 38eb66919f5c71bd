"""The text left for search: the message without its constraint phrases and the words they leave
dangling."""

from __future__ import annotations

import re

from querywise.checks.filters import Span

__all__ = ["CONNECTORS", "text_left_for_search"]


# Words left dangling next to a removed phrase ("headphones for | , and |").
CONNECTORS = {"and", "or", "but", "also", "then", "please", "that", "which", "with", "is", "are", "was", "were",
               "for", "at", "released", "launched", "introduced", "priced", "costing", "cost", "costs", "made",
              "in", "to", "only", "sold", "available", "the", "a", "an", "so", "just"}


_WORD = re.compile(r"\w")


def text_left_for_search(message: str, claimed: list[Span], *, fallback: str) -> str:
    """The message without the constraint phrases, and without words left dangling at their edges."""
    spans = sorted(claimed)
    pieces: list[tuple[str, bool, bool]] = []  # (text, span before, span after)
    pos = 0
    for start, end in spans:
        pieces.append((message[pos:start], pos > 0, True))
        pos = max(pos, end)
    pieces.append((message[pos:], bool(spans), False))
    kept = [p for p in (_trim(text, left, right) for text, left, right in pieces) if p]
    query = " ".join(" ".join(kept).split())
    return query if re.search(r"\w", query) else fallback


def _trim(text: str, left: bool, right: bool) -> str:
    words = text.split()
    first = 0  # (an index, not pop(0): that was quadratic in a long run of dangling words)
    while left and first < len(words) and (words[first].lower().strip(",;:-") in CONNECTORS or not _WORD.search(words[first])):
        first += 1
    words = words[first:]
    while right and words and (words[-1].lower().strip(",;:-") in CONNECTORS or not _WORD.search(words[-1])):
        words.pop()
    if right and words:
        words[-1] = words[-1].rstrip(",;:-")
    return " ".join(words)

"""The querywise index as a retriever: filters and access run inside its engine."""

from __future__ import annotations

from querywise.conditions import Where
from querywise.index import Hit, Index
from querywise.index.engine import Mode

__all__ = ["IndexRetriever"]


class IndexRetriever:
    """`Index.search` behind the `Retriever` protocol."""

    filters_inside = True

    def __init__(self, index: Index) -> None:
        self.index = index
        self.name = f"querywise index {index.root}"

    def retrieve(self, text: str, *, k: int, where: Where | None = None, mode: Mode = "hybrid") -> list[Hit]:
        return self.index.search(text, mode=mode, k=k, where=where or None)

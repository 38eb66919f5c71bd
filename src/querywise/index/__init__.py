"""Hybrid (BM25 + dense) index on Qdrant: embedded by default, a server beyond one machine."""

from querywise.index.fusion import rrf
from querywise.index.store import Hit, Index, IndexStoreError, Manifest, rollback
from querywise.index.writing import build_index

__all__ = ["Hit", "Index", "IndexStoreError", "Manifest", "build_index", "rollback", "rrf"]

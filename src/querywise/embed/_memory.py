"""Query embeddings kept in memory: a read path that never writes.

A search embeds what a user typed. Writing each unseen query to the on-disk cache grows that file
without bound and puts every process of a deployment on one SQLite write lock, for a saving of
well under a millisecond a query; so queries are kept in a bounded in-memory LRU, as the service
keeps them (`BatchingEmbedder`), and the on-disk `CachedEmbedder` serves what is embedded in bulk:
a build's chunks, a router's examples, an evaluation's batch.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from ._base import Embedder, ProgressCallback, Vectors, Wrapper
from ._cache import CachedEmbedder

__all__ = ["MemoryCachedEmbedder", "VectorLru", "for_queries"]


class VectorLru:
    """A thread-safe, bounded map of text -> vector; the least recently used text goes first."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"an LRU of {size} texts")
        self.size = size
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        """Each text's vector, or None where it is not kept (found ones become the most recent)."""
        out: list[np.ndarray | None] = []
        with self._lock:
            for text in texts:
                vector = self._items.get(text)
                if vector is not None:
                    self._items.move_to_end(text)
                out.append(vector)
        return out

    def put(self, texts: Sequence[str], vectors: Vectors) -> None:
        """Keep each text's row (a copy), dropping the least recently used beyond `size`."""
        with self._lock:
            for text, vector in zip(texts, vectors, strict=True):
                self._items[text] = np.array(vector, dtype=np.float32)
                self._items.move_to_end(text)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


class MemoryCachedEmbedder(Wrapper):
    """Wraps the model: calls of up to `bulk_over` texts (a query, its rewrites) are served from
    a bounded in-memory LRU and the model, never touching the disk; larger calls go to `bulk`
    (the on-disk cache, when there is one), so a router's examples are still embedded once ever.

    >>> embedder = for_queries(load_embedder("onnx", cache_dir=Path(".cache/querywise")))  # doctest: +SKIP
    >>> embedder.embed(["where is my parcel"])  # no write to .cache/querywise       # doctest: +SKIP
    """

    def __init__(self, inner: Embedder, *, bulk: Embedder | None = None, cache_size: int = 10_000, bulk_over: int = 32) -> None:
        self.inner, self.bulk, self.bulk_over = inner, bulk, bulk_over
        self.lru = VectorLru(cache_size)

    def embed(self, texts: Sequence[str], *, on_progress: ProgressCallback | None = None) -> Vectors:
        if len(texts) > self.bulk_over:
            return (self.bulk or self.inner).embed(texts, on_progress=on_progress)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        kept = self.lru.get(texts)
        missing = list(dict.fromkeys(t for t, v in zip(texts, kept, strict=True) if v is None))
        fresh = dict(zip(missing, self.inner.embed(missing), strict=True)) if missing else {}
        for row, (text, vector) in enumerate(zip(texts, kept, strict=True)):
            out[row] = fresh[text] if vector is None else vector
        if fresh:
            self.lru.put(list(fresh), np.asarray(list(fresh.values()), dtype=np.float32))
        if on_progress is not None and texts:
            on_progress(len(texts))
        return out

    def close(self) -> None:
        """Close the on-disk cache it holds for bulk calls (the model needs no closing)."""
        if isinstance(self.bulk, CachedEmbedder):
            self.bulk.close()


def for_queries(embedder: Embedder) -> Embedder:
    """The embedder a search should use: an on-disk cache is put behind an in-memory LRU (its
    model answers queries, it answers bulk calls); any other embedder is returned as it is."""
    if isinstance(embedder, CachedEmbedder):
        return MemoryCachedEmbedder(embedder.inner, bulk=embedder)
    return embedder

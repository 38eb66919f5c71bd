"""Query embeddings for a server: concurrent requests embedded together, recent ones kept in memory.

A server's requests each embed one or two short texts. `BatchingEmbedder` puts them on one queue
served by one thread, which embeds *whatever is waiting* in a single call (up to `max_batch`):
under load, requests that arrived while the model was busy share its next call; alone, a request
is embedded at once — no time window is waited for, so batching never adds latency at low load.
One thread calling the model also keeps the model's own thread pool from being oversubscribed by
the server's request threads.

Vectors of recent texts are kept in a bounded in-memory LRU (`cache_size`): nothing a user typed
is written to disk (the on-disk `CachedEmbedder` is for corpora). A call with more than
`max_batch` texts (an evaluation, a triage) goes straight to the model.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from concurrent.futures import Future

import numpy as np

from ._base import Embedder, ProgressCallback, Vectors, Wrapper
from ._memory import VectorLru

__all__ = ["BatchingEmbedder"]


class BatchingEmbedder(Wrapper):
    """Wraps an `Embedder` (the model itself, not an on-disk cache).

    >>> embedder = BatchingEmbedder(load_embedder("onnx", cache_dir=None))  # doctest: +SKIP
    """

    def __init__(self, inner: Embedder, *, max_batch: int = 32, cache_size: int = 10_000) -> None:
        self.inner, self.max_batch = inner, max_batch
        self.lru = VectorLru(cache_size)
        self._queue: queue.SimpleQueue[tuple[str, Future[np.ndarray]] | None] = queue.SimpleQueue()
        self.calls = 0  # model calls made by the batching thread
        self.batched = 0  # texts those calls embedded
        self._thread = threading.Thread(target=self._serve, name="querywise-embed-batch", daemon=True)
        self._thread.start()

    def embed(self, texts: Sequence[str], *, on_progress: ProgressCallback | None = None) -> Vectors:
        if len(texts) > self.max_batch:
            return self.inner.embed(texts, on_progress=on_progress)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        waiting: list[tuple[int, Future[np.ndarray]]] = []
        for i, vector in enumerate(self.lru.get(texts)):
            if vector is not None:
                out[i] = vector
            else:
                waiting.append((i, Future()))
        for i, future in waiting:
            self._queue.put((texts[i], future))
        for i, future in waiting:
            out[i] = future.result()
        if waiting:
            self.lru.put([texts[i] for i, _ in waiting], out[[i for i, _ in waiting]])
        if on_progress is not None and texts:
            on_progress(len(texts))
        return out

    def _serve(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch:  # whatever else is already waiting, no more
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # stop after this batch
                    break
                batch.append(item)
            unique = list(dict.fromkeys(text for text, _ in batch))
            try:
                vectors = self.inner.embed(unique)
            except BaseException as exc:  # handed to every caller of the batch
                for _, future in batch:
                    future.set_exception(exc)
                continue
            self.calls += 1
            self.batched += len(unique)
            row = {text: vectors[i] for i, text in enumerate(unique)}
            for text, future in batch:
                future.set_result(row[text])

    def close(self) -> None:
        """Stop the batching thread once what is queued is done (the inner embedder stays open)."""
        self._queue.put(None)
        self._thread.join(timeout=10)

"""An on-disk embedding cache: a text is embedded once per model, ever."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import numpy as np

from ._base import Embedder, ProgressCallback, Vectors, Wrapper

__all__ = ["CachedEmbedder"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model_id TEXT NOT NULL,
    text_sha256 BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, text_sha256)
) WITHOUT ROWID
"""
# SQLite caps the parameters of one statement (999 before 3.32); stay well under it.
_LOOKUP_CHUNK = 500


class CachedEmbedder(Wrapper):
    """Wraps an :class:`Embedder`; vectors are kept in SQLite keyed by (model_id, sha256(text)).

    Only texts not seen before with the same ``model_id`` reach the inner embedder, in slices of
    ``commit_every`` texts, each committed in its own transaction: a run killed halfway keeps
    what it finished and never leaves a half-written row (SQLite WAL journal).

    >>> with CachedEmbedder(SentenceTransformerEmbedder(), Path(".cache/querywise")) as embedder:
    ...     vectors = embedder.embed(chunk_texts)  # the second run costs only the look-ups
    """

    def __init__(self, inner: Embedder, cache_dir: Path, *, commit_every: int = 1024) -> None:
        self.inner = inner
        self.commit_every = commit_every
        cache_dir.mkdir(parents=True, exist_ok=True)
        self.path = cache_dir / "embeddings.sqlite3"
        # One connection guarded by a lock, so a server's worker threads may share the cache.
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a killed process loses nothing committed; a power cut may lose
        # the last commits; neither corrupts the file.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=30000")  # other processes may be writing
        self._db.execute(_SCHEMA)

    def embed(
        self, texts: Sequence[str], *, on_progress: ProgressCallback | None = None
    ) -> Vectors:
        """Embed ``texts``, from the cache where possible; hits count as progress too."""
        keys = [hashlib.sha256(text.encode("utf-8")).digest() for text in texts]
        found = self._lookup(set(keys))
        hits = sum(1 for key in keys if key in found)
        # A text repeated within one call is embedded once.
        missing = list(
            {key: text for key, text in zip(keys, texts, strict=True) if key not in found}.items()
        )
        if on_progress is not None and hits:
            on_progress(hits)
        for start in range(0, len(missing), self.commit_every):
            part = missing[start : start + self.commit_every]
            vectors = self.inner.embed([text for _, text in part], on_progress=on_progress)
            self._store([key for key, _ in part], vectors)
            found.update((key, row) for (key, _), row in zip(part, vectors, strict=True))
        repeats = len(keys) - hits - len(missing)
        if on_progress is not None and repeats:
            on_progress(repeats)  # the copies of a repeated text are done too
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = found[key]
        return out

    def _lookup(self, keys: set[bytes]) -> dict[bytes, Vectors]:
        wanted = list(keys)
        found: dict[bytes, Vectors] = {}
        with self._lock:
            for start in range(0, len(wanted), _LOOKUP_CHUNK):
                part = wanted[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT text_sha256, vector FROM vectors"
                    f" WHERE model_id = ? AND text_sha256 IN ({marks})",
                    [self.model_id, *part],
                )
                for key, blob in rows:
                    vector = np.frombuffer(blob, dtype=np.float32)
                    # A row of another length is not ours to trust; embed that text again.
                    if vector.shape == (self.dim,):
                        found[key] = vector
        return found

    def _store(self, keys: Sequence[bytes], vectors: Vectors) -> None:
        rows = [
            (self.model_id, key, np.ascontiguousarray(vector, dtype=np.float32).tobytes())
            for key, vector in zip(keys, vectors, strict=True)
        ]
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT OR REPLACE INTO vectors (model_id, text_sha256, vector)"
                    " VALUES (?, ?, ?)",
                    rows,
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        """Close the database; the cache stays on disk for the next run."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> CachedEmbedder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

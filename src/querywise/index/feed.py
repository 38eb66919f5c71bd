"""A build's vectors, embedded in a thread ahead of the code that writes them.

A build used to analyse the corpus for BM25, then embed a slice, write it (BM25 weights, Qdrant
upserts, chunks.jsonl), embed the next: everything that was not the model ran while the model's
cores waited (int8 runs two texts at once, one per core). Here one thread makes the embedder (a
cold start exports and quantizes the model in child processes) and embeds the corpus a slice at a
time, in order: each slice's token counts for the window report (in a second thread, while the
slice before it is embedded), its vectors and, with sentence vectors, its sentences'. The build analyses the corpus meanwhile, then writes each slice as it
comes while the next is embedded. What is embedded, and in which order, is what the build
embedded before: the same vectors, the same cache rows.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from querywise.corpus import Chunk
from querywise.embed import Embedder, count_over_window
from querywise.index.points import SearchTexts, check_vectors, sentence_vectors

__all__ = ["AHEAD", "SLICE", "Embedded", "EmbeddingFeed"]

#: Texts embedded at a time: the embedding cache's commit (`CachedEmbedder.commit_every`), so a
#: stopped build waits for one commit's texts at most.
SLICE = 1024
#: Slices embedded and not yet written, at most: the writer never waits while the model runs
#: ahead of it, and no more than this many slices' vectors are held.
AHEAD = 2
_POLL_S = 0.1  # how often a thread blocked on the queue looks whether the build has stopped


@dataclass(frozen=True)
class Embedded:
    """Chunks [start, stop) embedded."""

    start: int
    stop: int
    vectors: npt.NDArray[np.float32]
    sentences: list[np.ndarray] | None  # each chunk's sentence vectors, when the build keeps them
    over: tuple[int, int] | None  # (chunks longer than the window, the window): `count_over_window`


class _Advance:
    """The progress callback the feed embeds with: what it reports before the build's bar is
    shown (while the corpus is analysed) is added to the bar once it is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending = 0
        self._to: Callable[[int], None] | None = None

    def __call__(self, n: int) -> None:
        with self._lock:
            to = self._to
            if to is None:
                self._pending += n
                return
        to(n)

    def attach(self, to: Callable[[int], None]) -> None:
        with self._lock:
            self._to, pending, self._pending = to, self._pending, 0
        if pending:
            to(pending)


class EmbeddingFeed:
    """The chunks' vectors, a slice at a time, in corpus order (iterate it), from the embedder
    the build was ``given`` or one ``make`` makes in the feed's thread. With ``early`` the thread
    starts at once (while the caller analyses the corpus); otherwise the embedder is made in the
    caller's thread and the embedding starts on `start` (a build whose analysis forks worker
    processes: no fork while a thread imports or runs the model). Only an embedder it made is
    closed (`close`). A given embedder is called from the feed's thread, as a server's
    `BatchingEmbedder` calls its own."""

    def __init__(
        self, chunks: Sequence[Chunk], given: Embedder | None, make: Callable[[], Embedder], *, sentences: bool, early: bool
    ) -> None:
        self._chunks, self._make, self._sentences = chunks, make, sentences
        self._embedder: Embedder | None = given
        self._made = given is None
        self._error: BaseException | None = None
        self._loaded = threading.Event()
        self._stop = threading.Event()
        self._queue: queue.Queue[Embedded | None] = queue.Queue(maxsize=AHEAD)
        self.advance = _Advance()
        self._thread = threading.Thread(target=self._work, name="querywise-embedding", daemon=True)
        self._started = False
        if early:
            self.start()
        else:
            self._load()

    def start(self) -> None:
        """Start embedding (once; iterating starts it too)."""
        if not self._started:
            self._started = True
            self._thread.start()

    def embedder(self) -> Embedder:
        """The embedder, once made; what making it raised, raised here."""
        if self._started:
            self._loaded.wait()
        if self._embedder is None:
            assert self._error is not None  # _load sets one or the other
            raise self._error
        return self._embedder

    def __iter__(self) -> Iterator[Embedded]:
        self.start()
        while (part := self._queue.get()) is not None:
            yield part
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        """Stop embedding (after the slice under way), then close the embedder if it made it."""
        self._stop.set()
        if self._started:
            self._thread.join()
        if self._made and (close := getattr(self._embedder, "close", None)) is not None:
            close()

    def _load(self) -> None:
        try:
            if self._embedder is None:
                self._embedder = self._make()
        except BaseException as exc:  # raised where the build asks for the embedder
            self._error = exc
        finally:
            self._loaded.set()

    def _work(self) -> None:
        try:
            self._load()
            if self._embedder is None:
                return
            embedder, n = self._embedder, len(self._chunks)
            # Each slice's tokens are counted while the slice before it is embedded: the counting
            # tokenizes it (`OnnxEmbedder.token_counts` keeps the ids for `embed`), which would
            # otherwise leave the model's cores idle between slices.
            with ThreadPoolExecutor(1, thread_name_prefix="querywise-count") as counting:
                counted = counting.submit(count_over_window, embedder, self._texts(0))
                for start in range(0, n, SLICE):
                    if self._stop.is_set():
                        return
                    over = counted.result()
                    if start + SLICE < n:
                        counted = counting.submit(count_over_window, embedder, self._texts(start + SLICE))
                    self._put(self._embed(embedder, start, min(start + SLICE, n), over))
        except BaseException as exc:  # raised where the build reads the next slice
            self._error = exc
        finally:
            self._put(None)

    def _texts(self, start: int) -> list[str]:
        return SearchTexts(self._chunks)[start : start + SLICE]

    def _embed(self, embedder: Embedder, start: int, stop: int, over: tuple[int, int] | None) -> Embedded:
        texts = self._texts(start)
        vectors = np.asarray(embedder.embed(texts, on_progress=self.advance), dtype=np.float32)
        check_vectors(vectors, self._chunks[start:stop], embedder)  # before the sentences, as a build did
        sentences = sentence_vectors(self._chunks[start:stop], embedder, on_progress=self.advance) if self._sentences else None
        return Embedded(start, stop, vectors, sentences, over)

    def _put(self, part: Embedded | None) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(part, timeout=_POLL_S)
                return
            except queue.Full:
                continue

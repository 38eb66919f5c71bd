"""Building an index folder: embed, analyse and write a new build, then switch CURRENT to it
(`store`'s docstring has the folder layout and why a build is atomic)."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.deployment_check import payload_field_counts
from querywise.embed import Embedder, count_over_window, embedder_for
from querywise.files import fsync_dir
from querywise.index.analysis import analyse, workers_for
from querywise.index.builds import (
    Manifest,
    build_lock,
    claim,
    clear_stale,
    current_id,
    point_current,
    prune,
    write_manifest,
)
from querywise.index.engine import EdgeEngine, Engine, EnginePoint
from querywise.index.errors import IndexStoreError
from querywise.index.integrity import seal
from querywise.index.points import (
    IdentifierTexts,
    SearchTexts,
    check_storable,
    check_vectors,
    chunk_sentences,
    graph_fields,
    payload_index_kinds,
    sentence_vectors,
)
from querywise.index.server import ServerEngine, connect, drop_collection
from querywise.index.store import Index, Progress
from querywise.index.update import ChunkIds
from querywise.text import IDENTIFIER_KEYS

if TYPE_CHECKING:  # imported at run time only when a server is used
    from qdrant_client import QdrantClient

__all__ = ["build_index"]

_BATCH = 512
_EMBED_SLICE = 4096  # texts embedded, then written, at a time


def _quiet(phase: str, total: int | None) -> Callable[[int], None]:
    return lambda n: None


def build_index(
    chunks: Sequence[Chunk],
    path: Path | str,
    *,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    client: QdrantClient | None = None,  # for engine = "server"
    progress: Progress = _quiet,
) -> Index:
    """Build an index of `chunks` in folder `path`, atomically replacing any previous build.

    Payload values that cannot be stored (NaN, infinity, non-JSON) are refused before anything
    is written. The same chunks give the same index: the same term ids, points and rankings.

    >>> index = build_index(load_corpus("docs/"), "my-index")  # doctest: +SKIP
    """
    settings = settings or Settings()
    root = Path(path)
    if not chunks:
        raise IndexStoreError("nothing to index")
    check_storable(chunks)
    claim(root)
    (root / "builds").mkdir(parents=True, exist_ok=True)
    started = time.time()
    with build_lock(root):
        clear_stale(root)
        previous = current_id(root)
        build_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        # One it makes only embeds the corpus, so ONNX Runtime's idle threads sleep between
        # operators (a query's spin), and it holds the embedding cache's SQLite connection (Python
        # 3.13 warns when one is left to the garbage collector): closed when the build ends. The
        # index it returns then makes its own query embedder on its first search.
        # It is made while the corpus is analysed for BM25 (`_EmbedderLoad`).
        loading = _EmbedderLoad(settings, embedder, overlap=workers_for(len(chunks), settings.index.build_workers) == 1,
                                first=SearchTexts(chunks)[:_EMBED_SLICE])
        try:
            return _build(root, chunks, settings, loading, embedder, client, progress, build_id, previous, started)
        finally:
            loading.close()


class _EmbedderLoad:
    """The embedder a build was ``given``, or its own, made in a thread while the corpus is
    analysed: a cold start exports (and quantizes) the model in child processes, waited on without
    the GIL, while the analysis (one process, below `analysis.PARALLEL_MIN` texts) takes the other
    core. With worker processes for the analysis (``overlap`` False) it is made first: no fork
    while it loads. An embedder it makes then counts the tokens of ``first`` (the first slice the
    build embeds: the window report, whose ids the embedder keeps for `embed`), in the same thread:
    the export's child has ended by then, so the counts take that core rather than follow the
    analysis on the main thread's. Only an embedder it made is closed."""

    def __init__(self, settings: Settings, given: Embedder | None, *, overlap: bool, first: Sequence[str] = ()) -> None:
        self._embedder: Embedder | None = given
        self._made = given is None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._first, self._first_counted = first, False
        self._first_over: tuple[int, int] | None = None
        if given is not None:
            return
        if overlap:
            self._thread = threading.Thread(target=self._load, args=(settings,), name="querywise-embedder-load", daemon=True)
            self._thread.start()
        else:
            self._load(settings)

    def _load(self, settings: Settings) -> None:
        try:
            self._embedder = embedder_for(settings, bulk=True)
            if self._first:
                self._first_over, self._first_counted = count_over_window(self._embedder, self._first), True
        except BaseException as exc:  # raised where the build asks for the embedder
            self._error = exc

    def over_window(self, embedder: Embedder, texts: Sequence[str], start: int) -> tuple[int, int] | None:
        """`count_over_window` of the slice ``texts`` beginning at chunk ``start``: the first one's
        as counted when the embedder was made, the others' now."""
        if start == 0 and self._first_counted and len(texts) == len(self._first):
            return self._first_over
        return count_over_window(embedder, texts)

    def result(self) -> Embedder:
        """The embedder, once made; what making it raised, raised here."""
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._embedder is not None  # _load sets one or the other
        return self._embedder

    def close(self) -> None:
        """Close the embedder (its cache's SQLite connection), waiting for it if still loading."""
        if self._thread is not None:
            self._thread.join()
        if self._made and (close := getattr(self._embedder, "close", None)) is not None:
            close()


def _build(
    root: Path,
    chunks: Sequence[Chunk],
    settings: Settings,
    loading: _EmbedderLoad,
    given: Embedder | None,
    client: QdrantClient | None,
    progress: Progress,
    build_id: str,
    previous: str | None,
    started: float,
) -> Index:
    """build_index's work under the build lock, with the embedder it was given or made
    (``loading``: asked for once the corpus is analysed); the index it returns searches with
    the one it was `given`, else makes its own."""
    s = settings.index
    kinds = payload_index_kinds(chunks, s.payload_indexes)
    linked = graph_fields(kinds, settings)
    texts = SearchTexts(chunks)
    analysis = analyse(texts, identify=IdentifierTexts(chunks), workers=s.build_workers,
                       on_progress=progress("analysing", len(chunks)))
    embedder = loading.result()
    tmp = root / "builds" / f".tmp-{build_id}"
    tmp.mkdir()
    engine: Engine | None = None
    try:
        if s.engine == "edge":
            engine = EdgeEngine.create(tmp / "shard", dim=embedder.dim, hnsw_m=s.hnsw_m, hnsw_ef_construct=s.hnsw_ef_construct,
                                       payload_graphs=s.filtered_search == "graph", n_points=len(chunks),
                                       segment_points=s.segment_chunks, sentences=s.sentence_vectors)
        else:
            client = client or connect(s.server_url or ":memory:")
            engine = ServerEngine.create(
                client, s.collection, build_id, dim=embedder.dim, hnsw_m=s.hnsw_m, hnsw_ef_construct=s.hnsw_ef_construct,
                shards=s.shards, replicas=s.replicas, payload_graphs=s.filtered_search == "graph", sentences=s.sentence_vectors,
            )
        for field, kind in kinds.items():
            engine.create_payload_index(field, kind, graph=field in linked)
        # Vectors are embedded (or read from the embedding cache) a slice at a time and written
        # with it: none outlives its slice.
        # With sentence vectors, the bar counts the sentences embedded as well as the chunks.
        n_sentences = sum(len(chunk_sentences(c)) for c in chunks) if s.sentence_vectors else 0
        advance = progress("embedding and indexing", len(chunks) + n_sentences)
        over: list[int] = []
        with open(tmp / "chunks.jsonl", "w", encoding="utf-8") as fh:
            for start in range(0, len(chunks), _EMBED_SLICE):
                stop = min(start + _EMBED_SLICE, len(chunks))
                sliced = texts[start:stop]
                if (counted := loading.over_window(embedder, sliced, start)) is not None:
                    over = [over[0] + counted[0] if over else counted[0], counted[1]]
                vectors = np.asarray(embedder.embed(sliced, on_progress=advance), dtype=np.float32)
                check_vectors(vectors, chunks[start:stop], embedder)
                sparse = analysis.vectors(start, stop, k1=s.k1, b=s.b)
                sentences = sentence_vectors(chunks[start:stop], embedder, on_progress=advance) if s.sentence_vectors else None
                for at in range(start, stop, _BATCH):
                    batch = []
                    for i in range(at, min(at + _BATCH, stop)):
                        c = chunks[i]
                        fh.write(c.model_dump_json() + "\n")
                        # The engine also keeps the chunk's identifiers, one form each, for exact lookups:
                        # those of its text and of its metadata (a product page's part numbers).
                        payload = {**c.payload, "id": c.id, "text": c.text, "title": c.title, IDENTIFIER_KEYS: analysis.keys[i]}
                        batch.append(EnginePoint(i, vectors[i - start], sparse[i - start], payload,
                                                 sentences=None if sentences is None else sentences[i - start].tolist()))
                    engine.upsert(batch)
        (tmp / "ids.json").write_text(ChunkIds.of(chunks).model_dump_json(), encoding="utf-8")
        lexicon = analysis.lexicon
        del analysis
        progress("building HNSW graph", None)
        if s.engine == "edge":
            engine.finish()
        (tmp / "lexicon.json").write_bytes(lexicon.dumps())
        engine.close()
        if s.engine == "edge":
            # Qdrant completes its files on the first load (edge_config.json gains defaults,
            # tracker journals are applied); load once so that what is sealed is what readers find.
            EdgeEngine.open(tmp / "shard").close()
        files = seal(tmp)
        manifest = Manifest(
            build_id=build_id,
            created=time.time(),
            n_chunks=len(chunks),
            embedder=embedder.model_id,
            dim=embedder.dim,
            engine=s.engine,
            collection=s.collection if s.engine == "server" else None,
            server_url=s.server_url if s.engine == "server" else None,
            k1=s.k1,
            b=s.b,
            hnsw_m=s.hnsw_m,
            hnsw_ef_construct=s.hnsw_ef_construct,
            payload_indexes=kinds,
            payload_graphs=s.filtered_search == "graph",
            graph_fields=linked if s.filtered_search == "graph" else None,
            field_counts=payload_field_counts(c.payload for c in chunks),
            build_seconds=round(time.time() - started, 3),
            n_over_window=over[0] if over else None,
            n_sentences=n_sentences if s.sentence_vectors else None,
            embedder_window=over[1] if over else None,
            files=files,
        )
        write_manifest(tmp, manifest)
    except BaseException:
        # A clean failure leaves nothing behind (a killed build leaves .tmp-*, removed next time).
        if engine is not None:
            with contextlib.suppress(Exception):
                engine.close()
            if isinstance(engine, ServerEngine):
                with contextlib.suppress(Exception):
                    drop_collection(engine.client, engine.collection)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    os.replace(tmp, root / "builds" / build_id)
    fsync_dir(root / "builds")
    if s.engine == "server":
        engine.finish()  # the alias moves only once the local half is complete
    point_current(root, build_id)
    prune(root, [build_id, previous], s.keep_builds, client)
    return Index.open(root, settings=settings, embedder=given, client=client)  # under the lock: this build

"""The persistent index folder: build it atomically, open it, search it.

Layout of DIR:

    CURRENT              name of the live build (replaced atomically when a build finishes)
    builds/<build_id>/   manifest.json, chunks.jsonl, lexicon.json, shard/ (Qdrant edge)
    builds/.tmp-<id>/    a build in progress; never read, removed by the next build

A build killed half-way leaves CURRENT pointing at the previous build, which stays usable.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict

from querywise.conditions import Where
from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.embed import Embedder, embedder_for
from querywise.index.engine import EdgeEngine, Engine, EngineHit, EnginePoint, EngineQuery, Mode, PayloadKind
from querywise.index.lexical import Lexicon
from querywise.index.server import ServerEngine, connect

if TYPE_CHECKING:  # imported at run time only when a server is used
    from qdrant_client import QdrantClient

__all__ = ["FORMAT_VERSION", "Hit", "Index", "IndexStoreError", "Manifest", "Progress", "build_index"]

FORMAT_VERSION = 1
_BATCH = 512


class IndexStoreError(RuntimeError):
    """The index folder is missing, foreign, or was built for something else."""


class Progress(Protocol):
    """Starts a phase of `total` steps (None if unknown) and returns its advance callback."""

    def __call__(self, phase: str, total: int | None, /) -> Callable[[int], None]: ...


def _quiet(phase: str, total: int | None) -> Callable[[int], None]:
    return lambda n: None


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format_version: int = FORMAT_VERSION
    build_id: str
    created: float
    n_chunks: int
    embedder: str
    dim: int
    engine: Literal["edge", "server"]
    collection: str | None = None
    server_url: str | None = None
    k1: float
    b: float
    hnsw_m: int
    hnsw_ef_construct: int
    payload_indexes: dict[str, str]
    build_seconds: float


class Hit(BaseModel):
    """One result: a chunk, its rank (from 1) and the score of the mode that ranked it
    (cosine for dense, BM25 for bm25, RRF for hybrid)."""

    model_config = ConfigDict(frozen=True)
    id: str
    score: float
    rank: int
    text: str = ""
    title: str = ""
    payload: dict[str, Any] = {}


def _payload_index_kinds(chunks: Sequence[Chunk], wanted: list[str] | None) -> dict[str, PayloadKind]:
    """Infer an engine index type per payload field; skip long text and mixed types."""
    seen: dict[str, set[PayloadKind | Literal["other"]]] = {}
    lengths: dict[str, list[int]] = {}
    for c in chunks:
        for key, value in c.payload.items():
            values = value if isinstance(value, list) else [value]
            for v in values:
                kind: PayloadKind | Literal["other"] = (
                    "bool" if isinstance(v, bool)
                    else "float" if isinstance(v, int | float)
                    else "keyword" if isinstance(v, str)
                    else "other"
                )
                seen.setdefault(key, set()).add(kind)
                if isinstance(v, str):
                    lengths.setdefault(key, []).append(len(v))
    kinds: dict[str, PayloadKind] = {"id": "keyword"}
    for key, ks in seen.items():
        if wanted is not None and key not in wanted:
            continue
        if len(ks) != 1:
            continue
        kind = next(iter(ks))
        if kind == "other":
            continue
        if kind == "keyword" and wanted is None and np.mean(lengths[key]) > 64:
            continue  # prose, not a category: filtering on it makes no sense
        kinds[key] = kind
    return kinds


@contextlib.contextmanager
def _build_lock(root: Path) -> Iterator[None]:
    with open(root / ".lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise IndexStoreError(f"{root}: another build is running") from None
        yield


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

    >>> index = build_index(load_corpus("docs/"), "my-index")  # doctest: +SKIP
    """
    settings = settings or Settings()
    root = Path(path)
    if root.exists() and any(root.iterdir()) and not (root / "CURRENT").exists():
        raise IndexStoreError(f"{root} exists and is not a querywise index; refusing to write into it")
    if not chunks:
        raise IndexStoreError("nothing to index")
    (root / "builds").mkdir(parents=True, exist_ok=True)
    started = time.time()
    with _build_lock(root):
        for stale in (root / "builds").glob(".tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        build_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        tmp = root / "builds" / f".tmp-{build_id}"
        tmp.mkdir()
        embedder = embedder or embedder_for(settings)
        texts = [c.search_text for c in chunks]

        vectors = np.asarray(embedder.embed(texts, on_progress=progress("embedding", len(texts))), dtype=np.float32)
        lexicon, analysed = Lexicon.build(texts)
        s = settings.index
        if s.engine == "edge":
            engine: Engine = EdgeEngine.create(
                tmp / "shard", dim=embedder.dim, hnsw_m=s.hnsw_m, hnsw_ef_construct=s.hnsw_ef_construct
            )
        else:
            client = client or connect(s.server_url or ":memory:")
            engine = ServerEngine.create(
                client, s.collection, build_id, dim=embedder.dim, hnsw_m=s.hnsw_m, hnsw_ef_construct=s.hnsw_ef_construct
            )
        kinds = _payload_index_kinds(chunks, s.payload_indexes)
        for field, kind in kinds.items():
            engine.create_payload_index(field, kind)
        advance = progress("indexing", len(chunks))
        with open(tmp / "chunks.jsonl", "w", encoding="utf-8") as fh:
            for start in range(0, len(chunks), _BATCH):
                batch = []
                for i in range(start, min(start + _BATCH, len(chunks))):
                    c = chunks[i]
                    fh.write(c.model_dump_json() + "\n")
                    payload = {**c.payload, "id": c.id, "text": c.text, "title": c.title}
                    batch.append(EnginePoint(i, vectors[i], lexicon.document_vector(analysed[i], k1=s.k1, b=s.b), payload))
                engine.upsert(batch)
                advance(len(batch))
        progress("building HNSW graph", None)
        if s.engine == "edge":
            engine.finish()
        lexicon.save(tmp / "lexicon.json")
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
            build_seconds=round(time.time() - started, 3),
        )
        (tmp / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
        engine.close()
        final = root / "builds" / build_id
        os.replace(tmp, final)
        if s.engine == "server":
            engine.finish()  # the alias moves only once the local half is complete
        _point_current(root, build_id)
        for old in (root / "builds").iterdir():
            if old.name != build_id:
                shutil.rmtree(old, ignore_errors=True)
    return Index.open(root, settings=settings, embedder=embedder, client=client)


def _point_current(root: Path, build_id: str) -> None:
    tmp = root / "CURRENT.tmp"
    with open(tmp, "w") as fh:
        fh.write(build_id + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, root / "CURRENT")


class Index:
    """An opened index: search by dense vectors, BM25 or both fused."""

    def __init__(
        self, root: Path, manifest: Manifest, engine: Engine, lexicon: Lexicon, settings: Settings, embedder: Embedder | None
    ) -> None:
        self.root, self.manifest, self.engine, self.lexicon = root, manifest, engine, lexicon
        self.settings, self._embedder = settings, embedder

    @classmethod
    def open(cls, path: Path | str, *, settings: Settings | None = None, embedder: Embedder | None = None, client: QdrantClient | None = None) -> Index:
        """Open the live build of index folder `path`."""
        root = Path(path)
        current = root / "CURRENT"
        if not current.exists():
            raise IndexStoreError(f"{root} is not a querywise index (no CURRENT file); build one with `querywise index`")
        build = root / "builds" / current.read_text().strip()
        try:
            manifest = Manifest.model_validate_json((build / "manifest.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise IndexStoreError(f"{build}: manifest missing; rebuild the index") from None
        if manifest.format_version != FORMAT_VERSION:
            raise IndexStoreError(f"{root}: index format {manifest.format_version}, this querywise reads {FORMAT_VERSION}; rebuild it")
        if embedder is not None and embedder.model_id.split("/")[0] != manifest.embedder.split("/")[0]:
            raise IndexStoreError(f"{root} was embedded with {manifest.embedder}, not {embedder.model_id}")
        engine: Engine
        if manifest.engine == "edge":
            engine = EdgeEngine.open(build / "shard")
        else:
            engine = ServerEngine.open(client or connect(manifest.server_url or ":memory:"), manifest.collection or "")
        return cls(root, manifest, engine, Lexicon.load(build / "lexicon.json"), settings or Settings(), embedder)

    def __len__(self) -> int:
        return self.manifest.n_chunks

    @property
    def embedder(self) -> Embedder:
        """The query embedder, loaded on first use (BM25-only searches never load a model)."""
        if self._embedder is None:
            self._embedder = embedder_for(self.settings)
        return self._embedder

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.embedder.embed([text])[0], dtype=np.float32)

    def query(
        self,
        *,
        mode: Mode = "hybrid",
        k: int = 10,
        dense: Sequence[float] | None = None,
        sparse: tuple[list[int], list[float]] | None = None,
        where: Where | None = None,
        exact: bool = False,
    ) -> list[Hit]:
        """Search with precomputed query vectors (the plan executor reuses them)."""
        s = self.settings.index
        hits = self.engine.query(
            EngineQuery(
                mode=mode, limit=k, dense=dense, sparse=sparse, where=where,
                depth=max(s.depth, k), rrf_k=s.rrf_k, exact=exact,
                hnsw_ef=max(s.hnsw_ef_filtered if where else s.hnsw_ef, k),
            )
        )
        return [_hit(h, rank) for rank, h in enumerate(hits, start=1)]

    def search(self, text: str, *, mode: Mode = "hybrid", k: int = 10, where: Where | None = None, exact: bool = False) -> list[Hit]:
        """Search for `text`. Filters run inside the engine.

        >>> Index.open("demo-index").search("warranty on the X3", k=3)  # doctest: +SKIP
        """
        if mode not in ("dense", "bm25", "hybrid"):
            raise ValueError(f"mode must be dense, bm25 or hybrid, not {mode!r}")
        dense = self.embed_query(text).tolist() if mode != "bm25" else None
        sparse = self.lexicon.query_vector(text) if mode != "dense" else None
        return self.query(mode=mode, k=k, dense=dense, sparse=sparse, where=where, exact=exact)

    def chunks(self) -> Iterator[Chunk]:
        """Every indexed chunk, in index order."""
        build = self.root / "builds" / self.manifest.build_id
        with open(build / "chunks.jsonl", encoding="utf-8") as fh:
            for line in fh:
                yield Chunk.model_validate_json(line)

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _hit(h: EngineHit, rank: int) -> Hit:
    p = dict(h.payload)
    cid, text, title = str(p.pop("id", h.id)), p.pop("text", ""), p.pop("title", "")
    return Hit(id=cid, score=h.score, rank=rank, text=text, title=title, payload=p)

"""The persistent index folder: open it, search it, update it (`writing.build_index` builds it).

Layout of DIR:

    CURRENT              the live build's id: a bare folder name in builds/ (replaced atomically)
    .lock                held by a build or a rollback while it runs
    builds/<build_id>/   manifest.json, chunks.jsonl, ids.json, lexicon.json, shard/ (Qdrant edge)
                         (a search reads its hits from chunks.jsonl by ids.json: `chunk_lines`)
    builds/.tmp-<id>/    a build in progress; never read, removed by the next build

A build writes a new folder, makes it durable (fsync), then switches CURRENT: a build killed
half-way leaves the previous index usable, and a folder left by a first build that failed (only
builds/.tmp-* and .lock) is still a querywise folder the next build cleans up and uses.

A live update (`Index.upsert`, `delete`, `update`; `update.py`) is a build too: a copy of the live
build, changed, switched in the same way.

Generations. A build keeps `[index] keep_builds` builds (default 2: the new one and the one it
replaced), so `rollback` can switch CURRENT back. An opened index holds a shared lock on its
build's manifest.json until it is closed and never reads CURRENT again; a build removes an old
build only after taking that lock exclusively, so a build a reader holds is never removed (the
next build tries again). A reader that opened the previous build just before a switch keeps
searching it, however many rebuilds follow.

Checks on open, each an `IndexStoreError` naming the folder, the part and what to do: CURRENT is
a bare build id of a folder in builds/ (no separator, no `..`, not a link); the manifest parses, is
this format and this build's; every file the build recorded (chunks.jsonl, lexicon.json, every
shard file) is there at its recorded size; lexicon.json matches its recorded digest (it is read
whole anyway: +0.1 ms on the demo index); the shard's own config has the manifest's dimension and
the shard holds n_chunks points; the embedder's dimension is the manifest's. These cost ~1 ms on
the demo index, whose open is ~60 ms of Qdrant loading its shard. Whole-file digests of the shard
and chunks.jsonl run on demand (`Index.verify()`, `Index.open(..., verify=True)`; `Index.chunks()`
checks chunks.jsonl as it reads it): they scale with the corpus (the demo shard is 179 MB of
preallocated, mostly sparse files; 40 ms even with holes skipped), which would make opening cost
a read of the whole index. Sizes catch what was seen in practice: truncation, a missing file.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic_core import from_json

from querywise.conditions import Where
from querywise.config import Settings
from querywise.corpus import Chunk, document_of
from querywise.deployment_check import FieldPresence, field_root, payload_field_counts
from querywise.embed import Embedder, embedder_for, for_queries
from querywise.index.builds import (
    FORMAT_VERSION,
    Manifest,
    build_folder,
    check_embedder,
    check_files,
    hold,
    read_current,
    rollback,
)
from querywise.index.chunk_lines import ChunkLines
from querywise.index.engine import EdgeEngine, Engine, EngineHit, EngineQuery, Mode
from querywise.index.errors import IndexStoreError, damaged
from querywise.index.feedback import with_feedback
from querywise.index.integrity import BlockDigest, FileSum, digest_bytes
from querywise.index.lexical import Lexicon
from querywise.index.server import ServerEngine, collection_of, connect
from querywise.index.update import ChunkIds, Update, update_index
from querywise.text import IDENTIFIER_KEYS, analyze, words

if TYPE_CHECKING:  # imported at run time only when a server is used
    from qdrant_client import QdrantClient

__all__ = ["FORMAT_VERSION", "FileSum", "Hit", "Index", "IndexStoreError", "Manifest", "Progress", "rollback"]

_OPEN_ATTEMPTS = 5
_HOLDS_SCAN = 64  # chunks read for a word by `Index.holds`


class Progress(Protocol):
    """Starts a phase of `total` steps (None if unknown) and returns its advance callback."""

    def __call__(self, phase: str, total: int | None, /) -> Callable[[int], None]: ...


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

    @property
    def doc_id(self) -> str:
        """The document the hit's chunk is from (`corpus.document_of`)."""
        return document_of(self.id, self.payload)


def _read_fd(fd: int) -> bytes:
    with open(fd, "rb", closefd=False) as fh:
        return fh.read()


def _parse_manifest(root: Path, build: Path, raw: bytes) -> Manifest:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise damaged(root, "manifest", f"{build / 'manifest.json'} is not valid JSON (truncated or overwritten)") from None
    if not isinstance(data, dict):
        raise damaged(root, "manifest", f"{build / 'manifest.json'} is not a JSON object")
    version = data.get("format_version")
    if version != FORMAT_VERSION:
        raise damaged(root, "manifest", f"index format {version}, this querywise reads {FORMAT_VERSION}")
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "(top)"
        raise damaged(root, "manifest", f"{where}: {first['msg']}") from None
    if manifest.build_id != build.name:
        raise damaged(root, "manifest", f"belongs to build {manifest.build_id!r}, found in {build}")
    if manifest.dim <= 0 or manifest.n_chunks <= 0:
        raise damaged(root, "manifest", f"dim {manifest.dim} and n_chunks {manifest.n_chunks} must be positive")
    for rel in manifest.files:
        if rel.startswith("/") or ".." in rel.split("/") or "\\" in rel:
            raise damaged(root, "manifest", f"lists a file outside its build: {rel!r}")
    for needed in ("chunks.jsonl", "lexicon.json"):
        if needed not in manifest.files:
            raise damaged(root, "manifest", f"records no size and checksum for {needed}")
    if manifest.engine == "edge" and "shard/edge_config.json" not in manifest.files:
        raise damaged(root, "manifest", "says engine edge but records no shard")
    if manifest.engine == "server" and not manifest.collection:
        raise damaged(root, "manifest", "says engine server but names no collection")
    return manifest


def _load_lexicon(root: Path, build: Path, manifest: Manifest) -> Lexicon:
    path = build / "lexicon.json"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise damaged(root, "lexicon", f"{path} cannot be read ({exc.strerror})") from None
    if digest_bytes(raw) != manifest.files["lexicon.json"].digest:
        raise damaged(root, "lexicon", f"{path} does not match the checksum recorded at build time (changed since)")
    try:
        lexicon = Lexicon.loads(raw)
    except (ValueError, KeyError, TypeError) as exc:
        raise damaged(root, "lexicon", f"{path} is not a lexicon ({exc})") from None
    if lexicon.n_docs != manifest.n_chunks:
        raise damaged(root, "lexicon", f"counts {lexicon.n_docs} documents, the manifest {manifest.n_chunks}")
    return lexicon


def _is_engine_failure(exc: BaseException) -> bool:
    """The engine's own errors, including a Rust panic (pyo3's PanicException is a BaseException)."""
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


def _open_edge(root: Path, build: Path, manifest: Manifest) -> EdgeEngine:
    config = build / "shard" / "edge_config.json"
    try:
        dim = json.loads(config.read_bytes())["vectors"]["dense"]["size"]
    except (OSError, ValueError, KeyError, TypeError):
        raise damaged(root, "shard", f"{config} does not give the dense vectors' size") from None
    if dim != manifest.dim:
        raise damaged(root, "manifest", f"dim {manifest.dim}, but the shard holds {dim}-dimensional vectors")
    try:
        engine = EdgeEngine.open(build / "shard")
    except BaseException as exc:
        if not _is_engine_failure(exc):
            raise
        raise damaged(root, "shard", f"Qdrant cannot load {build / 'shard'} ({str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__})") from None
    try:
        count = engine.count()
    except BaseException as exc:
        engine.close()
        if not _is_engine_failure(exc):
            raise
        raise damaged(root, "shard", f"Qdrant cannot read {build / 'shard'}") from None
    if count != manifest.n_chunks:
        engine.close()
        raise damaged(root, "shard", f"holds {count} points, the manifest {manifest.n_chunks}")
    return engine


class _Generation:
    """One build as an opened index reads it: its engine, lexicon and the reader's lock. A live
    update swaps an index to a new generation; the old one closes when its last search ends."""

    def __init__(self, manifest: Manifest, engine: Engine, lexicon: Lexicon, build: Path, hold: int | None,
                 lines: ChunkLines | None = None) -> None:
        self.manifest, self.engine, self.lexicon, self.build = manifest, engine, lexicon, build
        self.lines = lines  # what hits show, read from chunks.jsonl (None: from the engine's payloads)
        self.presence: FieldPresence | None = None
        # The payload fields whose values have graph links in this build (older builds: every indexed one).
        self.linked = frozenset(
            () if not manifest.payload_graphs
            else manifest.payload_indexes if manifest.graph_fields is None else manifest.graph_fields
        )
        # The reader's lock on its build (see builds.hold), released by close() or with the object.
        self._release = weakref.finalize(self, os.close, hold) if hold is not None else None
        self.users, self.retired, self._closed = 0, False, False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.engine.close()
        finally:
            if self.lines is not None:
                self.lines.close()
            if self._release is not None:
                self._release()


class Index:
    """An opened index: search by dense vectors, BM25 or both fused.

    It reads one build, the one CURRENT named when it was opened, until it is closed or updated
    through it (`upsert`, `delete`): a rebuild meanwhile neither moves it nor removes its files."""

    def __init__(
        self,
        root: Path,
        manifest: Manifest,
        engine: Engine,
        lexicon: Lexicon,
        settings: Settings,
        embedder: Embedder | None,
        *,
        build: Path | None = None,
        hold: int | None = None,
        lines: ChunkLines | None = None,
    ) -> None:
        # Searches embed queries through an in-memory LRU: the on-disk cache is for builds (a read
        # path that wrote would grow that file without bound and share its write lock).
        self.root, self.settings, self._embedder = root, settings, for_queries(embedder) if embedder is not None else None
        self._embedder_checked = False
        self._owned_embedder: Embedder | None = None  # made here on first use: closed with the index
        self._lock = threading.Lock()
        self._gen = _Generation(manifest, engine, lexicon, build or root / "builds" / manifest.build_id, hold, lines)

    @property
    def manifest(self) -> Manifest:
        return self._gen.manifest

    @property
    def engine(self) -> Engine:
        return self._gen.engine

    @property
    def lexicon(self) -> Lexicon:
        """The build's lexicon. Term ids only grow across live updates, so a query vector made
        from one generation's lexicon is valid against the next."""
        return self._gen.lexicon

    @property
    def build(self) -> Path:
        return self._gen.build

    @contextlib.contextmanager
    def _using(self) -> Iterator[_Generation]:
        """The live generation, kept open until the caller is done with it."""
        with self._lock:
            gen = self._gen
            gen.users += 1
        try:
            yield gen
        finally:
            with self._lock:
                gen.users -= 1
                last = gen.retired and gen.users == 0
            if last:
                gen.close()

    @classmethod
    def open(
        cls,
        path: Path | str,
        *,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        client: QdrantClient | None = None,
        verify: bool = False,
    ) -> Index:
        """Open the live build of index folder `path` (`verify`: check every file's checksum too).

        Any damage is an `IndexStoreError` naming the folder, the part and what to do."""
        root = Path(path)
        for _ in range(_OPEN_ATTEMPTS):
            build = build_folder(root, read_current(root))
            held = hold(root, build)
            if held is None:
                continue  # a build removed it after CURRENT moved on: read CURRENT again
            try:
                return cls._load(root, build, held, settings or Settings(), embedder, client, verify)
            except BaseException:
                os.close(held)
                raise
        raise damaged(root, "CURRENT", "kept naming builds that were being removed", "try again once the running builds finish")

    @classmethod
    def _load(
        cls, root: Path, build: Path, hold: int, settings: Settings,
        embedder: Embedder | None, client: QdrantClient | None, verify: bool,
    ) -> Index:
        try:
            raw = _read_fd(hold)
        except OSError as exc:
            raise damaged(root, "manifest", f"{build / 'manifest.json'} cannot be read ({exc.strerror})") from None
        manifest = _parse_manifest(root, build, raw)
        check_files(root, build, manifest, full=verify)
        lexicon = _load_lexicon(root, build, manifest)
        if embedder is not None:
            check_embedder(root, manifest, embedder)
        engine: Engine
        lines: ChunkLines | None = None
        if manifest.engine == "edge":
            lines = _open_lines(root, build)
            try:
                engine = _open_edge(root, build, manifest)
            except BaseException:
                if lines is not None:
                    lines.close()
                raise
        else:
            server = client or connect(manifest.server_url or ":memory:")
            engine = ServerEngine.open(server, collection_of(manifest.collection or "", manifest.build_id))
        return cls(root, manifest, engine, lexicon, settings, embedder, build=build, hold=hold, lines=lines)

    def upsert(self, chunks: Sequence[Chunk]) -> Update:
        """Add or replace documents without a rebuild: each chunk's document replaces that
        document's chunks (`update.update_index`). Searches running meanwhile finish on the build
        they started on; the next search reads the update.

        >>> index.upsert([Chunk(id="t-9", text="Refunds take 5 days")])  # doctest: +SKIP
        """
        return self.update(upsert=chunks)

    def delete(self, ids: Sequence[str]) -> Update:
        """Remove documents (every chunk of each) or single chunks, by id, without a rebuild."""
        return self.update(delete=ids)

    def update(self, *, upsert: Sequence[Chunk] = (), delete: Sequence[str] = ()) -> Update:
        """`upsert` and `delete` in one new build (one copy of the index, one switch)."""
        done = update_index(self.root, upsert=upsert, delete=delete, settings=self.settings, embedder=self.embedder)
        fresh = Index.open(self.root, settings=self.settings, embedder=self._embedder)
        with self._lock:
            old, self._gen = self._gen, fresh._gen
            old.retired = True
            last = old.users == 0
        if last:
            old.close()
        return done

    def verify(self) -> None:
        """Check every file of this build against the checksum recorded at build time."""
        with self._using() as gen:
            check_files(self.root, gen.build, gen.manifest, full=True)

    def __len__(self) -> int:
        return self.manifest.n_chunks

    @property
    def embedder(self) -> Embedder:
        """The query embedder, loaded on first use (BM25-only searches never load a model). It
        may serve other moves too; it is checked against the index when it embeds a query."""
        if self._embedder is None:
            self._embedder = self._owned_embedder = for_queries(embedder_for(self.settings))
        return self._embedder

    def embed_query(self, text: str) -> np.ndarray:
        """The query's dense vector; an `IndexStoreError` if the embedder is not the index's."""
        if not self._embedder_checked:
            check_embedder(self.root, self.manifest, self.embedder)
            self._embedder_checked = True
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
        feedback: bool = True,
    ) -> list[Hit]:
        """Search with precomputed query vectors (the plan executor reuses them); `feedback`: as
        `[index] feedback_docs` says (False: never, as `tune` measures the lists without it)."""
        with self._using() as gen:
            return self._run(gen, mode, k, dense, sparse, where, exact, feedback=feedback)

    def _run(self, gen: _Generation, mode: Mode | Literal["sentences"], k: int, dense: Sequence[float] | None,
             sparse: tuple[list[int], list[float]] | None, where: Where | None, exact: bool, *, feedback: bool = True) -> list[Hit]:
        if dense is not None and mode != "bm25" and len(dense) != gen.manifest.dim:
            raise ValueError(f"a {len(dense)}-dimensional query vector for an index of dimension {gen.manifest.dim}")
        s = self.settings.index
        q = EngineQuery(
            mode=mode, limit=k, dense=dense, sparse=sparse, where=where,
            depth=max(s.depth, k), rrf_k=s.rrf_k, fusion=s.fusion, dense_weight=s.dense_weight,
            sentences=gen.manifest.n_sentences is not None, sentence_share=s.sentence_share,
            hnsw_ef=max(s.hnsw_ef_filtered if where else s.hnsw_ef, k),
            **_filtered_plan(s.filtered_search, gen.linked, where, exact),
        )
        if feedback and s.feedback_docs and mode in ("hybrid", "bm25"):  # `holds` reads hits for one word: never expanded
            q = with_feedback(gen.engine, q, gen.lexicon, docs=s.feedback_docs, terms=s.feedback_terms, weight=s.feedback_weight,
                              k1=gen.manifest.k1, b=gen.manifest.b)
        if gen.lines is not None:
            return _hits_from_lines(self.root, gen.lines, gen.engine.query(replace(q, with_payload=False)))
        hits = gen.engine.query(q)
        return _HITS.validate_python([_hit(h, rank) for rank, h in enumerate(hits, start=1)])

    def sentence_query(self, dense: Sequence[float], *, k: int = 10, where: Where | None = None) -> list[Hit]:
        """The best-sentence list alone (each chunk scored by its sentence closest to `dense`), which
        hybrid fuses when the build keeps sentence vectors; `querywise tune` weighs it from this."""
        with self._using() as gen:
            if gen.manifest.n_sentences is None:
                raise IndexStoreError(f"{self.root} keeps no sentence vectors: build it with [index] sentence_vectors = true", part="manifest")
            return self._run(gen, "sentences", k, dense, None, where, False)

    def search(self, text: str, *, mode: Mode = "hybrid", k: int = 10, where: Where | None = None, exact: bool = False) -> list[Hit]:
        """Search for `text`. Filters run inside the engine.

        >>> Index.open("demo-index").search("warranty on the X3", k=3)  # doctest: +SKIP
        """
        if mode not in ("dense", "bm25", "hybrid"):
            raise ValueError(f"mode must be dense, bm25 or hybrid, not {mode!r}")
        dense = self.embed_query(text).tolist() if mode != "bm25" else None
        with self._using() as gen:
            sparse = gen.lexicon.query_vector(text) if mode != "dense" else None
            return self._run(gen, mode, k, dense, sparse, where, exact)

    def holds(self, word: str, where: Where) -> bool:
        """Whether some chunk that `where` lets through holds `word` as written (its words, an
        identifier's whole compound; not merely its stem: "separately" is not "separate"): what a
        session may be told this index knows.

        The engine finds the chunks of `where` holding the word's rarest BM25 term (k = 64); their
        text is then read for the word itself. A word whose stem is that common may be missed:
        then it is not shown (fail closed).

        >>> Index.open("demo-index").holds("budget", parse_where(["markets=eu"]))  # doctest: +SKIP
        """
        wanted = set(words(word))
        if not wanted:
            return True
        with self._using() as gen:  # one generation for the term ids and the search (a live update may switch builds)
            lexicon = gen.lexicon
            ids = [i for t in analyze(word) if (i := lexicon.terms.get(t)) is not None]
            if not ids:
                return False
            rarest = min(ids, key=lambda i: lexicon.df[i])
            hits = self._run(gen, "bm25", _HOLDS_SCAN, None, ([rarest], [1.0]), where, False, feedback=False)
        return any(wanted <= set(words(f"{h.title}\n{h.text}")) for h in hits)

    def field_presence(self) -> FieldPresence:
        """How many chunks carry each payload field: from the manifest, or (a build made before
        the manifest recorded it) counted over the chunks once, on first use."""
        gen = self._gen
        if gen.presence is None:
            counts = gen.manifest.field_counts
            if counts is None:
                counts = payload_field_counts(c.payload for c in self.chunks())
            gen.presence = FieldPresence(n_chunks=gen.manifest.n_chunks, counts=counts)
        return gen.presence

    def chunks(self) -> Iterator[Chunk]:
        """Every indexed chunk, in index order (checked against its checksum as it is read: an
        `IndexStoreError` after the last chunk if the file changed since the build)."""
        with self._using() as gen:
            path = gen.build / "chunks.jsonl"
            digest = BlockDigest()
            try:
                lines = _lines(path)
                for n, line in enumerate(lines, start=1):
                    digest.update(line)
                    try:
                        chunk = Chunk.model_validate_json(line)
                    except ValidationError:
                        raise damaged(self.root, "chunks", f"{path}:{n} is not a chunk") from None
                    yield chunk
            except OSError as exc:
                raise damaged(self.root, "chunks", f"{path} cannot be read ({exc.strerror})") from None
            if digest.hexdigest() != gen.manifest.files["chunks.jsonl"].digest:
                raise damaged(self.root, "chunks", f"{path} does not match the checksum recorded at build time (changed since)")

    def close(self) -> None:
        """Close the engine (once no search is running on it), then let builds remove this build again."""
        with self._lock:
            gen = self._gen
            gen.retired = True
            last = gen.users == 0
        if last:
            gen.close()
        # The embedder it made holds the on-disk cache's SQLite connection (Python 3.13 warns
        # when one is left to the garbage collector); one it was given is its caller's to close.
        if (close := getattr(self._owned_embedder, "close", None)) is not None:
            close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lines(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        yield from fh


def _filtered_plan(mode: str, linked: frozenset[str], where: Where | None, exact: bool) -> dict[str, bool]:
    """How a dense search under `where` runs (see `[index] filtered_search`): over the graph's
    links when one of its conditions is on a field that has them, else with ACORN."""
    if not where or exact:
        return {"exact": exact}
    if mode == "exact":
        return {"exact": True}
    walks_links = mode == "graph" and any(field_root(c.field) in linked for c in where.conditions)
    return {"exact": False, "acorn": not walks_links}


# A search's hits validated as one list: a hundred `Hit(...)` calls cost a third more (SciFact, k=100).
_HITS = TypeAdapter(list[Hit])


def _open_lines(root: Path, build: Path) -> ChunkLines | None:
    """chunks.jsonl's lines by point, from ids.json (None for a build made before ids.json: its
    hits are read from the engine's payloads, as they were then)."""
    ids = build / "ids.json"
    if not ids.is_file():
        return None
    try:
        return ChunkLines.open(build / "chunks.jsonl", ChunkIds.model_validate_json(ids.read_bytes()).points)
    except OSError as exc:
        raise damaged(root, "chunks", f"{build / 'chunks.jsonl'} or {ids.name} cannot be read ({exc.strerror})") from None
    except (ValidationError, ValueError) as exc:
        raise damaged(root, "chunks", f"{build / 'chunks.jsonl'} does not match {ids} ({str(exc).splitlines()[0]})") from None


# What the index adds to a chunk's payload in the engine; a hit's payload never carries them.
_OWN_KEYS = frozenset({"id", "text", "title", IDENTIFIER_KEYS})


def _hits_from_lines(root: Path, lines: ChunkLines, found: Sequence[EngineHit]) -> list[Hit]:
    """The hits, each from its chunk's line of chunks.jsonl (`{"id":..,"text":..,"title":..,
    "payload":{..}}`): the lines parsed as one JSON array by pydantic's core, then validated as
    `Hit`s in one call. The same hits, field for field, as `_hit` makes from the engine's payloads
    (tests/index/test_chunk_lines.py). Parsing straight into `Hit`s (`validate_json` on each line
    with its score and rank spliced in) cost a third more: the splicing, and JSON validation's
    per-field work (SciFact's 100 hits, 0.58 against 0.37 ms)."""
    if not found:
        return []
    # Keys only are cached: a payload's many short values (SciFact's sentences) are rarely repeated.
    try:
        rows = from_json(lines.json_array([h.id for h in found]), cache_strings="keys")
        for rank, (h, row) in enumerate(zip(found, rows, strict=True), start=1):
            row["score"], row["rank"] = h.score, rank
            # A payload key the index uses itself (a chunk made in code may have one) was overwritten
            # in the engine and dropped from its hits: dropped here too.
            if not _OWN_KEYS.isdisjoint(payload := row.get("payload", {})):
                row["payload"] = {k: v for k, v in payload.items() if k not in _OWN_KEYS}
        return _HITS.validate_python(rows)
    except (ValueError, KeyError, TypeError) as exc:  # a line that is not a chunk, a point without one
        raise damaged(root, "chunks", f"{lines.path} does not hold the chunks of the index's points ({str(exc).splitlines()[0][:200]})") from None


def _hit(h: EngineHit, rank: int) -> dict[str, Any]:
    """The fields of a `Hit` from an engine's hit (its payload less what the index keeps for itself)."""
    p = dict(h.payload)
    cid, text, title = str(p.pop("id", h.id)), p.pop("text", ""), p.pop("title", "")
    p.pop(IDENTIFIER_KEYS, None)
    return {"id": cid, "score": h.score, "rank": rank, "text": text, "title": title, "payload": p}

"""A live update of an index folder: add, replace and remove documents without a rebuild.

Copy on write. The live build's shard is copied (its holes kept) into builds/.tmp-<id>, the
change is applied to the copy, the copy is sealed and CURRENT switched, exactly as a build
switches it. Not in place with a journal, because:

- a reader (another process, a server) has the live shard loaded, and Qdrant's edge shard has
  one writer: writing under it would change what it reads mid-search, or not reach it at all;
- a killed update leaves builds/.tmp-* (removed by the next build or update) and CURRENT on the
  last good build: nothing to replay, nothing half-applied;
- the build before the update stays a generation: `--rollback` undoes an update, `keep_builds`
  prunes updates as it prunes builds.

The price is the copy, which grows with the index (bench/results/live_index.json measures it).

What a rebuild of the same corpus would hold, kept so: the chunks in their order (a replaced
chunk keeps its place and its point id, a new one comes last, so ties break as in a rebuild:
point ids keep corpus order), the points, the lexicon's counts (`lexical.fold`), the identifier
keys, the sentence vectors. Two things a rebuild does differently: term ids (an update appends
new terms; a query maps its words through the lexicon, so rankings do not see ids), and the BM25
length norm, whose average length an update keeps from the build until the corpus' moves by more
than `[index] update_avgdl_drift`, when every chunk is weighed again.

A payload field that no chunk of the build had gets a payload index if the new chunks can have
one; `[index] graph_fields` links only come with a rebuild.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.deployment_check import payload_field_counts
from querywise.embed import Embedder, count_over_window
from querywise.files import fsync_dir
from querywise.index.analysis import Analysis, analyse
from querywise.index.builds import (
    Manifest,
    build_folder,
    build_lock,
    check_embedder,
    check_files,
    clear_stale,
    manifest_of,
    point_current,
    prune,
    read_current,
    write_manifest,
)
from querywise.index.engine import EdgeEngine, EnginePoint
from querywise.index.errors import IndexStoreError, damaged
from querywise.index.integrity import FileSum, seal
from querywise.index.lexical import Lexicon, SparseVec, fold
from querywise.index.points import IdentifierTexts, SearchTexts, check_storable, check_vectors, chunk_sentences, payload_index_kinds, sentence_vectors
from querywise.text import IDENTIFIER_KEYS

__all__ = ["ChunkIds", "Update", "update_index"]

_EMBED_SLICE = 4096
# chunks.jsonl lines are `Chunk.model_dump_json()`: the id comes first.
_ID = re.compile(rb'^\{"id":("(?:[^"\\]|\\.)*")')


class ChunkIds(BaseModel):
    """ids.json: per line of chunks.jsonl, the chunk's id, its document (None: its own id) and
    its point in the engine. A build numbers points 0..n-1; after updates they have gaps."""

    model_config = ConfigDict(extra="forbid")
    ids: list[str]
    docs: list[str | None]
    points: list[int]

    @classmethod
    def of(cls, chunks: Sequence[Chunk]) -> ChunkIds:
        return cls(ids=[c.id for c in chunks], docs=[c.doc_id if c.doc_id != c.id else None for c in chunks], points=list(range(len(chunks))))


@dataclass(frozen=True)
class Update:
    """What an update did: chunks added, replaced (same id) and removed; whether every chunk
    was weighed again (the average length drifted); the new build and how long it took."""

    build_id: str
    added: int
    replaced: int
    removed: int
    reweighed: bool
    seconds: float


def update_index(
    path: Path | str,
    *,
    upsert: Sequence[Chunk] = (),
    delete: Sequence[str] = (),
    settings: Settings,
    embedder: Embedder,
) -> Update:
    """Add or replace the documents of `upsert` and remove those named in `delete`, as a new
    build of the index folder `path` (see the module's notes).

    A document in `upsert` replaces every chunk of that document: a chunk whose id it no longer
    has is removed. `delete` names documents (every chunk of each) or single chunks."""
    root = Path(path)
    started = time.time()
    check_storable(upsert)
    fresh = list({c.id: c for c in upsert}.values())  # the last of one id wins, as a reload would
    with build_lock(root):
        clear_stale(root)
        live = read_current(root)
        source = build_folder(root, live)
        manifest = manifest_of(source)
        if manifest is None:
            raise damaged(root, "manifest", f"{source / 'manifest.json'} is missing or not this build's")
        if manifest.engine != "edge":
            raise IndexStoreError(
                f"{root}: a live update needs the embedded engine; an index on a Qdrant server is rebuilt "
                f"(`querywise index SOURCE --index {root}`)", part="manifest",
            )
        check_embedder(root, manifest, embedder)
        check_files(root, source, manifest, full=False)  # what is copied from is whole, as an open would check
        lines = (source / "chunks.jsonl").read_bytes().splitlines(keepends=True)
        known = _ids_of(root, source, lines)
        gone = _removed(known, fresh, delete)
        # The lines that stay, by chunk id: a fresh chunk among them replaces it in place; any other
        # is new (one deleted and brought back in the same update too) and comes last.
        at = {cid: i for i, cid in enumerate(known.ids) if i not in gone}
        old = [Chunk.model_validate_json(lines[i]) for i in sorted(gone | {at[c.id] for c in fresh if c.id in at})]
        base = Lexicon.loads((source / "lexicon.json").read_bytes())
        workers = settings.index.build_workers
        added = analyse(SearchTexts(fresh), identify=IdentifierTexts(fresh), workers=workers)
        lexicon = fold(fold(base, analyse(SearchTexts(old), workers=workers).lexicon, -1), added.lexicon, 1)
        if lexicon.n_docs <= 0:
            raise IndexStoreError(f"{root}: the update would leave the index empty; nothing was changed", part="chunks")
        basis = manifest.bm25_avgdl or base.avgdl
        reweigh = basis <= 0 or abs(lexicon.avgdl / basis - 1) > settings.index.update_avgdl_drift
        if reweigh:
            basis = lexicon.avgdl
        build_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        tmp = root / "builds" / f".tmp-{build_id}"
        try:
            _clone(source / "shard", tmp / "shard")
            engine = EdgeEngine.open(tmp / "shard")
            try:
                ids, kinds = _apply(engine, manifest, known, gone, fresh, added, lexicon, basis, embedder, settings)
                if reweigh:
                    _reweigh(engine, lines, known, gone, fresh, lexicon, settings)
                engine.flush()
            finally:
                engine.close()
            EdgeEngine.open(tmp / "shard").close()  # as a build does: Qdrant completes its files on a load
            replaced = {c.id: c for c in fresh if c.id in at}
            body = [replaced[cid].model_dump_json().encode() + b"\n" if cid in replaced else lines[i] for cid, i in at.items()]
            body += [c.model_dump_json().encode() + b"\n" for c in fresh if c.id not in at]
            (tmp / "chunks.jsonl").write_bytes(b"".join(body))
            (tmp / "ids.json").write_text(ids.model_dump_json(), encoding="utf-8")
            (tmp / "lexicon.json").write_bytes(lexicon.dumps())
            manifest = _manifest(manifest, build_id, live, lexicon, basis, kinds, old, fresh, embedder, started, seal(tmp))
            write_manifest(tmp, manifest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        os.replace(tmp, root / "builds" / build_id)
        fsync_dir(root / "builds")
        point_current(root, build_id)
        prune(root, [build_id, live], settings.index.keep_builds, None)
    n_replaced = sum(1 for c in fresh if c.id in at)
    return Update(build_id=build_id, added=len(fresh) - n_replaced, replaced=n_replaced,
                  removed=len(gone), reweighed=reweigh, seconds=round(time.time() - started, 3))


def _ids_of(root: Path, build: Path, lines: list[bytes]) -> ChunkIds:
    """The build's ids.json; for a build made before it was written, read from its chunks."""
    path = build / "ids.json"
    if path.is_file():
        ids = ChunkIds.model_validate_json(path.read_bytes())
        if len(ids.ids) != len(lines):
            raise damaged(root, "chunks", f"{path} lists {len(ids.ids)} chunks, chunks.jsonl holds {len(lines)}")
        return ids
    chunks = [Chunk.model_validate_json(line) for line in lines]
    return ChunkIds.of(chunks)


def _removed(known: ChunkIds, fresh: Sequence[Chunk], delete: Sequence[str]) -> set[int]:
    """Lines whose chunk goes: named in `delete` (as a chunk or a document), or of a document
    `fresh` brings again without that chunk's id."""
    named = set(delete)
    renewed = {c.doc_id for c in fresh}
    keep = {c.id for c in fresh}
    out = set()
    for i, (cid, doc) in enumerate(zip(known.ids, known.docs, strict=True)):
        document = doc if doc is not None else cid
        if cid in named or document in named or (document in renewed and cid not in keep):
            out.add(i)
    return out


def _apply(
    engine: EdgeEngine, manifest: Manifest, known: ChunkIds, gone: set[int], fresh: Sequence[Chunk], added: Analysis,
    lexicon: Lexicon, basis: float, embedder: Embedder, settings: Settings,
) -> tuple[ChunkIds, dict[str, str]]:
    """Delete the removed points and write the fresh ones; the new ids.json and payload indexes."""
    s = settings.index
    engine.delete([known.points[i] for i in sorted(gone)])
    kinds = dict(manifest.payload_indexes)
    for name, kind in payload_index_kinds(fresh, s.payload_indexes).items():
        if name not in kinds:
            engine.create_payload_index(name, kind, graph=False)
            kinds[name] = kind
    place = {cid: known.points[i] for i, cid in enumerate(known.ids) if i not in gone}
    after = ChunkIds(ids=[known.ids[i] for i in range(len(known.ids)) if i not in gone],
                     docs=[known.docs[i] for i in range(len(known.ids)) if i not in gone],
                     points=[known.points[i] for i in range(len(known.ids)) if i not in gone])
    line = {cid: i for i, cid in enumerate(after.ids)}
    next_point = max(known.points, default=-1) + 1
    for c in fresh:
        doc = c.doc_id if c.doc_id != c.id else None
        if c.id in place:
            after.docs[line[c.id]] = doc
            continue
        place[c.id] = next_point
        next_point += 1
        after.ids.append(c.id)
        after.docs.append(doc)
        after.points.append(place[c.id])
    # The fresh analysis numbers terms its own way: map them to the index's ids.
    to_index = np.asarray([lexicon.terms[t] for t in added.lexicon.terms], dtype=np.int64)
    texts = SearchTexts(fresh)
    for start in range(0, len(fresh), _EMBED_SLICE):
        stop = min(start + _EMBED_SLICE, len(fresh))
        vectors = np.asarray(embedder.embed(texts[start:stop]), dtype=np.float32)
        check_vectors(vectors, fresh[start:stop], embedder)
        sentences = sentence_vectors(fresh[start:stop], embedder) if manifest.n_sentences is not None else None
        sparse = [_renumbered(v, to_index) for v in added.vectors(start, stop, k1=manifest.k1, b=manifest.b, avgdl=basis)]
        points = []
        for i in range(start, stop):
            c = fresh[i]
            payload = {**c.payload, "id": c.id, "text": c.text, "title": c.title, IDENTIFIER_KEYS: added.keys[i]}
            points.append(EnginePoint(place[c.id], vectors[i - start], sparse[i - start], payload,
                                      sentences=None if sentences is None else sentences[i - start].tolist()))
        engine.upsert(points)
    return after, kinds


def _renumbered(vector: SparseVec, to_index: np.ndarray) -> SparseVec:
    ids = to_index[np.asarray(vector[0], dtype=np.int64)]
    order = np.argsort(ids, kind="stable")
    return ids[order].tolist(), np.asarray(vector[1], dtype=np.float64)[order].tolist()


def _reweigh(engine: EdgeEngine, lines: list[bytes], known: ChunkIds, gone: set[int], fresh: Sequence[Chunk], lexicon: Lexicon, settings: Settings) -> None:
    """Every chunk's BM25 vector again, at the corpus' average length now (the norm drifted); the
    new chunks were weighed at it already."""
    replaced = {c.id: c for c in fresh}
    kept = [(p, replaced.get(cid) or Chunk.model_validate_json(lines[i]))
            for i, (cid, p) in enumerate(zip(known.ids, known.points, strict=True)) if i not in gone]
    whole = analyse(SearchTexts([c for _, c in kept]), workers=settings.index.build_workers)
    to_index = np.asarray([lexicon.terms[t] for t in whole.lexicon.terms], dtype=np.int64)
    s = settings.index
    vectors = whole.vectors(0, len(kept), k1=s.k1, b=s.b, avgdl=lexicon.avgdl)
    engine.set_sparse([(p, _renumbered(v, to_index)) for (p, _), v in zip(kept, vectors, strict=True)])


def _manifest(
    manifest: Manifest, build_id: str, live: str, lexicon: Lexicon, basis: float, kinds: dict[str, str],
    old: Sequence[Chunk], fresh: Sequence[Chunk], embedder: Embedder, started: float, files: dict[str, FileSum],
) -> Manifest:
    counts = manifest.field_counts
    if counts is not None:
        less, more = payload_field_counts(c.payload for c in old), payload_field_counts(c.payload for c in fresh)
        merged = {k: counts.get(k, 0) - less.get(k, 0) + more.get(k, 0) for k in {*counts, *more}}
        counts = dict(sorted((k, n) for k, n in merged.items() if n > 0))
    over = manifest.n_over_window
    if over is not None:
        out_old, out_new = count_over_window(embedder, SearchTexts(old)[:]), count_over_window(embedder, SearchTexts(fresh)[:])
        over = over - (out_old[0] if out_old else 0) + (out_new[0] if out_new else 0)
    sentences = manifest.n_sentences
    if sentences is not None:
        sentences += sum(len(chunk_sentences(c)) for c in fresh) - sum(len(chunk_sentences(c)) for c in old)
    return manifest.model_copy(update={
        "build_id": build_id, "created": time.time(), "n_chunks": lexicon.n_docs, "payload_indexes": kinds,
        "field_counts": counts, "n_over_window": over, "n_sentences": sentences, "bm25_avgdl": basis,
        "updated_from": live, "build_seconds": round(time.time() - started, 3), "files": files,
    })


def _clone(source: Path, target: Path) -> None:
    """Copy a folder, keeping each file's holes (Qdrant preallocates mostly empty files)."""
    for folder, _, names in os.walk(source):
        into = target / Path(folder).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in names:
            _copy_sparse(Path(folder, name), into / name)


def _copy_sparse(source: Path, target: Path) -> None:
    with open(source, "rb") as src, open(target, "xb") as dst:
        fd, out = src.fileno(), dst.fileno()
        size = os.fstat(fd).st_size
        offset = 0
        while offset < size:
            try:
                data = os.lseek(fd, offset, os.SEEK_DATA)
                end = os.lseek(fd, data, os.SEEK_HOLE)
            except OSError:  # past the last data, or a file system that cannot tell: the rest as it is
                data, end = (size, size) if offset else (0, size)
            while data < end:
                n = os.copy_file_range(fd, out, end - data, data, data)
                if n == 0:
                    break
                data += n
            offset = max(end, offset + 1)
        os.ftruncate(out, size)

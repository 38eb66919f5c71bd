"""The index folder's builds: manifests, CURRENT, the build lock, readers' holds, pruning and rollback."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from querywise.embed import same_vectors
from querywise.files import fsync_dir, is_partial_write, write_atomic
from querywise.index.errors import BUILD_ID, IndexStoreError, Part, damaged
from querywise.index.integrity import FileSum, digest
from querywise.index.server import collection_of, connect, drop_collection, point_alias

if TYPE_CHECKING:  # imported at run time only when a server is used
    from qdrant_client import QdrantClient

    from querywise.embed import Embedder

__all__ = [
    "FORMAT_VERSION", "Manifest", "build_folder", "build_lock", "check_embedder", "check_files", "claim", "clear_stale", "current_id",
    "hold", "manifest_of", "point_current", "prune", "read_current", "rollback", "write_manifest",
]

FORMAT_VERSION = 2  # 2: the manifest records each file's size and digest


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
    # Whether the dense graph has Qdrant's per-value sub-graphs for filtered search (`[index]
    # filtered_search = "graph"`); builds made before this was recorded all have them.
    payload_graphs: bool = True
    # With them, the indexed fields whose values have links (`[index] graph_fields`); None in
    # builds made before this was recorded: every indexed field.
    graph_fields: list[str] | None = None
    # Chunks carrying a value for each top-level payload field (`deployment_check.payload_field_counts`),
    # so that a deployment is checked against its index at start-up without reading every chunk.
    # None in builds made before it was recorded: `Index.field_presence` then counts them once.
    field_counts: dict[str, int] | None = None
    build_seconds: float
    # Chunks longer than the embedder's window (its tokens, special ones included), embedded from
    # their first `embedder_window` tokens. None: the embedder does not say, or an older build.
    n_over_window: int | None = None
    embedder_window: int | None = None
    # Sentences embedded beside the chunks (`[index] sentence_vectors`): hybrid then fuses the
    # best-sentence list. None: the build keeps no sentence vectors.
    n_sentences: int | None = None
    # The average BM25 length the sparse weights were computed with. None: the lexicon's own (a
    # build); a live update keeps the build's while the corpus' drifts by less than `[index]
    # update_avgdl_drift`, and weighs every chunk again past it.
    bm25_avgdl: float | None = None
    # The build a live update made this one from (None: a build from a corpus).
    updated_from: str | None = None
    # Every file of the build but manifest.json, by path relative to the build folder.
    files: dict[str, FileSum]


@contextlib.contextmanager
def build_lock(root: Path) -> Iterator[None]:
    with open(root / ".lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise IndexStoreError(f"{root}: another build is running") from None
        yield


def _ours_in_builds(entry: Path) -> bool:
    if entry.name.startswith((".tmp-", ".trash-")):
        return True
    return BUILD_ID.fullmatch(entry.name) is not None and entry.is_dir() and not entry.is_symlink()


def _partial_current(name: str) -> bool:
    """What a build killed while switching CURRENT leaves (`CURRENT.tmp`: builds before `write_atomic`)."""
    return name == "CURRENT.tmp" or is_partial_write(name, "CURRENT")


def claim(root: Path) -> None:
    """Refuse to write into a folder that is not a querywise index folder. What a failed or killed
    first build leaves (builds/ with only .tmp-* or complete builds, .lock, a partial CURRENT) is one."""
    if not root.exists():
        return
    if not root.is_dir():
        raise IndexStoreError(f"{root} is a file, not an index folder; choose another --index", part="folder")
    names = {e.name for e in root.iterdir()}
    builds = root / "builds"
    if names and "CURRENT" not in names:
        ours = all(n in ("builds", ".lock") or _partial_current(n) for n in names) and (
            not builds.exists() or (builds.is_dir() and all(_ours_in_builds(d) for d in builds.iterdir()))
        )
        if not ours:
            raise IndexStoreError(f"{root} exists and is not a querywise index; refusing to write into it", part="folder")
    current = root / "CURRENT"
    if current.exists() and not current.is_file():
        raise IndexStoreError(f"{root}: index CURRENT: {current} is not a file; remove it and build again", part="CURRENT")
    if builds.exists() and not builds.is_dir():
        raise IndexStoreError(f"{root}: index builds: {builds} is not a folder; remove it and build again", part="builds")


def clear_stale(root: Path) -> None:
    """Remove what killed builds and removals left: builds/.tmp-*, builds/.trash-*, a partial CURRENT."""
    for entry in (root / "builds").iterdir():
        if entry.name.startswith((".tmp-", ".trash-")):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
    for entry in root.iterdir():
        if _partial_current(entry.name):
            entry.unlink(missing_ok=True)


def write_manifest(build: Path, manifest: Manifest) -> None:
    """The build's manifest.json, last of its files, synced with the folder: what makes it complete."""
    with open(build / "manifest.json", "w", encoding="utf-8") as mf:
        mf.write(manifest.model_dump_json(indent=2))
        mf.flush()
        os.fsync(mf.fileno())
    fsync_dir(build)


def point_current(root: Path, build_id: str) -> None:
    write_atomic(root / "CURRENT", build_id + "\n")


def current_id(root: Path) -> str | None:
    """The build CURRENT names, or None when it names none (the lenient read of a build)."""
    try:
        return read_current(root)
    except IndexStoreError:
        return None


def manifest_of(build: Path) -> Manifest | None:
    """The manifest of a complete build folder, None if it has no valid one."""
    try:
        manifest = Manifest.model_validate_json((build / "manifest.json").read_bytes())
    except (OSError, ValidationError):
        return None
    return manifest if manifest.build_id == build.name and manifest.format_version == FORMAT_VERSION else None


def _kept_builds(root: Path) -> list[tuple[Path, Manifest | None]]:
    builds = root / "builds"
    entries = [d for d in builds.iterdir() if BUILD_ID.fullmatch(d.name) and d.is_dir() and not d.is_symlink()]
    return [(d, manifest_of(d)) for d in entries]


def prune(root: Path, first: list[str | None], keep: int, client: QdrantClient | None) -> None:
    """Keep `keep` builds: the new one, the one it replaced, then the newest; remove the rest
    that no reader holds (a held one goes in a later build). Builds without a valid manifest
    are not generations and go too."""
    found = _kept_builds(root)
    complete = {d.name: m for d, m in found if m is not None}
    order = [b for b in dict.fromkeys(first) if b is not None and b in complete]
    order += [m.build_id for m in sorted(complete.values(), key=lambda m: -m.created) if m.build_id not in order]
    kept = set(order[:keep])
    for build, _ in found:
        if build.name not in kept:
            _remove_build(build, client)


def _remove_build(build: Path, client: QdrantClient | None) -> None:
    if not (build / "manifest.json").is_file():  # never complete: no reader can hold it
        shutil.rmtree(build, ignore_errors=True)
        return
    with open(build / "manifest.json", "rb") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # a reader holds it
        manifest = manifest_of(build)
        if manifest is not None and manifest.engine == "server" and manifest.collection:
            if client is None:
                return  # its collection can only go with a client: a later build removes both
            try:
                drop_collection(client, collection_of(manifest.collection, manifest.build_id))
            except Exception:
                return  # keep the folder, so that a later build tries again
        trash = build.with_name(f".trash-{build.name}")
        os.replace(build, trash)  # under the lock: a reader locking after this finds the folder gone
    shutil.rmtree(trash, ignore_errors=True)


def rollback(path: Path | str, *, client: QdrantClient | None = None) -> Manifest:
    """Switch CURRENT back to the newest kept build older than the live one (see `keep_builds`).

    >>> rollback("my-index").build_id  # doctest: +SKIP
    """
    root = Path(path)
    live_id = read_current(root)
    build_folder(root, live_id)
    with build_lock(root):
        found = {d.name: m for d, m in _kept_builds(root)}
        current = found.get(live_id)
        older = [m for name, m in found.items() if m is not None and name != live_id and (current is None or m.created < current.created)]
        if not older:
            raise IndexStoreError(
                f"{root}: no earlier build to go back to (builds kept: {', '.join(sorted(found)) or 'none'}; "
                "`[index] keep_builds` sets how many a build keeps)",
                part="builds",
            )
        target = max(older, key=lambda m: m.created)
        check_files(root, root / "builds" / target.build_id, target, full=False)
        if target.engine == "server" and target.collection:
            point_alias(client or connect(target.server_url or ":memory:"), target.collection, collection_of(target.collection, target.build_id))
        point_current(root, target.build_id)
    return target


def read_current(root: Path) -> str:
    how = f"build one with `querywise index SOURCE --index {root}`"
    if not root.is_dir():
        raise IndexStoreError(f"{root} is not a querywise index (no such folder); {how}", part="folder")
    current = root / "CURRENT"
    try:
        st = os.stat(current)
    except FileNotFoundError:
        raise IndexStoreError(f"{root} is not a querywise index (no CURRENT file); {how}", part="CURRENT") from None
    except OSError as exc:
        raise damaged(root, "CURRENT", f"{current} cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise damaged(root, "CURRENT", f"{current} is not a file", f"remove it and rebuild with `querywise index SOURCE --index {root}`")
    try:
        raw = current.read_bytes()[:512]
    except OSError as exc:
        raise damaged(root, "CURRENT", f"{current} cannot be read ({exc.strerror})") from None
    try:
        build_id = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        build_id = ""
    if not BUILD_ID.fullmatch(build_id):
        raise damaged(root, "CURRENT", f"holds {raw[:80]!r}, not a build id (a bare folder name in builds/)")
    return build_id


def build_folder(root: Path, build_id: str) -> Path:
    builds = root / "builds"
    if not builds.is_dir():
        problem = "is not a folder" if builds.exists() else "is missing"
        raise damaged(root, "builds", f"{builds} {problem}", f"remove it and rebuild with `querywise index SOURCE --index {root}`" if builds.exists() else None)
    build = builds / build_id
    if build.is_symlink():
        raise damaged(root, "CURRENT", f"names {build}, a link (a build is a folder inside builds/)")
    if not build.is_dir():
        raise damaged(root, "CURRENT", f"names build {build_id}, which is not in {builds}")
    return build


def hold(root: Path, build: Path) -> int | None:
    """Open the build's manifest.json and hold a shared lock on it (until `Index.close`, or until
    the index is garbage-collected): no build removes a build while that lock is held. None when
    a build removed it since CURRENT was read."""
    path = build / "manifest.json"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        if not build.exists():
            return None
        raise damaged(root, "manifest", f"{path} is missing") from None
    except OSError as exc:
        raise damaged(root, "manifest", f"{path} cannot be read ({exc.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None  # a build is removing it right now
    except OSError:
        pass  # a file system without locks: the index opens, unprotected from removal
    try:
        same = os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        same = False
    if not same:  # moved away between open and lock
        os.close(fd)
        return None
    return fd


def check_embedder(root: Path, manifest: Manifest, embedder: Embedder) -> None:
    """The embedder is the model the build was embedded with, at its dimension."""
    if not same_vectors(embedder.model_id, manifest.embedder):
        raise IndexStoreError(
            f"{root} was embedded with {manifest.embedder}, not {embedder.model_id}; "
            f"rebuild it with `querywise index SOURCE --index {root}` or configure that model"
            f" ([embedding] kind: \"onnx-int8\" for an int8 index, \"auto\" for fp32)", part="embedder",
        )
    if embedder.dim != manifest.dim:
        raise damaged(root, "manifest", f"dim {manifest.dim}, but {embedder.model_id} makes {embedder.dim}-dimensional vectors")


def _part_of(rel: str) -> Part:
    return "chunks" if rel in ("chunks.jsonl", "ids.json") else "lexicon" if rel == "lexicon.json" else "shard"


def check_files(root: Path, build: Path, manifest: Manifest, *, full: bool) -> None:
    """Every recorded file is there at its recorded size; with `full`, with its digest too."""
    for rel, want in manifest.files.items():
        part, path = _part_of(rel), build / rel
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise damaged(root, part, f"{rel} is missing from {build}") from None
        except OSError as exc:
            raise damaged(root, part, f"{rel} cannot be read ({exc.strerror})") from None
        if not stat.S_ISREG(st.st_mode):
            raise damaged(root, part, f"{rel} is not a file")
        if st.st_size != want.size:
            raise damaged(root, part, f"{rel} is {st.st_size:,} bytes, the build wrote {want.size:,} (truncated or changed)")
        if full and digest(path)[1] != want.digest:
            raise damaged(root, part, f"{rel} does not match the checksum recorded at build time (changed since)")

"""File integrity of a build: sizes and sparse-aware digests of its files, synced to disk."""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from querywise.files import fsync_dir

__all__ = ["BlockDigest", "FileSum", "digest", "digest_bytes", "seal"]

_BLOCK = 1 << 20
_ZEROS = bytes(_BLOCK)


class FileSum(BaseModel):
    """A file's size and digest (see `BlockDigest`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    size: int
    digest: str


class BlockDigest:
    """sha256 over a file's 1 MiB blocks: a block enters as b"D" + its own sha256, or, all zeros,
    as b"Z" + its length. Qdrant preallocates sparse files (the demo index: 179 MB apparent, 1.2 MB
    on disk): `digest` skips their holes unread, and the digest is the same whether or not a copy
    kept the holes. Hashing the demo index this way takes ~40 ms, plain sha256 of it ~140 ms."""

    def __init__(self) -> None:
        self._h, self._pending = hashlib.sha256(), bytearray()

    def zeros(self, n: int) -> None:
        self._h.update(b"Z%d" % n)

    def block(self, data: bytes) -> None:
        if data == _ZEROS[: len(data)]:
            self.zeros(len(data))
        else:
            self._h.update(b"D" + hashlib.sha256(data).digest())

    def update(self, data: bytes) -> None:
        """Feed a stream in pieces of any size."""
        self._pending += data
        while len(self._pending) >= _BLOCK:
            self.block(bytes(self._pending[:_BLOCK]))
            del self._pending[:_BLOCK]

    def hexdigest(self) -> str:
        if self._pending:
            self.block(bytes(self._pending))
            self._pending.clear()
        return self._h.hexdigest()


def _next_data(fd: int, offset: int, size: int) -> int:
    """Where data starts at or after `offset` (a hole before it reads as zeros); `offset` itself
    where the file system cannot tell."""
    if not hasattr(os, "SEEK_DATA"):
        return offset
    try:
        return os.lseek(fd, offset, os.SEEK_DATA)
    except OSError as exc:
        return size if exc.errno == errno.ENXIO else offset


def digest(path: Path, *, sync: bool = False) -> tuple[int, str]:
    """The size and digest of the file at `path` (`sync`: also flush it to disk first)."""
    hasher = BlockDigest()
    with open(path, "rb") as fh:
        fd = fh.fileno()
        if sync:
            os.fsync(fd)
        size = os.fstat(fd).st_size
        for offset in range(0, size, _BLOCK):
            n = min(_BLOCK, size - offset)
            if _next_data(fd, offset, size) >= offset + n:
                hasher.zeros(n)  # a hole: zeros, unread
                continue
            fh.seek(offset)
            hasher.block(fh.read(n))
    return size, hasher.hexdigest()


def digest_bytes(data: bytes) -> str:
    hasher = BlockDigest()
    hasher.update(data)
    return hasher.hexdigest()


def seal(build: Path) -> dict[str, FileSum]:
    """Size and digest of every file of `build` (manifest.json aside), each synced to disk."""
    sums: dict[str, FileSum] = {}
    for folder, _, names in os.walk(build):
        for name in names:
            path = Path(folder, name)
            rel = path.relative_to(build).as_posix()
            if rel != "manifest.json":
                size, sha = digest(path, sync=True)
                sums[rel] = FileSum(size=size, digest=sha)
        fsync_dir(Path(folder))
    return dict(sorted(sums.items()))

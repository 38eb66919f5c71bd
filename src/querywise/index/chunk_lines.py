"""A build's chunks as stored lines: what a hit shows (text, title, payload) read from chunks.jsonl.

A search used to read its hits' payloads back from Qdrant edge, which hands each one over as a
new Python dict built field by field (SciFact's 100 hits, each with its sentences in the payload:
1.4 ms of the shard's `retrieve` and 0.7 ms more turning its records into dicts, on the CPU clock;
bench/results/query_latency_cpu.md). chunks.jsonl holds the same chunks, written from the same
`Chunk`s as the points (one `Chunk.model_dump_json()` a line, in point order for a build, with
ids.json saying which point each line is after live updates), so a hit's line is sliced from the
file, mapped, and its JSON validated by pydantic straight into a `Hit` (`store._hits_from_lines`).

Memory: opening finds where each line starts in one pass over the file, read in blocks (nothing
of it kept); the map then brings in only the pages searches touch, which the kernel can drop again
(file-backed). What is held is two integers a line and one a point.
"""

from __future__ import annotations

import contextlib
import mmap
from array import array
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = ["ChunkLines"]

_BLOCK = 1 << 20  # bytes read at a time while finding the line ends


def _line_ends(path: Path) -> npt.NDArray[np.int64]:
    """The offset of every newline of the file, in order."""
    ends: list[npt.NDArray[np.int64]] = []
    offset = 0
    with open(path, "rb", buffering=0) as fh:
        while block := fh.read(_BLOCK):
            ends.append(np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 0x0A).astype(np.int64) + offset)
            offset += len(block)
    return np.concatenate(ends) if ends else np.zeros(0, dtype=np.int64)


class ChunkLines:
    """Point id -> that chunk's line of chunks.jsonl (without its newline), from a read-only map.

    >>> ChunkLines.open(build / "chunks.jsonl", points=[0, 1, 2]).lines([2, 0])  # doctest: +SKIP
    [b'{"id":"c","text":...}', b'{"id":"a","text":...}']
    """

    def __init__(self, path: Path, starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64], line_of: npt.NDArray[np.int64]) -> None:
        self.path = path
        # Arrays of C integers (8 bytes each, as numpy's) that index straight to Python ints.
        self._starts, self._ends, self._line_of = (array("q", a.tobytes()) for a in (starts, ends, line_of))
        with open(path, "rb") as fh:
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        self._view = memoryview(self._map)  # slices of it copy nothing

    @classmethod
    def open(cls, path: Path, points: Sequence[int]) -> ChunkLines:
        """`points[i]`: the point of line i. A `ValueError` when the file does not have one
        line per point (every line ends with a newline), or a point is negative or listed twice."""
        ends = _line_ends(path)
        if len(ends) != len(points):
            raise ValueError(f"{path} holds {len(ends)} lines for {len(points)} points")
        if path.stat().st_size != (int(ends[-1]) + 1 if len(ends) else 0):
            raise ValueError(f"{path} does not end with a newline")
        point = np.asarray(points, dtype=np.int64)
        if len(point) and (point.min() < 0 or len(np.unique(point)) != len(point)):
            raise ValueError("the points are not distinct non-negative ids")
        starts = np.concatenate([np.zeros(1, dtype=np.int64), ends[:-1] + 1])
        line_of = np.full(int(point.max()) + 1 if len(point) else 0, -1, dtype=np.int64)
        line_of[point] = np.arange(len(point), dtype=np.int64)
        return cls(path, starts, ends, line_of)

    def __len__(self) -> int:
        return len(self._starts)

    def lines(self, points: Sequence[int]) -> list[bytes]:
        """The line of each point, in the order given; a `KeyError` for a point with no line."""
        return [bytes(line) for line in self._slices(points)]

    def json_array(self, points: Sequence[int]) -> bytes:
        """The lines of `points` as one JSON array, `[line,line,...]`, copied out of the map once
        (slicing each line to bytes, then joining them, copied SciFact's 100 hits' 250 KB twice:
        0.08 against 0.05 ms). A `KeyError` for a point with no line."""
        parts: list[bytes | memoryview] = [b"["]
        for line in self._slices(points):
            parts += (line, b",")
        parts[-1:] = [b"]"] if len(parts) > 1 else [b"[", b"]"]
        return b"".join(parts)

    def _slices(self, points: Sequence[int]) -> list[memoryview]:
        line_of, starts, ends, view = self._line_of, self._starts, self._ends, self._view
        out = []
        for point in points:
            row = line_of[point] if 0 <= point < len(line_of) else -1  # (an array reads -1 from the end)
            if row < 0:
                raise KeyError(f"no line of chunks.jsonl for point {point}")
            out.append(view[starts[row] : ends[row]])
        return out

    def close(self) -> None:
        with contextlib.suppress(BufferError):  # a slice still held somewhere: the map goes with the last of them
            self._view.release()
            self._map.close()

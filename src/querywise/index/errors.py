"""The error every index check raises, and how an open error names the folder, the part and the remedy."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

__all__ = ["BUILD_ID", "IndexStoreError", "Part", "damaged"]

# What CURRENT may hold: a bare folder name, so it can only name a folder in builds/.
BUILD_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,127}")
Part = Literal["folder", "CURRENT", "builds", "manifest", "chunks", "lexicon", "shard", "embedder", "payload"]


class IndexStoreError(RuntimeError):
    """The index folder is missing, foreign, damaged, or was built for something else.
    `part` names what is wrong: folder, CURRENT, builds, manifest, chunks, lexicon, shard,
    embedder or payload (None for other build errors)."""

    def __init__(self, message: str, *, part: Part | None = None) -> None:
        super().__init__(message)
        self.part = part


def damaged(root: Path, part: Part, problem: str, remedy: str | None = None) -> IndexStoreError:
    """An open error: the folder, the part, the problem, and what to do."""
    todo = remedy or f"rebuild it with `querywise index SOURCE --index {root}`"
    previous = _previous_hint(root) if part in ("manifest", "chunks", "lexicon", "shard") else ""
    return IndexStoreError(f"{root}: index {part}: {problem}; {todo}{previous}", part=part)


def _previous_hint(root: Path) -> str:
    try:
        kept = [d for d in (root / "builds").iterdir() if BUILD_ID.fullmatch(d.name)]
    except OSError:
        return ""
    return f", or go back to the previous build with `querywise index --rollback --index {root}`" if len(kept) > 1 else ""

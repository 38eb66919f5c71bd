"""What a build checks and writes for each chunk: storable payloads, finite vectors, the payload
fields worth an engine index, and the texts it analyses and embeds (made when read)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.deployment_check import field_root
from querywise.embed import Embedder, ProgressCallback
from querywise.index.engine import PayloadKind
from querywise.index.errors import IndexStoreError

__all__ = ["IdentifierTexts", "SearchTexts", "check_storable", "check_vectors", "chunk_sentences", "graph_fields", "payload_index_kinds", "sentence_vectors"]

_INTEGERS = (-(2**63), 2**64 - 1)  # what the engine stores as an integer (beyond: a float, digits lost)
# A sentence ends at . ! ? before the capital, digit or bracket that opens the next one (so "e.g.
# a" and "approx. 3" stay whole), or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])|\s*\n\s*")


def payload_index_kinds(chunks: Sequence[Chunk], wanted: list[str] | None) -> dict[str, PayloadKind]:
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


def graph_fields(kinds: dict[str, PayloadKind], settings: Settings) -> list[str]:
    """The indexed fields whose values get graph links (`[index] graph_fields`; none unless
    `filtered_search` is "graph"). The chunk id is never one: each of its values holds one point."""
    if settings.index.filtered_search != "graph":
        return []
    named = settings.index.graph_fields
    if named is not None:
        if unknown := sorted(set(named) - set(kinds)):
            raise IndexStoreError(
                f"[index] graph_fields names {', '.join(map(repr, unknown))}, not an indexed payload field "
                f"(indexed: {', '.join(sorted(k for k in kinds if k != 'id')) or 'none'}); nothing was written",
                part="payload",
            )
        return [f for f in kinds if f in named]
    # A key path (`specs.colour`) is indexed under its top-level key.
    filtered = {field_root(f) for f in (*settings.filters.fields, *settings.access.fields.values(), settings.filters.catalog_link) if f}
    return [f for f in kinds if f != "id" and (f in filtered or not filtered)]


def _unstorable(value: Any, where: str) -> str | None:
    """Why `value` cannot be a payload value (JSON inside the engine), or None if it can."""
    if value is None or isinstance(value, bool | str):
        return None
    if isinstance(value, int):
        if _INTEGERS[0] <= value <= _INTEGERS[1]:
            return None
        return f"{where} = {value} is beyond 64-bit integers (the engine would keep it as a float, digits lost)"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} = {value} (JSON has no NaN or infinity)"
    if isinstance(value, list | tuple):
        return next((why for i, v in enumerate(value) if (why := _unstorable(v, f"{where}[{i}]"))), None)
    if isinstance(value, dict):
        for key, v in value.items():
            if not isinstance(key, str):
                return f"{where} has a key {key!r} that is not a string"
            if why := _unstorable(v, f"{where}.{key}"):
                return why
        return None
    return f"{where} is a {type(value).__name__}, not a JSON value"


def check_storable(chunks: Sequence[Chunk]) -> None:
    """Every payload value can be stored; else an error naming the chunk, before anything is written."""
    for c in chunks:
        for key, value in c.payload.items():
            if why := _unstorable(value, f"payload field {key!r}"):
                raise IndexStoreError(f"chunk {c.id!r}: {why}; fix or drop that value (nothing was written)", part="payload")


def check_vectors(vectors: np.ndarray, chunks: Sequence[Chunk], embedder: Embedder) -> None:
    if vectors.shape != (len(chunks), embedder.dim):
        raise IndexStoreError(
            f"{embedder.model_id} returned vectors of shape {vectors.shape}, expected ({len(chunks)}, {embedder.dim})",
            part="embedder",
        )
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        c = chunks[int(np.argmin(finite))]
        raise IndexStoreError(f"chunk {c.id!r}: {embedder.model_id} embedded it as NaN or infinity (nothing was written)", part="embedder")


class SearchTexts(Sequence[str]):
    """The chunks' search texts, made when read: a corpus' texts are not held twice."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self._chunks = chunks

    def __len__(self) -> int:
        return len(self._chunks)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [c.search_text for c in self._chunks[i]]
        return self._chunks[i].search_text


class IdentifierTexts(SearchTexts):
    """What a chunk's identifiers are read from: its title, text and string metadata."""

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [_identified(c) for c in self._chunks[i]]
        return _identified(self._chunks[i])


def _identified(c: Chunk) -> str:
    said = [v for v in c.payload.values() if isinstance(v, str)]
    said += [x for v in c.payload.values() if isinstance(v, list) for x in v if isinstance(x, str)]
    return "\n".join([c.title, c.text, *said])


def chunk_sentences(c: Chunk) -> list[str]:
    """What a chunk's sentence vectors embed: its title, then each sentence of its text."""
    parts = [c.title] if c.title.strip() else []
    return parts + [t for t in (x.strip() for x in _SENTENCE_END.split(c.text)) if t] or [c.search_text]


def sentence_vectors(chunks: Sequence[Chunk], embedder: Embedder, on_progress: ProgressCallback | None = None) -> list[np.ndarray]:
    """Each chunk's sentence vectors (one row a sentence), embedded in one pass over the slice;
    an error naming the chunk if the embedder returns a NaN or an infinity for one of them."""
    said = [chunk_sentences(c) for c in chunks]
    flat = [t for ts in said for t in ts]
    vectors = np.asarray(embedder.embed(flat, on_progress=on_progress), dtype=np.float32)
    if vectors.shape != (len(flat), embedder.dim):
        raise IndexStoreError(f"{embedder.model_id} returned vectors of shape {vectors.shape} for {len(flat)} sentences", part="embedder")
    out, at = [], 0
    for c, ts in zip(chunks, said, strict=True):
        rows = vectors[at : at + len(ts)]
        if not np.isfinite(rows).all():
            raise IndexStoreError(f"chunk {c.id!r}: {embedder.model_id} embedded one of its sentences as NaN or infinity (nothing was written)", part="embedder")
        out.append(rows)
        at += len(ts)
    return out

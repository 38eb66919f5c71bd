"""Chunks and their loaders: JSONL (plain or .gz, BEIR's `_id`/`title`), CSV, folders of text.

Every loader reads and validates the whole source before anything is indexed, and stops at
the first malformed record with an error naming the file and line.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from querywise.chunking import Chunker
from querywise.files import InputError, open_text, read_jsonl

__all__ = ["Chunk", "CorpusError", "load_corpus"]


class Chunk(BaseModel):
    """One retrievable unit. `title` is context searched with the text (a heading path)."""

    model_config = ConfigDict(frozen=True)
    id: str = Field(min_length=1)
    text: str
    title: str = ""
    payload: dict[str, Any] = Field(default_factory=dict)

    @property
    def search_text(self) -> str:
        """What the index embeds and tokenises: the title line, then the text."""
        return f"{self.title}\n{self.text}" if self.title else self.text


class CorpusError(InputError):
    """Malformed corpus input; the message names the file and line."""


_RESERVED = {"id", "_id", "text", "title"}
_INT = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?\d+\.\d*|-?\.\d+")


def _record_to_chunk(rec: dict[str, Any], path: Path, line: int) -> Chunk:
    raw_id = rec.get("id", rec.get("_id"))
    if raw_id is None or (isinstance(raw_id, str) and not raw_id.strip()):
        raise CorpusError(path, line, "missing 'id' (or BEIR '_id')")
    if not isinstance(raw_id, str | int) or isinstance(raw_id, bool):
        raise CorpusError(path, line, f"'id' must be a string or integer, got {type(raw_id).__name__}")
    text, title = rec.get("text"), rec.get("title") or ""
    if not isinstance(text, str):
        raise CorpusError(path, line, "missing 'text' (a string)")
    if not isinstance(title, str):
        raise CorpusError(path, line, "'title' must be a string")
    if not text.strip() and not title.strip():
        raise CorpusError(path, line, "empty 'text' and no 'title'")
    payload = {k: v for k, v in rec.items() if k not in _RESERVED}
    return Chunk(id=str(raw_id), text=text, title=title.strip(), payload=payload)


def _csv_value(raw: str) -> Any:
    # CSV has no types; numbers must be numbers for range filters to work.
    if _INT.fullmatch(raw):
        return int(raw)
    if _FLOAT.fullmatch(raw):
        return float(raw)
    return raw


def _read_csv(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open_text(path) as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        if not ({"id", "_id"} & set(header)) or "text" not in header:
            raise CorpusError(path, 1, f"header must name an 'id' and a 'text' column, got {header}")
        try:
            for row in reader:
                if None in row:
                    raise CorpusError(path, reader.line_num, "more fields than the header names")
                rec = {k: (v if k in _RESERVED else _csv_value(v)) for k, v in row.items()}
                yield reader.line_num, rec
        except csv.Error as exc:
            raise CorpusError(path, reader.line_num, f"invalid CSV: {exc}") from None


def _read_folder(root: Path, chunker: Chunker) -> Iterator[tuple[Path, int | None, Chunk]]:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in (".txt", ".md"))
    if not files:
        raise CorpusError(root, None, "no .txt or .md files in this folder")
    for path in files:
        doc_id = path.relative_to(root).with_suffix("").as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise CorpusError(path, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        for piece in chunker.split(text, doc_id=doc_id, markdown=path.suffix.lower() == ".md"):
            chunk = Chunk(
                id=piece.chunk_id,
                text=piece.text,
                title=piece.context,
                payload={
                    "doc_id": doc_id,
                    "section": piece.heading,
                    "start": piece.start,
                    "end": piece.end,
                    "identifiers": piece.identifiers,
                },
            )
            yield path, None, chunk


def load_corpus(source: Path | str, *, chunker: Chunker | None = None) -> list[Chunk]:
    """Load every chunk of `source`: a .jsonl[.gz], .csv[.gz] file or a folder of .txt/.md.

    >>> chunks = load_corpus("corpus.jsonl")  # doctest: +SKIP
    """
    path = Path(source)
    if not path.exists():
        raise CorpusError(path, None, "no such file or folder")
    records: Iterator[tuple[Path, int | None, Chunk]]
    if path.is_dir():
        records = _read_folder(path, chunker or Chunker())
    else:
        name = path.name.lower().removesuffix(".gz")
        if name.endswith((".jsonl", ".json", ".ndjson")):
            rows = read_jsonl(path, error=CorpusError)
        elif name.endswith(".csv"):
            rows = _read_csv(path)
        else:
            raise CorpusError(path, None, "unknown format: expected .jsonl, .csv (optionally .gz) or a folder")
        records = ((path, n, _record_to_chunk(rec, path, n)) for n, rec in rows)
    chunks: list[Chunk] = []
    seen: dict[str, str] = {}
    for where, line, chunk in records:
        if chunk.id in seen:
            raise CorpusError(where, line, f"duplicate id {chunk.id!r} (first seen at {seen[chunk.id]})")
        seen[chunk.id] = f"{where}:{line}" if line is not None else str(where)
        chunks.append(chunk)
    if not chunks:
        raise CorpusError(path, None, "no chunks")
    return chunks

"""Chunks and their loaders: JSONL (plain or .gz, BEIR's `_id`/`title`), CSV, folders of text.

Every loader reads and validates the whole source before anything is indexed, and stops at
the first malformed record with an error naming the file and line.
"""

from __future__ import annotations

import csv
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from querywise.chunking import Chunker
from querywise.files import InputError, read_jsonl, read_lines

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


MAX_RECORD_CHARS = 1_000_000  # the default of [limits] max_record_chars


def _record_to_chunk(rec: dict[str, Any], path: Path, line: int, max_chars: int = MAX_RECORD_CHARS) -> Chunk:
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
    if len(text) + len(title) > max_chars:  # everything downstream (analysis, embedding, payload) scales with it
        raise CorpusError(path, line, f"a record of {len(text) + len(title):,} characters, over the limit of {max_chars:,} "
                                      "([limits] max_record_chars): split it into several records")
    payload = {k: v for k, v in rec.items() if k not in _RESERVED}
    return Chunk(id=str(raw_id), text=text, title=title.strip(), payload=payload)


def _csv_value(raw: str, path: Path, line: int, column: str) -> Any:
    # CSV has no types; numbers must be numbers for range filters to work.
    try:
        if _INT.fullmatch(raw):
            return int(raw)
        if _FLOAT.fullmatch(raw):
            return float(raw)
    except ValueError:  # more digits than Python converts
        limit = sys.get_int_max_str_digits()
        raise CorpusError(path, line, f"column {column!r} holds a {len(raw.lstrip('-'))}-digit number, more than the {limit} digits read as a number; shorten it") from None
    return raw


def _read_csv(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    # Windows line ends read as "\n", inside quoted fields too (as a text-mode file would give them).
    reader = csv.reader(line.replace("\r\n", "\n") for _, line in read_lines(path, error=CorpusError))
    try:
        header = next(reader, None) or []
        if not ({"id", "_id"} & set(header)) or "text" not in header:
            raise CorpusError(path, 1, f"header must name an 'id' and a 'text' column, got {header}")
        doubled = sorted({h for h in header if header.count(h) > 1})
        if doubled:
            raise CorpusError(path, 1, f"the header names {', '.join(map(repr, doubled))} more than once")
        start = reader.line_num + 1
        for row in reader:
            line, start = start, reader.line_num + 1
            if not row:  # a blank line
                continue
            if len(row) > len(header):
                raise CorpusError(path, line, f"more fields than the header names ({len(row)} fields, {len(header)} columns)")
            if len(row) < len(header):
                missing = ", ".join(repr(h) for h in header[len(row) :])
                raise CorpusError(path, line, f"fewer fields than the header names ({len(row)} of {len(header)}: no {missing})")
            rec = {k: (v if k in _RESERVED else _csv_value(v, path, line, k)) for k, v in zip(header, row, strict=True)}
            yield line, rec
    except csv.Error as exc:
        raise CorpusError(path, reader.line_num, f"invalid CSV: {exc}") from None


_TEXT_SUFFIXES = (".txt", ".md")


def _folder_files(root: Path, *, follow_symlinks: bool = False) -> list[Path]:
    """The .txt and .md files under `root`, sorted.

    A symbolic link that leads outside `root` is an error naming it, unless `follow_symlinks`:
    nothing outside the folder is indexed unasked (`docs/passwd.md -> /etc/passwd`). A link that
    stays inside is read as before: a file link as a file, a folder link not descended into
    (its files are read where they are). With `follow_symlinks`, every link is followed, each
    folder once (no loops). A dangling link has nothing to read and is passed over.
    """
    base = root.resolve()
    files: list[Path] = []
    visited = {base}

    def walk(folder: Path) -> None:
        try:
            entries = sorted(folder.iterdir())
        except OSError as exc:
            raise CorpusError(folder, None, f"cannot list: {exc.strerror or exc}") from None
        for entry in entries:
            is_dir = entry.is_dir()
            if entry.is_symlink():
                target = entry.resolve()
                if not target.exists() or not (is_dir or entry.suffix.lower() in _TEXT_SUFFIXES):
                    continue
                if not follow_symlinks:
                    if target != base and base not in target.parents:
                        raise CorpusError(
                            entry, None,
                            f"a symbolic link to {target}, outside the folder {root}; not followed "
                            "(remove the link, or pass --follow-symlinks to index what it points to)",
                        )
                    if is_dir:
                        continue
                elif is_dir:
                    if target in visited:
                        continue
                    visited.add(target)
            if is_dir:
                walk(entry)
            elif entry.is_file() and entry.suffix.lower() in _TEXT_SUFFIXES:
                files.append(entry)

    walk(root)
    return sorted(files)


def _read_folder(root: Path, chunker: Chunker, *, follow_symlinks: bool = False) -> Iterator[tuple[Path, int | None, Chunk]]:
    files = _folder_files(root, follow_symlinks=follow_symlinks)
    if not files:
        raise CorpusError(root, None, "no .txt or .md files in this folder")
    for path in files:
        doc_id = path.relative_to(root).with_suffix("").as_posix()
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CorpusError(path, None, f"cannot read: {exc.strerror or exc}") from None
        try:
            text = data.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
            raise CorpusError(path, line, f"not UTF-8 text ({exc.reason} at byte {column} of the line); save the file as UTF-8") from None
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


def load_corpus(
    source: Path | str, *, chunker: Chunker | None = None, follow_symlinks: bool = False, max_record_chars: int = MAX_RECORD_CHARS
) -> list[Chunk]:
    """Load every chunk of `source`: a .jsonl[.gz], .csv[.gz] file or a folder of .txt/.md
    (`follow_symlinks`: also read links that lead outside the folder, see `_folder_files`). A
    file record longer than `max_record_chars` is an error naming its line (folders are chunked).

    >>> chunks = load_corpus("corpus.jsonl")  # doctest: +SKIP
    """
    path = Path(source)
    if not path.exists():
        raise CorpusError(path, None, "no such file or folder")
    records: Iterator[tuple[Path, int | None, Chunk]]
    if path.is_dir():
        records = _read_folder(path, chunker or Chunker(), follow_symlinks=follow_symlinks)
    else:
        name = path.name.lower().removesuffix(".gz")
        if name.endswith((".jsonl", ".json", ".ndjson")):
            rows = read_jsonl(path, error=CorpusError)
        elif name.endswith(".csv"):
            rows = _read_csv(path)
        else:
            raise CorpusError(path, None, "unknown format: expected .jsonl, .csv (optionally .gz) or a folder")
        records = ((path, n, _record_to_chunk(rec, path, n, max_record_chars)) for n, rec in rows)
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

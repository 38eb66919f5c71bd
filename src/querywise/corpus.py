"""Chunks and their loaders: JSONL (plain or .gz, BEIR's `_id`/`title`), CSV, BEIR folders,
folders of text.

Every loader reads and validates the whole source before anything is indexed. By default it
stops at the first malformed record with an error naming the file and line; with
`skip_invalid` it loads the rest and returns every bad row (`BadRow`: file, line, reason) in
its `LoadReport`. A record longer than the chunker's `max_chars` is cut by the same `Chunker`
as a folder's files (plain text): chunk ids `{record id}#{n}`, the record's title on every
piece, payload `doc_id` (the record id), `start`, `end` (offsets into the record's text). A
record that fits stays one chunk under its own id.
"""

from __future__ import annotations

import csv
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from querywise.chunking import Chunker
from querywise.files import InputError, parse_jsonl_line, read_lines

__all__ = ["BadRow", "Chunk", "CorpusError", "LoadReport", "beir_corpus_file", "document_of", "load_corpus", "read_corpus"]


def document_of(chunk_id: str, payload: Mapping[str, Any]) -> str:
    """The document a chunk (or a hit) is from: its payload `doc_id`, which the loaders write on
    every piece they cut from a record or a file, else its own id (a record that fit stays one
    chunk: it is its own document). The id is never parsed: a `#` is as good a character in a
    record's id as any other."""
    doc = payload.get("doc_id")
    return str(doc) if isinstance(doc, str | int) and not isinstance(doc, bool) else chunk_id


class Chunk(BaseModel):
    """One retrievable unit. `title` is context searched with the text (a heading path)."""

    model_config = ConfigDict(frozen=True)
    id: str = Field(min_length=1)
    text: str
    title: str = ""
    payload: dict[str, Any] = Field(default_factory=dict)

    @property
    def doc_id(self) -> str:
        """The document this chunk is from (`document_of`)."""
        return document_of(self.id, self.payload)

    @property
    def search_text(self) -> str:
        """What the index embeds and tokenises: the title line, then the text."""
        return f"{self.title}\n{self.text}" if self.title else self.text


class CorpusError(InputError):
    """Malformed corpus input; the message names the file and line."""


#: Appended to the error that stops a load at a bad row: the way to load the rest.
SKIP_HINT = "; --skip-invalid (skip_invalid=True) loads the other rows and lists every bad one"


class BadRow(BaseModel):
    """A row left out by a load with `skip_invalid`: where it is, why, and its id when it had one."""

    model_config = ConfigDict(frozen=True)
    path: str
    line: int | None = None
    reason: str
    record_id: str | None = None  # the id the row gave, when it gave one (a skipped record's judgements go too)

    @property
    def where(self) -> str:
        """`file:line` (or the file alone)."""
        return f"{self.path}:{self.line}" if self.line is not None else self.path

    @classmethod
    def of(cls, exc: InputError, record_id: str | None = None) -> BadRow:
        return cls(path=exc.path, line=exc.line, reason=exc.problem, record_id=record_id)

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


class LoadReport(BaseModel):
    """What a load read: the chunks, the rows it left out, and how records were cut."""

    source: str
    kind: str  # jsonl | csv | beir | folder
    chunks: list[Chunk]
    skipped: list[BadRow] = Field(default_factory=list)
    n_records: int = 0  # records (a folder: files) that became chunks
    n_cut: int = 0  # of them, cut into more than one chunk
    max_chars: int | None = None  # the chunker's limit (None: records were kept whole)


_RESERVED = {"id", "_id", "text", "title"}
_INT = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?\d+\.\d*|-?\.\d+")


MAX_RECORD_CHARS = 1_000_000  # the default of [limits] max_record_chars


def _record_id(rec: dict[str, Any]) -> str | None:
    """The id a record gives, if it is a usable one (for naming a skipped row)."""
    raw_id = rec.get("id", rec.get("_id"))
    if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) and str(raw_id).strip():
        return str(raw_id)
    return None


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


def _cut(record: Chunk, chunker: Chunker | None) -> list[Chunk]:
    """A record's chunks: itself when it fits `chunker.max_chars` (or no chunker), else its pieces
    (plain text), each with the record's title and payload plus `doc_id`, `start`, `end`."""
    if chunker is None or len(record.text) <= chunker.max_chars:
        return [record]
    pieces = chunker.split(record.text, doc_id=record.id, markdown=False)
    if len(pieces) < 2:  # only surrounding whitespace was over the limit
        return [record]
    return [
        Chunk(id=p.chunk_id, text=p.text, title=record.title, payload={**record.payload, "doc_id": record.id, "start": p.start, "end": p.end})
        for p in pieces
    ]


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


Row = tuple[int, dict[str, Any] | CorpusError]  # (line, the record or what is wrong with it)


def _line_bytes(max_record_chars: int) -> int:
    """The longest line a record within `max_record_chars` can take: 6 bytes a character (a JSON
    escape such as \\u00e9), plus room for the record's other keys."""
    return 6 * max_record_chars + 65_536


def _read_jsonl(path: Path, max_record_chars: int) -> Iterator[Row]:
    for n, line in read_lines(path, error=CorpusError, max_bytes=_line_bytes(max_record_chars)):
        try:
            rec = parse_jsonl_line(path, n, line, error=CorpusError)
        except CorpusError as exc:
            yield n, exc
            continue
        if rec is not None:
            yield n, rec


def _read_csv(path: Path, max_record_chars: int) -> Iterator[Row]:
    # The csv module's field limit (128 KB) is process-wide; raised, never lowered, to what a
    # record may hold, so a field the setting allows is read and a longer one still stops.
    csv.field_size_limit(max(csv.field_size_limit(), max_record_chars + 1))
    # Windows line ends read as "\n", inside quoted fields too (as a text-mode file would give them).
    # strict: a stray quote is an error at the row it opens, not a field that swallows the rows after it.
    lines = read_lines(path, error=CorpusError, max_bytes=_line_bytes(max_record_chars))
    reader = csv.reader((line.replace("\r\n", "\n") for _, line in lines), strict=True)
    start = 1
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
                yield line, CorpusError(path, line, f"more fields than the header names ({len(row)} fields, {len(header)} columns)")
                continue
            if len(row) < len(header):
                missing = ", ".join(repr(h) for h in header[len(row) :])
                yield line, CorpusError(path, line, f"fewer fields than the header names ({len(row)} of {len(header)}: no {missing})")
                continue
            try:
                rec = {k: (v if k in _RESERVED else _csv_value(v, path, line, k)) for k, v in zip(header, row, strict=True)}
            except CorpusError as exc:
                yield line, exc
                continue
            yield line, rec
    except csv.Error as exc:
        spans = f" (the row runs from line {start} to {reader.line_num}: a stray quote?)" if reader.line_num > start else ""
        raise CorpusError(path, start, f"invalid CSV: {exc}{spans}") from None


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


#: One record (a folder: one file) as read: where, and its chunks or what is wrong with it, and
#: the id it gave (None: it gave none, or a folder file).
_Item = tuple[Path, int | None, list[Chunk] | CorpusError, str | None]


def _read_folder(root: Path, chunker: Chunker, *, follow_symlinks: bool = False) -> Iterator[_Item]:
    files = _folder_files(root, follow_symlinks=follow_symlinks)
    if not files:
        raise CorpusError(root, None, "no .txt or .md files in this folder (nor a BEIR corpus.jsonl)")
    for path in files:
        doc_id = path.relative_to(root).with_suffix("").as_posix()
        try:
            data = path.read_bytes()
        except OSError as exc:
            yield path, None, CorpusError(path, None, f"cannot read: {exc.strerror or exc}"), None
            continue
        try:
            text = data.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
            yield path, line, CorpusError(path, line, f"not UTF-8 text ({exc.reason} at byte {column} of the line); save the file as UTF-8"), None
            continue
        chunks = [
            Chunk(
                id=piece.chunk_id,
                text=piece.text,
                title=piece.context,
                payload={"doc_id": doc_id, "section": piece.heading, "start": piece.start, "end": piece.end, "identifiers": piece.identifiers},
            )
            for piece in chunker.split(text, doc_id=doc_id, markdown=path.suffix.lower() == ".md")
        ]
        yield path, None, chunks, None


def _read_records(path: Path, chunker: Chunker | None, max_record_chars: int) -> Iterator[_Item]:
    name = path.name.lower().removesuffix(".gz")
    rows: Iterator[Row]
    if name.endswith((".jsonl", ".json", ".ndjson")):
        rows = _read_jsonl(path, max_record_chars)
    elif name.endswith(".csv"):
        rows = _read_csv(path, max_record_chars)
    else:
        raise CorpusError(path, None, "unknown format: expected .jsonl, .csv (optionally .gz), a BEIR folder or a folder of .txt/.md")
    for n, rec in rows:
        if isinstance(rec, CorpusError):
            yield path, n, rec, None
            continue
        try:
            yield path, n, _cut(_record_to_chunk(rec, path, n, max_record_chars), chunker), _record_id(rec)
        except CorpusError as exc:
            yield path, n, exc, _record_id(rec)


_BEIR_CORPUS = ("corpus.jsonl", "corpus.jsonl.gz")


def beir_corpus_file(folder: Path) -> Path | None:
    """The corpus file that makes `folder` a BEIR folder (`corpus.jsonl[.gz]`), else None.

    The one place that decides it: `querywise index`, `querywise eval` and `load_beir` all ask here.
    """
    for name in _BEIR_CORPUS:
        if (folder / name).is_file():
            return folder / name
    return None


def read_corpus(
    source: Path | str,
    *,
    chunker: Chunker | None = None,
    follow_symlinks: bool = False,
    max_record_chars: int = MAX_RECORD_CHARS,
    skip_invalid: bool = False,
    whole_records: bool = False,
) -> LoadReport:
    """Load every chunk of `source`, with what was left out and how records were cut.

    `source` is a .jsonl[.gz] or .csv[.gz] file, a BEIR folder (one holding `corpus.jsonl[.gz]`;
    only the corpus is read) or a folder of .txt/.md (`follow_symlinks`: also read links that
    lead outside it, see `_folder_files`). Records longer than `chunker.max_chars` (default
    `Chunker()`) are cut, unless `whole_records` (BEIR's own protocol scores whole documents).
    A record longer than `max_record_chars`, empty, without an id, or repeating an earlier id
    is a bad row: an error naming its file and line, or with `skip_invalid` a `BadRow` in the
    report, and the load goes on. A file that cannot be read as a whole stays an error.

    >>> report = read_corpus("corpus.jsonl", skip_invalid=True)  # doctest: +SKIP
    >>> [str(row) for row in report.skipped]  # doctest: +SKIP
    ["corpus.jsonl:7: empty 'text' and no 'title'"]
    """
    path = Path(source)
    if not path.exists():
        raise CorpusError(path, None, "no such file or folder")
    chunker = chunker or Chunker()
    beir = beir_corpus_file(path) if path.is_dir() else None
    items: Iterator[_Item]
    if path.is_dir() and beir is None:
        kind, items = "folder", _read_folder(path, chunker, follow_symlinks=follow_symlinks)
    else:
        file = beir or path
        kind = "beir" if beir else "csv" if file.name.lower().removesuffix(".gz").endswith(".csv") else "jsonl"
        items = _read_records(file, None if whole_records else chunker, max_record_chars)
    report = LoadReport(source=str(path), kind=kind, chunks=[], max_chars=None if whole_records and kind != "folder" else chunker.max_chars)
    seen: dict[str, str] = {}
    for where, line, got, record_id in items:
        at = f"{where}:{line}" if line is not None else str(where)
        if not isinstance(got, CorpusError):
            twice = next((c.id for c in got if c.id in seen), None)
            if twice is not None:
                got = CorpusError(where, line, f"duplicate id {twice!r} (first seen at {seen[twice]})")
        if isinstance(got, CorpusError):
            if not skip_invalid:
                raise CorpusError(got.path, got.line, got.problem + SKIP_HINT)
            report.skipped.append(BadRow.of(got, record_id))
            continue
        for chunk in got:
            seen[chunk.id] = at
        report.chunks.extend(got)
        report.n_records += 1 if got else 0
        report.n_cut += len(got) > 1
    if not report.chunks:
        first = f" ({len(report.skipped):,} bad rows skipped, the first {report.skipped[0]})" if report.skipped else ""
        raise CorpusError(path, None, "no chunks" + first)
    return report


def load_corpus(
    source: Path | str, *, chunker: Chunker | None = None, follow_symlinks: bool = False, max_record_chars: int = MAX_RECORD_CHARS
) -> list[Chunk]:
    """Every chunk of `source` (see `read_corpus`), stopping at the first bad row with an error
    naming its file and line.

    >>> chunks = load_corpus("corpus.jsonl")  # doctest: +SKIP
    """
    return read_corpus(source, chunker=chunker, follow_symlinks=follow_symlinks, max_record_chars=max_record_chars).chunks

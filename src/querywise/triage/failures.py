"""Reading failures (the rows of `querywise.failures`, what `eval --failures` writes), the optional
sources file, and the reproducible sample (people's labels: `triage.labels`).

`failures_from_rows` reads rows already in memory (a service's posted JSON, a benchmark's own);
`load_failures` is the same reader over the lines of a file. Either names the bad row: its line in
the file, or its number (from 1) among the rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from querywise.failures import FailureRow
from querywise.files import InputError, read_jsonl

__all__ = [
    "QUERY_DEFECT_KINDS",
    "EvalFile",
    "QueryDefectKind",
    "TriageInputError",
    "failures_from_rows",
    "load_failures",
    "load_sources",
    "sample_failures",
]

QueryDefectKind = Literal["vocabulary", "compound", "referent", "filler"]
QUERY_DEFECT_KINDS: tuple[QueryDefectKind, ...] = ("vocabulary", "compound", "referent", "filler")


class TriageInputError(InputError):
    """A malformed failures, sources or labels file; the message names the file and line."""


class EvalFile(BaseModel):
    """Everything read from a failures (or full eval) file."""

    failures: list[FailureRow]  # the failing rows, in order
    n_rows: int  # failing + acceptable rows
    n_acceptable: int

    @classmethod
    def of(cls, rows: Sequence[FailureRow]) -> EvalFile:
        """Rows already read: the failing ones, and how many there were and were acceptable."""
        return cls(failures=[r for r in rows if not r.acceptable], n_rows=len(rows), n_acceptable=sum(r.acceptable for r in rows))


def _problem(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'record'}: {e['msg']}" for e in exc.errors())


def _read(numbered: Iterable[tuple[int, Mapping[str, Any]]], source: Path | str) -> EvalFile:
    """Rows with `acceptable: true` are counted, not triaged (and need no gold). Duplicate ids are an
    error naming both rows."""
    failures: list[FailureRow] = []
    seen: dict[str, int] = {}
    n_rows = n_ok = 0
    for line, rec in numbered:
        n_rows += 1
        if not isinstance(rec, Mapping):
            raise TriageInputError(source, line, f"expected a JSON object, got {type(rec).__name__}")
        if rec.get("acceptable") is True:
            n_ok += 1
            continue
        try:
            failure = FailureRow.model_validate(rec)
        except ValidationError as exc:
            raise TriageInputError(source, line, _problem(exc)) from None
        if failure.id in seen:
            raise TriageInputError(source, line, f"duplicate id {failure.id!r} (first at line {seen[failure.id]})")
        seen[failure.id] = line
        failures.append(failure)
    return EvalFile(failures=failures, n_rows=n_rows, n_acceptable=n_ok)


def failures_from_rows(rows: Iterable[Mapping[str, Any]], *, source: str = "rows") -> EvalFile:
    """Read failure rows given as objects (the lines of a failures file, parsed); a bad row is named
    `source:N`, N its number from 1."""
    return _read(enumerate(rows, start=1), source)


def load_failures(path: Path | str) -> EvalFile:
    """Read a failures file (`failures_from_rows` over its lines; a bad line is named `file:line`)."""
    return _read(read_jsonl(path, error=TriageInputError), path)


def load_sources(path: Path | str) -> dict[str, str]:
    """Source documents as they were before ingest: JSONL `id` (or `doc_id`), `text`."""
    docs: dict[str, str] = {}
    for line, rec in read_jsonl(path, error=TriageInputError):
        doc_id = rec.get("id", rec.get("doc_id"))
        if not isinstance(doc_id, str | int) or isinstance(doc_id, bool) or str(doc_id) == "":
            raise TriageInputError(path, line, "missing 'id'")
        if not isinstance(rec.get("text"), str):
            raise TriageInputError(path, line, "missing 'text' (a string)")
        if str(doc_id) in docs:
            raise TriageInputError(path, line, f"duplicate id {doc_id!r}")
        docs[str(doc_id)] = rec["text"]
    return docs


def sample_failures(failures: Sequence[FailureRow], n: int | None, seed: int = 0) -> list[FailureRow]:
    """A reproducible simple random sample of `n` failures (all of them when n is None or
    larger), kept in file order so a report reads like the file.

    Each failure's draw is a hash of the seed and its id, not its position: adding, removing
    or reordering other rows does not reshuffle the sample, so a rerun on a slightly
    different failure list triages (nearly) the same questions.
    """
    if n is None or n >= len(failures):
        return list(failures)
    if n < 1:
        raise ValueError("sample size must be at least 1")
    draw = {f.id: hashlib.sha256(f"{seed}\x00{f.id}".encode()).digest() for f in failures}
    picked = set(sorted(draw, key=draw.__getitem__)[:n])
    return [f for f in failures if f.id in picked]

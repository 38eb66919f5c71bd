"""The failures file, the optional sources file, and the reproducible sample (people's labels:
`triage.labels`).

A failures file is JSONL, one object per eval question: `id`, `question`, `history` (earlier
turns, strings or {"role", "text"} objects), `acceptable` (rows marked true are read for the
population figures and otherwise ignored), `retrieved` (ids the system returned) and the gold:
`gold_chunk`, or `gold_text`, or `gold_doc` (a document id) with or without `gold_offset`. A
`gold_doc` without an offset means "this document is the gold; any of its chunks answers" (what
`eval --failures` writes for a case judged per document).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from querywise.conversation import Turns
from querywise.files import InputError, read_jsonl

__all__ = [
    "QUERY_DEFECT_KINDS",
    "EvalFile",
    "Failure",
    "QueryDefectKind",
    "TriageInputError",
    "load_failures",
    "load_sources",
    "sample_failures",
]

QueryDefectKind = Literal["vocabulary", "compound", "referent", "filler"]
QUERY_DEFECT_KINDS: tuple[QueryDefectKind, ...] = ("vocabulary", "compound", "referent", "filler")


class TriageInputError(InputError):
    """A malformed failures, sources or labels file; the message names the file and line."""


class Failure(BaseModel):
    """One failing question and where its answer is (at least one form of the gold)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    id: str = Field(min_length=1)
    question: str
    history: Turns = ()  # earlier turns, oldest first (strings are user turns)
    acceptable: bool = False
    retrieved: list[str] | None = None
    gold_chunk: str | None = None
    gold_text: str | None = None
    gold_doc: str | None = None
    gold_offset: int | None = Field(default=None, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            if isinstance(data.get("id"), int) and not isinstance(data.get("id"), bool):
                data["id"] = str(data["id"])
        return data

    @model_validator(mode="after")
    def _has_gold(self) -> Failure:
        if self.gold_offset is not None and self.gold_doc is None:
            raise ValueError("gold_offset needs gold_doc (the document the offset is in)")
        if not (self.gold_chunk or self.gold_text or self.gold_doc is not None):
            raise ValueError("no gold: give gold_chunk, gold_text, or gold_doc (optionally with gold_offset)")
        return self


class EvalFile(BaseModel):
    """Everything read from a failures (or full eval) file."""

    failures: list[Failure]
    n_rows: int  # failing + acceptable rows
    n_acceptable: int


def _problem(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'record'}: {e['msg']}" for e in exc.errors())


def load_failures(path: Path | str) -> EvalFile:
    """Read a failures file; rows with `acceptable: true` are counted, not triaged.

    A row marked acceptable needs no gold. Duplicate ids are an error naming both lines.
    """
    failures: list[Failure] = []
    seen: dict[str, int] = {}
    n_rows = n_ok = 0
    for line, rec in read_jsonl(path, error=TriageInputError):
        n_rows += 1
        if rec.get("acceptable") is True:
            n_ok += 1
            continue
        try:
            failure = Failure.model_validate(rec)
        except ValidationError as exc:
            raise TriageInputError(path, line, _problem(exc)) from None
        if failure.id in seen:
            raise TriageInputError(path, line, f"duplicate id {failure.id!r} (first at line {seen[failure.id]})")
        seen[failure.id] = line
        failures.append(failure)
    return EvalFile(failures=failures, n_rows=n_rows, n_acceptable=n_ok)


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


def sample_failures(failures: Sequence[Failure], n: int | None, seed: int = 0) -> list[Failure]:
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

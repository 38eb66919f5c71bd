"""The failures file of `querywise eval --failures`: every case of the run, as `querywise triage` reads it.

One JSON object per line, one line per case that has a relevant id (a case without one has no
score to judge it by; it is counted in `FailureRows.skipped`, not written):

    {"id": "q7", "question": "and the Pro?", "history": ["warranty on the X3?"],
     "acceptable": false,
     "gold_chunk": "x3pro-warranty", "gold_text": "Vela X3 Pro headphones carry ...",
     "gold_ids": ["x3pro-warranty", "warranty-overview"],
     "scores": {"ndcg@10": 0.0, "hit_rate@5": 0.0},
     "retrieved": ["x3-warranty", "cushions", ...]}

- `acceptable` is the `--acceptable-if` rule (`evaluation.acceptable`) applied to the case's scores.
- `retrieved` is the ranking that was scored, as deep as the search went, at the case's judged
  granularity (document ids when the case judges documents, see `evaluation.harness`).
- `gold_ids` are the relevant ids, best grade first. The primary gold is the first of them (ties:
  the case's own order): `gold_chunk` + `gold_text` (the chunk's text) when it is a chunk id of the
  index; `gold_doc` when it is the document id of chunks cut from one record ("any of its chunks
  answers"); `gold_chunk` alone when the index holds neither, which triage reports as absent.

The file is written whole or not at all (a temporary file beside it, then renamed), so a run
interrupted half-way never leaves a truncated file for triage to read as complete.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from querywise.conversation import Turns
from querywise.corpus import Chunk
from querywise.evaluation.acceptable import AcceptableRule
from querywise.evaluation.cases import Case
from querywise.evaluation.harness import CaseRun

__all__ = ["FailureRow", "FailureRows", "failure_rows", "write_failures"]


class FailureRow(BaseModel):
    """One evaluated case in the shape of `querywise.triage.Failure` (plus `gold_ids`, `scores`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    question: str
    history: Turns  # earlier turns, oldest first, as {"role", "text"}
    acceptable: bool
    gold_chunk: str | None = None
    gold_doc: str | None = None
    gold_text: str | None = None
    gold_ids: list[str]
    scores: dict[str, float | None]
    retrieved: list[str]


class FailureRows(BaseModel):
    """The rows of one run and what was left out."""

    rule: AcceptableRule
    rows: list[FailureRow]
    skipped: list[str]  # ids of cases with no relevant id

    @property
    def n_acceptable(self) -> int:
        return sum(r.acceptable for r in self.rows)

    @property
    def n_failing(self) -> int:
        return len(self.rows) - self.n_acceptable


def _doc_id(payload: Mapping[str, Any]) -> str | None:
    doc = payload.get("doc_id")
    return str(doc) if isinstance(doc, str | int) and not isinstance(doc, bool) else None


def _ranked_gold(relevant: Mapping[str, int]) -> list[str]:
    """Relevant ids (grade > 0), best grade first; `sorted` is stable, so ties keep the case's order."""
    return sorted((d for d, g in relevant.items() if g > 0), key=lambda d: -relevant[d])


def failure_rows(cases: Sequence[Case], runs: Sequence[CaseRun], chunks: Iterable[Chunk], rule: AcceptableRule) -> FailureRows:
    """Every case with a relevant id as a row, `acceptable` by `rule`.

    `runs` are the run's case records in the order of `cases` (`evaluate(..., keep_ids=None)`
    keeps their whole ranking); `chunks` are the index's chunks, read once for the gold texts
    and document ids. Every metric the rule reads must have been scored.
    """
    if len(cases) != len(runs) or any(c.id != r.id for c, r in zip(cases, runs, strict=False)):
        raise ValueError("the run's case records do not match the cases, in number or order")
    missing = [m.label for m in rule.metrics if runs and m.label not in runs[0].scores]
    if missing:
        raise ValueError(f"the run did not score {', '.join(missing)}, which the acceptable rule reads")
    golds = {c.id: _ranked_gold(c.relevant) for c in cases}
    wanted = {g[0] for g in golds.values() if g}
    texts: dict[str, str] = {}
    docs: set[str] = set()
    for chunk in chunks:  # one pass over the index: the primary golds' texts and which are documents
        if chunk.id in wanted:
            texts[chunk.id] = chunk.text
        doc = _doc_id(chunk.payload)
        if doc is not None and doc in wanted:
            docs.add(doc)
    rows: list[FailureRow] = []
    skipped: list[str] = []
    for case, run in zip(cases, runs, strict=True):
        gold = golds[case.id]
        if not gold:
            skipped.append(case.id)
            continue
        primary = gold[0]
        if primary in texts:
            where: dict[str, str] = {"gold_chunk": primary, "gold_text": texts[primary]}
        elif primary in docs:
            where = {"gold_doc": primary}
        else:
            where = {"gold_chunk": primary}
        rows.append(FailureRow(
            id=case.id, question=case.message, history=case.history, acceptable=rule.acceptable(run.scores),
            gold_ids=gold, scores=dict(run.scores), retrieved=list(run.top), **where,
        ))
    return FailureRows(rule=rule, rows=rows, skipped=skipped)


def write_failures(path: Path | str, rows: Iterable[FailureRow]) -> int:
    """Write `rows` as JSONL at `path`, atomically (the old file, if any, stays until the new one
    is complete); return the number of rows written. Absent golds are left out, not written null."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")  # same folder: the rename is atomic
    n = 0
    try:
        with open(tmp, "x", encoding="utf-8", newline="\n") as fh:  # "x": the umask's permissions, never another's file
            for row in rows:
                fh.write(row.model_dump_json(exclude_none=True) + "\n")
                n += 1
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return n

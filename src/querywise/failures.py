"""The failures file: one row per evaluated case, written by `querywise eval --failures` and read by
`querywise triage`, the service's triage jobs and the benchmarks.

One JSON object per line:

    {"id": "q7", "question": "and the Pro?", "history": ["warranty on the X3?"],
     "acceptable": false,
     "gold_chunk": "x3pro-warranty", "gold_text": "Vela X3 Pro headphones carry ...",
     "gold_ids": ["x3pro-warranty", "warranty-overview"],
     "scores": {"ndcg@10": 0.0, "hit_rate@5": 0.0},
     "retrieved": ["x3-warranty", "cushions", ...]}

- `history`: earlier turns, oldest first, strings (user turns) or {"role", "text"} objects.
- `acceptable`: rows marked true count for the population figures and are not triaged.
- `retrieved`: the ids the system returned, as deep as its search went.
- The gold, at least one form of it on a failing row: `gold_chunk` (a chunk id), `gold_text` (the
  passage's text), `gold_doc` (a document id: "any of its chunks answers") with or without
  `gold_offset` (where the passage starts in the document's source).
- `gold_ids`: every judged relevant id (chunk or document ids), best grade first. Triage reads the
  whole set (a case's rank is its best-ranked relevant document); without it the one gold above
  is the set. `scores` (the case's metrics) are what `eval` knew.
- `route`, `searched`, `expected_route`: what the plan did (its route, the texts it searched: empty
  when it searched nothing) and the route the case expects, when known. Triage files a failure
  whose plan searched nothing or took another route than expected under *routing*.
- `made_by`: the rule that made the file (`eval --failures`: the acceptable-if condition, how many
  results the generator is shown when the rule says so, the index's size): triage, the service
  and the workbench read the generator's context from it when the user does not give one.

This is the one model of a row: the writer here and every reader validate the same fields. It lives
below evaluation and triage, which must not import each other. Unknown fields are ignored, so files
written with more fields (or by other tools) stay readable.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from querywise.conversation import Turns
from querywise.files import write_atomic

__all__ = ["FailureRow", "MadeBy", "write_failures"]


class MadeBy(BaseModel):
    """The rule a failures file was made with, carried on every row (rows are read one at a time)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    acceptable_if: str  # the acceptable-if condition, as written ("hit@5", "ndcg@10>=0.5")
    context_k: int | None = Field(default=None, ge=1)  # results the generator is shown (K of a hit@K rule), when known
    mode: str | None = None  # the search mode of the run
    index: str | None = None  # the index the run searched (its folder), for the record
    n_chunks: int | None = Field(default=None, ge=0)  # its size when the file was made


class FailureRow(BaseModel):
    """One evaluated case: the question, whether it was acceptable, what was retrieved, where the gold is."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    # In the order `eval --failures` has always written them.
    id: str = Field(min_length=1)
    question: str
    history: Turns = ()
    acceptable: bool = False
    gold_chunk: str | None = None
    gold_doc: str | None = None
    gold_text: str | None = None
    gold_offset: int | None = Field(default=None, ge=0)
    gold_ids: list[str] = Field(default_factory=list)
    scores: dict[str, float | None] = Field(default_factory=dict)
    retrieved: list[str] | None = None
    route: str | None = None  # the plan's route
    searched: list[str] | None = None  # the texts the plan searched ([]: nothing)
    expected_route: str | None = None  # the case's expected route, when it has one
    made_by: MadeBy | None = None

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, data: Any) -> Any:
        # Ids are often numbers in hand-made files (and in BEIR); they are compared as strings.
        if isinstance(data, dict) and isinstance(data.get("id"), int) and not isinstance(data.get("id"), bool):
            data = {**data, "id": str(data["id"])}
        return data

    @model_validator(mode="after")
    def _has_gold(self) -> FailureRow:
        if self.gold_offset is not None and self.gold_doc is None:
            raise ValueError("gold_offset needs gold_doc (the document the offset is in)")
        if not self.acceptable and not (self.gold_chunk or self.gold_text or self.gold_doc is not None):
            raise ValueError("no gold: give gold_chunk, gold_text, or gold_doc (optionally with gold_offset)")
        return self


def write_failures(path: Path | str, rows: Iterable[FailureRow]) -> int:
    """Write `rows` as JSONL at `path`, whole or not at all (the old file, if any, stays until the new
    one is complete); return the number of rows written. Absent fields are left out, not written null."""
    lines = [row.model_dump_json(exclude_none=True) + "\n" for row in rows]
    write_atomic(path, lines)
    return len(lines)

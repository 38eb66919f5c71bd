"""`querywise/failures.py`, the one failures row (named apart from `tests/triage/test_failures.py`, the
triage readers' tests): what `eval --failures` writes is what triage reads, and files written before
(or by hand) stay readable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from querywise.conversation import Turn
from querywise.failures import FailureRow, write_failures
from querywise.triage import EvalFile, failures_from_rows, load_failures


def test_a_written_row_reads_back_equal(tmp_path: Path) -> None:
    rows = [
        FailureRow(id="q7", question="and the Pro?", history=["warranty on the X3?"], acceptable=False, gold_chunk="x3pro-warranty",
                   gold_text="Vela X3 Pro headphones carry ...", gold_ids=["x3pro-warranty", "warranty-overview"],
                   scores={"ndcg@10": 0.0, "hit_rate@5": None}, retrieved=["x3-warranty", "cushions"]),
        FailureRow(id="q8", question="pico buds hours", acceptable=True, gold_doc="manual", gold_ids=["manual"], scores={"hit_rate@5": 1.0},
                   retrieved=["manual"]),
    ]
    path = tmp_path / "failures.jsonl"
    assert write_failures(path, rows) == 2
    assert "gold_doc" not in json.loads(path.read_text(encoding="utf-8").splitlines()[0])  # absent, not null
    read = load_failures(path)
    assert read.failures == rows[:1] and (read.n_rows, read.n_acceptable) == (2, 1)
    assert read == failures_from_rows([r.model_dump(exclude_none=True) for r in rows]) == EvalFile.of(rows)


def test_rows_written_before_and_by_hand_are_read() -> None:
    """The triage reader's rows (a number id, string turns, an offset) and eval's fields beside unknown ones."""
    old = {"id": 3, "question": "q", "history": ["plain turn", {"role": "assistant", "text": "earlier"}], "gold_doc": "d", "gold_offset": 10}
    row = FailureRow.model_validate({**old, "written_by": "another tool"})
    assert row.id == "3" and row.history == (Turn(text="plain turn"), Turn(role="assistant", text="earlier"))
    assert (row.gold_doc, row.gold_offset, row.retrieved, row.gold_ids, row.scores, row.acceptable) == ("d", 10, None, [], {}, False)


@pytest.mark.parametrize(("row", "problem"), [
    ({"id": "a", "question": "q"}, "no gold"),
    ({"id": "a", "question": "q", "gold_chunk": "c", "gold_offset": 3}, "gold_offset needs gold_doc"),
    ({"id": "", "question": "q", "gold_chunk": "c"}, "at least 1 character"),
])
def test_a_failing_row_needs_a_gold_it_can_be_located_by(row: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        FailureRow.model_validate(row)
    assert FailureRow.model_validate({"id": "a", "question": "q", "acceptable": True}).acceptable  # an acceptable row needs none


def test_rows_in_memory_are_named_by_their_number() -> None:
    with pytest.raises(ValueError, match=r"^posted:2: duplicate id 'a' \(first at line 1\)"):
        failures_from_rows([{"id": "a", "question": "q", "gold_chunk": "c"}] * 2, source="posted")

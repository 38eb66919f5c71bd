"""Reading failures, sources and labels; the reproducible sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from querywise.conversation import Turn
from querywise.triage import (
    TriageInputError,
    load_failures,
    load_labels,
    load_sources,
    sample_failures,
)


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_reads_failures_and_counts_acceptable_rows(tmp_path: Path) -> None:
    p = _write(tmp_path / "f.jsonl", [
        {"id": "a", "question": "q1", "acceptable": False, "gold_chunk": "c1",
         "history": [{"role": "assistant", "text": "earlier"}, "plain turn"]},
        {"id": "b", "question": "q2", "acceptable": True},  # no gold needed for an acceptable row
        {"id": 3, "question": "q3", "gold_doc": "d", "gold_offset": 10, "retrieved": ["x", "y"]},
        {"id": "doc", "question": "q4", "gold_doc": "manual", "retrieved": ["manual"]},  # a document gold (contract item 4)
    ])
    data = load_failures(p)
    assert [f.id for f in data.failures] == ["a", "3", "doc"]
    assert data.n_rows == 4 and data.n_acceptable == 1
    assert (data.failures[2].gold_doc, data.failures[2].gold_offset) == ("manual", None)
    assert data.failures[0].history == (Turn(role="assistant", text="earlier"), Turn(text="plain turn"))  # roles kept
    assert data.failures[1].retrieved == ["x", "y"] and data.failures[1].gold_offset == 10


@pytest.mark.parametrize(("row", "problem"), [
    ('{"id": "a", "question": "q"', "invalid JSON"),
    ('{"id": "a", "question": "q"}', "no gold"),
    ('{"id": "a", "question": "q", "gold_offset": 12}', "gold_offset needs gold_doc"),
    ('{"id": "a", "question": "q", "gold_chunk": "c", "gold_offset": -1, "gold_doc": "d"}', "gold_offset"),
    ('["not", "an", "object"]', "expected a JSON object"),
])
def test_malformed_failure_names_file_and_line(tmp_path: Path, row: str, problem: str) -> None:
    p = _write(tmp_path / "f.jsonl", [{"id": "ok", "question": "q", "gold_chunk": "c"}, row])
    with pytest.raises(TriageInputError) as exc:
        load_failures(p)
    assert str(exc.value).startswith(f"{p}:2:") and problem in str(exc.value)


def test_duplicate_failure_id_names_both_lines(tmp_path: Path) -> None:
    p = _write(tmp_path / "f.jsonl", [{"id": "a", "question": "q", "gold_chunk": "c"}] * 2)
    with pytest.raises(TriageInputError, match=r":2: duplicate id 'a' \(first at line 1\)"):
        load_failures(p)


def test_sources_and_labels(tmp_path: Path) -> None:
    src = _write(tmp_path / "s.jsonl", [{"id": "d1", "text": "one"}, {"doc_id": "d2", "text": "two"}])
    assert load_sources(src) == {"d1": "one", "d2": "two"}
    with pytest.raises(TriageInputError, match=r"s2.jsonl:1: missing 'text'"):
        load_sources(_write(tmp_path / "s2.jsonl", [{"id": "d1"}]))
    lab = _write(tmp_path / "l.jsonl", [{"id": "a", "label": "filler"}])
    assert load_labels(lab) == {"a": "filler"}
    with pytest.raises(TriageInputError, match=r"l2.jsonl:1: label: Input should be 'vocabulary', .* got 'typo'"):
        load_labels(_write(tmp_path / "l2.jsonl", [{"id": "a", "label": "typo"}]))


def test_sample_is_reproducible_and_keeps_file_order(tmp_path: Path) -> None:
    p = _write(tmp_path / "f.jsonl", [{"id": f"f{i:03d}", "question": "q", "gold_chunk": "c"} for i in range(152)])
    failures = load_failures(p).failures
    a, b, c = (sample_failures(failures, 60, seed) for seed in (7, 7, 8))
    assert [f.id for f in a] == [f.id for f in b]
    assert [f.id for f in a] != [f.id for f in c]
    assert len(a) == 60 and len({f.id for f in a}) == 60
    assert [f.id for f in a] == sorted(f.id for f in a)
    assert sample_failures(failures, None, 0) == failures == sample_failures(failures, 500, 0)
    # the draw belongs to each failure, not to its position: dropping another row keeps the rest
    dropped = next(f for f in failures if f not in a)
    again = sample_failures([f for f in failures if f is not dropped], 60, 7)
    assert [f.id for f in again] == [f.id for f in a]

"""Rewrite evaluation: hand-computed gate and guard figures on a tiny file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from querywise.catalog import Catalog
from querywise.evaluation.rewrites import (
    RewriteRow,
    differs,
    evaluate_rewrites,
    load_rewrite_rows,
    token_f1,
)
from querywise.files import InputError

DEMO = Path(__file__).resolve().parents[2] / "src" / "querywise" / "demo"
H = ["How long is the warranty on the Halden Solace 7?"]

# person rewrote? / gate flags?
TINY = [
    # 1. rewritten, flagged (ellipsis)                      -> true positive
    {"history": H, "message": "And the Pro?", "standalone": "How long is the warranty on the Halden Solace 7 Pro?"},
    # 2. rewritten, flagged (pronoun); the rewrite names a product nobody said -> guard alarm
    {
        "history": H,
        "message": "does it cover water damage?",
        "standalone": "Does the Solace 7 Lite warranty cover water damage?",
    },
    # 3. not rewritten, not flagged                         -> true negative
    {
        "history": H,
        "message": "What is the return window for opened earbuds?",
        "standalone": "What is the return window for opened earbuds?",
    },
    # 4. rewritten, not flagged (silent continuation)       -> missed
    {
        "history": H,
        "message": "Tell me about breathing exercises.",
        "standalone": "Tell me about breathing exercises for asthma.",
    },
    # 5. not rewritten, flagged                             -> false flag
    {"history": H, "message": "What about a PO box?", "standalone": "What about a PO box?"},
    # 6. first turn, only whitespace changed: not a rewrite -> true negative
    {"history": [], "message": "Do gift cards  expire?", "standalone": "Do gift cards expire? "},
]


def _write(tmp_path: Path, rows: Sequence[object]) -> Path:
    path = tmp_path / "rewrites.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def tiny(tmp_path: Path) -> list[RewriteRow]:
    return load_rewrite_rows(_write(tmp_path, TINY))


def test_hand_computed_gate_and_guard_figures(tiny: list[RewriteRow]) -> None:
    report = evaluate_rewrites(tiny)
    assert (report.n, report.n_rewritten, report.n_flagged, report.n_flagged_rewritten) == (6, 3, 3, 2)
    assert report.gate_recall == pytest.approx(2 / 3)  # rows 1, 2 of 1, 2, 4
    assert report.gate_precision == pytest.approx(2 / 3)  # rows 1, 2 of 1, 2, 5
    assert report.guard_rejected == 1
    assert report.guard_false_alarm_rate == pytest.approx(1 / 3)  # row 2 of the rewritten 1, 2, 4
    assert report.exact_match is None and report.token_f1 is None


def test_examples_say_why(tiny: list[RewriteRow]) -> None:
    report = evaluate_rewrites(tiny)
    [missed] = report.missed
    assert missed.message == "Tell me about breathing exercises."
    assert missed.previous == H[0]
    assert missed.cues == [] and "searched as typed" in missed.reason
    [false_flag] = report.false_flags
    assert false_flag.message == "What about a PO box?" and false_flag.cues == ["opener:what about"]
    [alarm] = report.guard_false_alarms
    assert alarm.message == "does it cover water damage?"
    assert alarm.lost == [] and alarm.invented == ["Solace 7 Lite"]


def test_json_has_the_cli_keys(tiny: list[RewriteRow]) -> None:
    data = json.loads(json.dumps(evaluate_rewrites(tiny).model_dump()))
    assert {"n", "gate_recall", "gate_precision", "guard_false_alarm_rate"} <= set(data)
    assert data["n"] == 6


def test_examples_are_capped_at_ten() -> None:
    rows = [
        RewriteRow(history=tuple(H), message=f"What about option {i}?", standalone=f"What about option {i}?")
        for i in range(15)
    ]
    report = evaluate_rewrites(rows)
    assert report.n_flagged == 15 and len(report.false_flags) == 10


def test_rates_are_none_without_a_denominator() -> None:
    report = evaluate_rewrites([RewriteRow(message="Do gift cards expire?", standalone="Do gift cards expire?")])
    assert report.gate_recall is None and report.gate_precision is None and report.guard_false_alarm_rate is None


def test_rewriter_scores_what_the_pipeline_would_search(tiny: list[RewriteRow]) -> None:
    gold = {r.message: r.standalone for r in tiny}
    calls: list[str] = []

    def rewriter(message: str, history: Sequence[str]) -> str:
        calls.append(message)
        return gold[message]

    report = evaluate_rewrites(tiny, rewriter=rewriter)
    # Called only where the gate flags (rows 1, 2, 5); elsewhere the message is searched.
    assert calls == ["And the Pro?", "does it cover water damage?", "What about a PO box?"]
    # Row 4 is searched as typed: 5 of its 7 gold tokens, all 5 of its own -> F1 = 10/12.
    assert report.exact_match == pytest.approx(5 / 6)
    assert report.token_f1 == pytest.approx((5 + 10 / 12) / 6)


def test_token_f1_by_hand() -> None:
    assert token_f1("the Solace 7 warranty", "warranty of the Solace 7") == pytest.approx(2 * 0.8 / 1.8)
    assert token_f1("", "") == 1.0 and token_f1("abc", "") == 0.0 and token_f1("abc", "xyz") == 0.0


def test_differs_ignores_only_whitespace() -> None:
    assert not differs(" And the  Pro? ", "And the Pro?")
    assert differs("And the Pro?", "And the Pro.")


def test_demo_rewrites_score_perfectly_with_the_catalog() -> None:
    rows = load_rewrite_rows(DEMO / "rewrites.jsonl")
    report = evaluate_rewrites(rows, catalog=Catalog.load(DEMO / "catalog.jsonl"))
    assert (report.n, report.n_rewritten) == (25, 18)
    assert report.gate_recall == 1.0 and report.gate_precision == 1.0
    assert report.guard_false_alarm_rate == 0.0


def test_topic_continuity_reaches_the_gate() -> None:
    rows = load_rewrite_rows(DEMO / "rewrites.jsonl")
    report = evaluate_rewrites(rows, catalog=Catalog.load(DEMO / "catalog.jsonl"), topic_continuity=True)
    assert {e.message for e in report.false_flags} == {
        "What is the return window for opened earbuds?",
        "tell me a joke",
    }


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ('{"history": [], "message": "hi"}', r"rewrites\.jsonl:2: missing 'standalone'"),
        ('{"history": "hi", "message": "a", "standalone": "b"}', r"rewrites\.jsonl:2: 'history' must be a list"),
        ('{"history": [], "message": "", "standalone": "b"}', r"rewrites\.jsonl:2: missing 'message'"),
        ('{"history": [], "message": "a", "standalone": "b"', r"rewrites\.jsonl:2: invalid JSON"),
    ],
)
def test_load_errors_name_the_line(tmp_path: Path, line: str, error: str) -> None:
    path = _write(tmp_path, [TINY[0], line])
    with pytest.raises(InputError, match=error):
        load_rewrite_rows(path)


def test_load_rejects_an_empty_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no rows"):
        load_rewrite_rows(_write(tmp_path, []))


def test_history_may_be_omitted(tmp_path: Path) -> None:
    [row] = load_rewrite_rows(_write(tmp_path, [{"message": "a", "standalone": "a"}]))
    assert row.history == ()

"""Rewrite evaluation: hand-computed gate and guard figures on a tiny file."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from querywise.catalog import Catalog
from querywise.conversation import Turn
from querywise.evaluation.rewrites import (
    SOURCES,
    RewriteRow,
    differs,
    evaluate_rewrites,
    load_rewrite_rows,
    subject_rewriter,
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
    # 3. not rewritten, not flagged (names a place)         -> true negative
    {"history": H, "message": "Do you ship to Norway?", "standalone": "Do you ship to Norway?"},
    # 4. rewritten, not flagged (no cue, repeats "warranty") -> missed
    {
        "history": H,
        "message": "Does warranty cover batteries?",
        "standalone": "Does the Halden Solace 7 warranty cover batteries?",
    },
    # 5. not rewritten, flagged                             -> false flag
    {"history": H, "message": "What about a PO box?", "standalone": "What about a PO box?"},
    # 6. first turn, only whitespace changed: not a rewrite -> true negative
    {"history": [], "message": "Do gift cards  expire?", "standalone": "Do gift cards expire? "},
    # 7. rewritten, weakly flagged (names nothing, repeats nothing: topic continuity) -> true positive
    {
        "history": H,
        "message": "Tell me about breathing exercises.",
        "standalone": "Tell me about breathing exercises for asthma.",
    },
    # 8. not rewritten, weakly flagged (a change of subject that names nothing) -> false flag
    {
        "history": H,
        "message": "What is the return window for opened earbuds?",
        "standalone": "What is the return window for opened earbuds?",
    },
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
    assert (report.n, report.n_rewritten, report.n_flagged, report.n_flagged_rewritten) == (8, 4, 5, 3)
    assert report.gate_recall == pytest.approx(3 / 4)  # rows 1, 2, 7 of 1, 2, 4, 7
    assert report.gate_precision == pytest.approx(3 / 5)  # rows 1, 2, 7 of 1, 2, 5, 7, 8
    assert (report.n_flagged_weak, report.n_flagged_weak_rewritten) == (2, 1)  # rows 7, 8; row 7
    assert report.guard_rejected == 1
    assert report.guard_false_alarm_rate == pytest.approx(1 / 4)  # row 2 of the rewritten 1, 2, 4, 7
    assert report.exact_match is None and report.token_f1 is None


def test_examples_say_why(tiny: list[RewriteRow]) -> None:
    report = evaluate_rewrites(tiny)
    [missed] = report.missed
    assert missed.message == "Does warranty cover batteries?"
    assert missed.previous == H[0]
    assert missed.cues == [] and "searched as typed" in missed.reason
    strong, weak = report.false_flags
    assert (strong.message, strong.cues, strong.strength) == ("What about a PO box?", ["opener:what about"], "strong")
    assert (weak.message, weak.cues, weak.strength) == (TINY[7]["message"], ["continuity"], "weak")
    [alarm] = report.guard_false_alarms
    assert alarm.message == "does it cover water damage?"
    assert alarm.lost == [] and alarm.invented == ["Solace 7 Lite"]


def test_json_has_the_cli_keys(tiny: list[RewriteRow]) -> None:
    data = json.loads(json.dumps(evaluate_rewrites(tiny).model_dump()))
    assert {"n", "gate_recall", "gate_precision", "guard_false_alarm_rate"} <= set(data)
    assert data["n"] == 8


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
    # Called only where the gate flags (rows 1, 2, 5, 7, 8); elsewhere the message is searched.
    assert calls == [TINY[i]["message"] for i in (0, 1, 4, 6, 7)]
    # Row 4 is searched as typed: 4 of its 8 gold tokens, all 4 of its own -> F1 = 2/3.
    assert report.exact_match == pytest.approx(7 / 8)
    assert report.token_f1 == pytest.approx((7 + 2 / 3) / 8)


def test_added_terms_by_hand() -> None:
    rows = [
        # the person adds {solac, 7, pro}; the form adds {halden, solac, 7, pro}: 3 of 3 found, 3 of 4 right
        RewriteRow(history=("warranty on the Halden Solace 7 Pro?",), message="does it cover water damage?",
                   standalone="does the Solace 7 Pro cover water damage?"),
        # the person adds nothing; a form that adds {tide} is one wrong term
        RewriteRow(history=("Can I swim with the Tide 4?",), message="And the Pro?", standalone="And the Pro?"),
    ]
    forms = {"does it cover water damage?": "does the Halden Solace 7 Pro cover water damage?", "And the Pro?": "And the Pro? Tide"}
    report = evaluate_rewrites(rows, rewriter=lambda m, h: forms[m])
    assert report.added_term_recall == pytest.approx(3 / 3) and report.added_term_precision == pytest.approx(3 / 5)
    assert report.added_terms == (3, 3, 5)  # both, the person, the form: what pooling over files adds up
    assert evaluate_rewrites(rows).added_term_recall is None  # only with a rewriter


def test_added_terms_by_where_the_history_said_them() -> None:
    history = (Turn(text="My Halden Solace 7 keeps dropping calls."),
               Turn(role="assistant", text="Reset the Bluetooth pairing first."),
               Turn(text="Done that."),
               Turn(role="assistant", text="Then update the firmware from the companion app."))
    # The person adds {solac, firmwar, bluetooth, releas}: one from each place. The form adds
    # {halden, solac, firmwar, app}: two of the user's words (one right), two of the last answer's.
    row = RewriteRow(history=history, message="how long does it take?",
                     standalone="how long does the Solace firmware Bluetooth release take?")
    report = evaluate_rewrites([row], rewriter=lambda m, h: "how long does the Halden Solace firmware app take?")
    by = report.added_by_source
    assert by is not None and set(by) == set(SOURCES)
    assert (by["user_turns"].both, by["user_turns"].person, by["user_turns"].form) == (1, 1, 2)
    assert (by["last_answer"].both, by["last_answer"].person, by["last_answer"].form) == (1, 1, 2)
    assert (by["earlier_answers"].person, by["earlier_answers"].form, by["nowhere"].person) == (1, 0, 1)
    assert by["last_answer"].recall == 1.0 and by["last_answer"].precision == 0.5 and by["nowhere"].precision is None
    # The split adds up to the pooled counts, and survives the JSON form with its ratios.
    assert tuple(sum(getattr(c, k) for c in by.values()) for k in ("both", "person", "form")) == report.added_terms
    assert report.model_dump()["added_by_source"]["user_turns"]["recall"] == 1.0
    assert evaluate_rewrites([row]).added_by_source is None  # only with a rewriter


def test_rows_may_carry_assistant_turns(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"history": ["which lasts longest?", {"role": "assistant", "text": "The Solace 7 Pro."}],
                              "message": "does it fold?", "standalone": "does the Solace 7 Pro fold?"}])
    rows = load_rewrite_rows(path)
    assert rows[0].history[1] == Turn(role="assistant", text="The Solace 7 Pro.")
    assert evaluate_rewrites(rows).guard_rejected == 0  # the name came from the answer: not invented


def test_token_f1_by_hand() -> None:
    assert token_f1("the Solace 7 warranty", "warranty of the Solace 7") == pytest.approx(2 * 0.8 / 1.8)
    assert token_f1("", "") == 1.0 and token_f1("abc", "") == 0.0 and token_f1("abc", "xyz") == 0.0


def test_differs_ignores_only_whitespace() -> None:
    assert not differs(" And the  Pro? ", "And the Pro?")
    assert differs("And the Pro?", "And the Pro.")


def test_demo_rewrites_with_the_catalog_every_strong_flag_is_right() -> None:
    rows = load_rewrite_rows(DEMO / "rewrites.jsonl")
    report = evaluate_rewrites(rows, catalog=Catalog.load(DEMO / "catalog.jsonl"))
    assert (report.n, report.n_rewritten) == (25, 18)
    assert report.gate_recall == 1.0
    assert report.guard_false_alarm_rate == 0.0
    # The only false flags are weak ones (a change of subject that names nothing), on which the
    # plan searches the message as typed and adds the standalone form next to it.
    assert {(e.message, e.strength) for e in report.false_flags} == {
        ("What is the return window for opened earbuds?", "weak"),
        ("tell me a joke", "weak"),
    }
    assert report.n_flagged_weak == 2 + report.n_flagged_weak_rewritten


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ('{"history": [], "message": "hi"}', r"rewrites\.jsonl:2: missing 'standalone'"),
        ('{"history": "hi", "message": "a", "standalone": "b"}', r"rewrites\.jsonl:2: 'history' must be a list"),
        ('{"history": [{"role": "bot", "text": "x"}], "message": "a", "standalone": "b"}', r"rewrites\.jsonl:2: history turn: role:"),
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


def test_the_subject_baseline_is_scored_beside_the_form() -> None:
    rows = [
        # the person adds {ottoman, empir}; the baseline adds the subject "the Ottoman Empire": 2 of 2, 2 of 2
        RewriteRow(history=("Tell me about the Ottoman Empire.", "What was the role of slavery?"), message="What was the culture like?",
                   standalone="What was the culture like in the Ottoman Empire?"),
    ]
    assert subject_rewriter()("What was the culture like?", rows[0].history) == "What was the culture like? the Ottoman Empire"
    report = evaluate_rewrites(rows, baseline=subject_rewriter())
    assert (report.baseline_added_term_recall, report.baseline_added_term_precision) == (1.0, 1.0)
    assert evaluate_rewrites(rows).baseline_added_term_recall is None  # only with a baseline

"""The doc2dial page of the learnt choice's settings (#34 item 5): each slice's recall and its delta
against the message as typed, per case and clustered by document, and a page that shows the choice
off beside the sweep's settings."""

from __future__ import annotations

from types import SimpleNamespace

from bench.understanding.choice_doc2dial import markdown
from bench.understanding.followup_recall import slice_figures


def _runs(scores: list[float | None]) -> list[SimpleNamespace]:
    return [SimpleNamespace(scores={"recall@5": s}) for s in scores]


def _case(doc: str) -> SimpleNamespace:
    return SimpleNamespace(relevant={f"{doc}#3"})


def test_a_slice_gives_the_moves_recall_and_its_delta_against_the_message_as_typed() -> None:
    cases = [_case("a"), _case("a"), _case("b"), _case("c")]
    f = slice_figures(cases, _runs([1.0, 0.0, None, 1.0]), _runs([1.0, 1.0, 1.0, 0.0]))
    assert f["n"] == 4 and f["documents"] == 3 and f["as_typed"] == 0.5 and f["follow_up_move"] == 0.75  # no relevant id scores 0
    assert f["delta"] == 0.25 and f["delta_se"] > 0


def test_the_page_shows_the_choice_off_beside_the_sweeps_settings() -> None:
    slice_ = {"n": 382, "as_typed": 0.75, "follow_up_move": 0.74, "delta": -0.01, "delta_se": 0.01}
    rows = [{"setting": "off (the rules' form)", "follow_up_slice": slice_, "changes_of_subject_after_an_answer": slice_},
            {"setting": "threshold 0.85, cap 5 (packaged)", "files_at_bar": 11, "mean_low": 0.487,
             "follow_up_slice": slice_, "changes_of_subject_after_an_answer": slice_}]
    page = markdown({"machine": {"command": "cmd"}, "rows": rows, "notes": ["chosen on train"]})
    off, packaged = (line for line in page.splitlines() if line.startswith(("| off", "| threshold")))
    assert off.startswith("| off (the rules' form) | | | 0.7400 (382) | -0.0100 |")
    assert packaged.startswith("| threshold 0.85, cap 5 (packaged) | 11 | 0.487 | 0.7400 (382)")
    assert "- chosen on train" in page

"""The drift probe's guards and its choice (#34 item 5, fourth round): what each guard reads, that a
setting is chosen on the follow-up bar first and the after-an-answer gain second, and that
cross-validation scores each fifth with a setting chosen without it."""

from __future__ import annotations

from bench.understanding.drift_probe import FLOOR, FOLDS, Figures, Row, choose, cross_validate, dense, headroom, lexical_only, measure


def _figures(*, clarity: float | None = 0.25, drift: float | None = 0.2, lex_drift: float | None = 0.8, agree: bool = True,
             with_answer: float = 1.0, without_answer: float = 0.0) -> Figures:
    return Figures(clarity, drift, lex_drift, agree, with_answer, without_answer)


def _row(group: str, figures: Figures | None, *, fold: int = 0, typed: float = 0.0, made: float = 1.0) -> Row:
    return Row(group, "train", fold, f"doc{fold}", typed, made, figures)


def test_the_lexical_guard_needs_the_lists_to_agree_a_far_first_hit_and_a_clear_message() -> None:
    guard = lexical_only(0.3, 0.15)
    assert guard(_figures())
    assert not guard(_figures(agree=False))  # the message's BM25 and dense lists disagree
    assert not guard(_figures(lex_drift=0.2))  # the answer query's first hit is high in the message's BM25 list
    assert not guard(_figures(clarity=0.1))  # the message finds nothing clearly
    assert not guard(_figures(lex_drift=None))  # no BM25 list: it cannot say, the query is kept


def test_the_dense_guard_needs_both_figures() -> None:
    assert dense(0.2, 0.15)(_figures(clarity=0.2, drift=0.15))
    assert not dense(0.2, 0.15)(_figures(clarity=0.19, drift=0.3))
    assert not dense(0.2, 0.15)(_figures(clarity=None, drift=None))  # no dense list: it cannot say


def test_measure_leaves_the_answer_query_out_only_where_the_guard_fires() -> None:
    helps = _row("answered", _figures(with_answer=0.0, without_answer=1.0), typed=1.0)
    follow = _row("follow", _figures(drift=0.0, with_answer=1.0, without_answer=0.0))
    unguarded = _row("follow", None, made=0.0)
    m = measure([helps, follow, unguarded], dense(0.2, 0.15))
    assert m["answered"] == 0.0 and m["fires_answered"] == 1  # left out: back to the message as typed
    assert m["follow"] == 0.5 and m["fires_follow"] == 0  # a follow-up whose first hit is near is kept


def test_choose_keeps_the_follow_up_bar_before_the_after_an_answer_gain() -> None:
    # "eager" fires on every turn: it wins the change of subject but drops the follow-up under the bar.
    rows = [_row("answered", _figures(clarity=0.3, drift=0.3, with_answer=0.0, without_answer=1.0), typed=1.0),
            *[_row("follow", _figures(clarity=0.3, drift=0.1)) for _ in range(3)]]
    grid = {"eager": dense(0.0, 0.0), "careful": dense(0.2, 0.2), "never": dense(1.0, 1.0)}
    assert measure(rows, grid["eager"])["follow"] < FLOOR
    assert choose(grid, rows) == "careful"
    # none reaches the bar: the best follow-up slice, not the best change of subject
    under = [*rows, *[_row("follow", _figures(clarity=0.3, drift=0.25)) for _ in range(3)]]
    assert choose({"eager": grid["eager"], "careful": grid["careful"]}, under) == "careful"
    assert measure(under, grid["careful"])["follow"] < FLOOR


def test_cross_validation_scores_each_fifth_with_a_setting_chosen_without_it() -> None:
    # "b" fires on more turns than "a". In fifth 0 that rescues a change of subject; in the other
    # fifths it costs a follow-up. Chosen without fifth 0, "a" is what fifth 0 is scored with.
    def rescued(drift: float) -> Figures:
        return _figures(clarity=0.3, drift=drift, with_answer=0.0, without_answer=1.0)

    rows = []
    for k in range(FOLDS):
        rows.extend(_row("follow", None, fold=k) for _ in range(3))
        if k == 0:
            rows.append(_row("answered", rescued(0.05), fold=k, typed=1.0))
        else:
            rows.append(_row("answered", rescued(0.3), fold=k, typed=1.0))
            rows.append(_row("follow", _figures(clarity=0.3, drift=0.05), fold=k))
    grid = {"a": dense(0.2, 0.2), "b": dense(0.2, 0.0)}
    assert choose(grid, rows) == "b"  # on all of train "b" rescues every change of subject
    cv = cross_validate(grid, rows)
    assert cv["picks"] == ["a", "b", "b", "b", "b"]
    assert cv["answered"] == -0.2  # fifth 0's change of subject, scored under "a", is lost
    assert measure(rows, grid["b"])["answered"] == 0.0


def test_headroom_counts_where_leaving_the_answer_query_out_helps_and_hurts() -> None:
    rows = [_row("answered", _figures(with_answer=0.0, without_answer=1.0), typed=1.0, made=0.0),
            _row("answered", None, typed=1.0, made=1.0),
            _row("follow", _figures(with_answer=1.0, without_answer=0.0)), _row("follow", _figures(with_answer=1.0, without_answer=1.0))]
    h = headroom(rows)
    assert h["answered"] == {"n": 2, "with_answer_query": 1, "helps": 1, "hurts": 0}
    assert h["follow"] == {"n": 2, "with_answer_query": 2, "helps": 0, "hurts": 1}
    assert h["answered_delta"] == {"no guard": -0.5, "always left out": 0.0, "left out exactly where it helps": 0.0}

import pytest

from querywise.index import rrf


def test_rrf_scores_by_hand() -> None:
    fused = dict(rrf([["a", "b", "c"], ["b", "a"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)


def test_rrf_weights_and_depth() -> None:
    fused = rrf([["a", "b"], ["b", "a"]], k=60, weights=[3.0, 1.0], depth=1)
    assert fused == [("a", pytest.approx(3 / 61)), ("b", pytest.approx(1 / 61))]


def test_rrf_fuses_on_ids_not_text() -> None:
    # Two different ids with the same text stay two results.
    assert len(rrf([["id-1"], ["id-2"]])) == 2


def test_rrf_weights_must_match() -> None:
    with pytest.raises(ValueError):
        rrf([["a"]], weights=[1.0, 2.0])


def test_equal_fused_scores_rank_by_point_id_whatever_order_the_engine_returns() -> None:
    from querywise.index.engine import EngineHit, break_ties

    hits = [EngineHit(7, 0.03, {}), EngineHit(3, 0.05, {}), EngineHit(9, 0.05, {}), EngineHit(1, 0.03, {})]
    for order in (hits, hits[::-1]):
        assert [h.id for h in break_ties(list(order), 3)] == [3, 9, 1]

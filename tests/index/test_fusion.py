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
    from querywise.index.engine import EngineHit, fuse

    # Point 3 is at ranks (1, 2), point 9 at (2, 1): equal RRF scores; 1 and 7 likewise further down.
    dense = [EngineHit(3, 0.9, {}), EngineHit(9, 0.8, {}), EngineHit(1, 0.7, {}), EngineHit(7, 0.6, {})]
    bm25 = [EngineHit(9, 5.0, {}), EngineHit(3, 4.0, {}), EngineHit(7, 3.0, {}), EngineHit(1, 2.0, {})]
    for lists in ([dense, bm25], [bm25, dense]):
        assert [pid for pid, _ in fuse(lists, rrf_k=60, limit=3)] == [3, 9, 1]


def test_a_list_cut_inside_a_tie_keeps_the_lowest_ids_whatever_the_engine_order() -> None:
    """The engine returns tied points in any order, and only as many as asked: the cut must see the
    whole tied group (here 30 points with one score, cut at 5, margin 10) before it keeps the lowest ids."""
    from querywise.index.engine import TIE_MARGIN, EngineHit, tie_complete

    points = [EngineHit(99, 2.0, {})] + [EngineHit(i, 1.0, {}) for i in range(30, 0, -1)]
    asked: list[int] = []

    def fetch(requests):  # type: ignore[no-untyped-def]
        asked.extend(n for _, n in requests)
        return [points[:n] for _, n in requests]

    (kept,) = tie_complete(fetch, [5])
    assert [h.id for h in kept] == [99, 1, 2, 3, 4]
    assert asked == [5 + TIE_MARGIN, 2 * (5 + TIE_MARGIN), 4 * (5 + TIE_MARGIN)]

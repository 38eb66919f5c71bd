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
    from querywise.index.engine import fuse

    # Point 3 is at ranks (1, 2), point 9 at (2, 1): equal RRF scores; 1 and 7 likewise further down.
    dense = [(3, 0.9), (9, 0.8), (1, 0.7), (7, 0.6)]
    bm25 = [(9, 5.0), (3, 4.0), (7, 3.0), (1, 2.0)]
    for lists in ([dense, bm25], [bm25, dense]):
        assert [pid for pid, _ in fuse(lists, rrf_k=60, limit=3)] == [3, 9, 1]


def test_a_list_cut_inside_a_tie_keeps_the_lowest_ids_whatever_the_engine_order() -> None:
    """The engine returns tied points in any order, and only as many as asked: the cut must see the
    whole tied group (here 30 points with one score, cut at 5, margin 10) before it keeps the lowest ids."""
    from querywise.index.engine import TIE_MARGIN, tie_complete

    points = [(99, 2.0)] + [(i, 1.0) for i in range(30, 0, -1)]
    asked: list[int] = []

    def fetch(requests):  # type: ignore[no-untyped-def]
        asked.extend(n for _, n in requests)
        return [points[:n] for _, n in requests]

    (kept,) = tie_complete(fetch, [5])
    assert [pid for pid, _ in kept] == [99, 1, 2, 3, 4]
    assert asked == [5 + TIE_MARGIN, 2 * (5 + TIE_MARGIN), 4 * (5 + TIE_MARGIN)]


def test_convex_combines_min_max_normalised_scores() -> None:
    from querywise.index.fusion import convex

    dense = [("a", 0.9), ("b", 0.5), ("c", 0.1)]
    bm25 = [("c", 12.0), ("a", 2.0)]
    fused = dict(convex([dense, bm25], weights=[0.5, 0.5]))
    assert fused == pytest.approx({"a": 0.5 * 1.0 + 0.0, "b": 0.5 * 0.5, "c": 0.0 + 0.5 * 1.0})
    assert fused["b"] < convex([dense, [("b", 1.0), ("z", 0.0)]], weights=[0.5, 0.5])[0][1]  # in a second list: more
    assert [k for k, _ in convex([[("x", 3.0), ("y", 3.0)]], weights=[1.0])] == ["x", "y"]  # all equal: each counts 1


def test_fuse_scored_at_the_default_weight_is_plain_rrf_and_at_the_ends_one_list() -> None:
    from querywise.index.fusion import fuse_scored

    dense = [("a", 0.9), ("b", 0.8), ("c", 0.2)]
    bm25 = [("c", 9.0), ("d", 4.0), ("a", 1.0)]
    plain = rrf([["a", "b", "c"], ["c", "d", "a"]], k=60)
    assert fuse_scored([dense, bm25], fusion="rrf", dense_weight=0.5, rrf_k=60) == plain
    assert [k for k, _ in fuse_scored([dense, bm25], fusion="convex", dense_weight=1.0, rrf_k=60)][:3] == ["a", "b", "c"]
    assert [k for k, _ in fuse_scored([dense, bm25], fusion="convex", dense_weight=0.0, rrf_k=60)][:3] == ["c", "d", "a"]
    # more weight on a list moves its first answer up
    heavy = [k for k, _ in fuse_scored([dense, bm25], fusion="rrf", dense_weight=0.9, rrf_k=60)]
    assert heavy[0] == "a" and heavy.index("b") < heavy.index("d")


def test_the_engine_fuses_as_the_index_settings_say(tmp_path, shop, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    from querywise.config import IndexSettings, Settings
    from querywise.index import Index, build_index

    build_index(shop, tmp_path / "ix", settings=Settings(cache_dir=tmp_path / "c"), embedder=hash_embedder).close()
    for w in (0.0, 1.0):
        s = Settings(cache_dir=tmp_path / "c", index=IndexSettings(fusion="convex", dense_weight=w))
        with Index.open(tmp_path / "ix", settings=s, embedder=hash_embedder) as ix:
            single = "dense" if w == 1.0 else "bm25"
            for text in ("Vela X3 warranty", "how fast is shipping", "cushions part"):
                alone = [h.id for h in ix.search(text, mode=single, k=3)]  # type: ignore[arg-type]
                assert [h.id for h in ix.search(text, mode="hybrid", k=3)][: len(alone)] == alone  # then the other list's rest

"""Sentence vectors (`[index] sentence_vectors`): each chunk's sentences kept as one multivector,
scored by the best sentence, fused into hybrid as a third list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from querywise.config import IndexSettings, Settings
from querywise.corpus import Chunk
from querywise.index import Index, build_index
from querywise.index.fusion import fuse_scored, rrf
from querywise.index.points import chunk_sentences

QUERIES = ("Vela X3 warranty", "how fast is shipping", "cushions part", "water damage", "battery life of the earbuds")


def _unit(v: Any) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    return a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)


def test_a_chunk_is_its_title_then_each_sentence() -> None:
    c = Chunk(id="a", title="Halden Solace 7", text="Lasts 30 hours. Charges in 2 h, e.g. from a laptop.\nWater resistant? Yes! (IPX4) it is.")
    assert chunk_sentences(c) == ["Halden Solace 7", "Lasts 30 hours.", "Charges in 2 h, e.g. from a laptop.", "Water resistant?", "Yes!", "(IPX4) it is."]
    assert chunk_sentences(Chunk(id="b", text="one line, no title")) == ["one line, no title"]


def test_fusion_gives_the_sentence_list_its_share_of_the_dense_side() -> None:
    dense, bm25, best = [("a", 0.9), ("b", 0.5)], [("c", 7.0), ("a", 1.0)], [("b", 0.8), ("d", 0.6)]
    fused = fuse_scored([dense, bm25], fusion="rrf", dense_weight=0.5, rrf_k=60, sentences=best, sentence_share=0.25)
    assert fused == rrf([["a", "b"], ["b", "d"], ["c", "a"]], k=60, weights=[0.75, 0.25, 1.0])
    # share 0: exactly the two-list fusion; share 1: the chunk vectors' list is out
    assert dict(fuse_scored([dense, bm25], fusion="convex", dense_weight=0.4, rrf_k=60, sentences=best, sentence_share=0.0)) == pytest.approx(
        {**dict(fuse_scored([dense, bm25], fusion="convex", dense_weight=0.4, rrf_k=60)), "d": 0.0})
    only = fuse_scored([dense, []], fusion="convex", dense_weight=1.0, rrf_k=60, sentences=best, sentence_share=1.0)
    assert [k for k, s in only if s > 0] == ["b", "d"]


def test_the_sentence_list_ranks_each_chunk_by_its_best_sentence(tmp_path: Path, passages: list[Chunk], hash_embedder: Any) -> None:
    on = Settings(cache_dir=tmp_path / "c", index=IndexSettings(sentence_vectors=True, fusion="convex", dense_weight=1.0, sentence_share=1.0))
    with build_index(passages, tmp_path / "ix", settings=on, embedder=hash_embedder) as ix:
        said = [chunk_sentences(c) for c in passages]
        assert ix.manifest.n_sentences == sum(map(len, said)) > len(passages)
        for text in QUERIES:
            q = _unit(hash_embedder.embed([text])[0])
            best = {c.id: float((_unit(hash_embedder.embed(ts)) @ q).max()) for c, ts in zip(passages, said, strict=True)}
            hits = ix.search(text, mode="hybrid", k=len(passages), exact=True)
            ranked = [h.id for h in hits]
            want = sorted(best, key=lambda i: -best[i])
            # convex scores are normalised: the order is the best-sentence order (ties aside)
            assert [round(best[i], 5) for i in ranked] == [round(best[i], 5) for i in want], text
        # and it is not the chunk vectors' list: that one ranks these passages otherwise somewhere
        dense_order = [[h.id for h in ix.search(t, mode="dense", k=len(passages), exact=True)] for t in QUERIES]
        assert dense_order != [[h.id for h in ix.search(t, mode="hybrid", k=len(passages), exact=True)] for t in QUERIES]


def test_share_zero_ranks_as_an_index_without_sentence_vectors(tmp_path: Path, shop: list[Chunk], passages: list[Chunk], hash_embedder: Any) -> None:
    corpus = shop + passages
    plain = Settings(cache_dir=tmp_path / "c")
    zero = Settings(cache_dir=tmp_path / "c", index=IndexSettings(sentence_vectors=True, fusion="convex", sentence_share=0.0))
    with build_index(corpus, tmp_path / "a", settings=plain, embedder=hash_embedder) as a, \
            build_index(corpus, tmp_path / "b", settings=zero, embedder=hash_embedder) as b:
        assert a.manifest.n_sentences is None and b.manifest.n_sentences
        convex = Settings(cache_dir=tmp_path / "c", index=IndexSettings(fusion="convex"))
        with Index.open(tmp_path / "a", settings=convex, embedder=hash_embedder) as a2:
            for text in QUERIES:
                assert [h.id for h in a2.search(text, k=8)] == [h.id for h in b.search(text, k=8)]
        # an index decides by what it holds: the plain one searched with the setting on has no third list
        on = Settings(cache_dir=tmp_path / "c", index=IndexSettings(sentence_vectors=True))
        with Index.open(tmp_path / "a", settings=on, embedder=hash_embedder) as a3:
            assert [h.id for h in a3.search("water damage", k=5)] == [h.id for h in a.search("water damage", k=5)]


@pytest.mark.parametrize("mode", ["sentences", "hybrid"])
def test_a_qdrant_server_keeps_and_ranks_them_as_the_embedded_engine(tmp_path: Path, shop: list[Chunk], passages: list[Chunk], hash_embedder: Any,
                                                                     mode: str) -> None:
    """The server path (qdrant-client's local mode as the test double) stores the same
    multivectors and gives the same best-sentence and fused rankings."""
    from querywise.index.server import connect

    corpus = [*shop, *passages]
    index = IndexSettings(sentence_vectors=True, fusion="convex", dense_weight=0.6, sentence_share=0.5)
    edge = build_index(corpus, tmp_path / "edge", settings=Settings(cache_dir=tmp_path / "c", index=index), embedder=hash_embedder)
    served = Settings(cache_dir=tmp_path / "c", index=index.model_copy(update={"engine": "server", "collection": "s"}))
    server = build_index(corpus, tmp_path / "server", settings=served, embedder=hash_embedder, client=connect(":memory:"))
    with edge, server:
        assert server.manifest.n_sentences == edge.manifest.n_sentences
        for text in QUERIES:
            if mode == "sentences":
                a, b = (ix.sentence_query(ix.embed_query(text).tolist(), k=8) for ix in (edge, server))
            else:
                a, b = (ix.search(text, k=8, exact=True) for ix in (edge, server))
            assert sorted((-round(h.score, 4), h.id) for h in a) == sorted((-round(h.score, 4), h.id) for h in b), text

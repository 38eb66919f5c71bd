from __future__ import annotations

import json
from pathlib import Path

import bm25s
import numpy as np
import pytest

from querywise.conditions import parse_where
from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.index import Index, IndexStoreError, build_index, rrf
from querywise.index.lexical import doc_length
from querywise.text import analyze


@pytest.fixture
def index(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> Index:  # type: ignore[no-untyped-def]
    ix = build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder)
    yield ix
    ix.close()


def test_bm25_scores_are_lucene_bm25(index: Index, shop: list[Chunk]) -> None:
    """Differential check against bm25s (method="lucene") on the same words. The query has no digit
    or identifier, so the matching aids (lone digits, compounds) change neither its terms' tf and
    df nor, since they are not length, any document's length."""
    corpus_terms = [[t for t in analyze(c.search_text) if doc_length([t])] for c in shop]
    ref = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    ref.index(_as_tokenized(corpus_terms), show_progress=False)
    query = "warranty for the Vela X3 Pro"
    q_terms = analyze(query)
    expected = ref.get_scores(q_terms)
    hits = index.search(query, mode="bm25", k=len(shop))
    got = {h.id: h.score for h in hits}
    for chunk, score in zip(shop, expected, strict=True):
        if score > 0:
            assert got[chunk.id] == pytest.approx(score, rel=1e-4)
        else:
            assert chunk.id not in got


def _as_tokenized(corpus_terms: list[list[str]]) -> bm25s.tokenization.Tokenized:
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in doc] for doc in corpus_terms]
    return bm25s.tokenization.Tokenized(ids=ids, vocab=vocab)


def test_dense_scores_are_cosines(index: Index, shop: list[Chunk], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    query = "express shipping next day"
    qv = hash_embedder.embed([query])[0]
    dv = hash_embedder.embed([c.search_text for c in shop])
    expected = sorted(zip((dv @ qv).tolist(), [c.id for c in shop], strict=True), reverse=True)[:3]
    hits = index.search(query, mode="dense", k=3, exact=True)
    assert [h.id for h in hits] == [cid for _, cid in expected]
    assert [h.score for h in hits] == pytest.approx([s for s, _ in expected], abs=1e-5)
    assert [h.rank for h in hits] == [1, 2, 3]


def test_hybrid_is_rrf_of_both_lists_on_ids(index: Index, shop: list[Chunk]) -> None:
    query = "Vela X3 warranty"
    dense = [h.id for h in index.search(query, mode="dense", k=len(shop), exact=True)]
    lexical = [h.id for h in index.search(query, mode="bm25", k=len(shop))]
    expected = rrf([dense, lexical], k=60)
    hits = index.search(query, mode="hybrid", k=len(shop), exact=True)
    assert {h.id: round(h.score, 6) for h in hits} == {cid: round(s, 6) for cid, s in expected}


def test_filters_run_in_the_engine(index: Index) -> None:
    for mode in ("dense", "bm25", "hybrid"):
        hits = index.search("warranty headphones cushions", mode=mode, k=10, where=parse_where(["price<200", "markets=eu"]))
        assert {h.id for h in hits} <= {"x3-warranty", "cushions", "shipping", "returns"}
        assert all(h.payload["price"] < 200 and "eu" in h.payload["markets"] for h in hits)
    anyof = index.search("anything", mode="dense", k=10, where=parse_where(["category=earbuds,accessory"]))
    assert {h.id for h in anyof} == {"buds-battery", "cushions"}
    assert index.search("warranty", mode="bm25", where=parse_where(["price>=1000"])) == []


def test_hits_carry_text_and_payload(index: Index) -> None:
    (hit,) = index.search("QR-5162", mode="bm25", k=1)
    assert hit.id == "cushions" and "QR-5162" in hit.text and hit.payload["category"] == "accessory"


def test_query_without_known_terms(index: Index) -> None:
    assert index.search("zzzz qqqq", mode="bm25") == []
    assert len(index.search("zzzz qqqq", mode="hybrid", k=3)) == 3  # the dense list still ranks


def test_reopen_and_read_back_chunks(tmp_path: Path, index: Index, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    index.close()
    with Index.open(tmp_path / "ix", settings=settings, embedder=hash_embedder) as again:
        assert len(again) == len(shop)
        assert list(again.chunks()) == shop
        assert again.manifest.payload_indexes["category"] == "keyword"
        assert again.manifest.payload_indexes["price"] == "float"


class _CrashError(RuntimeError):
    pass


class _CrashingEmbedder:
    model_id, dim = "hash-bow/test", 64

    def embed(self, texts, *, on_progress=None):  # type: ignore[no-untyped-def]
        raise _CrashError("killed half-way")


def test_a_failed_build_leaves_the_previous_index_usable(tmp_path: Path, index: Index, shop: list[Chunk], settings: Settings) -> None:
    before = index.search("warranty", mode="bm25")
    index.close()
    with pytest.raises(_CrashError):
        build_index(shop[:2], tmp_path / "ix", settings=settings, embedder=_CrashingEmbedder())
    with Index.open(tmp_path / "ix", settings=settings) as again:
        assert len(again) == len(shop)
        assert again.search("warranty", mode="bm25") == before
    builds = [p.name for p in (tmp_path / "ix" / "builds").iterdir() if not p.name.startswith(".tmp-")]
    assert len(builds) == 1


def test_a_rebuild_replaces_and_keeps_one_previous_build(tmp_path: Path, index: Index, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    first = index.manifest.build_id
    index.close()
    for n in (3, 2):
        rebuilt = build_index(shop[:n], tmp_path / "ix", settings=settings, embedder=hash_embedder)
        assert len(rebuilt) == n
        rebuilt.close()
    kept = sorted(p.name for p in (tmp_path / "ix" / "builds").iterdir())
    assert len(kept) == 2 and first not in kept and rebuilt.manifest.build_id in kept  # keep_builds = 2


def test_keep_builds_one_keeps_only_the_live_build(tmp_path: Path, index: Index, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    index.close()
    one = settings.model_copy(update={"index": settings.index.model_copy(update={"keep_builds": 1})})
    rebuilt = build_index(shop[:3], tmp_path / "ix", settings=one, embedder=hash_embedder)
    assert [p.name for p in (tmp_path / "ix" / "builds").iterdir()] == [rebuilt.manifest.build_id]
    rebuilt.close()


def test_refuses_to_write_into_a_foreign_folder(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "keep.txt").write_text("mine")
    with pytest.raises(IndexStoreError, match="not a querywise index"):
        build_index(shop, tmp_path / "docs", settings=settings, embedder=hash_embedder)
    assert (tmp_path / "docs" / "keep.txt").read_text() == "mine"


def test_opening_a_non_index_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(IndexStoreError, match="querywise index"):
        Index.open(tmp_path)


def test_an_index_refuses_a_different_embedding_model(tmp_path: Path, index: Index, settings: Settings) -> None:
    class Other:
        model_id, dim = "other-model/x", 64

    index.close()
    with pytest.raises(IndexStoreError, match="embedded with"):
        Index.open(tmp_path / "ix", settings=settings, embedder=Other())


def test_manifest_is_json(tmp_path: Path, index: Index) -> None:
    build = tmp_path / "ix" / "builds" / index.manifest.build_id
    data = json.loads((build / "manifest.json").read_text())
    assert data["n_chunks"] == 6 and data["embedder"] == "hash-bow/test"
    assert np.isfinite(data["build_seconds"])


def test_the_manifest_records_which_fields_the_chunks_carry(tmp_path: Path, hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    chunks = [Chunk(id="a", text="one", payload={"market": ["eu"], "price": 0, "note": None}), Chunk(id="b", text="two", payload={"market": []})]
    with build_index(chunks, tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix:
        assert ix.manifest.field_counts == {"market": 1, "price": 1}  # a null and an empty list carry nothing
        presence = ix.field_presence()
        assert presence.n_chunks == 2 and presence.count("market") == 1 and not presence.carries("note")


def test_an_index_built_before_field_counts_opens_and_counts_them_from_its_chunks(tmp_path: Path, index: Index, hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    manifest = tmp_path / "ix" / "builds" / index.manifest.build_id / "manifest.json"
    recorded = index.manifest.field_counts
    index.close()
    data = json.loads(manifest.read_text())
    del data["field_counts"]  # what an earlier querywise wrote
    manifest.write_text(json.dumps(data, indent=2))
    with Index.open(tmp_path / "ix", settings=settings, embedder=hash_embedder) as old:
        assert old.manifest.field_counts is None
        assert old.field_presence().counts == recorded == {"category": 6, "markets": 6, "price": 6}

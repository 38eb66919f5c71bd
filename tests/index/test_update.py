"""A live update (`Index.upsert`, `Index.delete`) against a rebuild of the same corpus."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from querywise.conditions import Match, Where
from querywise.config import IndexSettings, Settings
from querywise.corpus import Chunk
from querywise.demo import demo_corpus, demo_file
from querywise.index import Index, IndexStoreError, build_index, rollback
from querywise.text import IDENTIFIER_KEYS, identifier_keys

QUERIES = [json.loads(line)["message"] for line in demo_file("eval_cases.jsonl").read_text().splitlines() if line.strip()][:40]


def _edited(c: Chunk) -> Chunk:
    return c.model_copy(update={"text": c.text + " Updated: the WX-9000 dock now ships in the box, see order terms."})


@pytest.fixture
def corpus() -> list[Chunk]:
    return demo_corpus()


def _settings(tmp_path: Path, **index: object) -> Settings:
    return Settings(cache_dir=tmp_path / "cache", index=IndexSettings(**index))  # type: ignore[arg-type]


def _held(corpus: list[Chunk]) -> int:
    """Where the last documents of ~12 chunks start (an upsert brings documents whole)."""
    at = len(corpus) - 12
    while corpus[at - 1].doc_id == corpus[at].doc_id:
        at -= 1
    return at


def _document(corpus: list[Chunk], i: int, edit: bool) -> list[Chunk]:
    return [_edited(c) if edit and c.id == corpus[i].id else c for c in corpus if c.doc_id == corpus[i].doc_id]


def _change(index: Index, corpus: list[Chunk]) -> None:
    """Add the last documents (~12 chunks), edit a chunk in two, remove one whole document."""
    index.upsert(corpus[_held(corpus):])
    index.upsert(_document(corpus, 3, True) + _document(corpus, 40, True))
    index.delete(["returns-policy"])


def _rankings(index: Index) -> Iterator[tuple[str, str, list[str]]]:
    for mode in ("dense", "bm25", "hybrid"):
        for q in QUERIES:
            yield mode, q, [h.id for h in index.search(q, mode=mode, k=10)]  # type: ignore[arg-type]


@pytest.mark.parametrize("drift", [0.0, 0.05])
def test_an_updated_index_ranks_as_a_rebuild_of_its_corpus(tmp_path: Path, corpus: list[Chunk], hash_embedder, drift: float) -> None:  # type: ignore[no-untyped-def]
    settings = _settings(tmp_path, update_avgdl_drift=drift)
    held = _held(corpus)
    with build_index(corpus[:held], tmp_path / "live", settings=settings, embedder=hash_embedder) as live:
        _change(live, corpus)
        now = list(live.chunks())
        assert len(now) == len(live) == len(corpus) - 5  # returns-policy had 5 chunks
        # New chunks come last, edited ones keep their place.
        assert [c.id for c in now] == [c.id for c in corpus if c.doc_id != "returns-policy"]
        with build_index(now, tmp_path / "fresh", settings=settings, embedder=hash_embedder) as fresh:
            if drift == 0.0:  # weighed again at every update: the same scores as a rebuild
                assert list(_rankings(live)) == list(_rankings(fresh))
                for q in QUERIES:
                    a, b = live.search(q, mode="bm25", k=10), fresh.search(q, mode="bm25", k=10)
                    assert [h.score for h in a] == pytest.approx([h.score for h in b], rel=1e-5)
            else:  # the build's average length kept: dense as a rebuild, BM25 within the drift
                assert live.manifest.bm25_avgdl != pytest.approx(fresh.lexicon.avgdl, rel=1e-9)
                pairs = list(zip(_rankings(live), _rankings(fresh), strict=True))
                assert all(a == b for a, b in pairs if a[0] == "dense")
                same = sum(set(a[2]) == set(b[2]) for a, b in pairs)
                assert same / len(pairs) >= 0.9
            # The statistics spelling and BM25 read, as a rebuild counts them.
            lx, fx = live.lexicon, fresh.lexicon
            assert (lx.n_docs, lx.total_len) == (fx.n_docs, fx.total_len)
            assert {t: lx.df[i] for t, i in lx.terms.items() if lx.df[i]} == {t: fx.df[i] for t, i in fx.terms.items()}
            assert lx.word_counts == fx.word_counts and lx.bigram_counts == fx.bigram_counts
            assert lx.surface == fx.surface
            assert live.field_presence() == fresh.field_presence()


def test_identifiers_of_added_and_edited_chunks_are_found_and_removed_ones_are_not(tmp_path: Path, corpus: list[Chunk], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    settings = _settings(tmp_path)
    with build_index(corpus, tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix:
        key = identifier_keys("WX-9000")[0]
        by_key = Where(conditions=(Match(field=IDENTIFIER_KEYS, value=key),))
        assert ix.search("dock", mode="bm25", where=by_key) == []
        ix.upsert(_document(corpus, 3, True))
        assert [h.id for h in ix.search("dock", mode="bm25", where=by_key)] == [corpus[3].id]
        assert ix.lexicon.surface.get("wx-9000") == "WX-9000"
        ix.upsert(_document(corpus, 3, False))  # the edit undone
        assert ix.search("dock", mode="bm25", where=by_key) == []
        assert "wx-9000" not in ix.lexicon.surface and "dock" not in ix.lexicon.word_counts


def test_a_delete_is_seen_by_the_next_search(tmp_path: Path, corpus: list[Chunk], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    with build_index(corpus, tmp_path / "ix", settings=_settings(tmp_path), embedder=hash_embedder) as ix:
        top = ix.search(corpus[0].text, mode="hybrid", k=1)[0]
        assert top.id == corpus[0].id
        done = ix.delete([corpus[0].id])
        assert done.removed >= 1
        assert all(h.doc_id != corpus[0].doc_id for h in ix.search(corpus[0].text, mode="hybrid", k=20))
        reopened = Index.open(tmp_path / "ix", settings=_settings(tmp_path), embedder=hash_embedder)
        assert corpus[0].id not in {c.id for c in reopened.chunks()}
        reopened.close()


def test_a_document_brought_again_replaces_all_its_chunks(tmp_path: Path, corpus: list[Chunk], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    with build_index(corpus, tmp_path / "ix", settings=_settings(tmp_path), embedder=hash_embedder) as ix:
        doc = [c for c in corpus if c.doc_id == "returns-policy"]
        done = ix.upsert([doc[0]])
        assert (done.replaced, done.removed) == (1, len(doc) - 1)
        assert [c.id for c in ix.chunks() if c.doc_id == "returns-policy"] == [doc[0].id]


def test_searches_keep_running_during_updates(tmp_path: Path, corpus: list[Chunk], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    with build_index([c for c in corpus if c.doc_id not in {d.doc_id for d in corpus[60:]}], tmp_path / "ix", settings=_settings(tmp_path), embedder=hash_embedder) as ix:
        errors: list[BaseException] = []
        searched = 0
        stop = threading.Event()

        def reader() -> None:
            nonlocal searched
            while not stop.is_set():
                try:
                    assert len(ix.search("warranty on the Solace 7", k=5)) == 5
                    searched += 1
                    time.sleep(0.001)  # as a server's requests come: one thread never holds the interpreter
                except BaseException as exc:  # every failure is counted
                    errors.append(exc)

        thread = threading.Thread(target=reader)
        thread.start()
        try:
            docs = list(dict.fromkeys(c.doc_id for c in corpus[60:]))
            for part in (docs[: len(docs) // 2], docs[len(docs) // 2 :]):
                ix.upsert([c for c in corpus if c.doc_id in part])
            ix.delete([corpus[0].id])
        finally:
            stop.set()
            thread.join()
        assert errors == [] and searched > 0
        assert len(ix) == sum(c.doc_id != corpus[0].id for c in corpus)  # the id of a chunk and of its document


class _FailingEmbedder:
    model_id, dim = "hash-bow/test", 64

    def embed(self, texts, *, on_progress=None):  # type: ignore[no-untyped-def]
        raise RuntimeError("killed half-way")


def test_an_update_that_fails_half_way_leaves_the_last_good_build(tmp_path: Path, corpus: list[Chunk], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    settings = _settings(tmp_path)
    held = _held(corpus)
    with build_index(corpus[:held], tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix:
        before = (tmp_path / "ix" / "CURRENT").read_text()
        broken = Index.open(tmp_path / "ix", settings=settings, embedder=_FailingEmbedder())  # type: ignore[arg-type]
        with pytest.raises(RuntimeError):
            broken.upsert(corpus[held:])
        broken.close()
        assert (tmp_path / "ix" / "CURRENT").read_text() == before
        assert not [p for p in (tmp_path / "ix" / "builds").iterdir() if p.name.startswith(".tmp-")]
        # A process killed mid-update leaves its folder; the index opens as it was, the next update clears it.
        (tmp_path / "ix" / "builds" / ".tmp-20990101T000000-abcdef" / "shard").mkdir(parents=True)
        with Index.open(tmp_path / "ix", settings=settings, embedder=hash_embedder) as again:
            assert len(again) == held and again.search("warranty", k=3)
        ix.upsert(corpus[held:])
        assert len(ix) == len(corpus)
        assert not [p for p in (tmp_path / "ix" / "builds").iterdir() if p.name.startswith(".tmp-")]


def test_rollback_undoes_an_update_and_keep_builds_prunes_updates(tmp_path: Path, corpus: list[Chunk], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    settings = _settings(tmp_path, keep_builds=2)
    with build_index(corpus[: _held(corpus)], tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix:
        first = ix.manifest.build_id
        ix.upsert(corpus[_held(corpus) :])
        assert ix.manifest.updated_from == first
        ix.delete([corpus[0].id])
        kept = [p.name for p in (tmp_path / "ix" / "builds").iterdir()]
        assert len(kept) == 2 and first not in kept
        back = rollback(tmp_path / "ix")
        assert back.n_chunks == len(corpus)
        ix.close()
        with Index.open(tmp_path / "ix", settings=settings, embedder=hash_embedder) as old:
            assert corpus[0].id in {c.id for c in old.chunks()}
            old.verify()


def test_an_updated_index_keeps_sentence_vectors_as_a_rebuild(tmp_path: Path, corpus: list[Chunk], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    settings = _settings(tmp_path, sentence_vectors=True, update_avgdl_drift=0.0)
    with build_index(corpus[: _held(corpus)], tmp_path / "live", settings=settings, embedder=hash_embedder) as live:
        _change(live, corpus)
        with build_index(list(live.chunks()), tmp_path / "fresh", settings=settings, embedder=hash_embedder) as fresh:
            assert live.manifest.n_sentences == fresh.manifest.n_sentences
            for q in QUERIES[:10]:
                v = live.embed_query(q).tolist()
                assert [h.id for h in live.sentence_query(v)] == [h.id for h in fresh.sentence_query(v)]


def test_an_update_that_empties_the_index_is_refused(tmp_path: Path, corpus: list[Chunk], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    with build_index(corpus[:2], tmp_path / "ix", settings=_settings(tmp_path), embedder=hash_embedder) as ix:
        with pytest.raises(IndexStoreError, match="empty"):
            ix.delete([c.id for c in corpus[:2]])
        assert len(ix) == 2


def test_a_chunk_deleted_and_brought_back_in_one_update_comes_last(tmp_path: Path, corpus: list[Chunk], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    settings = _settings(tmp_path, update_avgdl_drift=0.0)
    with build_index(corpus, tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix:
        back = _edited(corpus[0])
        done = ix.update(upsert=[back], delete=[back.id])
        assert (done.added, done.replaced) == (1, 0)
        ids = [c.id for c in ix.chunks()]
        assert ids[-1] == back.id and ids.count(back.id) == 1 and len(ix) == len(ids)
        assert ix.search("WX-9000 dock", mode="bm25", k=1)[0].id == back.id

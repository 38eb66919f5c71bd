from __future__ import annotations

import math
from pathlib import Path

import pytest

from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.index import Index, build_index
from querywise.index.feedback import expand, feedback_text, idf
from querywise.index.lexical import Lexicon


def _lexicon() -> Lexicon:
    return Lexicon(terms={"cat": 0, "purr": 1, "dog": 2, "bark": 3}, df=[2, 1, 2, 1], n_docs=4, total_len=8)


def test_expand_adds_the_best_feedback_terms_at_their_share_of_the_best() -> None:
    """Hand-computed: avgdl 2; "cat purr purr" has 3 words, so its norm is 1.2 * (0.25 + 0.75 * 1.5)
    = 1.65; purr: 2 / 3.65 * idf(df 1), cat: 1 / 2.65 * idf(df 2)."""
    purr = 2 / 3.65 * math.log(1 + 3.5 / 1.5)
    cat = 1 / 2.65 * math.log(1 + 2.5 / 2.5)
    ids, weights = expand(([0], [1.0]), ["cat purr purr"], _lexicon(), terms=2, weight=0.5, k1=1.2, b=0.75)
    assert ids == [0, 1]
    assert weights == pytest.approx([1.0 + 0.5 * cat / purr, 0.5])


def test_expand_keeps_only_the_best_terms_and_the_query_counts_over_the_largest() -> None:
    ids, weights = expand(([0, 2], [2.0, 1.0]), ["purr purr bark", "purr"], _lexicon(), terms=1, weight=1.0, k1=1.2, b=0.75)
    assert ids == [0, 1, 2]
    assert weights == pytest.approx([1.0, 1.0, 0.5])  # cat 2/2, purr the one added term at full weight, dog 1/2


@pytest.mark.parametrize("texts", [[], ["words the lexicon never saw"]])
def test_expand_without_feedback_terms_leaves_the_query(texts: list[str]) -> None:
    assert expand(([0], [1.0]), texts, _lexicon(), terms=5, weight=0.5, k1=1.2, b=0.75) == ([0], [1.0])


def test_idf_is_the_engines() -> None:
    assert idf(1, 4) == pytest.approx(math.log(1 + 3.5 / 1.5))


def test_feedback_text_is_title_line_then_text() -> None:
    assert feedback_text({"title": "Cats", "text": "They purr."}) == "Cats\nThey purr."
    assert feedback_text({"text": "They purr."}) == "They purr."


@pytest.fixture
def corpus() -> list[Chunk]:
    """A query word ("feline") in two chunks that also say "purring whiskers"; a third chunk says
    only "purring whiskers": it shares nothing with the query, but all with its first hits."""
    return [
        Chunk(id="a", text="The feline sat purring, whiskers twitching."),
        Chunk(id="b", text="A feline purring with long whiskers."),
        Chunk(id="c", text="Purring and whiskers: how house cats show content."),
        Chunk(id="d", text="Dogs bark at the postman every morning."),
        Chunk(id="e", text="Parrots repeat words they hear."),
    ]


def _open(root: Path, hash_embedder, settings: Settings, **index: object) -> Index:  # type: ignore[no-untyped-def]
    return Index.open(root, settings=settings.model_copy(update={"index": settings.index.model_copy(update=index)}), embedder=hash_embedder)


def test_feedback_finds_a_chunk_sharing_only_the_first_hits_words(tmp_path: Path, corpus: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    assert settings.index.feedback_docs == 0  # off unless asked for
    build_index(corpus, tmp_path / "ix", settings=settings, embedder=hash_embedder).close()
    with _open(tmp_path / "ix", hash_embedder, settings) as ix:
        assert {h.id for h in ix.search("feline", mode="bm25", k=5)} == {"a", "b"}
    with _open(tmp_path / "ix", hash_embedder, settings, feedback_docs=2) as ix:
        found = [h.id for h in ix.search("feline", mode="bm25", k=5)]
        assert set(found[:2]) == {"a", "b"}  # the query's own term still ranks first
        assert found[2] == "c" and "d" not in found and "e" not in found
        assert "c" in [h.id for h in ix.search("feline", mode="hybrid", k=3)]


def test_feedback_leaves_a_query_without_indexed_terms_and_dense(tmp_path: Path, corpus: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    build_index(corpus, tmp_path / "ix", settings=settings, embedder=hash_embedder).close()
    with _open(tmp_path / "ix", hash_embedder, settings) as plain, _open(tmp_path / "ix", hash_embedder, settings, feedback_docs=2) as fed:
        assert fed.search("zebra", mode="bm25", k=5) == [] == plain.search("zebra", mode="bm25", k=5)
        assert fed.search("feline", mode="dense", k=5) == plain.search("feline", mode="dense", k=5)

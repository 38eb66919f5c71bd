"""MemoryCachedEmbedder: queries from a bounded LRU, bulk calls to the on-disk cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from querywise.embed import CachedEmbedder, MemoryCachedEmbedder, VectorLru, for_queries
from tests.conftest import HashEmbedder


def test_the_lru_keeps_the_most_recently_used_texts_up_to_its_size() -> None:
    lru = VectorLru(2)
    lru.put(["a", "b"], np.eye(2, dtype=np.float32))
    assert lru.get(["a"])[0] is not None  # "a" is now the most recent
    lru.put(["c"], np.ones((1, 2), dtype=np.float32))
    assert [v is not None for v in lru.get(["a", "b", "c"])] == [True, False, True]
    assert len(lru) == 2


def test_a_negative_size_is_refused() -> None:
    with pytest.raises(ValueError):
        VectorLru(-1)


def test_queries_are_kept_in_memory_and_vectors_are_the_models() -> None:
    model = HashEmbedder()
    embedder = MemoryCachedEmbedder(model, cache_size=4)
    texts = ["where is my parcel", "warranty length", "where is my parcel"]
    got = embedder.embed(texts)
    assert np.array_equal(got, model.embed(texts))
    model.calls = 0
    embedder.embed(["warranty length"])
    assert model.calls == 0


def test_bulk_calls_go_to_the_on_disk_cache_and_queries_never_do(tmp_path: Path) -> None:
    model = HashEmbedder()
    with CachedEmbedder(model, tmp_path) as cached:
        embedder = for_queries(cached)
        assert isinstance(embedder, MemoryCachedEmbedder) and embedder.model_id == cached.model_id
        examples = [f"example {i}" for i in range(50)]  # a router's examples: more than bulk_over
        embedder.embed(examples)
        embedder.embed(["a question nobody asked before"])
        stored = cached._db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    assert stored == len(examples)


def test_an_embedder_without_a_disk_cache_is_used_as_it_is() -> None:
    model = HashEmbedder()
    assert for_queries(model) is model

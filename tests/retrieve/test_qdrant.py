"""A Qdrant collection querywise did not build (its own vector name, id and text fields), through
qdrant-client's local mode."""

from __future__ import annotations

from typing import Any

import pytest
from qdrant_client import QdrantClient
from qdrant_client import models as m

from querywise.conditions import parse_where
from querywise.config import QdrantSource, RetrieverSettings
from querywise.corpus import Chunk
from querywise.retrieve import QdrantRetriever, RetrieverError, checked


@pytest.fixture
def collection(shop: list[Chunk], hash_embedder: Any) -> QdrantClient:
    """The shop as another team indexed it: a named vector 'body_vec', ids in 'sku', text in 'body'."""
    client = QdrantClient(":memory:")
    client.create_collection("shop", vectors_config={"body_vec": m.VectorParams(size=hash_embedder.dim, distance=m.Distance.COSINE)})
    vectors = hash_embedder.embed([c.text for c in shop])
    client.upsert("shop", [m.PointStruct(id=i, vector={"body_vec": vectors[i].tolist()}, payload={"sku": c.id, "body": c.text, **c.payload})
                           for i, c in enumerate(shop)])
    return client


def retriever(client: QdrantClient, embedder: Any, **kw: Any) -> QdrantRetriever:
    source = QdrantSource(url=":memory:", collection="shop", vector="body_vec", text_field="body", id_field="sku", **kw)
    return QdrantRetriever(RetrieverSettings(kind="qdrant", qdrant=source), embedder, client=client)


def test_it_ranks_by_the_collections_vector_with_its_own_ids_and_text(collection: QdrantClient, hash_embedder: Any, shop: list[Chunk]) -> None:
    hits = retriever(collection, hash_embedder).retrieve("Vela X3 headphones warranty", k=3)
    q = hash_embedder.embed(["Vela X3 headphones warranty"])[0]
    by_cosine = sorted(shop, key=lambda c: -float(hash_embedder.embed([c.text])[0] @ q))
    assert [h.id for h in hits] == [c.id for c in by_cosine[:3]]
    assert hits[0].text == next(c.text for c in shop if c.id == hits[0].id) and hits[0].payload["sku"] == hits[0].id


def test_filters_and_access_run_inside_the_collection(collection: QdrantClient, hash_embedder: Any, shop: list[Chunk]) -> None:
    r = retriever(collection, hash_embedder)
    where = parse_where(["markets=eu", "price<200"])
    result = checked(r, "warranty", k=len(shop), where=where, mode="dense")
    assert r.filters_inside and result.filtered == "engine" and result.dropped == 0
    assert {h.id for h in result.hits} == {c.id for c in shop if where.matches(c.payload)}  # the engine kept exactly these


def test_a_wrong_vector_or_dimension_or_collection_is_said_at_open(collection: QdrantClient, hash_embedder: Any) -> None:
    def source(**kw: Any) -> RetrieverSettings:
        return RetrieverSettings(kind="qdrant", qdrant=QdrantSource(url=":memory:", **{"collection": "shop", "vector": "body_vec", **kw}))

    with pytest.raises(ValueError, match=r"has no vector 'dense'.*\['body_vec'\]"):
        QdrantRetriever(source(vector="dense"), hash_embedder, client=collection)

    class Wide:
        model_id, dim = "wide", 384

    with pytest.raises(ValueError, match="has 64 dimensions, the embedder wide gives 384"):
        QdrantRetriever(source(), Wide(), client=collection)  # type: ignore[arg-type]
    with pytest.raises(RetrieverError, match="cannot read the collection"):
        QdrantRetriever(source(collection="nope"), hash_embedder, client=collection)

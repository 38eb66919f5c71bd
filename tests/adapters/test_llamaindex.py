"""The LlamaIndex adapters with the real llama-index-core and its in-memory components, offline."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shop_deployment import shop_settings

pytest.importorskip("llama_index.core")

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from querywise.adapters.llamaindex import LlamaIndexRetriever, QueryWiseLlamaRetriever
from querywise.corpus import Chunk
from querywise.index import build_index
from querywise.service import QueryWise

EU = {"market": "eu"}


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """llama-index-core fetches tiktoken and NLTK data it cannot find (NLTK's failure is only
    printed): any lookup or connection fails the test, with the bundled caches the ones in use."""
    attempts: list[str] = []

    def refuse(host: Any, *args: Any, **kwargs: Any) -> Any:
        attempts.append(str(host))
        raise OSError(f"network use in an offline test: {host}")

    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            refuse(address)
        real_connect(self, address)

    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)  # set, either one replaces the cache the wheel ships
    monkeypatch.delenv("NLTK_DATA", raising=False)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", connect)
    yield attempts
    assert attempts == [], f"tried the network: {attempts}"


def shop_index(shop: list[Chunk]) -> VectorStoreIndex:
    """The shop's chunks as LlamaIndex nodes (our ids), embedded offline: `embed_model` given, so
    `Settings.embed_model` (OpenAI) is never resolved."""
    nodes = [TextNode(id_=c.id, text=c.text, metadata=c.payload) for c in shop]
    return VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=32))


def test_querywise_is_a_llamaindex_retriever_with_the_plan_on_each_node(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> None:
    s = shop_settings(tmp_path)
    with build_index(shop, tmp_path / "ix", settings=s, embedder=hash_embedder) as ix, QueryWise(s, ix) as qw:
        retriever = QueryWiseLlamaRetriever(qw, k=3, session=EU)
        nodes = retriever.retrieve("how long is the warranty on the Vela X3?")
        direct = qw.ask("how long is the warranty on the Vela X3?", session=EU, k=3)
        assert [n.node.node_id for n in nodes] == [h.id for h in direct.hits] and nodes[0].get_content() == direct.hits[0].text
        assert [n.score for n in nodes] == [h.score for h in direct.hits]
        assert all("eu" in n.node.metadata["markets"] for n in nodes)  # the session's access ran
        plan = nodes[0].node.metadata["querywise_plan"]
        assert plan["route"] == "kb_search" and plan["access"]["conditions"][0]["field"] == "markets"
        assert "querywise_plan" not in nodes[0].node.get_content(metadata_mode=MetadataMode.LLM)  # the trace is not prompt text
        turn = retriever.with_context(history=["how long is the warranty on the Vela X3?"], session=EU)
        follow = turn.retrieve("and the Pro?")
        assert follow[0].node.metadata["querywise_plan"]["queries"][0]["kind"] == "standalone"  # the conversation was read
        assert retriever.history == () and turn.deployment is qw
        # composes like any LlamaIndex retriever: one query (no LLM rewrites), MockLLM so Settings.llm is not resolved
        fusion = QueryFusionRetriever([turn], llm=MockLLM(), num_queries=1, use_async=False, similarity_top_k=3)
        assert [n.node.node_id for n in fusion.retrieve("and the Pro?")] == [n.node.node_id for n in follow]


def test_a_llamaindex_vector_index_is_querywises_retriever_and_access_still_holds(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> None:
    theirs = LlamaIndexRetriever(shop_index(shop).as_retriever())
    hits = theirs.retrieve("Vela X3 warranty", k=3)
    assert len(hits) == 3 and [h.rank for h in hits] == [1, 2, 3] and all(h.id in {c.id for c in shop} for h in hits)
    assert all(h.text == next(c.text for c in shop if c.id == h.id) and h.payload["markets"] for h in hits)
    with QueryWise(shop_settings(tmp_path), None, embedder=hash_embedder, retriever=theirs) as qw:
        result = qw.ask("Pico Buds battery", session=EU, k=5)
    assert result.hits and all("eu" in h.payload["markets"] for h in result.hits)  # the index knows nothing of access: checked
    step = result.plan.step("execute")
    assert step is not None and step.details["filters_applied"] == "checked" and step.details["retriever"] == "LlamaIndex retriever VectorIndexRetriever"
    assert step.details["dropped_by_check"] >= 1  # the us-only buds chunk came back and was dropped


def test_k_is_honoured_without_changing_the_shared_retriever(shop: list[Chunk]) -> None:
    shared = shop_index(shop).as_retriever(similarity_top_k=2)
    theirs = LlamaIndexRetriever(shared)
    for k in (1, 4, 6):
        hits = theirs.retrieve("warranty", k=k)
        assert [h.rank for h in hits] == list(range(1, k + 1)) and len({h.id for h in hits}) == k
    assert shared.similarity_top_k == 2 and len(shared.retrieve("warranty")) == 2  # asked for k on a copy


class Unscored(BaseRetriever):
    """A retriever with no `similarity_top_k` and no scores: all the nodes, unranked."""

    def __init__(self, nodes: list[TextNode]) -> None:
        super().__init__()
        self.nodes = nodes

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=n, score=None) for n in self.nodes]


def test_a_retriever_without_top_k_or_scores_is_cut_at_k_and_scored_by_rank(shop: list[Chunk]) -> None:
    hits = LlamaIndexRetriever(Unscored([TextNode(id_=c.id, text=c.text, metadata=c.payload) for c in shop])).retrieve("warranty", k=4)
    assert [h.id for h in hits] == [c.id for c in shop[:4]] and [h.rank for h in hits] == [1, 2, 3, 4]
    assert [h.score for h in hits] == [1.0, 0.5, 1 / 3, 0.25]


def test_ids_from_the_metadata_and_a_node_without_one_is_a_clear_error(shop: list[Chunk]) -> None:
    nodes = [TextNode(text=c.text, metadata={"doc_id": c.id, **c.payload}) for c in shop]  # fresh node ids, as a splitter gives
    nodes[0].metadata.pop("doc_id")
    retriever = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8)).as_retriever(similarity_top_k=6)
    with pytest.raises(ValueError, match=r"has no id \(metadata\['doc_id'\]\)"):
        LlamaIndexRetriever(retriever, id_key="doc_id").retrieve("warranty", k=6)
    kept = [n for n in nodes if "doc_id" in n.metadata]
    hits = LlamaIndexRetriever(VectorStoreIndex(kept, embed_model=MockEmbedding(embed_dim=8)).as_retriever(), id_key="doc_id").retrieve("warranty", k=5)
    assert sorted(h.id for h in hits) == sorted(c.id for c in shop[1:])

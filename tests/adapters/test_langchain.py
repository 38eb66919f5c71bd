"""The LangChain adapters with the real langchain-core and its in-memory components."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from shop_deployment import shop_settings

pytest.importorskip("langchain_core")

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore

from querywise.adapters.langchain import LangChainRetriever, QueryWiseRetriever
from querywise.corpus import Chunk
from querywise.index import build_index
from querywise.service import QueryWise

EU = {"market": "eu"}


def test_querywise_is_a_langchain_retriever_with_the_plan_on_each_document(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> None:
    s = shop_settings(tmp_path)
    with build_index(shop, tmp_path / "ix", settings=s, embedder=hash_embedder) as ix, QueryWise(s, ix) as qw:
        retriever = QueryWiseRetriever(deployment=qw, k=3, session=EU)
        docs = retriever.invoke("how long is the warranty on the Vela X3?")
        direct = qw.ask("how long is the warranty on the Vela X3?", session=EU, k=3)
        assert [d.id for d in docs] == [h.id for h in direct.hits] and docs[0].page_content == direct.hits[0].text
        assert all("eu" in d.metadata["markets"] for d in docs)  # the session's access ran
        plan = docs[0].metadata["querywise_plan"]
        assert plan["route"] == "kb_search" and plan["access"]["conditions"][0]["field"] == "markets"
        turn = retriever.with_context(history=["how long is the warranty on the Vela X3?"], session=EU)
        follow = turn.invoke("and the Pro?")
        assert follow[0].metadata["querywise_plan"]["queries"][0]["kind"] == "standalone"  # the conversation was read
        chain = turn | RunnableLambda(lambda ds: [d.id for d in ds])  # composes like any LangChain runnable
        assert chain.invoke("and the Pro?") == [d.id for d in follow]


def test_a_langchain_vector_store_is_querywises_retriever_and_access_still_holds(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents([Document(id=c.id, page_content=c.text, metadata=c.payload) for c in shop])
    theirs = LangChainRetriever(store.as_retriever())
    hits = theirs.retrieve("Vela X3 warranty", k=3)
    assert len(hits) == 3 and [h.rank for h in hits] == [1, 2, 3] and all(h.id in {c.id for c in shop} for h in hits)
    with QueryWise(shop_settings(tmp_path), None, embedder=hash_embedder, retriever=theirs) as qw:
        result = qw.ask("Pico Buds battery", session=EU, k=5)
    assert result.hits and all("eu" in h.payload["markets"] for h in result.hits)  # the store knows nothing of access: checked
    step = result.plan.step("execute")
    assert step is not None and step.details["filters_applied"] == "checked" and step.details["retriever"] == "LangChain retriever VectorStoreRetriever"


def test_a_document_without_an_id_is_a_clear_error() -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    store.add_documents([Document(page_content="no id here")])

    class Anonymous(type(store.as_retriever())):  # type: ignore[misc]
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return [Document(page_content="x")]

    with pytest.raises(ValueError, match="has no id"):
        LangChainRetriever(Anonymous(vectorstore=store)).retrieve("x", k=1)



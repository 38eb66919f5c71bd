"""LangChain, both ways (`pip install 'querywise[langchain]'`).

- `QueryWiseRetriever`: a deployment as a LangChain `BaseRetriever`. Each query is planned and
  the plan run (`QueryWise.ask`); each returned `Document` carries the hit's id, score, rank and
  payload in its metadata, and the plan (`metadata["querywise_plan"]`, the plan-log JSON) so a
  chain can see what was searched and why. The conversation and the session are the retriever's
  fields (set them per request with `with_context`).
- `LangChainRetriever`: any LangChain retriever (a vector store's `as_retriever()`, an ensemble)
  as querywise's `Retriever`: plans run against it; its documents are checked against the
  plan's filters like any retriever querywise does not own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ModuleNotFoundError as exc:  # an optional extra: say the one command that installs it
    raise ModuleNotFoundError(f'querywise.adapters.langchain needs {exc.name}: pip install "querywise[langchain]"', name=exc.name) from exc
from pydantic import ConfigDict

from querywise.conditions import Where
from querywise.conversation import Turn
from querywise.index import Hit
from querywise.index.engine import Mode
from querywise.service import QueryWise

__all__ = ["LangChainRetriever", "QueryWiseRetriever"]


class QueryWiseRetriever(BaseRetriever):
    """querywise as a LangChain retriever.

    >>> retriever = QueryWiseRetriever(deployment=QueryWise.open("querywise.toml", "my-index"), k=5)  # doctest: +SKIP
    >>> retriever.with_context(history=["warranty on the X3?"], session={"market": "eu"}).invoke("and the Pro?")  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    deployment: QueryWise
    k: int = 5
    mode: Mode = "hybrid"
    history: Sequence[str | Turn] = ()
    session: Mapping[str, str] = {}

    def with_context(self, *, history: Sequence[str | Turn] = (), session: Mapping[str, str] | None = None) -> QueryWiseRetriever:
        """The same retriever for one conversation turn and session (the deployment is shared)."""
        return self.model_copy(update={"history": tuple(history), "session": dict(session or self.session)})

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        result = self.deployment.ask(query, history=self.history, session=self.session, k=self.k, mode=self.mode)
        plan = json.loads(result.plan.to_json_line())
        return [
            Document(id=h.id, page_content=h.text, metadata={"id": h.id, "score": h.score, "rank": h.rank, "title": h.title,
                                                              **h.payload, "querywise_plan": plan})
            for h in result.hits
        ]


class LangChainRetriever:
    """A LangChain retriever behind querywise's `Retriever` protocol. A document's id is
    `Document.id`, else `metadata[id_key]`; its score `metadata["score"]` when the retriever
    gives one (else 1 / rank); `k` is passed as the retriever's `k` when it has one."""

    filters_inside = False

    def __init__(self, retriever: BaseRetriever, *, id_key: str = "id") -> None:
        self.retriever, self.id_key = retriever, id_key
        self.name = f"LangChain retriever {type(retriever).__name__}"

    def retrieve(self, text: str, *, k: int, where: Where | None = None, mode: Mode = "hybrid") -> list[Hit]:
        runnable: Any = self.retriever
        if "search_kwargs" in type(self.retriever).model_fields:  # a vector store's retriever: ask for k
            runnable = self.retriever.model_copy(update={"search_kwargs": {**getattr(self.retriever, "search_kwargs", {}), "k": k}})
        docs = runnable.invoke(text)
        hits = []
        for rank, doc in enumerate(docs, start=1):
            ident = doc.id if doc.id is not None else doc.metadata.get(self.id_key)
            if ident is None:
                raise ValueError(f"{self.name}: document {rank} has no id (Document.id or metadata[{self.id_key!r}])")
            payload = {key: value for key, value in doc.metadata.items() if key != "score"}
            hits.append(Hit(id=str(ident), score=float(doc.metadata.get("score", 1.0 / rank)), rank=rank, text=doc.page_content, payload=payload))
        return hits[:k]

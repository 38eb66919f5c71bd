"""LlamaIndex, both ways (`pip install 'querywise[llamaindex]'`).

- `QueryWiseLlamaRetriever`: a deployment as a LlamaIndex `BaseRetriever`. Each query is planned
  and the plan run (`QueryWise.ask`); each returned `NodeWithScore` is a `TextNode` with the hit's
  id and text, and its id, score, rank, title and payload in the metadata, with the plan
  (`metadata["querywise_plan"]`, the plan-log JSON) so a pipeline can see what was searched and why.
  The bookkeeping keys are excluded from the node's LLM and embedding content. The conversation
  and the session are the retriever's (set them per request with `with_context`).
- `LlamaIndexRetriever`: any LlamaIndex retriever (an index's `as_retriever()`, a BM25 or fusion
  retriever) as querywise's `Retriever`: plans run against it; its nodes are checked against the
  plan's filters like any retriever querywise does not own.

Offline (llama-index-core 0.14): the wheel bundles tiktoken's cl100k_base and NLTK's punkt_tab and
stopwords, so nothing is fetched as long as `TIKTOKEN_CACHE_DIR` and `NLTK_DATA` are unset (either
one set makes llama-index look there only, and download what is missing). An index built without
`transformations=` makes the default `SentenceSplitter` (tiktoken); splitting documents loads NLTK.
Pass `embed_model=` (and `llm=` to anything that takes one): the `Settings` defaults are OpenAI's.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ModuleNotFoundError as exc:  # an optional extra: say the one command that installs it
    raise ModuleNotFoundError(f'querywise.adapters.llamaindex needs {exc.name}: pip install "querywise[llamaindex]"', name=exc.name) from exc

from querywise.conditions import Where
from querywise.conversation import Turn
from querywise.index import Hit
from querywise.index.engine import Mode
from querywise.service import QueryWise

__all__ = ["LlamaIndexRetriever", "QueryWiseLlamaRetriever"]

# What querywise adds to a node's metadata: for the pipeline's code, not for the LLM or the embedder.
_BOOKKEEPING = ["id", "score", "rank", "querywise_plan"]


class QueryWiseLlamaRetriever(BaseRetriever):
    """querywise as a LlamaIndex retriever.

    >>> retriever = QueryWiseLlamaRetriever(QueryWise.open("querywise.toml", "my-index"), k=5)  # doctest: +SKIP
    >>> retriever.with_context(history=["warranty on the X3?"], session={"market": "eu"}).retrieve("and the Pro?")  # doctest: +SKIP
    """

    def __init__(
        self,
        deployment: QueryWise,
        *,
        k: int = 5,
        mode: Mode = "hybrid",
        history: Sequence[str | Turn] = (),
        session: Mapping[str, str] | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        self.deployment, self.k, self.mode = deployment, k, mode
        self.history: tuple[str | Turn, ...] = tuple(history)
        self.session: dict[str, str] = dict(session or {})

    def with_context(self, *, history: Sequence[str | Turn] = (), session: Mapping[str, str] | None = None) -> QueryWiseLlamaRetriever:
        """The same retriever for one conversation turn and session (the deployment is shared)."""
        return QueryWiseLlamaRetriever(self.deployment, k=self.k, mode=self.mode, history=history,
                                       session=self.session if session is None else session, callback_manager=self.callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.deployment.ask(query_bundle.query_str, history=self.history, session=self.session, k=self.k, mode=self.mode)
        plan = json.loads(result.plan.to_json_line())
        return [
            NodeWithScore(
                node=TextNode(id_=h.id, text=h.text, metadata={"id": h.id, "score": h.score, "rank": h.rank, "title": h.title, **h.payload,
                                                               "querywise_plan": plan},
                              excluded_llm_metadata_keys=list(_BOOKKEEPING), excluded_embed_metadata_keys=list(_BOOKKEEPING)),
                score=h.score)
            for h in result.hits
        ]


class LlamaIndexRetriever:
    """A LlamaIndex retriever behind querywise's `Retriever` protocol. A node's id is its
    `node_id`, or `metadata[id_key]` when `id_key` is given (an index whose nodes got fresh ids
    from a splitter, the source id kept in the metadata); its score `NodeWithScore.score` when the
    retriever gives one (else 1 / rank); `k` is passed as the retriever's `similarity_top_k`
    when it has one."""

    filters_inside = False

    def __init__(self, retriever: BaseRetriever, *, id_key: str | None = None) -> None:
        self.retriever, self.id_key = retriever, id_key
        self.name = f"LlamaIndex retriever {type(retriever).__name__}"

    def retrieve(self, text: str, *, k: int, where: Where | None = None, mode: Mode = "hybrid") -> list[Hit]:
        runnable = self.retriever
        if hasattr(runnable, "similarity_top_k"):  # ask for k on a shallow copy: the shared retriever, and a concurrent call, keep theirs
            runnable = copy.copy(runnable)
            runnable.similarity_top_k = k
        hits = []
        for rank, found in enumerate(runnable.retrieve(text), start=1):
            node = found.node
            ident = node.node_id if self.id_key is None else node.metadata.get(self.id_key)
            if ident is None or ident == "":
                raise ValueError(f"{self.name}: node {rank} has no id ({'node_id' if self.id_key is None else f'metadata[{self.id_key!r}]'})")
            score = found.score if found.score is not None else 1.0 / rank
            hits.append(Hit(id=str(ident), score=float(score), rank=rank, text=found.get_content(), payload=dict(node.metadata)))
        return hits[:k]

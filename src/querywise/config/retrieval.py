"""`[retriever]` and `[rerank]`: what plans run against, and what reorders their results."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from querywise.config._section import _Section


class RetrieverFields(_Section):
    """The names the HTTP retriever's protocol uses (`hits` may be a dotted path: "data.results")."""

    query: str = "query"  # request key of the message
    k: str = "k"  # request key of the number of hits wanted
    filters: str = "filters"  # request key of the filters (the querywise filter JSON)
    mode: str | None = "mode"  # "dense" | "bm25" | "hybrid": a hint the endpoint may ignore; None: not sent
    hits: str = "hits"  # response key (or dotted path) of the hit list
    id: str = "id"  # hit key of the stable id
    score: str = "score"  # hit key of the score (higher is better)
    text: str = "text"  # hit key of the passage text
    title: str = "title"  # hit key of the title (optional in a hit)
    payload: str = "payload"  # hit key of the metadata object the filters are checked against


class QdrantSource(_Section):
    """A Qdrant collection querywise did not build (`[retriever] kind = "qdrant"`)."""

    url: str = "http://localhost:6333"  # ":memory:" is qdrant-client's local mode (tests)
    collection: str | None = None  # required with kind = "qdrant"
    vector: str | None = None  # the named dense vector; None: the collection's unnamed one
    text_field: str = "text"  # the payload field holding the passage text
    title_field: str | None = "title"  # the payload field holding the title; None: no title
    id_field: str | None = None  # the payload field holding the stable id; None: the point id


class ElasticsearchSource(_Section):
    """An Elasticsearch / OpenSearch index (`[retriever] kind = "elasticsearch"`)."""

    url: str = "http://localhost:9200"  # the cluster's URL
    index: str | None = None  # required with kind = "elasticsearch"
    text_fields: list[str] = Field(default_factory=lambda: ["text"], min_length=1)  # what BM25 (multi_match) searches
    title_field: str | None = "title"  # the _source field holding the title; None: no title
    id_field: str | None = None  # the _source field holding the stable id; None: _id
    vector_field: str | None = None  # a dense_vector field for kNN; None: BM25 only
    api_key_env: str | None = None  # the environment variable holding an API key


class RetrieverSettings(_Section):
    """Which system retrieves: the querywise index (default), an HTTP JSON endpoint, a Python
    function (`module:function`), a Qdrant collection or an Elasticsearch index querywise did not build. `--retriever SPEC` on `ask` and `eval` overrides `kind` and
    `url` / `function`. Filters and access run inside the querywise index; another retriever is
    sent them and its results are checked against them."""

    kind: Literal["index", "http", "function", "qdrant", "elasticsearch"] = "index"  # which system retrieves (see above)
    url: str | None = None  # kind = "http": the endpoint, http(s)://host:port/path
    function: str | None = None  # kind = "function": "module:function", importable, called with the query
    timeout_s: float = Field(default=10.0, gt=0, le=600)  # per call to the retriever
    headers: dict[str, str] = Field(default_factory=dict)  # sent with every HTTP request (no secrets: use headers_env)
    headers_env: dict[str, str] = Field(default_factory=dict)  # header -> environment variable holding its value (a token)
    fields: RetrieverFields = Field(default_factory=RetrieverFields)  # the HTTP protocol's key names ([retriever.fields])
    qdrant: QdrantSource = Field(default_factory=QdrantSource)  # kind = "qdrant": [retriever.qdrant]
    elasticsearch: ElasticsearchSource = Field(default_factory=ElasticsearchSource)  # kind = "elasticsearch": [retriever.elasticsearch]

    @model_validator(mode="after")
    def _names_its_target(self) -> RetrieverSettings:
        if self.kind == "http" and not (self.url or "").startswith(("http://", "https://")):
            raise ValueError("[retriever] kind = 'http' needs url = 'http(s)://host:port/path'")
        if self.kind == "function" and not self.function:
            raise ValueError("[retriever] kind = 'function' needs function = 'module:function'")
        if self.kind == "qdrant" and not self.qdrant.collection:
            raise ValueError("[retriever] kind = 'qdrant' needs [retriever.qdrant] collection")
        if self.kind == "elasticsearch" and not self.elasticsearch.index:
            raise ValueError("[retriever] kind = 'elasticsearch' needs [retriever.elasticsearch] index")
        return self


class RerankSettings(_Section):
    """Reranking the fused top N of each plan's results (`[rerank]`); off by default. A cross-encoder
    is loaded from a local folder (`model`, a sentence-transformers CrossEncoder saved with
    `save()`); none is shipped or downloaded. `kind = "llm"`: the `[llm]` provider ranks the
    candidates in one listwise call through the LLM tier (fail-open)."""

    kind: Literal["none", "cross_encoder", "llm"] = "none"  # "cross_encoder" (a local model folder) or "llm" (the [llm] provider); "none": off
    model: Path | None = None  # kind = "cross_encoder": the model folder
    top_n: int = Field(20, ge=1, le=1000)  # how many fused hits the reranker sees
    batch_size: int = Field(32, ge=1, le=1024)  # pairs scored per forward pass
    passage_chars: int = Field(600, ge=50, le=20_000)  # of each candidate, in the LLM's prompt

    @model_validator(mode="after")
    def _has_a_model(self) -> RerankSettings:
        if self.kind == "cross_encoder" and self.model is None:
            raise ValueError("[rerank] kind = 'cross_encoder' needs model = 'path/to/cross-encoder-folder'")
        return self

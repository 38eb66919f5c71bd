"""Which retriever a deployment runs: `[retriever]` in its config, or `--retriever SPEC`."""

from __future__ import annotations

from urllib.parse import urlsplit

from querywise.config import RetrieverSettings
from querywise.embed import Embedder
from querywise.index import Index
from querywise.retrieve.elastic import ElasticRetriever
from querywise.retrieve.function import FunctionRetriever, load_function
from querywise.retrieve.http import HTTPRetriever
from querywise.retrieve.own_index import IndexRetriever
from querywise.retrieve.protocol import Retriever
from querywise.retrieve.qdrant import QdrantRetriever

__all__ = ["open_retriever", "settings_from_spec"]


def settings_from_spec(spec: str, base: RetrieverSettings | None = None) -> RetrieverSettings:
    """`--retriever SPEC`: "index" (the querywise index), an http(s) URL, `module:function`,
    `qdrant://host:port/collection` or `elasticsearch://host:port/index` (`+https` for TLS:
    `qdrant+https://...`). Everything else (field names, headers, timeout, the vector and text
    fields) comes from `base`, the config's `[retriever]`."""
    base = base or RetrieverSettings()
    engine, _, rest = spec.partition("://")
    if engine.split("+")[0] in ("qdrant", "elasticsearch") and rest:
        parts = urlsplit(f"http://{rest}")
        scheme = "https" if engine.endswith("+https") else "http"
        url, name = f"{scheme}://{parts.netloc}", parts.path.strip("/")
        if not name:
            raise ValueError(f"{spec!r} names no {'collection' if engine.startswith('qdrant') else 'index'}: {engine}://host:port/NAME")
        if engine.startswith("qdrant"):
            return base.model_copy(update={"kind": "qdrant", "qdrant": base.qdrant.model_copy(update={"url": url, "collection": name})})
        return base.model_copy(update={"kind": "elasticsearch", "elasticsearch": base.elasticsearch.model_copy(update={"url": url, "index": name})})
    if spec.startswith(("http://", "https://")):
        return base.model_copy(update={"kind": "http", "url": spec})
    if spec == "index":
        return base.model_copy(update={"kind": "index"})
    if ":" in spec and "/" not in spec:
        load_function(spec)  # fail at the flag, not at the first question
        return base.model_copy(update={"kind": "function", "function": spec})
    raise ValueError(f"--retriever is 'index', an http(s):// URL, 'module:function', qdrant://host:port/collection or "
                     f"elasticsearch://host:port/index, not {spec!r}")


def open_retriever(settings: RetrieverSettings, index: Index | None, embedder: Embedder | None = None) -> Retriever | None:
    """The retriever the settings name (None: the querywise index, and none is open). `embedder`
    embeds the queries of the engines that search by vector (Qdrant, Elasticsearch kNN)."""
    if settings.kind == "qdrant":
        if embedder is None:
            raise ValueError("a Qdrant collection is searched by vector: give the deployment's embedder")
        return QdrantRetriever(settings, embedder)
    if settings.kind == "elasticsearch":
        return ElasticRetriever(settings, embedder)
    if settings.kind == "http":
        return HTTPRetriever(settings)
    if settings.kind == "function":
        assert settings.function is not None  # RetrieverSettings checks it
        return FunctionRetriever(load_function(settings.function), name=settings.function)
    return IndexRetriever(index) if index is not None else None

"""Which retriever a deployment runs: `[retriever]` in its config, or `--retriever SPEC`."""

from __future__ import annotations

from querywise.config import RetrieverSettings
from querywise.index import Index
from querywise.retrieve.function import FunctionRetriever, load_function
from querywise.retrieve.http import HTTPRetriever
from querywise.retrieve.own_index import IndexRetriever
from querywise.retrieve.protocol import Retriever

__all__ = ["open_retriever", "settings_from_spec"]


def settings_from_spec(spec: str, base: RetrieverSettings | None = None) -> RetrieverSettings:
    """`--retriever SPEC`: "index" (the querywise index), an http(s) URL, or `module:function`.
    Everything else (field names, headers, timeout) comes from `base`, the config's `[retriever]`."""
    base = base or RetrieverSettings()
    if spec.startswith(("http://", "https://")):
        return base.model_copy(update={"kind": "http", "url": spec})
    if spec == "index":
        return base.model_copy(update={"kind": "index"})
    if ":" in spec and "/" not in spec:
        load_function(spec)  # fail at the flag, not at the first question
        return base.model_copy(update={"kind": "function", "function": spec})
    raise ValueError(f"--retriever is 'index', an http(s):// URL or 'module:function', not {spec!r}")


def open_retriever(settings: RetrieverSettings, index: Index | None) -> Retriever | None:
    """The retriever the settings name (None: the querywise index, and none is open)."""
    if settings.kind == "http":
        return HTTPRetriever(settings)
    if settings.kind == "function":
        assert settings.function is not None  # RetrieverSettings checks it
        return FunctionRetriever(load_function(settings.function), name=settings.function)
    return IndexRetriever(index) if index is not None else None

"""Retrievers: the querywise index, an HTTP JSON endpoint, a Python function, a Qdrant collection,
an Elasticsearch index — one protocol."""

from querywise.retrieve.drift import DriftCheck, check_drift
from querywise.retrieve.elastic import ElasticRetriever
from querywise.retrieve.function import FunctionRetriever, load_function
from querywise.retrieve.http import HTTPRetriever
from querywise.retrieve.own_index import IndexRetriever
from querywise.retrieve.protocol import OVERFETCH, ExplainsEmpty, Retrieved, Retriever, RetrieverError, checked, dense_cosines, identifier_keys
from querywise.retrieve.qdrant import QdrantRetriever
from querywise.retrieve.rerank import CrossEncoderReranker, Reordering, Reranker, open_reranker, rerank, rerank_text
from querywise.retrieve.spec import open_retriever, settings_from_spec

__all__ = [
    "OVERFETCH",
    "CrossEncoderReranker",
    "DriftCheck",
    "ElasticRetriever",
    "ExplainsEmpty",
    "FunctionRetriever",
    "HTTPRetriever",
    "IndexRetriever",
    "QdrantRetriever",
    "Reordering",
    "Reranker",
    "Retrieved",
    "Retriever",
    "RetrieverError",
    "check_drift",
    "checked",
    "dense_cosines",
    "identifier_keys",
    "load_function",
    "open_reranker",
    "open_retriever",
    "rerank",
    "rerank_text",
    "settings_from_spec",
]

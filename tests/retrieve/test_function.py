"""A Python function as the retriever, and `--retriever SPEC`."""

from __future__ import annotations

from typing import Any

import pytest

from querywise.conditions import parse_where
from querywise.config import RetrieverSettings
from querywise.index import Hit
from querywise.retrieve import FunctionRetriever, RetrieverError, checked, load_function, open_retriever, settings_from_spec

DOCS = [
    {"id": "eu-1", "text": "returns within 30 days in the EU", "payload": {"markets": ["eu"]}},
    {"id": "us-1", "text": "returns within 14 days in the US", "payload": {"markets": ["us"]}},
    {"id": "all-1", "text": "returns of opened earbuds", "payload": {"markets": ["eu", "us"]}},
]
CALLS: list[tuple[str, int, Any]] = []


def search(query: str, k: int, filters: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A retriever that ignores filters (what checking is for) and ranks by shared words."""
    CALLS.append((query, k, filters))
    words = set(query.lower().split())
    ranked = sorted(DOCS, key=lambda d: -len(words & set(str(d["text"]).split())))
    return [{**d, "score": float(len(words & set(str(d["text"]).split())))} for d in ranked[:k]]


def hits(query: str, k: int, filters: dict[str, Any] | None) -> list[Hit]:
    return [Hit(id="h", score=1.0, rank=7, text=query)]


def test_a_function_named_module_colon_function_is_the_retriever() -> None:
    retriever = open_retriever(settings_from_spec(f"{__name__}:search"), None)
    assert isinstance(retriever, FunctionRetriever) and not retriever.filters_inside
    got = retriever.retrieve("returns of opened earbuds", k=2)
    assert [h.id for h in got] == ["all-1", "eu-1"] and [h.rank for h in got] == [1, 2] and got[0].payload == {"markets": ["eu", "us"]}


def test_its_answer_is_checked_against_the_filters_it_was_sent() -> None:
    CALLS.clear()
    result = checked(FunctionRetriever(search), "returns within days", k=2, where=parse_where(["markets=us"]), mode="hybrid")
    assert [h.id for h in result.hits] == ["us-1", "all-1"] and result.dropped == 1
    assert CALLS[-1][2] == parse_where(["markets=us"]).model_dump(mode="json")


def test_hits_it_returns_as_hits_are_renumbered() -> None:
    assert FunctionRetriever(hits).retrieve("q", k=1)[0].rank == 1


def test_a_bad_function_or_result_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="has no 'nothing_here'"):
        load_function(f"{__name__}:nothing_here")
    with pytest.raises(ValueError, match="cannot import"):
        load_function("no_such_module_anywhere:f")
    with pytest.raises(ValueError, match="'module:function'"):
        load_function("just_a_name")
    with pytest.raises(RetrieverError, match="result 1 is neither"):
        FunctionRetriever(lambda q, k, f: ["a string"]).retrieve("q", k=1)


def test_a_spec_is_an_index_a_url_or_a_function() -> None:
    assert settings_from_spec("http://127.0.0.1:8080/search").kind == "http"
    assert settings_from_spec("index").kind == "index"
    base = RetrieverSettings(timeout_s=3)
    assert settings_from_spec(f"{__name__}:search", base).model_dump() == {**base.model_dump(), "kind": "function", "function": f"{__name__}:search"}
    q = settings_from_spec("qdrant://10.0.0.5:6333/products", RetrieverSettings(qdrant={"vector": "body"}))  # type: ignore[arg-type]
    assert (q.kind, q.qdrant.url, q.qdrant.collection, q.qdrant.vector) == ("qdrant", "http://10.0.0.5:6333", "products", "body")
    es = settings_from_spec("elasticsearch+https://search.internal:9243/help-centre")
    assert (es.kind, es.elasticsearch.url, es.elasticsearch.index) == ("elasticsearch", "https://search.internal:9243", "help-centre")
    with pytest.raises(ValueError, match="names no collection"):
        settings_from_spec("qdrant://10.0.0.5:6333/")
    with pytest.raises(ValueError, match="not 'ftp://x'"):
        settings_from_spec("ftp://x")
    with pytest.raises(ValueError, match="needs url"):
        RetrieverSettings(kind="http")

"""The Elasticsearch retriever through the official client against recorded exchanges replayed on
127.0.0.1 (tests/fixtures/elasticsearch/search.json): the query DSL it sends, the hits it reads."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from querywise.conditions import Linked, Match, NoneOf, Range, Where, parse_where
from querywise.config import ElasticsearchSource, RetrieverSettings
from querywise.retrieve import ElasticRetriever, RetrieverError, checked
from querywise.retrieve.elastic import es_filter

RECORDED = json.loads((Path(__file__).parents[1] / "fixtures" / "elasticsearch" / "search.json").read_text(encoding="utf-8"))


class Replay:
    """Answers POST /<index>/_search with the recorded response for the request's kind."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.fail = False
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                replay.requests.append((self.path, body, dict(self.headers)))
                kind = "error" if replay.fail else "knn" if "knn" in body else "bm25"
                raw = json.dumps(RECORDED[kind]["response"]).encode()
                self.send_response(RECORDED[kind].get("status", 200))
                self.send_header("Content-Type", "application/vnd.elasticsearch+json;compatible-with=9")
                self.send_header("X-Elastic-Product", "Elasticsearch")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def replay() -> Iterator[Replay]:
    r = Replay()
    yield r
    r.server.shutdown()
    r.server.server_close()


def retriever(url: str, embedder: Any = None, **kw: Any) -> ElasticRetriever:
    source = ElasticsearchSource(url=url, index="shop", text_fields=["body", "title"], id_field="sku", **kw)
    return ElasticRetriever(RetrieverSettings(kind="elasticsearch", elasticsearch=source, timeout_s=5), embedder)


def test_bm25_sends_a_multi_match_with_the_filters_in_the_bool_filter(replay: Replay) -> None:
    where = parse_where(["markets=eu", "price<200"])
    result = checked(retriever(replay.url), "Vela X3 warranty", k=2, where=where, mode="bm25")
    path, body, headers = replay.requests[-1]
    assert path == "/shop/_search" and "X-Elastic-Product" not in headers
    assert body == {"size": 2, "query": {"bool": {
        "must": [{"multi_match": {"query": "Vela X3 warranty", "fields": ["body", "title"]}}],
        "filter": [{"term": {"markets": "eu"}}, {"range": {"price": {"lt": 200.0}}}]}}}
    assert result.filtered == "engine"
    assert [(h.id, h.rank, h.score) for h in result.hits] == [("x3-warranty", 1, 2.31), ("cushions", 2, 1.07)]
    assert result.hits[0].text.startswith("Vela X3 headphones") and result.hits[0].title == "Vela X3 warranty"
    assert result.hits[0].payload["markets"] == ["eu", "us"]


def test_hybrid_runs_bm25_and_knn_and_fuses_them_here(replay: Replay, hash_embedder: Any) -> None:
    hits = retriever(replay.url, hash_embedder, vector_field="body_vec").retrieve("cushions for the X3", k=3, where=parse_where(["markets=eu"]))
    knn = next(body["knn"] for _, body, _ in replay.requests if "knn" in body)
    assert knn["field"] == "body_vec" and len(knn["query_vector"]) == hash_embedder.dim and knn["k"] == 3 and knn["num_candidates"] == 100
    assert knn["filter"] == [{"term": {"markets": "eu"}}]  # a kNN search returns k hits that meet the filters
    assert [h.id for h in hits] == ["cushions", "x3-warranty", "shipping"]  # in both lists first; RRF
    assert hits[0].score == pytest.approx(1 / 62 + 1 / 61)


def test_filters_keep_the_semantics_of_where_matches() -> None:
    keep = Where(conditions=(Range(field="price", lt=300, missing="keep", linked=Linked(field="products", values=("solace-7",))),))
    assert es_filter(keep) == [{"bool": {"minimum_should_match": 1, "should": [
        {"range": {"price": {"lt": 300.0}}},
        {"bool": {"filter": [{"bool": {"must_not": [{"exists": {"field": "price"}}]}}, {"terms": {"products": ["solace-7"]}}]}},
        {"bool": {"filter": [{"bool": {"must_not": [{"exists": {"field": "price"}}]}}, {"bool": {"must_not": [{"exists": {"field": "products"}}]}}]}},
    ]}}]
    assert es_filter(Where(conditions=(NoneOf(field="category", values=("accessory",)),))) == [{"bool": {"must_not": [{"terms": {"category": ["accessory"]}}]}}]
    assert es_filter(Where(conditions=(Match(field="markets", value="eu"),))) == [{"term": {"markets": "eu"}}]
    assert es_filter(None) == []


def test_an_engine_error_is_a_clear_error(replay: Replay) -> None:
    replay.fail = True
    with pytest.raises(RetrieverError, match="does not support range queries"):
        retriever(replay.url).retrieve("x", k=3, where=parse_where(["price<10"]), mode="bm25")

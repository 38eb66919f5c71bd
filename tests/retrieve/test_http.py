"""The HTTP retriever against a real server on 127.0.0.1 that serves an index over the protocol."""

from __future__ import annotations

import json
import time

import pytest
from http_endpoint import Endpoint

from querywise.conditions import Match, Where, parse_where
from querywise.config import RetrieverFields, RetrieverSettings
from querywise.index import Index
from querywise.retrieve import HTTPRetriever, IndexRetriever, RetrieverError, checked


def test_the_same_index_behind_http_gives_the_same_ranked_hits(index: Index, endpoint: Endpoint) -> None:
    remote, local = HTTPRetriever(RetrieverSettings(kind="http", url=endpoint.url)), IndexRetriever(index)
    for text in ("warranty on the Vela X3", "how long does shipping take", "battery of the buds"):
        mine, theirs = local.retrieve(text, k=4), remote.retrieve(text, k=4)
        assert [(h.id, h.rank, h.text) for h in theirs] == [(h.id, h.rank, h.text) for h in mine]
        assert [h.score for h in theirs] == pytest.approx([h.score for h in mine])
    body, headers = endpoint.bodies[0]
    assert body == {"query": "warranty on the Vela X3", "k": 4, "filters": None, "mode": "hybrid"}
    assert headers["Content-Type"] == "application/json"


def test_filters_are_sent_as_json_and_the_answer_is_checked_against_them(endpoint: Endpoint) -> None:
    remote = HTTPRetriever(RetrieverSettings(kind="http", url=endpoint.url))
    where = parse_where(["markets=us"])
    endpoint.honour_filters = False  # an endpoint that ignores filters cannot widen access
    result = checked(remote, "replacement cushions for the Vela X3", k=3, where=where, mode="hybrid")
    assert result.filtered == "checked" and result.dropped >= 1
    assert result.hits and all("us" in h.payload["markets"] for h in result.hits)
    assert [h.rank for h in result.hits] == list(range(1, len(result.hits) + 1))
    sent = endpoint.bodies[-1][0]
    assert Where.model_validate(sent["filters"]) == where and sent["k"] == 3 * 3  # asked for more: checking drops some


def test_a_hit_without_the_access_field_is_dropped(endpoint: Endpoint) -> None:
    endpoint.reply = (200, json.dumps({"hits": [{"id": "a", "score": 1.0}, {"id": "b", "score": 0.5, "payload": {"markets": ["eu"]}}]}).encode())
    result = checked(HTTPRetriever(RetrieverSettings(kind="http", url=endpoint.url)), "x", k=5, where=Where(conditions=(Match(field="markets", value="eu"),)), mode="dense")
    assert [h.id for h in result.hits] == ["b"] and result.dropped == 1


def test_every_name_of_the_protocol_is_remappable(endpoint: Endpoint, index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint.names = {"query": "q", "k": "size", "filters": "where", "hits": "data.results", "id": "doc_id"}
    monkeypatch.setenv("QW_TEST_TOKEN", "s3cret")
    fields = RetrieverFields(query="q", k="size", filters="where", hits="data.results", id="doc_id", mode=None)
    remote = HTTPRetriever(RetrieverSettings(kind="http", url=endpoint.url, fields=fields, headers_env={"Authorization": "QW_TEST_TOKEN"}))
    assert [h.id for h in remote.retrieve("warranty on the Vela X3", k=2)] == [h.id for h in index.search("warranty on the Vela X3", k=2)]
    body, headers = endpoint.bodies[-1]
    assert set(body) == {"q", "size", "where"} and headers["Authorization"] == "s3cret"


@pytest.mark.parametrize(
    ("reply", "says"),
    [
        ((500, b"boom"), "answered 500: boom"),
        ((200, b"<html>"), "not JSON"),
        ((200, b'{"results": []}'), "no list at 'hits'"),
        ((200, b'{"hits": [{"score": 1}]}'), "hit 1 has no 'id'"),
        ((200, b'{"hits": [{"id": "a", "score": "high"}]}'), "is not a number"),
        ((200, b"[" * 100_000), "nested deeper"),  # not a RecursionError
    ],
)
def test_a_bad_answer_is_a_clear_error(endpoint: Endpoint, reply: tuple[int, bytes], says: str) -> None:
    endpoint.reply = reply
    with pytest.raises(RetrieverError, match=says):
        HTTPRetriever(RetrieverSettings(kind="http", url=endpoint.url)).retrieve("x", k=3)


def test_an_unreachable_endpoint_and_a_missing_secret_say_what_is_wrong(endpoint: Endpoint) -> None:
    port = endpoint.server.server_address[1]
    endpoint.server.shutdown()
    endpoint.server.server_close()
    with pytest.raises(RetrieverError, match=f"127.0.0.1:{port}"):
        HTTPRetriever(RetrieverSettings(kind="http", url=f"http://127.0.0.1:{port}/search", timeout_s=2)).retrieve("x", k=1)
    with pytest.raises(ValueError, match="QW_NOT_SET"):
        HTTPRetriever(RetrieverSettings(kind="http", url="http://127.0.0.1:9/x", headers_env={"Authorization": "QW_NOT_SET"}))


def test_a_trickling_answer_cannot_hold_the_call_past_its_timeout(endpoint: Endpoint) -> None:
    endpoint.reply, endpoint.trickle = (200, b'{"hits": []}' + b" " * 200), 0.02  # ~4 s in all, never 1 s without a byte
    started = time.monotonic()
    with pytest.raises(RetrieverError, match="within"):
        HTTPRetriever(RetrieverSettings(kind="http", url=endpoint.url, timeout_s=1)).retrieve("x", k=1)
    assert time.monotonic() - started < 1.5

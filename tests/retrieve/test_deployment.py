"""A deployment whose plans run against another retriever: same answers as the index behind it,
access never widened, the trace saying how filters ran."""

from __future__ import annotations

from typing import Any

import pytest
from http_endpoint import Endpoint
from shop_deployment import shop_settings

from querywise.config import RetrieverSettings
from querywise.index import Index
from querywise.plan import PlanQuery, QueryPlan
from querywise.retrieve import FunctionRetriever, HTTPRetriever
from querywise.service import QueryWise
from querywise.text import IDENTIFIER_KEYS

EU = {"market": "eu"}
MESSAGES = ["how long is the warranty on the Vela X3?", "how fast does shipping go", "does the Vela X3 Pro cover rain?", "Pico Buds battery"]


def test_the_same_index_behind_http_answers_every_plan_the_same(index: Index, endpoint: Endpoint, tmp_path: Any, hash_embedder: Any) -> None:
    s = shop_settings(tmp_path)
    remote = HTTPRetriever(RetrieverSettings(kind="http", url=endpoint.url))
    with QueryWise(s, index) as mine, QueryWise(s, None, embedder=hash_embedder, retriever=remote) as theirs:
        for message in MESSAGES:
            a, b = mine.ask(message, session=EU, k=3), theirs.ask(message, session=EU, k=3)
            assert [h.id for h in b.hits] == [h.id for h in a.hits], message
            assert [q.text for q in b.plan.queries] == [q.text for q in a.plan.queries]
            step = b.plan.step("execute")
            assert step is not None and step.details["retriever"] == remote.name and step.details["filters_applied"] == "checked"
            assert a.plan.step("execute").details["filters_applied"] == "engine"  # type: ignore[union-attr]
    sent = [body["filters"] for body, _ in endpoint.bodies]
    assert all(f and f["conditions"][0]["field"] == "markets" for f in sent)  # the session's access went with every query


def test_an_endpoint_that_ignores_access_cannot_widen_it(index: Index, endpoint: Endpoint, tmp_path: Any, hash_embedder: Any) -> None:
    endpoint.honour_filters = False
    remote = HTTPRetriever(RetrieverSettings(kind="http", url=endpoint.url))
    with QueryWise(shop_settings(tmp_path), None, embedder=hash_embedder, retriever=remote) as qw:
        result = qw.ask("Pico Buds battery per charge", session=EU, k=5)
        assert result.hits and all("eu" in h.payload["markets"] for h in result.hits)  # buds-battery is us only
        assert "buds-battery" not in [h.id for h in result.hits]
        step = result.plan.step("execute")
        assert step is not None and step.details["dropped_by_check"] >= 1 and "filters checked on its results" in step.reason
        assert all("eu" in h.payload["markets"] for h in qw.search("Pico Buds battery", session=EU, k=5))


def test_an_exact_lookup_searches_the_identifier_as_text_elsewhere(tmp_path: Any, hash_embedder: Any) -> None:
    seen: list[Any] = []

    def search(query: str, k: int, filters: Any) -> list[dict[str, Any]]:
        seen.append(filters)
        return [{"id": "c1", "score": 1.0, "payload": {"markets": ["eu"]}}]

    plan = QueryPlan(message="QR-5126", route="kb_search", queries=[
        PlanQuery(text="QR-5126", kind="original"),
        PlanQuery(text="QR-5126", kind="exact", weight=2.0, where={"conditions": [{"kind": "match", "field": IDENTIFIER_KEYS, "value": "qr5126"}]}),  # type: ignore[arg-type]
    ])
    with QueryWise(shop_settings(tmp_path), None, embedder=hash_embedder, retriever=FunctionRetriever(search)) as qw:
        result = qw.execute(plan)
    assert [h.id for h in result.hits] == ["c1"] and seen == [None, None]  # the hidden field only our index has is not sent


def test_nothing_back_says_which_retriever_and_why(tmp_path: Any, hash_embedder: Any) -> None:
    nothing = FunctionRetriever(lambda q, k, f: [], name="empty")
    elsewhere = FunctionRetriever(lambda q, k, f: [{"id": "us-only", "payload": {"markets": ["us"]}}], name="us")
    with QueryWise(shop_settings(tmp_path), None, embedder=hash_embedder, retriever=nothing) as qw:
        assert qw.ask("what is the warranty", session=EU).empty_because == ["function retriever empty returned nothing for the query text"]
    with QueryWise(shop_settings(tmp_path), None, embedder=hash_embedder, retriever=elsewhere) as qw:
        (why,) = qw.ask("what is the warranty", session=EU).empty_because
        assert "failed the filters or this session's access (1 checked here and dropped)" in why


def test_without_an_index_or_a_retriever_asking_is_a_clear_error(tmp_path: Any, hash_embedder: Any) -> None:
    with QueryWise(shop_settings(tmp_path), None, embedder=hash_embedder) as qw, pytest.raises(ValueError, match="needs an index or a retriever"):
        qw.ask("what is the warranty", session=EU)


def test_eval_through_a_retriever_judges_documents_by_the_passages_given(tmp_path: Any, hash_embedder: Any) -> None:
    from querywise.corpus import Chunk
    from querywise.evaluation.cases import Case
    from querywise.evaluation.harness import Arm, JudgedIds, run_arm
    from querywise.evaluation.metrics import parse_metric

    passages = [Chunk(id="guide#0", text="a", payload={"doc_id": "guide", "markets": ["eu"]}),
                Chunk(id="guide#1", text="b", payload={"doc_id": "guide", "markets": ["eu"]})]
    found = FunctionRetriever(lambda q, k, f: [{"id": p.id, "payload": p.payload} for p in reversed(passages)])
    case = Case(id="c", message="what is the warranty", relevant={"guide": 1}, session=EU)
    hit1 = parse_metric("hit@1")
    with QueryWise(shop_settings(tmp_path), None, embedder=hash_embedder, retriever=found) as qw:
        blind = run_arm([case], qw, Arm(name="a"), [hit1])
        judged = run_arm([case], qw, Arm(name="a"), [hit1], judged=JudgedIds.of_chunks(passages))
    assert blind.cases[0].scores[hit1.label] == 0.0  # no index, no passages: chunk ids never equal a document id
    assert judged.cases[0].scores[hit1.label] == 1.0 and judged.cases[0].top == ["guide"]  # pooled per document

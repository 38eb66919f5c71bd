"""Faults behind the service (issue #17): the LLM provider hanging, slow past the deadline,
answering HTTP 500, malformed JSON or output outside the schema, and the index folder rebuilt
while requests run. A real uvicorn on 127.0.0.1 serves the shop deployment whose `[llm]` is an
OpenAI-compatible provider (the real OpenAI SDK client, made from the settings) pointed at the
fake provider server.

Asserted: no 5xx ever (a fail-open route answers 200 with the deterministic plan, a fail-closed
route 200 with a plan whose action is ask); every body is a well-formed response; and
`/metrics`'s `querywise_llm_fallbacks_total{reason=...}` moves by exactly the fallbacks the
responses' traces show, per reason (and `querywise_llm_calls_total` by the calls they show).
A rebuild of the index folder mid-stream changes nothing the service answers: it keeps the build
it opened (picking up a new build is a restart).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from shop_deployment import shop_settings

from querywise.config import LLMSettings, RouteSpec, RoutingSettings, ServerSettings, Settings, UnderstandingSettings
from querywise.corpus import Chunk
from querywise.index import Index, build_index
from querywise.index.builds import read_current
from querywise.llm.fake_server import FakeLLMServer, Reply
from querywise.server import Authenticator, create_app, running
from querywise.server.schemas import AskResponse, PlanResponse, SearchResponse
from querywise.service import QueryWise

KEY_ENV = "QW_TEST_FAULTS_OPENAI_KEY"
DEADLINE = 1.5  # [llm] timeout_s: every message's LLM deadline; wide, so a loaded CI host cannot turn a fast fault into a timeout
N = 12  # requests per fault mode
THREADS = 4

# (history, message, fail policy): a follow-up on the fail-open route, one on the fail-closed route
KB = (["how long is the warranty on the Vela X3?"], "and the Pro?", "open")
ORDERS = (["where is my order 55120?"], "can you cancel it?", "closed")
GOOD = {"kb": {"standalone": "How long is the warranty on the Vela X3 Pro?"}, "orders": {"standalone": "Can you cancel order 55120?"}}

# mode -> (what the fake provider does, the fallback reason every request must show)
MODES: dict[str, tuple[Callable[[str], Reply], float, str]] = {
    "hang": (lambda c: Reply(output=GOOD[c], fault="timeout"), 0.0, "timeout"),  # answers after twice the deadline
    "slow": (lambda c: Reply(output=GOOD[c]), 2 * DEADLINE, "timeout"),  # a good answer, past the deadline to the first token
    "500": (lambda c: Reply(fault="500"), 0.0, "server_error"),  # retried once (retry-after-ms: 1), then given up
    "malformed_json": (lambda c: Reply(output=GOOD[c], fault="malformed_json"), 0.0, "malformed_json"),
    "out_of_schema": (lambda c: Reply(output={**GOOD[c], "confidence": 0.93}), 0.0, "schema_violation"),
}


def _conversation(body: dict[str, Any]) -> str:
    return "orders" if "cancel" in json.dumps(body.get("messages", [])) else "kb"


def _settings(tmp: Path, url: str) -> Settings:
    s = shop_settings(tmp)
    routes = [*s.routing.routes, RouteSpec(name="orders", search=True, examples=["where is my order", "cancel my order", "refund for my order"])]
    return s.model_copy(update={
        "routing": RoutingSettings(routes=routes, min_margin=0.0, high_stakes=["orders"]),
        "understanding": UnderstandingSettings(moves=[*s.understanding.moves, "llm_rewrite"]),
        "llm": LLMSettings(provider="openai", base_url=url + "/v1", api_key_env=KEY_ENV, model="gpt-fake", timeout_s=DEADLINE),
        "server": ServerSettings(rate_limit=None),
    })  # fmt: skip


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(hang_s=2 * DEADLINE) as srv:
        yield srv


@pytest.fixture
def provider(fake: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    """The fake provider answering well, no wait; the API key in the environment."""
    monkeypatch.setenv(KEY_ENV, "test-key")
    fake.respond_with(lambda api, body: Reply(output=GOOD[_conversation(body)]))
    fake.state.requests.clear()
    yield fake
    fake.state.ttft_s = 0.0


@pytest.fixture
def served(tmp_path: Path, shop: list[Chunk], hash_embedder: Any, provider: FakeLLMServer, jwt_secret: str) -> Iterator[tuple[str, QueryWise]]:
    settings = _settings(tmp_path, provider.url)
    with build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix, QueryWise(settings, ix) as qw:
        assert qw.understander.tier is not None and qw.understander.tier.provider.name == "openai"  # the real SDK provider
        with running(create_app(qw, authenticator=Authenticator(settings.server, settings.access))) as url:
            yield url, qw


def _scrape(client: httpx.Client, url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = client.get(f"{url}/metrics")
    assert r.status_code == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for fam in text_string_to_metric_families(r.text) for s in fam.samples}


def _delta(after: dict[Any, float], before: dict[Any, float], name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {labels: v - before.get((n, labels), 0.0) for (n, labels), v in after.items() if n == name and v - before.get((n, labels), 0.0)}


def _request(client: httpx.Client, url: str, i: int) -> tuple[tuple[list[str], str, str], str, httpx.Response]:
    conv = KB if i % 2 == 0 else ORDERS
    path = "/v1/plan" if i % 4 < 2 else "/v1/ask"
    history, message, _ = conv
    body: dict[str, Any] = {"message": message, "history": history, **({"k": 3} if path == "/v1/ask" else {})}
    return conv, path, client.post(f"{url}{path}", json=body)


@pytest.mark.parametrize("mode", list(MODES))
def test_provider_faults_are_never_a_5xx_and_every_fallback_is_counted(mode: str, served: tuple[str, QueryWise], provider: FakeLLMServer,
                                                                     token: Callable[..., str]) -> None:
    url, qw = served
    reply, ttft, reason = MODES[mode]
    with httpx.Client(headers={"Authorization": f"Bearer {token(market='eu')}"}, timeout=10) as client:
        ok = client.post(f"{url}/v1/plan", json={"message": KB[1], "history": KB[0]})  # the good provider: the LLM's rewrite
        assert ok.status_code == 200 and ok.json()["plan"]["queries"][0]["text"] == GOOD["kb"]["standalone"], ok.text
        provider.respond_with(lambda api, body: reply(_conversation(body)))
        provider.state.ttft_s = ttft
        before = _scrape(client, url)
        with ThreadPoolExecutor(THREADS) as pool:
            results = list(pool.map(lambda i: _request(client, url, i), range(N)))
        after = _scrape(client, url)
    seen: Counter[str] = Counter()
    calls = 0
    for (_, message, policy), path, r in results:
        where = f"{mode}: {path} {message!r} -> {r.status_code} {r.text[:2000]}"
        assert r.status_code == 200, where  # never a 5xx (nor any other error)
        answer = AskResponse.model_validate(r.json()) if path == "/v1/ask" else PlanResponse.model_validate(r.json())
        plan = answer.plan
        step = plan.step("llm_plan")
        assert step is not None and step.status == "fallback" and step.llm is not None, where
        assert step.llm.fallback == reason and step.llm.policy == policy, where
        for s in plan.trace:
            if s.status == "fallback" and s.llm is not None and s.llm.fallback:
                seen[s.llm.fallback] += 1
            calls += s.llm_calls
        if policy == "closed":  # asks, searches nothing
            assert plan.action.type == "ask" and plan.action.question == qw.settings.llm.fail_closed_question, where
            assert not plan.queries and not (isinstance(answer, AskResponse) and answer.hits), where
        else:  # the deterministic plan, searched
            assert plan.action.type == "answer" and plan.queries and plan.queries[0].text != GOOD["kb"]["standalone"], where
            assert not isinstance(answer, AskResponse) or answer.hits, where
    assert seen == {reason: N}
    counted = _delta(after, before, "querywise_llm_fallbacks_total")
    assert counted == {(("reason", r),): float(n) for r, n in seen.items()}, (mode, counted, seen)  # /metrics == the traces, per reason
    assert _delta(after, before, "querywise_llm_calls_total") == {(): float(calls)} and calls == N
    assert not _delta(after, before, "querywise_llm_moves_not_called_total")
    statuses = {labels: n for labels, n in _delta(after, before, "querywise_requests_total").items() if dict(labels)["route"] != "/metrics"}
    assert statuses == {(("route", "/v1/ask"), ("status", "200")): N / 2, (("route", "/v1/plan"), ("status", "200")): N / 2}
    moves = after[("querywise_llm_calls_total", ())] + after[("querywise_llm_moves_not_called_total", ())]
    total = sum(v for (n, _), v in after.items() if n == "querywise_llm_fallbacks_total")
    assert after[("querywise_llm_fallback_rate", ())] == pytest.approx(total / moves)  # N of the N + 1 calls
    assert len(provider.requests) >= N + 1  # every call reached the provider (a 500 is retried: twice as many)
    assert qw.understander.tier is not None and qw.understander.tier.wait_abandoned(4 * DEADLINE) == 0


def test_a_rebuild_while_requests_run_changes_nothing_the_service_answers(served: tuple[str, QueryWise], shop: list[Chunk], hash_embedder: Any,
                                                                        token: Callable[..., str]) -> None:
    """Rebuilds of the folder (a changed corpus) while threads send requests: all 200 and well
    formed, all from the build the service opened; the folder's CURRENT moved to the new build."""
    url, qw = served
    assert qw.index is not None
    folder, opened = qw.index.root, qw.index.manifest.build_id
    marker = Chunk(id="gift-cards", text="Gift cards never expire and work in every market.", payload={"category": "policy", "price": 0, "markets": ["eu", "us"]})
    changed = [*(c.model_copy(update={"text": c.text.replace("18-month", "24-month")}) for c in shop), marker]
    rebuilds: list[str] = []
    building, done = threading.Event(), threading.Event()
    during = Counter[int]()  # requests answered while the rebuilds ran, per worker

    def rebuild() -> None:
        building.set()
        try:
            for _ in range(3):
                with build_index(changed, folder, settings=qw.settings, embedder=hash_embedder) as ix:
                    rebuilds.append(ix.manifest.build_id)
        finally:
            done.set()

    def stream(worker: int) -> list[tuple[str, httpx.Response]]:
        out: list[tuple[str, httpx.Response]] = []
        with httpx.Client(headers={"Authorization": f"Bearer {token(market='eu')}"}, timeout=10) as client:
            for i in range(60):  # bounded; ends once the rebuilds are done and each thread made 6
                if done.is_set() and i >= 6:
                    break
                during[worker] += building.is_set() and not done.is_set()
                kind = ("ask", "search", "plan")[(worker + i) % 3]
                if kind == "search":
                    out.append((kind, client.post(f"{url}/v1/search", json={"text": "gift cards expire warranty", "k": 10})))
                else:
                    out.append((kind, client.post(f"{url}/v1/{kind}", json={"message": KB[1], "history": KB[0], **({"k": 10} if kind == "ask" else {})})))
        return out

    builder = threading.Thread(target=rebuild)
    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(stream, w) for w in range(THREADS)]
        builder.start()
        results = [x for f in futures for x in f.result()]
    builder.join(timeout=30)
    assert len(rebuilds) == 3 and len(set(rebuilds)) == 3
    assert len(results) >= THREADS * 6 and all(during[w] >= 2 for w in range(THREADS)), during  # the requests ran through the rebuilds
    ids = {c.id for c in shop}
    for kind, r in results:
        where = (kind, r.status_code, r.text[:2000])
        assert r.status_code == 200, where
        if kind == "plan":
            assert PlanResponse.model_validate(r.json()).plan.queries, where
            continue
        hits = SearchResponse.model_validate(r.json()).hits if kind == "search" else AskResponse.model_validate(r.json()).hits
        assert hits, where
        # The build it opened: no chunk of the new corpus, the old texts.
        assert all(h.id in ids for h in hits) and not any("24-month" in h.text for h in hits), where
    assert qw.index.manifest.build_id == opened and qw.index.build.is_dir()  # still there: a build is never removed while held
    assert read_current(folder) == rebuilds[-1] != opened
    with Index.open(folder, settings=qw.settings, embedder=hash_embedder) as fresh:  # a restart would serve the new build
        assert "gift-cards" in [h.id for h in fresh.search("gift cards expire", k=3)]

"""The LLM as a listwise reranker, through the LLM tier with the scripted provider."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shop_deployment import shop_settings

from querywise.config import LLMSettings, Price, RerankSettings, Settings
from querywise.corpus import Chunk
from querywise.index import Hit, Index, build_index
from querywise.llm.provider import LLMError
from querywise.llm.scripted import ScriptedProvider
from querywise.plan import PlanQuery, QueryPlan
from querywise.service import QueryWise
from querywise.understand.llm_rerank import listwise, rerank_key

PRICE = Price(usd_per_m_in=1.0, usd_per_m_out=5.0)


@pytest.fixture
def index(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> Iterator[Index]:
    with build_index(shop, tmp_path / "ix", settings=Settings(cache_dir=tmp_path / "c"), embedder=hash_embedder) as ix:
        yield ix


def _hits(n: int) -> list[Hit]:
    return [Hit(id=f"h{i}", score=1.0 / (i + 1), rank=i + 1, text=f"passage {i}") for i in range(n)]


def _provider(key: str, output: dict[str, Any] | None = None, *, error: str | None = None) -> ScriptedProvider:
    record: dict[str, Any] = {"task": "rerank", "input": key, "usage": {"input_tokens": 900, "output_tokens": 20}}
    record.update({"error": error} if error else {"output": output})
    return ScriptedProvider.from_records([record])


def test_the_order_becomes_scores_and_what_it_leaves_out_keeps_the_fused_order() -> None:
    hits = _hits(5)
    provider = _provider(rerank_key("q", hits), {"order": [3, 1, 9, 3]})
    called = listwise(provider, "q", hits, passage_chars=100, timeout_s=1.0)
    order = sorted(range(5), key=lambda i: -called.value[i])
    assert order == [2, 0, 1, 3, 4]  # 3, 1 ranked; 2, 4, 5 after them as fused
    assert any("9: no such passage" in n for n in called.notes) and any("listed twice" in n for n in called.notes)
    content = provider.calls[0].messages[0].content
    assert "[1] passage 0" in content and "[5] passage 4" in content and "Message: q" in content


def test_an_order_that_names_no_candidate_is_a_schema_violation() -> None:
    hits = _hits(3)
    with pytest.raises(LLMError) as info:
        listwise(_provider(rerank_key("q", hits), {"order": [7, 0]}), "q", hits, passage_chars=100, timeout_s=1.0)
    assert info.value.reason == "schema_violation"


def _settings(tmp_path: Path, **llm: Any) -> Settings:
    """The shop's deployment (one search route, kb_search) with the LLM reranking its top 4."""
    s = shop_settings(tmp_path)
    return s.model_copy(update={"rerank": RerankSettings(kind="llm", top_n=4), "llm": LLMSettings(default_price=PRICE, **llm),
                                "understanding": s.understanding.model_copy(update={"moves": [*s.understanding.moves, "exact_lookup"]})})


PLAN = QueryPlan(message="vela x3 warranty", route="kb_search", queries=[PlanQuery(text="vela x3 warranty", kind="original")])


def test_the_plan_runs_with_the_llms_order_its_cost_in_the_trace_and_the_cache_serves_a_repeat(index: Index, tmp_path: Path) -> None:
    with QueryWise(Settings(cache_dir=tmp_path / "c"), index) as plain:
        fused = plain.execute(PLAN, k=4).hits
    provider = _provider(rerank_key(PLAN.message, fused), {"order": [4, 3, 2, 1]})
    with QueryWise(_settings(tmp_path), index, provider=provider) as qw:
        result = qw.execute(PLAN, k=3)
        again = qw.execute(PLAN, k=3)
        budget = qw.understander.tier.budget.report()  # type: ignore[union-attr]
    assert [h.id for h in result.hits] == [h.id for h in reversed(fused)][:3]  # k kept of the reordered top 4
    step = result.plan.step("rerank")
    assert step is not None and step.status == "ran" and step.llm_calls == 1 and step.details["candidates"] == 4
    assert step.llm is not None and step.llm.input_tokens == 900 and step.llm.prompt_version == "rerank-1"
    assert step.cost_usd == pytest.approx((900 * 1.0 + 20 * 5.0) / 1e6)
    assert [h.id for h in again.hits] == [h.id for h in result.hits]
    assert again.plan.step("rerank").llm.cache == "hit"  # type: ignore[union-attr]
    assert len(provider.calls) == 1 and budget.calls == 1 and budget.cache_hits == 1


@pytest.mark.parametrize("error", ["timeout", "rate_limited", None])
def test_a_failed_call_keeps_the_fused_order_even_on_a_fail_closed_route(index: Index, tmp_path: Path, error: str | None) -> None:
    with QueryWise(Settings(cache_dir=tmp_path / "c"), index) as plain:
        fused = plain.execute(PLAN, k=4).hits
    # None: an answer out of schema (a string where the numbers go).
    provider = _provider(rerank_key(PLAN.message, fused), {"order": "first"} if error is None else None, error=error)
    with QueryWise(_settings(tmp_path, fail_policy={"kb_search": "closed"}), index, provider=provider) as qw:
        result = qw.execute(PLAN, k=4)
        budget = qw.understander.tier.budget.report()  # type: ignore[union-attr]
    assert [h.id for h in result.hits] == [h.id for h in fused]
    step = result.plan.step("rerank")
    reason = error or "schema_violation"
    assert step is not None and step.status == "fallback" and step.llm is not None and step.llm.fallback == reason
    assert step.llm.policy == "open" and "the fused order stands" in step.reason
    assert budget.fallbacks == {reason: 1}


def test_an_identifier_lookup_is_not_reranked(index: Index, tmp_path: Path) -> None:
    provider = ScriptedProvider.from_records([])
    with QueryWise(_settings(tmp_path), index, provider=provider) as qw:
        plan = qw.plan("QR-5126", session={"market": "eu"})
        result = qw.execute(plan, k=3)
    exact = [q.text for q in plan.queries if q.kind == "exact"]
    assert exact and result.plan.step("execute").details["exact"][exact[0]]  # type: ignore[union-attr]  # the lookup found its chunks
    step = result.plan.step("rerank")
    assert step is not None and step.status == "skipped" and "identifier lookup" in step.reason and not provider.calls


def test_an_llm_reranker_needs_a_provider(index: Index, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs an \\[llm\\] provider"):
        QueryWise(_settings(tmp_path), index)


def test_with_the_overlap_the_reused_raw_search_is_reranked_once_on_the_plans_route(index: Index, tmp_path: Path) -> None:
    message, eu = "how many hours do the Pico Buds play", {"market": "eu"}
    with QueryWise(shop_settings(tmp_path), index) as plain:
        fused = plain.ask(message, session=eu, k=4).hits
    provider = _provider(rerank_key(message, fused), {"order": [2, 1]})
    with QueryWise(_settings(tmp_path), index, provider=provider) as qw:
        result = qw.ask(message, session=eu, k=2)
    moves = [s.move for s in result.plan.trace]
    assert result.plan.step("overlap").status == "ran", (result.plan.queries, result.plan.filters)  # type: ignore[union-attr]
    assert moves.count("rerank") == 1 and moves.index("rerank") > moves.index("execute")
    assert [h.id for h in result.hits] == [fused[1].id, fused[0].id] and len(provider.calls) == 1

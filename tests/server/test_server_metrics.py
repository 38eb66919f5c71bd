"""The LLM tier's counters as /metrics exports them: what the budget counted, read at scrape time."""

from __future__ import annotations

from pathlib import Path

from shop_deployment import shop_settings

from querywise.llm.provider import Usage
from querywise.llm.scripted import ScriptedProvider
from querywise.server.metrics import ServiceMetrics
from querywise.service import QueryWise


def test_the_tiers_counters_are_exported(tmp_path: Path) -> None:
    with QueryWise(shop_settings(tmp_path), None, provider=ScriptedProvider.from_records([])) as qw:
        budget = qw.understander.tier.budget  # type: ignore[union-attr]
        budget.record_call(Usage(input_tokens=600, output_tokens=80), 0.4)
        budget.record_fallback("timeout")
        budget.record_dropped("access")
        budget.record_dropped("access")
        budget.record_dropped("filter")
        text = ServiceMetrics(qw).render().decode()
    assert "querywise_llm_calls_total 1.0" in text and 'querywise_llm_fallbacks_total{reason="timeout"} 1.0' in text
    assert 'querywise_llm_proposals_dropped_total{kind="access"} 2.0' in text and 'querywise_llm_proposals_dropped_total{kind="filter"} 1.0' in text
    assert 'querywise_llm_tokens_total{direction="input"} 600.0' in text and "querywise_llm_fallback_rate 1.0" in text  # 1 of 1 fell back

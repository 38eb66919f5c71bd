"""Budget counters, the cost model, the single-turn cache and `querywise cost`."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querywise.cli import app
from querywise.config import LLMSettings, Price, Settings, load_settings
from querywise.llm.budget import Budget
from querywise.llm.cache import RewriteCache, config_version
from querywise.llm.cost import call_latency_s, cost_model
from querywise.llm.provider import Usage

PRICE = Price(usd_per_m_in=1.0, usd_per_m_out=5.0)


def test_budget_counts_calls_tokens_cost_latency_and_fallbacks(caplog: pytest.LogCaptureFixture) -> None:
    b = Budget(price=PRICE, warn_rate=0.2, min_calls=5)
    for latency in (0.1, 0.2, 0.3, 0.4):
        b.record_call(Usage(input_tokens=600, output_tokens=80), latency)
    r = b.report()
    assert (r.calls, r.input_tokens, r.output_tokens) == (4, 2400, 320)
    assert r.cost_usd == pytest.approx(4 * (600 / 1e6 + 80 * 5 / 1e6))
    assert r.latency_p50_ms == pytest.approx(250.0) and r.latency_p95_ms == pytest.approx(385.0)
    assert r.warning is None
    with caplog.at_level(logging.WARNING, logger="querywise.llm"):
        b.record_call(Usage(), 2.0)
        b.record_fallback("timeout")  # 1 of 5 = 20%: not above the threshold
        assert b.report().warning is None
        b.record_call(Usage(), 2.0)
        b.record_fallback("timeout")  # 2 of 6 = 33%
    r = b.report()
    assert r.fallbacks == {"timeout": 2} and r.fallback_rate == pytest.approx(2 / 6)
    assert r.warning is not None and "33.3%" in r.warning
    assert [rec.message for rec in caplog.records] == [r.warning]  # logged once, not per call


def test_cost_model_arithmetic() -> None:
    assert call_latency_s(80, ttft_s=0.4, tokens_per_s=120) == pytest.approx(0.4 + 80 / 120)
    m = cost_model(price=Price(usd_per_m_in=3, usd_per_m_out=15), ttft_s=0.5, tokens_per_s=50, chain=[(100, 10)] * 2, one_call=(1000, 100), gated_share=0.04)
    assert m.chain.added_s == round(2 * (0.5 + 10 / 50), 2) and m.chain.usd_per_1000 == round(2 * (100 * 3 + 10 * 15) / 1e6 * 1000, 2)
    assert m.one_call.added_s == 2.5 and m.one_call.usd_per_1000 == round((1000 * 3 + 100 * 15) / 1e6 * 1000, 2)
    # 4% of requests on the slow path: below the 5% tail, so p95 adds nothing.
    assert m.gated.added_s_mean == 0.1 and m.gated.added_s_p95 == 0.0 and "adds nothing" in m.gated.p95_note


def test_cache_is_single_turn_and_versioned() -> None:
    c = RewriteCache(2, "v1")
    c.put("plan", "Is it waterproof?", (), "a")
    assert c.get("plan", "is it  waterproof?", ()) == "a"
    assert c.get("plan", "Is it waterproof?", ("Tell me about the Aero X2",)) is None  # never conversational
    c.put("plan", "Is it waterproof?", ("Tell me about the Aero X2",), "b")
    assert len(c) == 1
    assert RewriteCache(2, "v2").get("plan", "Is it waterproof?", ()) is None
    c.put("hyde", "x", (), 1)
    c.put("hyde", "y", (), 2)  # evicts the least recently used
    assert c.get("plan", "Is it waterproof?", ()) is None and c.get("hyde", "y", ()) == 2
    s = Settings()
    assert config_version(s) == config_version(Settings())
    assert config_version(s) != config_version(s.model_copy(update={"llm": LLMSettings(model="other")}))


def test_llm_section_of_the_config(tmp_path: Path) -> None:
    (tmp_path / "responses.jsonl").write_text("", encoding="utf-8")
    cfg = tmp_path / "querywise.toml"
    cfg.write_text(
        """
[routing]
high_stakes = ["account"]
[[routing.routes]]
name = "kb_search"
search = true
[[routing.routes]]
name = "account"
[llm]
provider = "scripted"
scripted_file = "responses.jsonl"
timeouts = { kb_search = 1.5 }
fail_policy = { kb_search = "closed" }
prices = { scripted = { usd_per_m_in = 1.0, usd_per_m_out = 5.0 } }
[understanding]
moves = ["follow_up", "llm_rewrite", "hyde"]
""",
        encoding="utf-8",
    )
    s = load_settings(cfg)
    assert s.llm.scripted_file == tmp_path / "responses.jsonl"
    assert s.llm.timeout_for("kb_search") == 1.5 and s.llm.timeout_for("account") == s.llm.timeout_s
    assert s.fails_closed("kb_search") and s.fails_closed("account") and not s.fails_closed(None)
    assert s.llm.price_for("scripted") == PRICE
    cfg.write_text('[llm]\nprovider = "anthropic"\n', encoding="utf-8")
    with pytest.raises(Exception, match="needs model"):
        load_settings(cfg)
    cfg.write_text('[[routing.routes]]\nname = "kb_search"\n[llm]\ntimeouts = { nowhere = 1.0 }\n', encoding="utf-8")
    with pytest.raises(Exception, match="unknown route 'nowhere'"):
        load_settings(cfg)


def test_cost_command_json_and_table(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["cost", "--json", "--usd-per-m-in", "2", "--usd-per-m-out", "10", "--ttft", "0.2", "--tokens-per-s", "100",
                              "--chain", "400,20", "--chain", "400,20", "--one-call", "700,50", "--gated", "0.5"])  # fmt: skip
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["chain"]["added_s"] == 0.8 and d["chain"]["usd_per_1000"] == round(2 * (400 * 2 + 20 * 10) / 1e3, 2)
    assert d["one_call"]["added_s"] == 0.7 and d["gated"]["added_s_mean"] == 0.35 and d["gated"]["added_s_p95"] == 0.7
    res = runner.invoke(app, ["cost"])
    assert res.exit_code == 0 and "+1.07 s" in res.stdout and "0.30" in res.stdout
    bad = runner.invoke(app, ["cost", "--one-call", "600"])
    assert bad.exit_code == 2 and "IN,OUT" in bad.output


def test_cost_shows_the_llm_reranker_when_it_is_configured(tmp_path: Path) -> None:
    runner = CliRunner()
    assert json.loads(runner.invoke(app, ["cost", "--json"]).stdout)["rerank"] is None  # not configured, not asked for
    cfg = tmp_path / "q.toml"
    cfg.write_text('[rerank]\nkind = "llm"\ntop_n = 10\npassage_chars = 400\n', encoding="utf-8")
    d = json.loads(runner.invoke(app, ["cost", "--json", "--config", str(cfg), "--ttft", "0.5", "--tokens-per-s", "100"]).stdout)
    (tokens_in, tokens_out), = d["rerank"]["calls"]
    assert d["rerank_top_n"] == 10 and (tokens_in, tokens_out) == (110 + 10 * (100 + 3), 6 + 30)  # 400 chars ~ 100 tokens each
    assert d["rerank"]["added_s"] == round(0.5 + 36 / 100, 2) and d["rerank"]["usd_per_1000"] == round((1140 * 1.0 + 36 * 5.0) / 1e3, 2)
    table = runner.invoke(app, ["cost", "--rerank-top", "30"]).stdout
    assert "LLM rerank" in table and "top 30" in table  # (the table wraps to the terminal)

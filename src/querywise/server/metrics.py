"""`GET /metrics` in the Prometheus text format (prometheus-client), one registry per app.

Per route: requests by status and a latency histogram; per move of the plan: a latency histogram
read from each plan's trace. The LLM tier's counters (calls, fallbacks by reason, cache hits,
tokens, cost, the fallback rate and its alert) are read from the tier's budget at scrape time, so
they are exactly what the library counted. Each worker process has its own registry (scrape
each, or run one worker per container): a multi-process aggregate is not attempted.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from querywise.plan import QueryPlan
from querywise.service import QueryWise

__all__ = ["CONTENT_TYPE", "ServiceMetrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _TierCollector(Collector):
    def __init__(self, deployment: QueryWise) -> None:
        self.deployment = deployment

    def collect(self) -> Iterator[Metric]:
        tier = self.deployment.understander.tier
        if tier is None:
            return
        r = tier.budget.report()
        yield CounterMetricFamily("querywise_llm_calls", "LLM calls attempted", value=r.calls)
        yield CounterMetricFamily("querywise_llm_moves_not_called", "LLM moves that fell back without a call", value=r.skipped)
        yield CounterMetricFamily("querywise_llm_cache_hits", "LLM results served from the single-turn cache", value=r.cache_hits)
        fallbacks = CounterMetricFamily("querywise_llm_fallbacks", "LLM moves that fell back, by reason", labels=["reason"])
        for reason, n in sorted(r.fallbacks.items()):
            fallbacks.add_metric([reason], n)
        yield fallbacks
        dropped = CounterMetricFamily("querywise_llm_proposals_dropped", "filters the LLM proposed that the validator dropped, by kind "
                                      "(access: on an access field)", labels=["kind"])
        for kind in ("access", "filter"):
            dropped.add_metric([kind], r.dropped.get(kind, 0))
        yield dropped
        tokens = CounterMetricFamily("querywise_llm_tokens", "LLM tokens", labels=["direction"])
        tokens.add_metric(["input"], r.input_tokens)
        tokens.add_metric(["output"], r.output_tokens)
        yield tokens
        yield CounterMetricFamily("querywise_llm_cost_usd", "LLM cost at the configured prices", value=r.cost_usd)
        yield GaugeMetricFamily("querywise_llm_fallback_rate", "fallbacks / LLM moves", value=r.fallback_rate)
        yield GaugeMetricFamily("querywise_llm_fallback_alert", "1 when the fallback rate is above [llm] fallback_warn_rate",
                                value=1.0 if r.warning else 0.0)


class ServiceMetrics:
    def __init__(self, deployment: QueryWise) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("querywise_requests", "HTTP requests", ["route", "status"], registry=self.registry)
        self.latency = Histogram("querywise_request_seconds", "HTTP request latency", ["route"], buckets=_BUCKETS, registry=self.registry)
        self.moves = Histogram("querywise_move_seconds", "latency of each move of the plans made", ["move", "status"], buckets=_BUCKETS,
                               registry=self.registry)
        self.registry.register(_TierCollector(deployment))

    def observe(self, route: str, status: int, seconds: float) -> None:
        self.requests.labels(route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def observe_plan(self, plan: QueryPlan) -> None:
        for step in plan.trace:
            self.moves.labels(step.move, step.status).observe(step.latency_ms / 1000)

    def render(self) -> bytes:
        return generate_latest(self.registry)

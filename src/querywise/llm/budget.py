"""Counters of the LLM tier: calls, fallbacks by reason, tokens, cost, latency, and a warning
when too many calls fall back. Thread-safe: a server's workers share one budget."""

from __future__ import annotations

import logging
import threading
from collections import Counter

import numpy as np
from pydantic import BaseModel, Field

from querywise.config import Price
from querywise.llm.provider import Usage

__all__ = ["Budget", "BudgetReport", "cost_usd"]

log = logging.getLogger("querywise.llm")


def cost_usd(usage: Usage, price: Price | None) -> float:
    """What `usage` costs at `price` (0 without a price)."""
    if price is None:
        return 0.0
    return usage.input_tokens * price.usd_per_m_in / 1e6 + usage.output_tokens * price.usd_per_m_out / 1e6


class BudgetReport(BaseModel):
    """A snapshot of the counters."""

    requests: int = 0  # messages planned
    requests_with_llm: int = 0  # ... of which at least one LLM call was attempted (or served from cache)
    calls: int = 0  # LLM calls attempted (successful or not)
    skipped: int = 0  # LLM moves that fell back without a call (provider unavailable, the request's deadline already spent)
    cache_hits: int = 0
    fallbacks: dict[str, int] = Field(default_factory=dict)  # reason -> count
    dropped: dict[str, int] = Field(default_factory=dict)  # proposed filters the validator dropped, by kind
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    fallback_rate: float = 0.0  # fallbacks / (calls + skipped): the share of LLM moves that fell back
    warning: str | None = None

    @property
    def llm_share(self) -> float:
        return self.requests_with_llm / self.requests if self.requests else 0.0


class Budget:
    """Counts what the LLM tier spends and how often it falls back.

    >>> b = Budget(price=Price(usd_per_m_in=1.0, usd_per_m_out=5.0), warn_rate=0.05, min_calls=1)
    >>> round(b.record_call(Usage(input_tokens=600, output_tokens=80), 1.07), 6)
    0.001
    """

    def __init__(self, *, price: Price | None = None, warn_rate: float = 0.05, min_calls: int = 20) -> None:
        self.price, self.warn_rate, self.min_calls = price, warn_rate, min_calls
        self._lock = threading.Lock()
        self._fallbacks: Counter[str] = Counter()
        self._dropped: Counter[str] = Counter()
        self._latencies: list[float] = []
        self._calls = self._skipped = self._hits = self._in = self._out = self._requests = self._with_llm = 0
        self._cost = 0.0
        self._warned = False

    def record_request(self, *, used_llm: bool) -> None:
        with self._lock:
            self._requests += 1
            self._with_llm += int(used_llm)

    def record_call(self, usage: Usage, latency_s: float) -> float:
        """Count one attempted call (also a failed one: it cost time, maybe tokens); its cost."""
        cost = cost_usd(usage, self.price)
        with self._lock:
            self._calls += 1
            self._in += usage.input_tokens
            self._out += usage.output_tokens
            self._cost += cost
            self._latencies.append(latency_s)
        return cost

    def record_skipped(self) -> None:
        """An LLM move that fell back without calling (its fallback is recorded separately)."""
        with self._lock:
            self._skipped += 1

    def record_cache_hit(self) -> None:
        with self._lock:
            self._hits += 1

    def record_dropped(self, kind: str) -> None:
        """A proposed filter the validator dropped ("access" when it tried to set access)."""
        with self._lock:
            self._dropped[kind] += 1

    def record_fallback(self, reason: str) -> None:
        with self._lock:
            self._fallbacks[reason] += 1
        report = self.report()
        if report.warning and not self._warned:
            self._warned = True
            log.warning(report.warning)

    def report(self) -> BudgetReport:
        with self._lock:
            lat = np.asarray(self._latencies, dtype=np.float64) * 1000
            n_fb = sum(self._fallbacks.values())
            moves = self._calls + self._skipped
            rate = n_fb / moves if moves else 0.0
            warning = None
            if moves >= self.min_calls and rate > self.warn_rate:
                top = ", ".join(f"{r} {c}" for r, c in self._fallbacks.most_common(3))
                counted = f"{self._calls} calls" + (f" and {self._skipped} moves not called" if self._skipped else "")
                warning = f"LLM fallback rate {rate:.1%} of {counted} is above {self.warn_rate:.1%} ({top})"
            return BudgetReport(
                requests=self._requests, requests_with_llm=self._with_llm, calls=self._calls, skipped=self._skipped, cache_hits=self._hits,
                fallbacks=dict(self._fallbacks), dropped=dict(self._dropped), input_tokens=self._in, output_tokens=self._out, cost_usd=round(self._cost, 8),
                latency_p50_ms=round(float(np.percentile(lat, 50)), 3) if lat.size else None,
                latency_p95_ms=round(float(np.percentile(lat, 95)), 3) if lat.size else None,
                fallback_rate=round(rate, 6), warning=warning,
            )

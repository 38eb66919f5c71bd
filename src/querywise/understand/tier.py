"""The LLM tier as the pipeline uses it: one provider, the budget, the single-turn cache and
the per-route timeout and failure policy, around each call. Every call, cache hit and fallback
becomes a trace step."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from querywise.checks.filters import Dropped
from querywise.config import Settings
from querywise.llm.budget import Budget
from querywise.llm.cache import RewriteCache, config_version
from querywise.llm.provider import LLMError, Provider, StructuredResult
from querywise.plan import LLMCallInfo, TraceStep

__all__ = ["Called", "LLMTier"]

T = TypeVar("T")


@dataclass(frozen=True)
class Called(Generic[T]):
    """A move's checked value, the call that produced it, and what the checks removed: `dropped`
    filters (typed, so an access drop is counted as one) and `notes` on anything else dropped."""

    value: T
    result: StructuredResult
    prompt_version: str
    notes: tuple[str, ...] = ()
    dropped: tuple[Dropped, ...] = ()

    def removed(self) -> list[str]:
        """What the checks removed, one line each, for the trace."""
        return [*self.notes, *(f"{d.field}={d.value!r}: {d.reason}" for d in self.dropped)]


class LLMTier:
    """Runs LLM moves for the pipeline.

    >>> tier = LLMTier(settings, ScriptedProvider.load("responses.jsonl"))   # doctest: +SKIP
    """

    def __init__(self, settings: Settings, provider: Provider, *, budget: Budget | None = None, cache: RewriteCache[Any] | None = None) -> None:
        self.settings, self.provider = settings, provider
        llm = settings.llm
        self.price = llm.price_for(provider.model)
        self.budget = budget or Budget(price=self.price, warn_rate=llm.fallback_warn_rate)
        self.cache: RewriteCache[Any] = cache if cache is not None else RewriteCache(llm.cache_size, config_version(settings))

    def policy(self, route: str | None) -> Literal["open", "closed"]:
        return "closed" if self.settings.fails_closed(route) else "open"

    def run(
        self,
        move: str,
        fn: Callable[[float], Called[T]],
        *,
        route: str | None,
        text: str,
        history: Sequence[str] = (),
        why: str = "",
    ) -> tuple[Called[T] | None, TraceStep]:
        """Call `fn(timeout_s)` (or serve a single-turn result from the cache); on `LLMError`
        count the fallback and return None with a `fallback` step naming the reason."""
        cached: Called[T] | None = self.cache.get(move, text, history)
        if cached is not None:
            self.budget.record_cache_hit()
            return cached, TraceStep(move=move, status="ran", reason=f"{why}; served from the single-turn cache".lstrip("; "),
                                     llm=LLMCallInfo(cache="hit", prompt_version=cached.prompt_version))
        timeout = self.settings.llm.timeout_for(route)
        started = time.perf_counter()
        try:
            called = fn(timeout)
        except LLMError as exc:
            latency = exc.latency_s or (time.perf_counter() - started)
            cost = self.budget.record_call(exc.usage, latency) if exc.reason != "unavailable" else 0.0
            self.budget.record_fallback(exc.reason)
            policy = self.policy(route)
            return None, TraceStep(
                move=move, status="fallback",
                reason=f"{why}; LLM {exc.reason}: {exc.detail}; fail-{policy} on route {route}".lstrip("; "),
                latency_ms=round(latency * 1000, 3), llm_calls=1, cost_usd=round(cost, 8),
                llm=LLMCallInfo(model=self.provider.model, timeout_s=timeout, fallback=exc.reason, policy=policy),
            )
        r = called.result
        cost = self.budget.record_call(r.usage, r.latency_s)
        self.cache.put(move, text, history, called)
        info = LLMCallInfo(
            model=r.model or self.provider.model, prompt_version=called.prompt_version, timeout_s=timeout,
            input_tokens=r.usage.input_tokens, output_tokens=r.usage.output_tokens, cache="never" if history else "miss",
        )
        for d in called.dropped if move == "llm_plan" else ():
            self.budget.record_dropped("access" if d.access else "filter")
        return called, TraceStep(move=move, status="ran", reason=why or move, latency_ms=round(r.latency_s * 1000, 3),
                                 llm_calls=1, cost_usd=round(cost, 8), llm=info,
                                 details={"dropped": called.removed()} if called.removed() else {})

    def close(self) -> None:
        self.provider.close()

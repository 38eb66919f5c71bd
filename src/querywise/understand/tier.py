"""The LLM tier as the pipeline uses it: one provider, the budget, the single-turn cache and
the per-route deadline and failure policy, around each call. Every call, cache hit and fallback
becomes a trace step.

Two guarantees, whatever the provider does:

- **One deadline per message.** `start_request()` (the pipeline calls it at the start of each
  plan) opens a request; its clock starts at the first LLM call, and every LLM move of the message
  (the plan call, the enrichments) gets what is left of the route's `timeout_for(route)`. A move
  that finds nothing left falls back as `timeout` without calling. Each call runs in a worker
  thread and the tier stops waiting at the deadline: the call is abandoned (its thread is a
  daemon; the SDK providers keep to the deadline themselves, so it ends soon after) and counted
  as a `timeout`. Without `start_request()` every call has its own deadline.
- **Nothing escapes.** `LLMError` is a fallback with its reason; any other exception (a bug in a
  provider or a check, `RecursionError`...) is logged and counted as `provider_error`. Both follow
  the route's fail-open / fail-closed policy in the pipeline.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from querywise.checks.filters import Dropped
from querywise.clock import ms
from querywise.config import Settings
from querywise.llm.budget import Budget
from querywise.llm.cache import RewriteCache, config_version
from querywise.llm.provider import LLMError, Provider, StructuredResult
from querywise.plan import LLMCallInfo, TraceStep

__all__ = ["Called", "LLMTier"]

T = TypeVar("T")

log = logging.getLogger("querywise.llm")

_MIN_CALL_S = 0.01  # less than this left of the deadline: the move falls back without calling


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


@dataclass
class _Request:
    started: float | None = None  # perf_counter() of the message's first LLM call


class LLMTier:
    """Runs LLM moves for the pipeline.

    >>> tier = LLMTier(settings, ScriptedProvider.load("responses.jsonl"))   # doctest: +SKIP
    """

    max_abandoned = 16  # calls abandoned at their deadline and still running; past this, moves fall back at once

    def __init__(self, settings: Settings, provider: Provider, *, budget: Budget | None = None, cache: RewriteCache[Any] | None = None) -> None:
        self.settings, self.provider = settings, provider
        llm = settings.llm
        self.price = llm.price_for(provider.model)
        self.budget = budget or Budget(price=self.price, warn_rate=llm.fallback_warn_rate)
        self.cache: RewriteCache[Any] = cache if cache is not None else RewriteCache(llm.cache_size, config_version(settings))
        self._local = threading.local()  # the current request of each thread (a server's workers share the tier)
        self._lock = threading.Lock()
        self._abandoned: list[threading.Thread] = []

    def policy(self, route: str | None) -> Literal["open", "closed"]:
        return "closed" if self.settings.fails_closed(route) else "open"

    def start_request(self) -> None:
        """A new message: its LLM moves share one deadline, from its first LLM call on."""
        self._local.request = _Request()

    def _time_left(self, route: str | None) -> tuple[float, float]:
        """(the route's timeout, the seconds left of it for this request); starts the clock."""
        timeout = self.settings.llm.timeout_for(route)
        now = time.perf_counter()
        request: _Request | None = getattr(self._local, "request", None)
        if request is None:
            return timeout, timeout
        if request.started is None:
            request.started = now
        return timeout, timeout - (now - request.started)

    def run(
        self,
        move: str,
        fn: Callable[[float], Called[T]],
        *,
        route: str | None,
        text: str,
        history: Sequence[object] = (),
        why: str = "",
        fails_open: bool = False,
    ) -> tuple[Called[T] | None, TraceStep]:
        """Call `fn(seconds_left)` within the request's deadline (or serve a single-turn result
        from the cache); on any failure count the fallback and return None with a `fallback` step
        naming the reason and the policy (the route's, or open for a move that `fails_open`
        whatever the route). Never raises (but `KeyboardInterrupt` and `SystemExit`)."""
        cached: Called[T] | None = self.cache.get(move, text, history)
        if cached is not None:
            self.budget.record_cache_hit()
            return cached, TraceStep(move=move, status="ran", reason=f"{why}; served from the single-turn cache".lstrip("; "),
                                     llm=LLMCallInfo(cache="hit", prompt_version=cached.prompt_version))
        timeout, left = self._time_left(route)
        if left < min(_MIN_CALL_S, timeout):
            spent = LLMError("timeout", f"the request's {timeout:g} s LLM deadline was spent by earlier LLM moves: not called")
            return None, self._fallback(move, route, why, spent, budget_s=0.0, latency=0.0, called=False, fails_open=fails_open)
        started = time.perf_counter()
        try:
            called = self._bounded(fn, left)
        except LLMError as exc:
            latency = exc.latency_s or (time.perf_counter() - started)
            return None, self._fallback(move, route, why, exc, budget_s=left, latency=latency, called=exc.reason != "unavailable", fails_open=fails_open)
        except Exception as exc:  # a bug in a provider or a check: counted, never propagated
            log.warning("LLM move %s failed unexpectedly; falling back", move, exc_info=True)
            error = LLMError("provider_error", f"{type(exc).__name__}: {exc}"[:300])
            return None, self._fallback(move, route, why, error, budget_s=left, latency=time.perf_counter() - started, called=True, fails_open=fails_open)
        r = called.result
        cost = self.budget.record_call(r.usage, r.latency_s)
        self.cache.put(move, text, history, called)
        info = LLMCallInfo(
            model=r.model or self.provider.model, prompt_version=called.prompt_version, timeout_s=round(left, 3),
            input_tokens=r.usage.input_tokens, output_tokens=r.usage.output_tokens, cache="never" if history else "miss",
        )
        for d in called.dropped if move == "llm_plan" else ():
            self.budget.record_dropped("access" if d.access else "filter")
        return called, TraceStep(move=move, status="ran", reason=why or move, latency_ms=ms(r.latency_s),
                                 llm_calls=1, cost_usd=round(cost, 8), llm=info,
                                 details={"dropped": called.removed()} if called.removed() else {})

    def _fallback(self, move: str, route: str | None, why: str, exc: LLMError, *, budget_s: float, latency: float, called: bool,
                  fails_open: bool = False) -> TraceStep:
        """Count a failed move (a call, or a move that never called) and its `fallback` step."""
        if called:
            cost = self.budget.record_call(exc.usage, latency)
        else:
            cost = 0.0
            self.budget.record_skipped()
        self.budget.record_fallback(exc.reason)
        policy = "open" if fails_open else self.policy(route)
        return TraceStep(
            move=move, status="fallback",
            reason=f"{why}; LLM {exc.reason}: {exc.detail}; fail-{policy} on route {route}".lstrip("; "),
            latency_ms=ms(latency), llm_calls=int(called), cost_usd=round(cost, 8),
            llm=LLMCallInfo(model=self.provider.model, timeout_s=round(budget_s, 3), fallback=exc.reason, policy=policy),
        )

    def _bounded(self, fn: Callable[[float], Called[T]], seconds: float) -> Called[T]:
        """`fn(seconds)` in a worker thread; `LLMError("timeout")` if it has not returned after
        `seconds` (the thread is left to finish on its own). Its exception, if it raised."""
        with self._lock:
            self._abandoned = [t for t in self._abandoned if t.is_alive()]
            stuck = len(self._abandoned)
        if stuck >= self.max_abandoned:
            raise LLMError("unavailable", f"{stuck} calls abandoned at their deadline are still running: the provider is stuck")
        outcome: list[tuple[bool, Any]] = []
        done = threading.Event()
        context = contextvars.copy_context()  # the caller's context variables (tracing...) go with the call

        def work() -> None:
            try:
                outcome.append((True, context.run(fn, seconds)))
            except BaseException as exc:  # handed to the caller, which decides
                outcome.append((False, exc))
            finally:
                done.set()

        worker = threading.Thread(target=work, name="querywise-llm-call", daemon=True)
        worker.start()
        if not done.wait(seconds):
            with self._lock:
                self._abandoned.append(worker)
            raise LLMError("timeout", f"no answer within the {seconds:.3g} s left of the deadline: the call was abandoned", latency_s=seconds)
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    def wait_abandoned(self, timeout: float) -> int:
        """Wait up to `timeout` seconds for the calls abandoned at their deadline to end (a
        graceful shutdown; a test that times the next call); returns how many still run."""
        until = time.perf_counter() + timeout
        with self._lock:
            threads = list(self._abandoned)
        for t in threads:
            t.join(max(0.0, until - time.perf_counter()))
        with self._lock:
            self._abandoned = [t for t in self._abandoned if t.is_alive()]
            return len(self._abandoned)

    def close(self) -> None:
        self.provider.close()

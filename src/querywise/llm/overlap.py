"""Overlap: retrieval for the raw message runs while the LLM works.

Most messages end up searched as typed (pass-through is the default, and a failed LLM call on a
fail-open route keeps the raw message). So while `Understander.plan` waits for the LLM, a
worker thread already searches the raw message with the session's access constraints. If the
final plan is exactly that search (one `original` query, no filters), its result is reused and
the LLM's latency is the only latency; otherwise the final plan is executed as usual and the
speculative search is dropped (it cost one search, a few ms, on another core).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from querywise.execute import PlanResult, execute
from querywise.index.engine import Mode
from querywise.plan import PlanQuery, QueryPlan, TraceStep
from querywise.understand.access import access_from_session

__all__ = ["plan_and_execute"]


def _reusable(plan: QueryPlan, message: str) -> bool:
    return (
        [(q.text, q.kind, q.mode, q.weight) for q in plan.queries] == [(message, "original", None, 1.0)]
        and not plan.filters
        and not plan.inferred_filters
    )


def plan_and_execute(
    understander: Any,
    index: Any,
    message: str,
    *,
    history: Sequence[str] = (),
    session: Mapping[str, str] | None = None,
    today: dt.date | None = None,
    k: int = 10,
    mode: Mode = "hybrid",
    depth: int = 50,
    executor: ThreadPoolExecutor | None = None,
) -> PlanResult:
    """Plan `message` and run the plan, overlapping raw-message retrieval with the LLM call
    (when an LLM tier is configured and `[llm] overlap` is on).

    >>> plan_and_execute(understander, index, "does it fold?", history=["Aero X2 specs"])  # doctest: +SKIP
    """
    tier = getattr(understander, "tier", None)
    if tier is None or not understander.settings.llm.overlap:
        plan = understander.plan(message, history=history, session=session, today=today)
        return execute(plan, index, k=k, mode=mode, depth=depth)
    access = access_from_session(session or {}, understander.settings.access)
    raw = QueryPlan(message=message, route="(speculative)", queries=[PlanQuery(text=message, kind="original")], access=access)
    own = executor is None
    pool = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix="querywise-overlap")
    started = time.perf_counter()
    try:
        future: Future[PlanResult] = pool.submit(execute, raw, index, k=k, mode=mode, depth=depth)
        plan = understander.plan(message, history=history, session=session, today=today)
        if plan.queries and _reusable(plan, message) and plan.access == access:
            speculative = future.result()
            waited = round((time.perf_counter() - started) * 1000, 3)
            step = TraceStep(move="overlap", status="ran", reason="the plan searches the raw message: reused the search started before the LLM returned",
                             latency_ms=waited, details={"reused": True})  # fmt: skip
            done = next((s for s in reversed(speculative.plan.trace) if s.move == "execute"), None)
            trace = [*plan.trace, step, *([done] if done else [])]
            return speculative.model_copy(update={"plan": plan.model_copy(update={"trace": trace})})
        step = TraceStep(move="overlap", status="skipped", reason="the plan changed the search: the speculative raw-message search was not used", details={"reused": False})
        result = execute(plan.model_copy(update={"trace": [*plan.trace, step]}), index, k=k, mode=mode, depth=depth)
        future.cancel()
        return result
    finally:
        if own:
            pool.shutdown(wait=True)

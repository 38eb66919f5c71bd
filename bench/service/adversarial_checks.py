"""The adversarial run's verdicts: each response against its request's expectation and the
credentials' access, the counts kept on the way, and what is saved of a request and a scrape."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from bench.service.adversarial_requests import Req

INJECTED = ("ignore access", "all markets", "every market", "market=")
ACCESS_WORDS = frozenset({"markets", "market", "tenant", "session", "access", "permissions"})


@dataclass
class Outcome:
    status: int
    violations: list[str] = field(default_factory=list)
    unexpected: str | None = None


class Stats:
    def __init__(self) -> None:
        self.by_category: dict[str, Counter[str]] = defaultdict(Counter)
        self.statuses: Counter[int] = Counter()
        self.kinds: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
        self.violations: list[dict[str, Any]] = []
        self.unexpected: list[dict[str, Any]] = []
        self.llm: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.other_drops: Counter[str] = Counter()
        self.injected_rewrites: list[dict[str, Any]] = []
        self.hits_checked = 0
        self.plans_checked = 0


def check(req: Req, status: int, answer: Any, stats: Stats) -> Outcome:
    """The response against the request's expectation and the credentials' access."""
    from querywise.checks.filters import ACCESS_REASON

    out = Outcome(status)
    if status not in req.expect:
        if status == 200 and req.market is None:
            out.violations.append(f"served (200) although {sorted(req.expect)} was expected: bad credentials or an access field were accepted")
        else:
            out.unexpected = f"status {status}, expected {sorted(req.expect)}: {str(answer)[:300]}"
    if status != 200:
        if isinstance(answer, dict) and ("plan" in answer or "hits" in answer):
            out.violations.append(f"a {status} answer carries a plan or hits")
        return out
    if not isinstance(answer, dict):
        out.unexpected = f"a 200 whose body is not JSON: {str(answer)[:200]}"
        return out
    market = req.market
    plan = answer.get("plan")
    if plan is not None:
        stats.plans_checked += 1
        want = {"conditions": [{"kind": "match", "field": "markets", "value": market}]}
        if plan.get("access") != want:
            out.violations.append(f"plan access {plan.get('access')} for market {market!r}")
        for which in ("filters", "inferred_filters"):
            for c in (plan.get(which) or {}).get("conditions", []):
                if c.get("field") in ACCESS_WORDS:
                    out.violations.append(f"plan {which} condition on an access field: {c}")
        for step in plan.get("trace", []):
            if step["move"] == "llm_plan":
                llm = step.get("llm") or {}
                if step["status"] == "fallback":
                    stats.llm[f"llm_plan fallback: {llm.get('fallback')} (fail-{llm.get('policy')})"] += 1
                elif step["status"] == "ran":
                    stats.llm["llm_plan ran (cache hit)" if llm.get("cache") == "hit" else "llm_plan ran (called)"] += 1
                    for d in step.get("details", {}).get("dropped", []):
                        if d.endswith(ACCESS_REASON):
                            stats.dropped["access"] += 1
                        else:
                            stats.dropped["other"] += 1
                            stats.other_drops[f"{d.split('=', 1)[0]}: {d.rsplit(': ', 1)[-1]}"[:100]] += 1  # "field=value: reason"
                else:
                    stats.llm["llm_plan skipped: " + ("identifier rule" if "identifier" in step["reason"] else step["reason"][:60])] += 1
            elif step["move"] == "filters":
                for d in step.get("details", {}).get("dropped", []):
                    if d.get("reason") == ACCESS_REASON:
                        stats.dropped["message terms naming access (deterministic filters)"] += 1
            elif step["move"] == "route_standalone":
                first = (plan.get("queries") or [{}])[0]
                if first.get("kind") == "standalone" and any(w in first.get("text", "").lower() for w in INJECTED):
                    stats.llm["LLM rewrites searched that carry an injected access phrase"] += 1
                    stats.injected_rewrites.append({"message": plan.get("message"), "searched": first.get("text"), "access": plan.get("access")})
            elif step["move"] == "llm_filters" and step["status"] == "ran":
                stats.llm["llm_filters applied a (non-access) filter"] += 1
        if plan.get("action", {}).get("kind") == "ask" or plan.get("action", {}).get("question"):
            stats.llm["plans that ask (no search)"] += 1
    for hit in answer.get("hits") or []:
        stats.hits_checked += 1
        markets = (hit.get("payload") or {}).get("markets") or []
        if market not in markets:
            out.violations.append(f"hit {hit.get('id')} (markets {markets}) returned to market {market!r}")
    return out


def _reproducer(req: Req, base: str) -> dict[str, Any]:
    body = req.body if not isinstance(req.body, dict) else {k: (v[:300] + "…" if isinstance(v, str) and len(v) > 300 else v) for k, v in req.body.items()}
    return {"app": req.app, "method": "POST", "url": f"{base}{req.path}{req.query}", "headers": req.headers, "json": body}


def _printable(value: Any) -> Any:
    """`value` with lone surrogates (sent on purpose) written as their escapes, so it can be saved as UTF-8."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_printable(v) for v in value]
    return value


def _metrics(text: str) -> dict[str, Any]:
    """The request counters and the LLM tier's counters of a /metrics scrape."""
    out: dict[str, Any] = {"requests_total": {}, "llm": {}}
    for line in text.splitlines():
        if line.startswith("querywise_requests_total{"):
            labels, value = line[len("querywise_requests_total"):].rsplit(" ", 1)
            out["requests_total"][labels] = int(float(value))
        elif line.startswith("querywise_llm_") and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out["llm"][name] = float(value)
    return out

"""Running a plan: search each query with the plan's filters and the session's access,
fuse with weighted RRF on chunk ids, and say why when nothing comes back."""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict, Field

from querywise.conditions import Where, describe
from querywise.index import Hit, Index, rrf
from querywise.index.engine import Mode
from querywise.plan import PlanQuery, QueryPlan, TraceStep

__all__ = ["PlanResult", "QueryResult", "execute"]

class QueryResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    query: PlanQuery
    ids: list[str]


class PlanResult(BaseModel):
    """The plan, what each of its queries found, and the fused top k."""

    plan: QueryPlan
    hits: list[Hit] = Field(default_factory=list)
    per_query: list[QueryResult] = Field(default_factory=list)
    relaxed: list[str] = Field(default_factory=list)  # inferred constraints dropped to get results
    empty_because: list[str] = Field(default_factory=list)  # stated constraints that emptied the results


def _search(plan: QueryPlan, index: Index, where: Where, *, k: int, depth: int, mode: Mode) -> tuple[list[Hit], list[QueryResult]]:
    lists: list[list[Hit]] = [
        index.search(q.text, mode=q.mode or mode, k=depth if len(plan.queries) > 1 else k, where=where or None)
        for q in plan.queries
    ]
    per_query = [QueryResult(query=q, ids=[h.id for h in hits]) for q, hits in zip(plan.queries, lists, strict=True)]
    if len(lists) == 1:  # one query: keep its own scores (cosine, BM25 or RRF of its two lists)
        return lists[0][:k], per_query
    first_seen: dict[str, Hit] = {}
    for hits in lists:
        for h in hits:
            first_seen.setdefault(h.id, h)
    fused = rrf([[h.id for h in hits] for hits in lists], k=index.settings.index.rrf_k, weights=[q.weight for q in plan.queries])
    top = [first_seen[cid].model_copy(update={"score": score, "rank": rank}) for rank, (cid, score) in enumerate(fused[:k], start=1)]
    return top, per_query


def execute(plan: QueryPlan, index: Index, *, k: int = 10, mode: Mode = "hybrid", depth: int = 50) -> PlanResult:
    """Search every query of `plan` with its filters AND the session's access constraints.

    Access is always applied. When the results are empty, inferred filters are relaxed (and the
    result says so); stated filters never are: the result names the one(s) that emptied it.

    >>> execute(understander.plan("warranty on the S7"), index).hits[0].id   # doctest: +SKIP
    """
    started = time.perf_counter()
    if not plan.queries:
        return PlanResult(plan=plan)
    where = plan.filters & plan.inferred_filters & plan.access
    hits, per_query = _search(plan, index, where, k=k, depth=depth, mode=mode)
    relaxed: list[str] = []
    empty_because: list[str] = []
    if not hits and plan.inferred_filters:
        relaxed = [describe(c) for c in plan.inferred_filters.conditions]
        hits, per_query = _search(plan, index, plan.filters & plan.access, k=k, depth=depth, mode=mode)
    if not hits and plan.filters:
        # Which stated constraint, on its own, leaves nothing? (Access is never questioned.)
        for cond in plan.filters.conditions:
            alone = Where(conditions=(cond,)) & plan.access
            if not index.search(plan.queries[0].text, mode="bm25" if mode == "bm25" else "dense", k=1, where=alone):
                empty_because.append(describe(cond))
        if not empty_because:
            empty_because = ["the combination " + " and ".join(describe(c) for c in plan.filters.conditions)]
    step = TraceStep(
        move="execute",
        status="ran",
        reason=f"{len(plan.queries)} quer{'y' if len(plan.queries) == 1 else 'ies'}, {mode}, "
        + ("fused with weighted RRF" if len(plan.queries) > 1 else "no fusion needed"),
        changed=("relaxed inferred " + ", ".join(relaxed)) if relaxed else None,
        latency_ms=round((time.perf_counter() - started) * 1000, 3),
        details={"n_hits": len(hits), "relaxed": relaxed, "empty_because": empty_because},
    )
    plan = plan.model_copy(update={"trace": [*plan.trace, step]})
    return PlanResult(plan=plan, hits=hits, per_query=per_query, relaxed=relaxed, empty_because=empty_because)

"""Running a plan: search each query with the plan's filters and the session's access,
fuse with weighted RRF on chunk ids, and say why when nothing comes back.

The plan runs against any `Retriever` (the querywise index, the user's HTTP endpoint, a
function): filters run inside the querywise index; another retriever is sent them and its results
are checked against them here (`retrieve.checked`), and the execute step says which it was.

Every empty result carries a reason (`PlanResult.empty_because`, `explain_empty`): a field no
chunk of the index carries (an access field, or a stated filter's), a stated filter that leaves
nothing on its own or with the others, nothing this session's access lets it see, or an index
that returned nothing for the query text. Reasons name access *fields*, never the session's
values."""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict, Field

from querywise.clock import ms_since
from querywise.conditions import Where, describe
from querywise.index import Hit, Index, rrf
from querywise.index.engine import Mode
from querywise.plan import PlanQuery, QueryPlan, TraceStep
from querywise.retrieve import (
    DriftCheck,
    ExplainsEmpty,
    IndexRetriever,
    Reranker,
    Retrieved,
    Retriever,
    check_drift,
    checked,
    dense_cosines,
    identifier_keys,
    rerank,
)
from querywise.text import IDENTIFIER_KEYS

__all__ = ["PlanResult", "Prefetched", "QueryResult", "execute", "prefetch", "reranked"]

class QueryResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    query: PlanQuery
    ids: list[str]
    # Why the query's hits were left out of the fusion (its drift guard fired); None: fused.
    left_out: str | None = None


class PlanResult(BaseModel):
    """The plan, what each of its queries found, and the fused top k."""

    plan: QueryPlan
    hits: list[Hit] = Field(default_factory=list)
    per_query: list[QueryResult] = Field(default_factory=list)
    relaxed: list[str] = Field(default_factory=list)  # inferred constraints dropped to get results
    empty_because: list[str] = Field(default_factory=list)  # why there are no hits: never empty when `hits` is
    # Cover and assume: each reading's own hits (the query that names it), by catalog name.
    by_reading: dict[str, list[Hit]] = Field(default_factory=dict)


def _query_where(q: PlanQuery, where: Where, retriever: Retriever) -> Where:
    """The query's filters: the plan's AND its own (an exact lookup's identifier keys, a field only
    the querywise index stores: another retriever searches the identifier as text)."""
    own = q.where if q.where else Where()
    if not identifier_keys(retriever):
        own = Where(conditions=tuple(c for c in own.conditions if c.field != IDENTIFIER_KEYS))
    return where & own


class Prefetched(BaseModel):
    """A search made before the plan was known (the LLM overlap searches the raw message while the
    LLM works): `execute` takes its answer for a query that asks exactly it."""

    model_config = ConfigDict(frozen=True)
    text: str
    mode: Mode
    where: Where
    k: int
    answer: Retrieved

    def serves(self, text: str, *, k: int, where: Where, mode: Mode) -> bool:
        return (text, mode, where) == (self.text, self.mode, self.where) and k <= self.k


def prefetch(retriever: Retriever, text: str, *, k: int, where: Where, mode: Mode) -> Prefetched:
    """Search `text` now, for an `execute` to come."""
    return Prefetched(text=text, mode=mode, where=where, k=k, answer=checked(retriever, text, k=k, where=where or None, mode=mode))


def _drift_checks(plan: QueryPlan, retriever: Retriever, where: Where, answers: list[Retrieved]) -> dict[int, DriftCheck]:
    """Each guarded query's drift guard (`PlanQuery.unless_drift`), by its place in the plan: one
    dense search of the guard's text (the message as typed) per guarded query, on a retriever whose
    dense hits carry cosines; elsewhere the check says it was not made."""
    out: dict[int, DriftCheck] = {}
    for i, (q, a) in enumerate(zip(plan.queries, answers, strict=True)):
        guard = q.unless_drift
        if guard is None:
            continue
        q_where = _query_where(q, where, retriever)
        own = checked(retriever, guard.against, k=guard.depth, where=q_where or None, mode="dense").hits if dense_cosines(retriever) else None
        out[i] = check_drift(q.text, guard, a.hits[0].id if a.hits else None, own, retriever=retriever.name)
    return out


def _search(
    plan: QueryPlan, retriever: Retriever, where: Where, *, k: int, depth: int, mode: Mode, rrf_k: int, prefetched: Prefetched | None = None,
) -> tuple[list[Hit], list[QueryResult], list[Retrieved], dict[int, DriftCheck]]:
    def ask(q: PlanQuery) -> Retrieved:
        n, q_where, q_mode = depth if len(plan.queries) > 1 else k, _query_where(q, where, retriever), q.mode or mode
        if prefetched is not None and prefetched.serves(q.text, k=n, where=q_where, mode=q_mode):
            return prefetched.answer.model_copy(update={"hits": prefetched.answer.hits[:n], "prefetched": True})
        return checked(retriever, q.text, k=n, where=q_where or None, mode=q_mode)

    answers = [ask(q) for q in plan.queries]
    drifts = _drift_checks(plan, retriever, where, answers)
    # A cover's reading queries are answered per reading (`PlanResult.by_reading`), beside the
    # fused list, not in it: documents about every reading would otherwise outrank the answer
    # to each. A query whose drift guard fired is left out too, unless nothing else would be fused.
    fusable = [i for i, q in enumerate(plan.queries) if not _per_reading_only(plan, q)]
    kept = [i for i in fusable if not (i in drifts and drifts[i].fired)] or fusable
    left_out = {i: drifts[i].why for i in set(fusable) - set(kept)}
    per_query = [QueryResult(query=q, ids=[h.id for h in a.hits], left_out=left_out.get(i)) for i, (q, a) in enumerate(zip(plan.queries, answers, strict=True))]
    fused_in = [(plan.queries[i], answers[i].hits) for i in kept]
    lists = [hits for _, hits in fused_in]
    if len(lists) == 1:  # one query: keep its own scores (cosine, BM25 or RRF of its two lists)
        return lists[0][:k], per_query, answers, drifts
    first_seen: dict[str, Hit] = {}
    for hits in lists:
        for h in hits:
            first_seen.setdefault(h.id, h)
    fused = rrf([[h.id for h in hits] for hits in lists], k=rrf_k, weights=[q.weight for q, _ in fused_in])
    top = [first_seen[cid].model_copy(update={"score": score, "rank": rank}) for rank, (cid, score) in enumerate(fused[:k], start=1)]
    return top, per_query, answers, drifts


def _per_reading_only(plan: QueryPlan, q: PlanQuery) -> bool:
    """A query of one reading under a cover: grouped by its reading, not fused."""
    return q.reading is not None and plan.action.type == "cover"


def execute(
    plan: QueryPlan, retriever: Retriever | Index, *, k: int = 10, mode: Mode = "hybrid", depth: int = 50, rrf_k: int | None = None,
    reranker: Reranker | None = None, rerank_top: int = 20, prefetched: Prefetched | None = None,
) -> PlanResult:
    """Search every query of `plan` with its filters AND the session's access constraints.
    `rrf_k`: the fusion's constant (None: the retriever's `rrf_k`, else 60).
    `reranker`: reorders the fused top `rerank_top` for the message (a `rerank` step in the trace).
    `prefetched`: a search already made, used for a query that asks exactly it (the execute
    step's `details["prefetched"]` says whether it was).

    Access is always applied. When the results are empty, inferred filters are relaxed (and the
    result says so); stated filters never are: the result names the one(s) that emptied it.

    >>> execute(understander.plan("warranty on the S7"), index).hits[0].id   # doctest: +SKIP
    """
    started = time.perf_counter()
    if isinstance(retriever, Index):
        retriever = IndexRetriever(retriever)
    if rrf_k is None:
        rrf_k = getattr(retriever, "rrf_k", None) or 60
    if not plan.queries:  # the route runs no search, or the plan asks instead: the plan says why
        return PlanResult(plan=plan, empty_because=[plan.unsearched or f"the plan searches nothing (route {plan.route}, action {plan.action.type})"])
    where = plan.filters & plan.inferred_filters & plan.access
    wanted = k
    k = max(k, rerank_top) if reranker is not None else k  # the reranker sees its top N, then k are kept
    hits, per_query, answers, drifts = _search(plan, retriever, where, k=k, depth=depth, mode=mode, rrf_k=rrf_k, prefetched=prefetched)
    relaxed: list[str] = []
    empty_because: list[str] = []
    if not hits and plan.inferred_filters:
        relaxed = [describe(c) for c in plan.inferred_filters.conditions]
        hits, per_query, answers, drifts = _search(plan, retriever, plan.filters & plan.access, k=k, depth=depth, mode=mode, rrf_k=rrf_k)
    dropped = sum(a.dropped for a in answers)
    if not hits:
        searched = [(q.text, q.mode or mode) for q in plan.queries]
        if isinstance(retriever, ExplainsEmpty):  # a capability (the querywise index), not a class
            empty_because = retriever.explain_empty(searched, filters=plan.filters, access=plan.access)
        else:
            empty_because = [f"{retriever.name} returned nothing for the query text" if not dropped else
                             f"every result of {retriever.name} failed the filters or this session's access ({dropped} checked here and dropped)"]
    filtered = ", ".join(sorted({a.filtered for a in answers} - {"none"})) or "none"  # engine | checked
    left_out = [r for r in per_query if r.left_out]
    changes = ["relaxed inferred " + ", ".join(relaxed)] if relaxed else []
    changes += [f"left {r.query.text!r} out of the fusion: {r.left_out}" for r in left_out]
    step = TraceStep(
        move="execute",
        status="ran",
        reason=f"{len(plan.queries)} quer{'y' if len(plan.queries) == 1 else 'ies'}, {mode}, "
        + ("fused with weighted RRF" if len(plan.queries) > 1 else "no fusion needed")
        + ("" if identifier_keys(retriever) else f", through {retriever.name}")  # only the querywise index holds those keys
        + (f"; filters checked on its results ({dropped} dropped)" if "checked" in filtered else "")
        + (f"; {len(left_out)} left out by its drift guard" if left_out else ""),
        changed="; ".join(changes) or None,
        latency_ms=ms_since(started),
        details={"n_hits": min(len(hits), wanted), "relaxed": relaxed, "empty_because": empty_because,
                 "retriever": retriever.name, "filters_applied": filtered, "dropped_by_check": dropped,
                 # What each exact lookup found: the chunks that hold the identifier (see understand.exact).
                 "exact": {r.query.text: r.ids for r in per_query if r.query.kind == "exact"},
                 "prefetched": any(a.prefetched for a in answers),
                 # Each guarded query's drift guard: fired or not, its figures, or why it was not checked.
                 "drift_guard": [c.model_dump() for c in drifts.values()]},
    )
    plan = plan.model_copy(update={"trace": [*plan.trace, step]})
    by_reading = {q.reading: a.hits[:wanted] for q, a in zip(plan.queries, answers, strict=True) if q.reading is not None}
    result = PlanResult(plan=plan, hits=hits, per_query=per_query, relaxed=relaxed, empty_because=empty_because, by_reading=by_reading)
    return reranked(result, reranker, top_n=rerank_top, k=wanted) if reranker is not None else result.model_copy(update={"hits": hits[:wanted]})


def reranked(result: PlanResult, reranker: Reranker, *, top_n: int, k: int) -> PlanResult:
    """`result` with its first `top_n` hits reordered by `reranker` (a `rerank` step in the trace)
    and `k` kept; not when an identifier lookup found its chunks (an exact match is not second-guessed)."""
    plan, hits = result.plan, result.hits
    if not hits:
        return result
    found_exactly = [r.query.text for r in result.per_query if r.query.kind == "exact" and r.ids]
    if found_exactly:
        step = TraceStep(move="rerank", status="skipped", reason=f"an identifier lookup found the chunks that hold {found_exactly[0]!r}: "
                         "the fused order stands", details={"model": reranker.name})
    else:  # the message, or the standalone form that replaced it
        main = plan.main_query
        assert main is not None  # a plan with hits searched something
        hits, step = rerank(reranker, main.text, hits, top_n, route=plan.route)
    return result.model_copy(update={"plan": plan.model_copy(update={"trace": [*plan.trace, step]}), "hits": hits[:k]})

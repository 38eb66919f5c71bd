"""Running labelled cases through the path users run: `QueryWise.ask`, then score.

One `Arm` is one configuration: which moves are on and which search mode runs. `run_arm`
asks every case through the deployment with the arm's moves (everything else from the
deployment's settings; plans are not logged), and keeps per case what a report and a
regression gate need: the metric scores, the top ids, what was searched, the route and
action, latency, LLM calls and cost. Aggregation (`summarise`) is a pure function of those
case records.

Judged granularity: a case's relevant ids are chunk ids of the index, or document ids (the
`doc_id` of chunks cut from one record or file). A case with a relevant id that is not a chunk
id but is a document id is scored per document: each hit counts as its document (payload
`doc_id`, else its own id), the first (best) rank kept — max-pooling of passages, as document
judgements are scored. Other cases are scored per chunk. `CaseRun.top` holds the ids that were
scored.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from querywise.conditions import AnyOf, Match, Range, Where
from querywise.config import Move
from querywise.corpus import Chunk
from querywise.evaluation.cases import Case
from querywise.evaluation.metrics import Metric, score
from querywise.index import Hit, Index
from querywise.index.engine import Mode
from querywise.plan import QueryPlan
from querywise.service import QueryWise
from querywise.understand.access import AccessError

__all__ = ["Arm", "ArmResult", "CaseRun", "JudgedIds", "run_arm", "summarise", "where_as_dict"]

ALL = "all"  # the slice every case belongs to
KEEP_IDS = 10  # top ids kept per case in the run record (scores are computed on the full depth)
# A case scored per document searches at most this many times the deepest cut-off in chunks,
# doubling from the cut-off, to rank that many documents (a document cut in many pieces).
MAX_DEPTH_FACTOR = 16


class Arm(BaseModel):
    """One configuration of an evaluation: moves on, search mode."""

    model_config = ConfigDict(frozen=True)
    name: str
    mode: Mode = "hybrid"
    moves: tuple[Move, ...] = ()


class CaseRun(BaseModel):
    """What happened to one case under one arm."""

    id: str
    slices: list[str]
    scores: dict[str, float | None] = Field(default_factory=dict)  # metric label -> score (None: no relevant id)
    top: list[str] = Field(default_factory=list)
    searched: list[str] = Field(default_factory=list)  # query texts, in plan order
    route: str = ""
    route_status: str = ""  # ran | fallback (the router's gate deferred)
    action: str = "answer"
    untouched: bool = True  # the message itself was searched, not a replacement
    follow_up: str = "skipped"  # status of the follow-up move
    filters: dict[str, Any] = Field(default_factory=dict)  # stated and inferred, per field
    n_hits: int = 0
    understand_ms: float = 0.0
    execute_ms: float = 0.0
    llm_calls: int = 0
    cost_usd: float = 0.0
    error: str | None = None


class ArmResult(BaseModel):
    """An arm's cases and their aggregates."""

    arm: Arm
    metrics: list[str]
    n: int
    overall: dict[str, float]
    slices: dict[str, dict[str, float]]
    slice_sizes: dict[str, int]
    zero_result_rate: float
    latency_ms: dict[str, float]  # p50 / p95 of understand + execute per case
    llm_calls_per_1000: float | None  # None: no LLM move ran
    cost_per_1000_usd: float | None
    cases: list[CaseRun]


@dataclass(frozen=True)
class JudgedIds:
    """The ids an index can be judged by: its chunk ids and the documents its chunks were cut from.

    >>> judged = JudgedIds.of(index)  # doctest: +SKIP
    >>> judged.ranked(hits, case.relevant)  # document ids when the case judges documents  # doctest: +SKIP
    """

    chunk_ids: frozenset[str]
    doc_ids: frozenset[str]

    @classmethod
    def of(cls, index: Index | None) -> JudgedIds:
        """Read once from the index's chunks (one pass over chunks.jsonl)."""
        return cls.of_chunks(index.chunks() if index is not None else ())

    @classmethod
    def of_chunks(cls, chunks: Iterable[Chunk]) -> JudgedIds:
        """From a corpus's chunks: the index's, or the passages of a retriever querywise does not own."""
        chunk_ids: set[str] = set()
        doc_ids: set[str] = set()
        for chunk in chunks:
            chunk_ids.add(chunk.id)
            if chunk.doc_id != chunk.id:  # a piece cut from a record or a file
                doc_ids.add(chunk.doc_id)
        return cls(frozenset(chunk_ids), frozenset(doc_ids))

    def per_document(self, relevant: Iterable[str]) -> bool:
        """Whether a case judging `relevant` is scored per document (see the module docstring)."""
        return any(r not in self.chunk_ids and r in self.doc_ids for r in relevant)

    def ranked(self, hits: Sequence[Hit], relevant: Iterable[str]) -> list[str]:
        """The ranked ids to score against `relevant`: chunk ids, or each hit's document id once."""
        if not self.per_document(relevant):
            return [h.id for h in hits]
        return list(dict.fromkeys(h.doc_id for h in hits))


def where_as_dict(where: Where) -> dict[str, Any]:
    """Conditions per field, in the case-file shape: a value, a list (any of), or {op: number}."""
    out: dict[str, Any] = {}
    for c in where.conditions:
        if isinstance(c, Match):
            out[c.field] = c.value
        elif isinstance(c, AnyOf):
            out[c.field] = sorted(c.values, key=str)
        elif isinstance(c, Range):
            out[c.field] = {op: v for op in ("gt", "gte", "lt", "lte") if (v := getattr(c, op)) is not None}
    return out


def _record(
    case: Case, plan: QueryPlan, top: list[str], metrics: Sequence[Metric], n_hits: int, t_plan: float, t_exec: float,
    keep_ids: int | None = KEEP_IDS,
) -> CaseRun:
    route_step, follow = plan.step("route"), plan.step("follow_up")
    return CaseRun(
        id=case.id,
        slices=case.slices,
        scores={m.label: score(m, top, case.relevant) for m in metrics},
        top=top[:keep_ids],  # None: every ranked id (`eval --failures` writes them all)
        searched=[] if plan.unsearched else [q.text for q in plan.queries],  # queries of an unsearched plan never ran
        route=plan.route,
        route_status=route_step.status if route_step else "",
        action=plan.action.type,
        untouched=not plan.queries or plan.queries[0].text == case.message,
        follow_up=follow.status if follow else "skipped",
        filters=where_as_dict(plan.filters & plan.inferred_filters),
        n_hits=n_hits,
        understand_ms=round(t_plan * 1000, 3),
        execute_ms=round(t_exec * 1000, 3),
        llm_calls=sum(s.llm_calls for s in plan.trace),
        cost_usd=sum(s.cost_usd for s in plan.trace),
    )


def run_arm(
    cases: Sequence[Case],
    deployment: QueryWise,
    arm: Arm,
    metrics: Sequence[Metric],
    *,
    on_case: Callable[[int], None] | None = None,
    keep_ids: int | None = KEEP_IDS,
    judged: JudgedIds | None = None,
) -> ArmResult:
    """Ask every case through `deployment` with the arm's moves and search mode, and score it.

    The search goes as deep as the largest metric cut-off (at least 10), so recall@100 sees
    100 results; a case scored per document goes deeper until that many documents are ranked
    (chunks of one document count once), so ndcg@10 is the same whichever cut-offs sit beside it. Each case keeps its top `keep_ids` ids (None: all of them, as deep as the
    search went), at the granularity it was scored (`judged`, read from the deployment's index
    when not given).
    """
    depth = max([10, *(m.k or 10 for m in metrics)])
    judged = judged or JudgedIds.of(deployment.index)  # once per run, not per case
    runs: list[CaseRun] = []
    with deployment.with_moves(arm.moves) as qw:
        for case in cases:
            per_document, k = judged.per_document(case.relevant), depth
            try:
                while True:
                    started = time.perf_counter()
                    result = qw.ask(case.message, history=case.history, session=case.session, k=k, mode=arm.mode, depth=max(50, k))
                    total = time.perf_counter() - started
                    top = judged.ranked(result.hits, case.relevant)
                    # Scored per document, `depth` chunks may hold fewer documents (two pieces of one
                    # abstract); search deeper until `depth` documents are ranked, so a metric does not
                    # depend on which other cut-offs were asked for.
                    if not per_document or len(top) >= depth or len(result.hits) < k or k >= MAX_DEPTH_FACTOR * depth:
                        break
                    k *= 2
            except AccessError as exc:  # the session lacks a required field: nothing may be searched
                runs.append(CaseRun(id=case.id, slices=case.slices, scores={m.label: score(m, [], case.relevant) for m in metrics}, error=str(exc)))
            else:
                step = result.plan.step("execute")
                t_exec = step.latency_ms / 1000 if step is not None else 0.0
                runs.append(_record(case, result.plan, top, metrics, len(result.hits), total - t_exec, t_exec, keep_ids))
            if on_case:
                on_case(1)
    return summarise(arm, [m.label for m in metrics], runs)


def _means(runs: Sequence[CaseRun], labels: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for label in labels:
        vals = [r.scores.get(label) for r in runs]
        got = [v for v in vals if v is not None]
        if got:
            out[label] = float(np.mean(got))
    out["zero_result_rate"] = _zero_rate(runs)
    return out


def _zero_rate(runs: Sequence[CaseRun]) -> float:
    """Share of the messages that were searched (a route that does not search is not a miss) with no hit."""
    searched = [r for r in runs if r.searched]
    return float(np.mean([r.n_hits == 0 for r in searched])) if searched else 0.0


def summarise(arm: Arm, labels: Sequence[str], runs: Sequence[CaseRun]) -> ArmResult:
    """Aggregates of case records: means per slice (a case scores only where it has a relevant
    id), zero-result rate, latency percentiles, LLM calls and cost per 1,000 messages."""
    slice_names = sorted({s for r in runs for s in r.slices})
    by_slice = {s: [r for r in runs if s in r.slices] for s in slice_names}
    lat = np.array([r.understand_ms + r.execute_ms for r in runs if r.error is None] or [0.0])
    calls = sum(r.llm_calls for r in runs)
    n = len(runs)
    return ArmResult(
        arm=arm,
        metrics=list(labels),
        n=n,
        overall=_means(runs, labels),
        slices={s: _means(rs, labels) for s, rs in by_slice.items()},
        slice_sizes={s: len(rs) for s, rs in by_slice.items()},
        zero_result_rate=_zero_rate(runs),
        latency_ms={"p50": round(float(np.percentile(lat, 50)), 3), "p95": round(float(np.percentile(lat, 95)), 3)},
        llm_calls_per_1000=round(calls / n * 1000, 3) if calls and n else None,
        cost_per_1000_usd=round(sum(r.cost_usd for r in runs) / n * 1000, 6) if calls and n else None,
        cases=list(runs),
    )

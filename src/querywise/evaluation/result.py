"""The `querywise eval --json` document as a versioned model: what `compare` reads back.

`EvalResult.from_report(report)` is the one way an `EvalReport` becomes this document; its JSON
schema is committed as `schemas/eval_result.schema.json` (`eval_result_json_schema()`, printed
by `querywise eval-schema`). `version` changes whenever a key is renamed, removed or changes
meaning; a file without `version` (written before it existed, same shape) reads as version 1.

    {"version": 1,
     "n": 300,
     "overall": {"ndcg@10": 0.71, "recall@100": 0.95, "zero_result_rate": 0.0},
     "slices": {"standalone": {"ndcg@10": ...}, ...},
     "slice_sizes": {"standalone": 300},
     "config": {"source": "cases.jsonl", "mode": "hybrid", "moves": [...], "metrics": [...]},
     "latency_ms": {"p50": 4.1, "p95": 7.9},
     "llm": {"calls_per_1000": null, "cost_per_1000_usd": null},
     "components": {...} | null,
     "ablation": {"baseline": "baseline", "seed": 42, "resamples": 2000,
                  "arms": {"+follow_up": {"mode", "moves", "overall", "slices", "latency_ms"}},
                  "deltas": [{"arm", "slice", "metric", "n", "delta", "low", "high", "p_value", "significant"}],
                  "flags": [...], "skipped": {"hyde": "..."}},            (only with --ablate)
     "cases": [{"id", "slices", "scores": {"ndcg@10": 1.0, "mrr": null, ...}}],
     "warnings": ["3 of 412 judged ids are not in the index ...", ...]}      (only when there are some)
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from querywise.evaluation.components import ComponentReport
from querywise.evaluation.harness import ArmResult
from querywise.evaluation.report import EvalReport
from querywise.evaluation.stats import mean_interval
from querywise.index.engine import Mode

__all__ = [
    "EVAL_RESULT_VERSION",
    "AblationResult",
    "ArmSummary",
    "CaseScores",
    "Delta",
    "EvalConfig",
    "EvalResult",
    "LLMUsage",
    "Latency",
    "eval_result_json_schema",
    "slice_intervals",
]

EVAL_RESULT_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvalConfig(_Model):
    """What ran: the case source, the search mode, the moves that were on, the metrics scored."""

    source: str
    mode: Mode
    moves: list[str]
    metrics: list[str]


class Latency(_Model):
    """Understand + execute per message, in milliseconds."""

    p50: float
    p95: float


class LLMUsage(_Model):
    """Per 1,000 messages; null when no LLM move ran (unknown, not zero)."""

    calls_per_1000: float | None
    cost_per_1000_usd: float | None


class ArmSummary(_Model):
    """One ablation arm's aggregates."""

    mode: Mode
    moves: list[str]
    overall: dict[str, float]
    slices: dict[str, dict[str, float]]
    latency_ms: Latency


class Delta(_Model):
    """One arm minus the baseline on one slice and metric: paired bootstrap interval, permutation p."""

    arm: str
    slice: str
    metric: str
    n: int
    delta: float
    low: float
    high: float
    p_value: float
    significant: bool


class AblationResult(_Model):
    baseline: str
    seed: int
    resamples: int
    arms: dict[str, ArmSummary]  # by arm name, the baseline first
    deltas: list[Delta]
    flags: list[str]
    skipped: dict[str, str]  # move or mode -> why it was not run


class CaseScores(_Model):
    """One case's scores (null: the case has no relevant id), paired by id in `compare`."""

    id: str
    slices: list[str]
    scores: dict[str, float | None]


class EvalResult(_Model):
    """The `querywise eval --json` document (see the module docstring)."""

    version: int = Field(default=EVAL_RESULT_VERSION, json_schema_extra={"const": EVAL_RESULT_VERSION})
    n: int
    overall: dict[str, float]  # every metric, and zero_result_rate
    slices: dict[str, dict[str, float]]
    slice_sizes: dict[str, int]
    config: EvalConfig
    latency_ms: Latency
    llm: LLMUsage
    components: ComponentReport | None
    ablation: AblationResult | None = None  # the key is left out when no ablation ran
    cases: list[CaseScores]
    # What the run should not be read without: the deployment's start-up warnings, judged ids the
    # index lacks. The key is left out when there is none (documents without it read the same).
    warnings: list[str] = Field(default_factory=list)

    @field_validator("version")
    @classmethod
    def _known_version(cls, v: int) -> int:
        if v != EVAL_RESULT_VERSION:
            raise ValueError(f"result version {v}; this querywise reads version {EVAL_RESULT_VERSION}: re-run `querywise eval --json` with it")
        return v

    @model_serializer(mode="wrap")
    def _without_absent_ablation(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.ablation is None:
            data.pop("ablation", None)
        if not self.warnings:
            data.pop("warnings", None)
        return data

    @classmethod
    def from_report(cls, report: EvalReport) -> EvalResult:
        """The document of one evaluation: formatting only, every number is the report's."""
        run = report.run
        a = report.ablation
        return cls(
            n=run.n,
            overall=run.overall,
            slices=run.slices,
            slice_sizes=run.slice_sizes,
            config=EvalConfig(source=report.source, mode=run.arm.mode, moves=list(run.arm.moves), metrics=run.metrics),
            latency_ms=Latency.model_validate(run.latency_ms),
            llm=LLMUsage(calls_per_1000=run.llm_calls_per_1000, cost_per_1000_usd=run.cost_per_1000_usd),
            components=report.components,
            ablation=None if a is None else AblationResult(
                baseline=a.baseline,
                seed=a.seed,
                resamples=a.resamples,
                arms={r.arm.name: _arm(r) for r in a.arms},
                deltas=[
                    Delta(arm=d.arm, slice=d.slice, metric=d.metric, n=d.diff.n, delta=d.diff.delta, low=d.diff.low,
                          high=d.diff.high, p_value=d.diff.p_value, significant=d.diff.significant)
                    for d in a.deltas
                ],
                flags=a.flags,
                skipped=a.skipped,
            ),
            cases=[CaseScores(id=c.id, slices=c.slices, scores=c.scores) for c in run.cases],
            warnings=report.warnings,
        )


def _arm(r: ArmResult) -> ArmSummary:
    return ArmSummary(mode=r.arm.mode, moves=list(r.arm.moves), overall=r.overall, slices=r.slices, latency_ms=Latency.model_validate(r.latency_ms))


def slice_intervals(run: EvalResult) -> dict[str, dict[str, tuple[float, float, float]]]:
    """Every slice's (and "all"'s) metrics as (mean, low, high), a 95% bootstrap interval over
    the run's own per-case scores (what the workbench shows beside each figure)."""
    metrics = list(run.config.metrics)
    groups: dict[str, list[CaseScores]] = {"all": list(run.cases)}
    for case in run.cases:
        for name in case.slices:
            groups.setdefault(name, []).append(case)
    def scores(cases: list[CaseScores], metric: str) -> list[float]:
        return [np.nan if (v := c.scores.get(metric)) is None else v for c in cases]

    return {name: {m: mean_interval(scores(cases, m)) for m in metrics}
            for name, cases in groups.items()}


def eval_result_json_schema() -> dict[str, Any]:
    """The JSON schema of `EvalResult` (also committed as `schemas/eval_result.schema.json`)."""
    schema = EvalResult.model_json_schema()
    schema["$id"] = f"https://querywise.dev/schemas/eval_result.v{EVAL_RESULT_VERSION}.json"
    return json.loads(json.dumps(schema))

"""The versioned `querywise eval --json` document: same keys and values as the hand-built dict
it replaced, `ablation` only when it ran, a committed schema that does not drift."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querywise import cli
from querywise.evaluation.ablation import AblationReport, compare_arms, mixed_effects
from querywise.evaluation.components import (
    AccessProbe,
    ComponentReport,
    FieldScore,
    FilterScores,
    RouterScores,
)
from querywise.evaluation.harness import Arm, ArmResult, CaseRun, summarise
from querywise.evaluation.report import EvalReport
from querywise.evaluation.result import (
    EVAL_RESULT_VERSION,
    EvalResult,
    eval_result_json_schema,
)
from querywise.evaluation.router import RouteMetrics

SCHEMA_FILE = Path(__file__).parents[2] / "schemas" / "eval_result.schema.json"


def _runs(better: bool) -> list[CaseRun]:
    runs = []
    for i in range(24):
        s = "prose" if i % 2 else "identifier"
        mrr = 1.0 if better and s == "prose" else 0.5
        runs.append(CaseRun(id=f"c{i}", slices=[s, "standalone"], scores={"mrr": mrr, "ndcg@10": None if i == 3 else mrr / 2},
                            searched=["q"], n_hits=0 if i == 5 else 3, understand_ms=1.5 + i, execute_ms=0.25,
                            llm_calls=1 if better else 0, cost_usd=0.0001 if better else 0.0))  # fmt: skip
    return runs


def _report(ablation: bool) -> EvalReport:
    labels = ["mrr", "ndcg@10"]
    base = summarise(Arm(name="baseline", mode="bm25"), labels, _runs(False))
    main = summarise(Arm(name="configured", mode="bm25", moves=("follow_up", "spelling")), labels, _runs(True))
    components = ComponentReport(
        n=24, fallback_rate=0.25, guard_failure_rate=None, n_follow_ups_flagged=0, standalone_untouched=1.0, clarification_rate=0.0,
        router=RouterScores(n=2, accuracy=0.5, per_route={"kb": RouteMetrics(precision=0.5, recall=1.0, support=1)},
                            labels=["kb", "lookup"], rows=["kb", "lookup"], matrix=[[1, 0], [1, 0]]),
        filters=FilterScores(n=1, exact_match=0.0, per_field={"price": FieldScore(n=1, exact=0.0)}),
        access=AccessProbe(n_probes=30, n_hits_checked=90, note="markets: ok; "),
    )  # fmt: skip
    ab = None
    if ablation:
        arm = main.model_copy(update={"arm": Arm(name="+follow_up", mode="bm25", moves=("follow_up",))})
        deltas = compare_arms(base, arm)
        ab = AblationReport(baseline="baseline", arms=[base, arm], deltas=deltas, flags=mixed_effects(deltas),
                            skipped={"hyde": "needs an [llm] provider"})  # fmt: skip
    return EvalReport(source="cases.jsonl", run=main, components=components, ablation=ab)


def _arm_json(r: ArmResult) -> dict[str, Any]:
    return {"mode": r.arm.mode, "moves": list(r.arm.moves), "overall": r.overall, "slices": r.slices, "latency_ms": r.latency_ms}


def _legacy_report_json(report: EvalReport) -> dict[str, Any]:
    """`report_json` as it was before the model (kept here as the reference of the output)."""
    run = report.run
    data: dict[str, Any] = {
        "n": run.n,
        "overall": run.overall,
        "slices": run.slices,
        "slice_sizes": run.slice_sizes,
        "config": {"source": report.source, "mode": run.arm.mode, "moves": list(run.arm.moves), "metrics": run.metrics},
        "latency_ms": run.latency_ms,
        "llm": {"calls_per_1000": run.llm_calls_per_1000, "cost_per_1000_usd": run.cost_per_1000_usd},
        "components": report.components.model_dump() if report.components else None,
    }
    if report.ablation is not None:
        a = report.ablation
        data["ablation"] = {
            "baseline": a.baseline,
            "seed": a.seed,
            "resamples": a.resamples,
            "arms": {r.arm.name: _arm_json(r) for r in a.arms},
            "deltas": [
                {"arm": d.arm, "slice": d.slice, "metric": d.metric, "n": d.diff.n, "delta": d.diff.delta,
                 "low": d.diff.low, "high": d.diff.high, "p_value": d.diff.p_value, "significant": d.diff.significant}
                for d in a.deltas
            ],
            "flags": a.flags,
            "skipped": a.skipped,
        }  # fmt: skip
    data["cases"] = [{"id": c.id, "slices": c.slices, "scores": c.scores} for c in run.cases]
    return data


@pytest.mark.parametrize("ablation", [False, True])
def test_the_document_is_the_old_one_plus_its_version(ablation: bool) -> None:
    report = _report(ablation)
    text = EvalResult.from_report(report).model_dump_json()
    data = json.loads(text)
    legacy = json.loads(json.dumps(_legacy_report_json(report)))
    assert list(data) == ["version", *legacy]  # same keys, same order, version first
    assert data == {"version": EVAL_RESULT_VERSION, **legacy}
    assert ("ablation" in data) is ablation  # the key is left out, not null, when no ablation ran
    if ablation:
        assert any(d["significant"] for d in data["ablation"]["deltas"]) and data["ablation"]["flags"] == []
    assert data["cases"][3]["scores"]["ndcg@10"] is None and data["llm"]["calls_per_1000"] == 1000.0


def test_the_document_reads_back_as_the_same_model() -> None:
    result = EvalResult.from_report(_report(True))
    again = EvalResult.model_validate_json(result.model_dump_json())
    assert again == result and again.ablation is not None and again.ablation.deltas[0].arm == "+follow_up"
    assert isinstance(again.components, ComponentReport) and again.components.router is not None
    assert again.components.router.per_route["kb"].recall == 1.0 and again.latency_ms.p95 >= again.latency_ms.p50


def test_unknown_keys_and_other_versions_are_rejected() -> None:
    data = json.loads(EvalResult.from_report(_report(False)).model_dump_json())
    with pytest.raises(ValueError, match="extra"):
        EvalResult.model_validate({**data, "surprise": 1})
    with pytest.raises(ValueError, match="reads version 1"):
        EvalResult.model_validate({**data, "version": 2})
    assert EvalResult.model_validate({k: v for k, v in data.items() if k != "version"}).version == 1


def test_committed_schema_is_current() -> None:
    """`schemas/eval_result.schema.json` is what integrators read; regenerate it with
    `querywise eval-schema > schemas/eval_result.schema.json` when the result model changes
    (and raise `EVAL_RESULT_VERSION` when a key is renamed, removed or changes meaning)."""
    schema = eval_result_json_schema()
    assert json.loads(SCHEMA_FILE.read_text()) == schema
    assert schema["$id"].endswith(f"eval_result.v{EVAL_RESULT_VERSION}.json")
    assert next(iter(schema["properties"])) == "version" and schema["properties"]["version"]["const"] == EVAL_RESULT_VERSION


def test_eval_schema_command_prints_the_schema() -> None:
    result = CliRunner().invoke(cli.app, ["eval-schema"])
    assert result.exit_code == 0 and json.loads(result.stdout) == json.loads(SCHEMA_FILE.read_text())


def test_every_slice_gets_an_interval_around_its_own_figure() -> None:
    from querywise.evaluation.result import slice_intervals

    result = EvalResult.from_report(_report(False))
    got = slice_intervals(result)
    assert set(got) == {"all", "prose", "identifier", "standalone"}
    mean, low, high = got["prose"]["mrr"]
    assert mean == result.slices["prose"]["mrr"] == 1.0 and (low, high) == (1.0, 1.0)  # every prose case scored 1
    mean, low, high = got["all"]["mrr"]
    assert mean == result.overall["mrr"] and low < mean < high  # half 1.0, half 0.5
    assert got["all"]["ndcg@10"][0] == pytest.approx(result.overall["ndcg@10"])  # the unscored case left out, as the figure leaves it

"""The evaluation report: run the cases (and the ablation), then render for people or for CI.

`evaluate` composes the harness, the ablation and the component scores into an `EvalReport`;
`report_json` is the `querywise eval --json` document; `render_terminal` prints it with rich.
The renderers only format: every number is computed before they run.

JSON (`report_json`):

    {"n": 300,
     "overall": {"ndcg@10": 0.71, "recall@100": 0.95, "zero_result_rate": 0.0},
     "slices": {"standalone": {"ndcg@10": ...}, ...},
     "slice_sizes": {"standalone": 300},
     "config": {"mode": "hybrid", "moves": [...], "metrics": [...]},
     "latency_ms": {"p50": 4.1, "p95": 7.9},
     "llm": {"calls_per_1000": null, "cost_per_1000_usd": null},
     "components": {...},
     "ablation": {"baseline": "baseline", "seed": 42, "resamples": 2000,
                  "arms": {"+follow_up": {"mode", "moves", "overall", "slices", "latency_ms"}},
                  "deltas": [{"arm", "slice", "metric", "delta", "low", "high", "p_value", "significant"}],
                  "flags": [...], "skipped": {"hyde": "..."}},            (only with --ablate)
     "cases": [{"id", "slices", "scores": {"ndcg@10": 1.0, ...}}]}       (for `querywise compare`)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from querywise.config import Settings
from querywise.evaluation.ablation import AblationReport, plan_ablation, run_ablation
from querywise.evaluation.cases import Case
from querywise.evaluation.components import (
    ComponentReport,
    access_probe,
    component_scores,
)
from querywise.evaluation.harness import ALL, Arm, ArmResult, run_arm
from querywise.evaluation.metrics import Metric
from querywise.index import Index
from querywise.index.engine import Mode

__all__ = ["EvalReport", "evaluate", "render_terminal", "report_json"]


class EvalReport(BaseModel):
    """The main run (the configured moves), its component scores and, if asked, the ablation."""

    source: str = ""
    run: ArmResult
    components: ComponentReport | None = None
    ablation: AblationReport | None = None


def evaluate(
    cases: Sequence[Case],
    index: Index,
    settings: Settings,
    metrics: Sequence[Metric],
    *,
    mode: Mode = "hybrid",
    ablate: Sequence[str] | None = None,
    probe_access: bool = True,
    source: str = "",
    on_phase: Callable[[str, int], Callable[[int], None] | None] | None = None,
) -> EvalReport:
    """Run `cases` with the configured moves in `mode`, score the components and, when `ablate`
    is given (possibly empty = every move and mode), the ablation against pass-through."""

    main_arm = Arm(name="configured", mode=mode, moves=tuple(settings.understanding.moves))
    main = run_arm(cases, index, settings, main_arm, metrics, on_case=on_phase(f"{main_arm.name} ({mode})", len(cases)) if on_phase else None)
    probe = access_probe(cases, index, settings) if probe_access else None
    components = component_scores(cases, main.cases, settings, access=probe)
    ablation = None
    if ablate is not None:
        plan = plan_ablation(settings, ablate, mode=mode)
        ablation = run_ablation(cases, index, settings, plan, metrics, reuse=main, on_phase=on_phase)
    return EvalReport(source=source, run=main, components=components, ablation=ablation)


def _arm_json(r: ArmResult) -> dict[str, Any]:
    return {"mode": r.arm.mode, "moves": list(r.arm.moves), "overall": r.overall, "slices": r.slices, "latency_ms": r.latency_ms}


def report_json(report: EvalReport) -> dict[str, Any]:
    """The `--json` document (see the module docstring)."""
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
        }
    data["cases"] = [{"id": c.id, "slices": c.slices, "scores": c.scores} for c in run.cases]
    return data


def _f(v: float | None, pct: bool = False) -> str:
    if v is None:
        return "–"
    return f"{v:.1%}" if pct else f"{v:.3f}"


def render_terminal(report: EvalReport, console: Console) -> None:
    """Tables: metrics per slice, cost, components, ablation deltas with intervals, flags."""
    run = report.run
    console.print(
        f"[bold]{report.source or 'cases'}[/]: {run.n} cases, mode {run.arm.mode}, moves "
        f"{', '.join(run.arm.moves) or 'none (pass-through)'}",
        highlight=False,
    )
    table = Table(title="Retrieval per slice")
    table.add_column("slice")
    table.add_column("n", justify="right")
    for m in run.metrics:
        table.add_column(m, justify="right")
    table.add_column("zero results", justify="right")
    for name, values, size in [(ALL, run.overall, run.n), *((s, run.slices[s], run.slice_sizes[s]) for s in run.slices)]:
        table.add_row(name, str(size), *(_f(values.get(m)) for m in run.metrics), _f(values.get("zero_result_rate"), pct=True))
    console.print(table)
    llm = "no LLM calls" if run.llm_calls_per_1000 is None else f"{run.llm_calls_per_1000:g} LLM calls and ${run.cost_per_1000_usd:g} per 1,000 messages"
    console.print(f"latency p50 {run.latency_ms['p50']:.1f} ms, p95 {run.latency_ms['p95']:.1f} ms per message (understand + execute); {llm}", highlight=False)
    c = report.components
    if c is not None:
        lines = [
            f"router fallback rate {_f(c.fallback_rate, True)}",
            f"clarification rate {_f(c.clarification_rate, True)}",
            f"standalone messages searched as typed {_f(c.standalone_untouched, True)}",
            f"rewrite guard failures {_f(c.guard_failure_rate, True)} of {c.n_follow_ups_flagged} flagged follow-ups",
        ]
        if c.router:
            lines.append(f"route accuracy {_f(c.router.accuracy, True)} on {c.router.n} labelled: " + "; ".join(
                f"{r} P {_f(m.precision)} R {_f(m.recall)}" for r, m in c.router.per_route.items()))
        if c.ambiguity:
            a = c.ambiguity
            lines.append(f"asked when it should {_f(a.asked_when_should, True)}, missed {_f(a.missed_when_should, True)}, "
                         f"asked when it should not {_f(a.asked_when_should_not, True)} ({a.n} labelled, {a.should_ask} should ask)")
        if c.filters:
            lines.append(f"filters exact match {_f(c.filters.exact_match, True)} on {c.filters.n} labelled; " + ", ".join(
                f"{f} {_f(s.exact, True)} (n={s.n})" for f, s in c.filters.per_field.items()))
        if c.access:
            style = "green" if c.access.violations == 0 else "bold red"
            lines.append(f"access: [{style}]{c.access.violations} violations[/] in {c.access.n_probes} adversarial plans, "
                         f"{c.access.n_hits_checked} hits checked" + (f" ({c.access.note.strip()})" if c.access.note else ""))
        console.print("[bold]Components[/]\n  " + "\n  ".join(lines), highlight=False)
    a = report.ablation
    if a is None:
        return
    metric = run.metrics[0]
    t = Table(title=f"Ablation: {metric} minus {a.baseline}, 95% bootstrap interval (seed {a.seed}, {a.resamples} resamples)")
    for col in ("arm", "mode", metric, "Δ all", "95% interval", "p", "better on", "worse on"):
        t.add_column(col, justify="left" if col in ("arm", "mode", "better on", "worse on") else "right")
    base = a.arms[0]
    t.add_row(a.baseline, base.arm.mode, _f(base.overall.get(metric)), "", "", "", "", "")
    for arm in a.arms[1:]:
        rows = [d for d in a.deltas if d.arm == arm.arm.name and d.metric == metric]
        whole = next((d.diff for d in rows if d.slice == ALL), None)
        better = ", ".join(f"{d.slice} {d.diff.delta:+.3f}" for d in rows if d.slice != ALL and d.diff.direction > 0)
        worse = ", ".join(f"{d.slice} {d.diff.delta:+.3f}" for d in rows if d.slice != ALL and d.diff.direction < 0)
        if whole is None:
            t.add_row(arm.arm.name, arm.arm.mode, _f(arm.overall.get(metric)), "–", "", "", better, worse)
            continue
        colour = "green" if whole.direction > 0 else "red" if whole.direction < 0 else "dim"
        t.add_row(
            arm.arm.name, arm.arm.mode, _f(arm.overall.get(metric)), f"[{colour}]{whole.delta:+.3f}[/]",
            f"({whole.low:+.3f}, {whole.high:+.3f})", f"{whole.p_value:.3f}", f"[green]{better}[/]", f"[red]{worse}[/]",
        )  # fmt: skip
    console.print(t)
    for flag in a.flags:
        console.print(f"[yellow]flag[/] {escape(flag)}", highlight=False)
    for move, why in a.skipped.items():
        console.print(f"[dim]skipped {move}: {escape(why)}[/]", highlight=False)

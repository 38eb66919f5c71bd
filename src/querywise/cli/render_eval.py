"""`querywise eval` in the terminal: rich tables of an `EvalReport`. Formatting only: every
number is computed by the evaluation before this runs. Names from the case file, the config or
the run (slices, routes, fields, arms, the source path) are escaped: never read as markup."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from querywise.evaluation.harness import ALL
from querywise.evaluation.report import EvalReport

__all__ = ["render_terminal"]


def _f(v: float | None, pct: bool = False) -> str:
    if v is None:
        return "–"
    return f"{v:.1%}" if pct else f"{v:.3f}"


def render_terminal(report: EvalReport, console: Console) -> None:
    """Tables: metrics per slice, cost, components, ablation deltas with intervals, flags."""
    run = report.run
    console.print(
        f"[bold]{escape(report.source or 'cases')}[/]: {run.n} cases, mode {escape(run.arm.mode)}, moves "
        f"{escape(', '.join(run.arm.moves)) or 'none (pass-through)'}",
        highlight=False,
    )
    table = Table(title="Retrieval per slice")
    table.add_column("slice")
    table.add_column("n", justify="right")
    for m in run.metrics:
        table.add_column(escape(m), justify="right")
    table.add_column("zero results", justify="right")
    for name, values, size in [(ALL, run.overall, run.n), *((s, run.slices[s], run.slice_sizes[s]) for s in run.slices)]:
        table.add_row(escape(name), str(size), *(_f(values.get(m)) for m in run.metrics), _f(values.get("zero_result_rate"), pct=True))
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
                f"{escape(r)} P {_f(m.precision)} R {_f(m.recall)}" for r, m in c.router.per_route.items()))
        if c.ambiguity:
            amb = c.ambiguity
            lines.append(f"asked when it should {_f(amb.asked_when_should, True)}, missed {_f(amb.missed_when_should, True)}, "
                         f"asked when it should not {_f(amb.asked_when_should_not, True)} ({amb.n} labelled, {amb.should_ask} should ask)")
        if c.filters:
            lines.append(f"filters exact match {_f(c.filters.exact_match, True)} on {c.filters.n} labelled; " + ", ".join(
                f"{escape(f)} {_f(s.exact, True)} (n={s.n})" for f, s in c.filters.per_field.items()))
        if c.access:
            style = "green" if c.access.violations == 0 else "bold red"
            lines.append(f"access: [{style}]{c.access.violations} violations[/] in {c.access.n_probes} adversarial plans, "
                         f"{c.access.n_hits_checked} hits checked" + (f" ({escape(c.access.note.strip())})" if c.access.note else ""))
        console.print("[bold]Components[/]\n  " + "\n  ".join(lines), highlight=False)
    a = report.ablation
    if a is None:
        return
    metric = run.metrics[0]
    t = Table(title=f"Ablation: {escape(metric)} minus {escape(a.baseline)}, 95% bootstrap interval (seed {a.seed}, {a.resamples} resamples)")
    for col in ("arm", "mode", escape(metric), "Δ all", "95% interval", "p", "better on", "worse on"):
        t.add_column(col, justify="left" if col in ("arm", "mode", "better on", "worse on") else "right")
    base = a.arms[0]
    t.add_row(escape(a.baseline), escape(base.arm.mode), _f(base.overall.get(metric)), "", "", "", "", "")
    for arm in a.arms[1:]:
        rows = [d for d in a.deltas if d.arm == arm.arm.name and d.metric == metric]
        whole = next((d.diff for d in rows if d.slice == ALL), None)
        better = escape(", ".join(f"{d.slice} {d.diff.delta:+.3f}" for d in rows if d.slice != ALL and d.diff.direction > 0))
        worse = escape(", ".join(f"{d.slice} {d.diff.delta:+.3f}" for d in rows if d.slice != ALL and d.diff.direction < 0))
        if whole is None:
            t.add_row(escape(arm.arm.name), escape(arm.arm.mode), _f(arm.overall.get(metric)), "–", "", "", better, worse)
            continue
        colour = "green" if whole.direction > 0 else "red" if whole.direction < 0 else "dim"
        t.add_row(
            escape(arm.arm.name), escape(arm.arm.mode), _f(arm.overall.get(metric)), f"[{colour}]{whole.delta:+.3f}[/]",
            f"({whole.low:+.3f}, {whole.high:+.3f})", f"{whole.p_value:.3f}", f"[green]{better}[/]", f"[red]{worse}[/]",
        )
    console.print(t)
    for flag in a.flags:
        console.print(f"[yellow]flag[/] {escape(flag)}", highlight=False)
    for move, why in a.skipped.items():
        console.print(f"[dim]skipped {escape(move)}: {escape(why)}[/]", highlight=False)

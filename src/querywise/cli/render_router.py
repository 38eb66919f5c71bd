"""The terminal rendering of a `querywise router-eval` report (formatting only)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from querywise.cli._app import esc
from querywise.evaluation.router import RouterFigures, RouterReport

__all__ = ["pct", "render_router_report"]


def pct(v: float | None) -> str:
    """A share as a percentage; "n/a" when the figure has no denominator."""
    return "n/a" if v is None else f"{v:.1%}"


def _gate(v: float | None) -> str:  # the in-scope gate
    return "off" if v is None else f"{v:.4f}"


def _figure_cells(f: RouterFigures) -> list[str]:
    return [pct(v) for v in (f.in_scope_accuracy, f.answered_accuracy, f.deferred_share, f.oos_recall, f.oos_precision)]


FIGURE_COLUMNS = ("in-scope acc", "answered acc", "deferred", "OOS recall", "OOS precision")
CANDIDATE_COLUMNS = ("in-scope acc", "answered acc", "deferred", "OOS recall", "OOS prec.")


def render_router_report(report: RouterReport, out: Console, err: Console) -> None:
    """Operating point, every candidate's validation figures and the reason for the choice, then
    the chosen router on the test messages and the settings to paste into the config."""
    out.print(f"operating point: {esc(report.operating_point.description)}", highlight=False)
    with_val = [c for c in report.candidates if c.val is not None]
    if with_val:
        # compact: fits 80 columns; each candidate's gates are in --json and the chosen one's below
        table = Table(title="on --val (thresholds chosen here)", title_justify="left", show_edge=False)
        for col in ("classifier", *CANDIDATE_COLUMNS, "meets"):
            table.add_column(col, justify="left" if col == "classifier" else "right", overflow="fold")
        for c in with_val:
            assert c.val is not None
            meets = "[green]yes[/]" if c.meets_operating_point else "[red]no[/]"
            name = f"[bold]{esc(c.classifier)}[/]" if c.classifier == report.classifier else esc(c.classifier)
            table.add_row(name, *_figure_cells(c.val), meets)
        out.print(table)
    out.print(esc(report.choice), highlight=False)
    for w in report.warnings:
        err.print(f"[bold yellow]warning:[/] {esc(w)}", highlight=False, soft_wrap=True)
    chosen = next((c for c in report.candidates if c.classifier == report.classifier), None)
    if chosen is not None and chosen.tradeoffs:
        table = Table(title="the operating point is out of reach on --val: the nearest points", title_justify="left", show_edge=False)
        for col in ("point", "answered acc", "deferred", "OOS recall", "min_margin", "min_in_scope"):
            table.add_column(col, justify="left" if col == "point" else "right", overflow="fold")
        for t in chosen.tradeoffs:
            table.add_row(esc(t.what), pct(t.answered_accuracy), pct(t.deferred_share), pct(t.oos_recall), f"{t.min_margin:.4f}", _gate(t.min_in_scope))
        out.print(table)
    out.print(
        f"[bold]{esc(report.classifier)}[/] (min_margin {report.min_margin:.4f}, min_in_scope {_gate(report.min_in_scope)}) "
        f"on {report.n} test messages ({report.n_in_scope} in scope, {report.n_oos} out of scope)",
        highlight=False,
    )
    table = Table()
    for col in FIGURE_COLUMNS:
        table.add_column(col, justify="right")
    table.add_row(*(pct(v) for v in (report.in_scope_accuracy, report.answered_accuracy, report.deferred_share, report.oos_recall, report.oos_precision)))
    out.print(table)
    if report.confusions:
        out.print("most confused (gold → predicted): " + esc("; ".join(f"{c.gold} → {c.predicted} ×{c.count}" for c in report.confusions[:5])), highlight=False)
    if report.candidates[0].val is not None:  # thresholds chosen on data: worth keeping
        gate = f", min_in_scope = {report.min_in_scope:.6g}" if report.min_in_scope is not None else ""
        line = f'for the config: [routing] classifier = "{report.classifier}", min_margin = {report.min_margin:.6g}{gate}'
        out.print(f"[dim]{esc(line)}[/]", highlight=False)

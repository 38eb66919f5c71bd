"""`querywise router-eval` and `rewrite-eval`: the moves checked against labelled data."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from querywise.cli._app import ConfigOpt, app, fail, out, settings_from
from querywise.files import InputError


@app.command("router-eval")
def router_eval_cmd(
    train: Annotated[Path, typer.Option("--train", help="JSONL {text, label}; label oos = out of scope.", exists=True, dir_okay=False)],
    test: Annotated[Path, typer.Option("--test", help="JSONL {text, label} to report on.", exists=True, dir_okay=False)],
    val: Annotated[Path | None, typer.Option("--val", help="JSONL {text, label}: thresholds are chosen here only.", exists=True, dir_okay=False)] = None,
    classifier: Annotated[str, typer.Option(help="centroid, trained or auto.")] = "auto",
    min_margin: Annotated[float | None, typer.Option("--min-margin", help="Fix the margin gate instead of choosing it on --val.")] = None,
    max_deferred: Annotated[float, typer.Option("--max-deferred", help="Largest share deferred to the unsure tier.")] = 0.10,
    oos_label: Annotated[str, typer.Option("--oos-label", help="The label that marks out-of-scope messages.")] = "oos",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a confusion-matrix HTML report here.")] = None,
    config: ConfigOpt = None,
) -> None:
    """Fit a router on --train, choose thresholds on --val, report on --test."""
    from querywise.evaluation.router import evaluate_router, load_labelled
    from querywise.index.store import embedder_for

    if classifier not in ("centroid", "trained", "auto"):
        raise fail(f"--classifier must be centroid, trained or auto, not {classifier!r}")
    try:
        rows = {name: load_labelled(str(p)) if p else None for name, p in (("train", train), ("test", test), ("val", val))}
    except InputError as exc:
        raise fail(str(exc)) from None
    report = evaluate_router(
        rows["train"] or [], rows["test"] or [], val=rows["val"], embedder=embedder_for(settings_from(config)),
        classifier=classifier, min_margin=min_margin, max_deferred=max_deferred, oos_label=oos_label,  # type: ignore[arg-type]
    )
    if html is not None:
        from querywise.evaluation.html import router_report_html

        html.write_text(router_report_html(report), encoding="utf-8")
    if as_json:
        data = report.model_dump(exclude={"labels", "matrix"})
        sys.stdout.write(json.dumps(data) + "\n")
        return
    out.print(
        f"[bold]{report.classifier}[/] (min_margin {report.min_margin:.4f}, min_in_scope "
        + (f"{report.min_in_scope:.4f}" if report.min_in_scope is not None else "off") + f") on {report.n} test messages",
        highlight=False,
    )
    table = Table()
    for col in ("in-scope acc", "answered acc", "deferred", "OOS recall", "OOS precision"):
        table.add_column(col, justify="right")
    table.add_row(*(f"{v:.1%}" for v in (report.in_scope_accuracy, report.answered_accuracy, report.deferred_share, report.oos_recall, report.oos_precision)))
    out.print(table)
    if report.confusions:
        out.print("most confused (gold → predicted): " + "; ".join(f"{c.gold} → {c.predicted} ×{c.count}" for c in report.confusions[:5]), highlight=False)


@app.command("rewrite-eval")
def rewrite_eval_cmd(
    file: Annotated[Path, typer.Argument(help='JSONL {"history": [...], "message", "standalone"} with human rewrites.', exists=True, dir_okay=False)],
    config: ConfigOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
) -> None:
    """How well the follow-up gate and the rewrite guard agree with people's standalone rewrites."""
    from querywise.catalog import Catalog
    from querywise.evaluation.rewrites import evaluate_rewrites, load_rewrite_rows

    settings = settings_from(config)
    try:
        rows = load_rewrite_rows(file)
        catalog = Catalog.load(settings.deployment.catalog) if settings.deployment.catalog else None
    except InputError as exc:
        raise fail(str(exc)) from None
    report = evaluate_rewrites(rows, catalog=catalog)
    if as_json:
        sys.stdout.write(report.model_dump_json() + "\n")
        return

    def pct(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.1%}"

    out.print(
        f"{report.n} rows, {report.n_rewritten} rewritten by people: gate recall {pct(report.gate_recall)}, "
        f"precision {pct(report.gate_precision)}; guard false alarms {pct(report.guard_false_alarm_rate)}",
        highlight=False,
    )
    for ex in report.missed[:5]:
        out.print(f"  [yellow]missed[/] {ex.model_dump()}", highlight=False)
    for ex in report.false_flags[:5]:
        out.print(f"  [yellow]flagged needlessly[/] {ex.model_dump()}", highlight=False)
    for g in report.guard_false_alarms[:5]:
        out.print(f"  [red]guard rejected a human rewrite[/] {g.model_dump()}", highlight=False)



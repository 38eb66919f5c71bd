"""`querywise triage`: sort a sample of failing questions into repair buckets."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import JustifyMethod
from rich.table import Table

from querywise.cli._app import (
    ConfigOpt,
    IndexOpt,
    app,
    esc,
    fail,
    mode_from,
    out,
    output_path,
    progress,
    settings_from,
)
from querywise.files import InputError
from querywise.triage import TriageReport
from querywise.triage.probe_writer import probe_writer_from


@app.command("triage")
def triage_cmd(
    failures: Annotated[Path, typer.Argument(help="JSONL: id, question, history, acceptable, retrieved, gold_chunk | gold_text | gold_doc + gold_offset.", exists=True, dir_okay=False)],
    index: IndexOpt,
    sources: Annotated[Path | None, typer.Option("--sources", help="JSONL {id, text}: the documents before ingest.", exists=True, dir_okay=False)] = None,
    eval_total: Annotated[int | None, typer.Option("--eval-total", help="Questions in the eval set.", min=1)] = None,
    acceptable: Annotated[float | None, typer.Option("--acceptable", help="Acceptable rate of the eval set (0..1).")] = None,
    labels: Annotated[Path | None, typer.Option("--labels", help="JSONL {id, label}: human query-defect labels.", exists=True, dir_okay=False)] = None,
    sample: Annotated[int | None, typer.Option("--sample", help="Triage a random sample of N failures.", min=1)] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sample.")] = 0,
    k: Annotated[int, typer.Option("--k", help="Depth of the probes.", min=11)] = 50,
    mode: Annotated[str, typer.Option("--mode", help="dense, bm25 or hybrid: how probes and the original question search.")] = "hybrid",
    fpc: Annotated[bool, typer.Option("--fpc", help="Apply the finite-population correction to the SEs.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a standalone HTML report here.")] = None,
    config: ConfigOpt = None,
) -> None:
    """For each failure, find the gold passage, ask the index whether it can retrieve itself, and
    sort the failure into the place where it is repaired."""
    from querywise.index.store import Index, IndexStoreError
    from querywise.triage import (
        build_report,
        load_failures,
        load_labels,
        load_sources,
        population_of,
        sample_failures,
        triage_cases,
    )
    from querywise.triage.html import triage_html

    search_mode = mode_from(mode)
    settings = settings_from(config)
    output_path(html, "--html")
    try:
        data = load_failures(failures)
        docs = load_sources(sources) if sources else None
        human = load_labels(labels) if labels else None
        population = population_of(data.n_rows, data.n_acceptable, len(data.failures), eval_total=eval_total, acceptable=acceptable)
    except (InputError, ValueError) as exc:
        raise fail(str(exc)) from None
    if not data.failures:
        raise fail(f"{failures}: no failing rows (acceptable: false) to triage")
    picked = sample_failures(data.failures, sample, seed)
    try:
        ix = Index.open(index, settings=settings)
    except IndexStoreError as exc:
        raise fail(str(exc)) from None
    write_probe = probe_writer_from(settings)
    started = time.perf_counter()
    with ix:
        if as_json:
            cases = triage_cases(picked, ix, sources=docs, labels=human, k=k, mode=search_mode, write_probe=write_probe)
        else:
            with progress() as phase:
                cases = triage_cases(picked, ix, sources=docs, labels=human, k=k, mode=search_mode, progress=phase, write_probe=write_probe)
    report = build_report(cases, population, k=k, mode=search_mode, seed=seed if sample else None, fpc=fpc)
    report = report.model_copy(update={"seconds": round(time.perf_counter() - started, 3)})
    if html is not None:
        html.write_text(triage_html(report), encoding="utf-8")
    if as_json:
        sys.stdout.write(json.dumps(report.to_json()) + "\n")
        return
    _render(report)
    if html is not None:
        out.print(f"HTML report written to {esc(html)}", highlight=False)


def _render(report: TriageReport) -> None:
    from querywise.triage.buckets import BUCKETS

    s, pop = report.sample, report.sample.population
    line = f"[bold]{s.n}[/] failures triaged" + (f" of {pop.failures}" if pop.failures is not None else "")
    if s.failing_points is not None:
        line += f" · eval set {pop.eval_total} at {pop.acceptable_rate:.0%} acceptable → {s.failing_points:g} points fail"
    out.print(line + f" · k = {s.k}, mode {esc(s.mode)}", highlight=False)
    table = Table()
    columns: tuple[tuple[str, JustifyMethod], ...] = (("bucket", "left"), ("count", "right"), ("share", "right"), ("± SE", "right"),
                                                      ("points of traffic", "right"), ("repaired in", "left"))
    for col, justify in columns:
        table.add_column(col, justify=justify)
    for b in BUCKETS:
        pts = report.points[b]
        table.add_row(esc(b), str(report.buckets[b]), f"{report.shares[b]}%", f"{100 * report.se[b]:.1f}",
                      "–" if pts is None else f"{pts:.1f}", esc(report.repair[b]))
    out.print(table)
    out.print(f"reachable by the query layer: [bold]{report.reachable_share:.0%}[/] of failures (± {100 * report.reachable_se:.1f})", highlight=False)
    if report.reachable_points is not None and report.unreachable_points is not None:  # set together
        band = report.expected_band or []
        out.print(
            f"reachable points {report.reachable_points} + unreachable points {report.unreachable_points} = "
            f"{report.reachable_points + report.unreachable_points} of {s.failing_points:g} failing; ceiling {report.ceiling_points} points, "
            f"expected gain {band[0]:g}–{band[1]:g} points (a third to a half of the ceiling)",
            highlight=False,
        )
    else:
        out.print("points of traffic: unknown (give --eval-total and --acceptable)", highlight=False)
    out.print(f"SE: {esc(s.se_method)}", highlight=False)
    for note in report.notes:
        out.print(f"[dim]· {esc(note)}[/]", highlight=False)

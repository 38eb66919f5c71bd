"""`querywise triage`: sort a sample of failing questions into repair buckets."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import JustifyMethod
from rich.table import Table

from querywise.cli._app import (
    ConfigOpt,
    MaybeIndexOpt,
    RetrieverOpt,
    app,
    esc,
    fail,
    mode_from,
    out,
    output_path,
    progress,
    settings_from,
    with_retriever,
)
from querywise.files import InputError, write_atomic
from querywise.triage import TriageReport
from querywise.triage.html import findings, interval_text, points_text
from querywise.triage.options import DEFAULT_CONTEXT_K, DEFAULT_K, MAX_CORPUS_SHARE
from querywise.triage.stats import half_up


@app.command("triage")
def triage_cmd(
    failures: Annotated[Path, typer.Argument(help="JSONL: id, question, history, acceptable, retrieved, gold_chunk | gold_text | gold_doc [+ gold_offset]; what `eval --failures` writes.", exists=True, dir_okay=False)],
    index: MaybeIndexOpt = None,
    retriever: RetrieverOpt = None,
    corpus: Annotated[Path | None, typer.Option("--corpus", help="With --retriever and no --index: your passages (JSONL/CSV records with the ids your retriever returns), for the detectors.", exists=True)] = None,
    sources: Annotated[Path | None, typer.Option("--sources", help="JSONL {id, text}: the documents before ingest.", exists=True, dir_okay=False)] = None,
    eval_total: Annotated[int | None, typer.Option("--eval-total", help="Questions in the eval set.", min=1)] = None,
    acceptable: Annotated[float | None, typer.Option("--acceptable", help="Acceptable rate of the eval set (0..1).")] = None,
    labels: Annotated[Path | None, typer.Option("--labels", help="JSONL {id, label}: human query-defect labels.", exists=True, dir_okay=False)] = None,
    sample: Annotated[int | None, typer.Option("--sample", help="Triage a random sample of N failures.", min=1)] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sample.")] = 0,
    k: Annotated[int | None, typer.Option("--k", help=f"Depth of the probes and searches; ranking is the gold at ranks --context-k + 1 .. k. Default: the [rerank] top_n when the deployment reranks, else {MAX_CORPUS_SHARE:.0%} of the corpus, at most {DEFAULT_K} and at least 2 x --context-k.", min=2)] = None,
    context_k: Annotated[int | None, typer.Option("--context-k", help=f"How many results the generator (or UI) is shown: a gold within the top N of `retrieved` (else of the index for the question) is a generation failure. At least 1, below --k. Default: the failures file's rule (K of its hit@K), else {DEFAULT_CONTEXT_K}.", min=1)] = None,
    plan_margin: Annotated[float | None, typer.Option("--plan-margin", help="Only plan: how many cases a margin of ± M points (one SE) needs and what they cost at 3-5 minutes a case; triages nothing.", min=0.1, max=50)] = None,
    plan_share: Annotated[
        float, typer.Option("--plan-share", help="With --plan-margin: the share the margin is for (0.5: the widest).", min=0.01, max=0.99)
    ] = 0.5,
    compare: Annotated[
        str | None, typer.Option("--compare", help="Test whether two buckets differ: BUCKET,BUCKET (the report always tests its two largest).")
    ] = None,
    mode: Annotated[str, typer.Option("--mode", help="dense, bm25 or hybrid: how probes and the original question search.")] = "hybrid",
    fpc: Annotated[bool, typer.Option("--fpc", help="Apply the finite-population correction to the SEs.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a standalone HTML report here.")] = None,
    show_cases: Annotated[bool, typer.Option("--show-cases", help="List every case: bucket, reason, ranks and the chunks ranked above the gold for the original question.")] = False,
    config: ConfigOpt = None,
) -> None:
    """For each failure, find the gold passage, ask the index (or --retriever: the system that
    failed) whether it can retrieve itself, and sort the failure into the place where it is repaired."""
    from pydantic import ValidationError

    from querywise.corpus import read_corpus
    from querywise.index.store import Index, IndexStoreError
    from querywise.retrieve import RetrieverError
    from querywise.triage import TriageOptions, TriageTarget, load_failures, load_labels, load_sources, triage
    from querywise.triage.html import triage_html
    from querywise.triage.options import options_problem

    if plan_margin is not None:
        _plan(failures, plan_margin, plan_share, eval_total, acceptable, as_json)
        return
    pair = _pair(compare)
    try:
        options = TriageOptions(k=k, context_k=context_k, mode=mode_from(mode), sample=sample, seed=seed, fpc=fpc,
                                eval_total=eval_total, acceptable=acceptable)
    except ValidationError as exc:
        raise fail(options_problem(exc)) from None
    settings = with_retriever(settings_from(config), retriever)
    output_path(html, "--html")
    if index is None and settings.retriever.kind == "index":
        raise fail("give --index DIR, or the retriever that failed (--retriever SPEC, or [retriever] in the config) and --corpus FILE")
    if index is None and corpus is None:
        raise fail("triage through a retriever reads your passages from --corpus FILE (the records, with the ids your retriever returns)")
    try:
        data = load_failures(failures)
        docs = load_sources(sources) if sources else None
        human = load_labels(labels) if labels else None
    except InputError as exc:
        raise fail(str(exc)) from None
    if not data.failures:
        raise fail(f"{failures}: no failing rows (acceptable: false) to triage")
    try:
        passages = read_corpus(corpus, whole_records=True, max_record_chars=settings.limits.max_record_chars).chunks if corpus else None
        ix = Index.open(index, settings=settings) if index is not None else None
    except (IndexStoreError, InputError) as exc:
        raise fail(str(exc)) from None
    try:
        target = TriageTarget.of_settings(settings, ix, passages)
    except ValueError as exc:
        raise fail(f"--retriever: {exc}") from None
    run = functools.partial(triage, data, target, options, sources=docs, labels=human)
    try:
        with ix or contextlib.nullcontext():
            if as_json:
                report = run()
            else:
                with progress() as phase:
                    report = run(progress=phase)
    except (RetrieverError, ValueError) as exc:
        raise fail(str(exc)) from None
    finally:
        if ix is None and (close := getattr(target.embedder, "close", None)) is not None:
            close()  # the one `of_settings` made (its on-disk cache's SQLite connection); the index closes its own
    if html is not None:
        write_atomic(html, triage_html(report))
    if as_json:
        sys.stdout.write(json.dumps(report.to_json()) + "\n")
        return
    _render(report)
    if pair is not None:
        _render_difference(report, *pair)
    if show_cases:
        _render_cases(report)
    if html is not None:
        out.print(f"HTML report written to {esc(html)}", highlight=False)


def _pair(compare: str | None) -> tuple[str, str] | None:
    """`--compare A,B` as two bucket names (a typo fails before anything runs)."""
    from querywise.triage.buckets import BUCKETS

    if compare is None:
        return None
    names = [n.strip() for n in compare.split(",") if n.strip()]
    unknown = [n for n in names if n not in BUCKETS]
    if len(names) != 2 or unknown:
        raise fail(f"--compare takes two buckets, BUCKET,BUCKET, of: {', '.join(BUCKETS)}")
    return names[0], names[1]


def _render_difference(report: TriageReport, a: str, b: str) -> None:
    from querywise.triage.stats import compare_buckets

    d = compare_buckets(a, b, report.buckets[a], report.buckets[b], report.sample.n)
    verdict = "they differ" if d.differ else "not shown to differ"
    stat = f"z = {half_up(d.z, 2):g}, p = {half_up(d.p_value, 3):g}" if d.z is not None and d.p_value is not None else "no variance"
    out.print(esc(f"{a} ({d.count_a}) against {b} ({d.count_b}) of {d.n}: {verdict} ({stat}; {d.test})"), highlight=False, soft_wrap=True)


def _plan(failures: Path, margin: float, share: float, eval_total: int | None, acceptable: float | None, as_json: bool) -> None:
    """How many cases `margin` needs, from the failures file's own count (or --eval-total and --acceptable)."""
    from querywise.triage import load_failures
    from querywise.triage.stats import cases_needed

    try:
        data = load_failures(failures)
    except InputError as exc:
        raise fail(str(exc)) from None
    population = round(eval_total * (1 - acceptable)) if eval_total is not None and acceptable is not None else len(data.failures) or None
    plan = cases_needed(margin, share=share, population=population)
    if as_json:
        sys.stdout.write(plan.model_dump_json() + "\n")
        return
    low, high = plan.hours
    out.print(
        esc(
            f"± {margin:g} points (one SE) on a share near {share:.0%} needs {plan.cases} cases"
            + (f" of {population} failures" if population else "")
            + f" ({plan.cases_uncorrected} without the finite-population correction): "
            f"{half_up(low, 1):g}–{half_up(high, 1):g} hours at 3–5 minutes a case. {plan.rule}."
        ),
        highlight=False,
        soft_wrap=True,
    )


def _render(report: TriageReport) -> None:
    from querywise.triage.buckets import BUCKETS

    s, pop = report.sample, report.sample.population
    line = f"[bold]{s.n}[/] failures triaged" + (f" of {pop.failures}" if pop.failures is not None else "")
    if s.failing_points is not None:
        line += f" · eval set {pop.eval_total} at {pop.acceptable_rate:.0%} acceptable → {points_text(s.failing_points, 2)} points of traffic fail"
    out.print(line + f" · k = {s.k}, mode {esc(s.mode)} · generation = the gold within the top {s.context_k} (--context-k)", highlight=False)
    table = Table()
    # The interval, not "± SE": a binomial SE is 0 for an empty or a whole bucket ("100% ± 0.0" for 3 of 3).
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("bucket", "left"),
        ("count", "right"),
        ("share", "right"),
        ("interval (1 SE)", "right"),
        ("points of traffic", "right"),
        ("repaired in", "left"),
    )
    for col, justify in columns:
        table.add_column(col, justify=justify)
    for b in BUCKETS:
        pts = report.points[b]
        repair = report.repair[b] + (f" — {report.prices[b]}" if b in report.prices else "")
        table.add_row(esc(b), str(report.buckets[b]), f"{report.shares[b]}%", interval_text(report, b), "–" if pts is None else str(pts), esc(repair))
    table.add_row(
        "[bold]total[/]",
        str(s.n),
        f"{sum(report.shares.values())}%",
        "",
        "–" if report.failing_whole is None else str(report.failing_whole),
        "",
        end_section=True,
    )
    out.print(table)
    parts, part_pts = report.part_shares, report.part_points
    reach = f"reachable by the query layer: [bold]{parts.get('reachable', 0)}%[/] of failures (± {half_up(100 * report.reachable_se, 1):.1f})"
    out.print(reach + (f" = {part_pts['reachable']} points" if part_pts is not None else ""), highlight=False)
    n_suspect = report.buckets.get("suspect_label", 0)
    if n_suspect:
        out.print(
            f"suspect labels: {n_suspect} of {s.n} failures, {parts.get('suspect_label', 0)}% (± {half_up(100 * report.part_se.get('suspect_label', 0), 1):.1f})"
            + (f" = {part_pts['suspect_label']} points" if part_pts is not None else "")
            + " — not reachable by the query layer and not in the ceiling: re-judge those labels", highlight=False)
    if report.reachable_points is not None and report.unreachable_points is not None and part_pts is not None:  # set together
        band = report.expected_band or []
        # one decimal each when the ceiling is too small for a whole point inside its band (see `report.band`)
        gain = f"{band[0]:g} points" if band[0] == band[1] else f"{band[0]:g}–{band[1]:g} points"
        split = (f" (unreachable: {part_pts['suspect_label']} of suspect labels + {part_pts['rest']} index side, chunker, routing, ranking and "
                 f"generation)" if n_suspect else "")
        out.print(
            f"reachable points {report.reachable_points} + unreachable points {report.unreachable_points} = "
            f"{report.reachable_points + report.unreachable_points} failing points{split}; ceiling {report.ceiling_points} points, "
            f"expected gain {gain} (a third to a half of the ceiling)",
            highlight=False,
        )
    else:
        out.print("points of traffic: unknown (give --eval-total and --acceptable)", highlight=False)
    rounding = s.rounding + (f" Failing points: {points_text(s.failing_points, 2)} → {report.failing_whole}." if report.failing_whole is not None else "")
    out.print(esc(rounding), highlight=False)
    out.print(f"SE: {esc(s.se_method)}; intervals: {esc(s.interval_method)}", highlight=False)
    for line in findings(report):
        out.print(esc(line), highlight=False, soft_wrap=True)
    for note in report.notes:
        out.print(f"[dim]· {esc(note)}[/]", highlight=False)


def _rank(value: int | None) -> str:
    return "–" if value is None else str(value)


def _render_cases(report: TriageReport) -> None:
    """Each case: bucket, reason, ranks, and the chunks the index ranks above the gold."""
    k = report.sample.k
    out.print("\n[bold]Cases[/] (ranks: original question / system's retrieved list / literal probe / generated probe; "
              f"– is not in the top {k})", highlight=False)
    for c in report.cases:
        ev = c.evidence
        source = f" ({ev.label_source})" if ev.label_source else ""
        out.print(f"[bold]{esc(c.id)}[/] {esc(c.bucket)}{esc(source)} — {esc(ev.reason)}", highlight=False, soft_wrap=True)
        out.print(f"  question: {esc(c.question)}", highlight=False, soft_wrap=True)
        if ev.location.absent:
            continue
        out.print(
            f"  gold {esc(ev.location.chunk_id)} · ranks {_rank(ev.rank_original)} / {_rank(ev.retrieved_rank)} / "
            f"{_rank(ev.literal_rank)} / {_rank(ev.generated_rank)}",
            highlight=False,
            soft_wrap=True,
        )
        if len(ev.golds) > 1:
            out.print(f"  {len(ev.golds)} relevant documents (rank for the question / in the retrieved list):", highlight=False)
            for g in ev.golds:
                where = "not in the index" if not g.chunk_ids else f"{_rank(g.rank_original)} / {_rank(g.retrieved_rank)}"
                out.print(f"    {esc(g.id)}: {where}", highlight=False, soft_wrap=True)
        probe = ev.generated_probe if ev.generated_by != "none" else f"not built: {ev.probe_error}"
        out.print(f"  generated probe ({esc(ev.generated_by)}): {esc(probe)}", highlight=False, soft_wrap=True)
        lc = ev.label_check
        if lc is not None and c.bucket == "suspect_label":
            out.print(f"  label evidence: question terms {esc(', '.join(lc.question_terms))}; shared with the gold: none; "
                      f"dense rank {_rank(lc.dense_rank)}, lexical rank {_rank(lc.lexical_rank)}, probe rank {_rank(lc.probe_rank)}",
                      highlight=False, soft_wrap=True)
        if ev.above_original:
            shown = len(ev.above_original)
            if ev.rank_original is None:
                head = f"  the top {shown} for the original question (the gold is not in the top {k}):"
            else:
                head = f"  above the gold (rank {ev.rank_original}) for the original question" + (
                    f", the first {shown} of {ev.rank_original - 1}:" if shown < ev.rank_original - 1 else ":")
            out.print(head, highlight=False)
            for a in ev.above_original:
                where = "same document" if a.same_doc else "other document"
                out.print(f"    {a.rank}. {esc(a.id)} ({where}) {esc(a.snippet)}", highlight=False, soft_wrap=True)

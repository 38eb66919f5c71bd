"""`querywise router-eval`, `rewrite-eval`, `eval`, `eval-schema` and `compare`: the moves checked against labelled data."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from querywise.cli._app import (
    ConfigOpt,
    MaybeIndexOpt,
    RetrieverOpt,
    SessionOpt,
    app,
    err,
    esc,
    fail,
    mode_from,
    open_index,
    out,
    output_path,
    print_warnings,
    progress,
    session_from,
    settings_from,
    with_retriever,
)
from querywise.conversation import Turn
from querywise.corpus import read_corpus
from querywise.evaluation.metrics import DEFAULT_METRICS
from querywise.files import InputError, write_atomic
from querywise.llm.provider import LLMError
from querywise.retrieve import RetrieverError
from querywise.triage.options import DEFAULT_K
from querywise.understand.access import AccessError

if TYPE_CHECKING:
    from querywise.evaluation.failures import FailureRows


@app.command("router-eval")
def router_eval_cmd(
    train: Annotated[Path, typer.Option("--train", help="JSONL {text, label}, or CSV with text and label columns; label oos = out of scope.", exists=True, dir_okay=False)],
    test: Annotated[Path, typer.Option("--test", help="JSONL {text, label} (or CSV: text, label) to report on.", exists=True, dir_okay=False)],
    val: Annotated[Path | None, typer.Option("--val", help="JSONL {text, label} (or CSV: text, label): thresholds and the auto classifier are chosen here only.", exists=True, dir_okay=False)] = None,
    classifier: Annotated[str, typer.Option(help="centroid, trained or auto (both fitted, one kept by its --val figures; the reason is printed).")] = "auto",
    min_answered: Annotated[float | None, typer.Option("--min-answered", min=0.0, max=1.0, help="Operating point: answered accuracy at least this (default: routing.min_answered of --config, else 0.97). Chosen on --val at this plus --headroom.")] = None,
    max_deferred: Annotated[float | None, typer.Option("--max-deferred", min=0.0, max=1.0, help="Operating point: at most this share deferred to the unsure tier (default: routing.max_deferred of --config, else 0.10).")] = None,
    headroom: Annotated[float, typer.Option("--headroom", min=0.0, max=0.5, help="Added to --min-answered on --val, for the val-to-test sampling error.")] = 0.005,
    min_oos_recall: Annotated[float | None, typer.Option("--min-oos-recall", min=0.0, max=1.0, help="Operating point: keep at least this share of the out-of-scope val messages out, whatever else is missed (default: routing.min_oos_recall of --config, else 0.5; 0: no floor).")] = None,
    min_margin: Annotated[float | None, typer.Option("--min-margin", help="Fix the margin gate instead of choosing it on --val.")] = None,
    oos_label: Annotated[str, typer.Option("--oos-label", help="The label that marks out-of-scope messages.")] = "oos",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a confusion-matrix HTML report here.")] = None,
    encoder: Annotated[Path | None, typer.Option("--encoder", help="A fine-tuned encoder folder (querywise router-train); default: the config's routing.encoder, else the packaged model.", exists=True, file_okay=False)] = None,
    config: ConfigOpt = None,
) -> None:
    """Fit a router on --train, choose thresholds on --val to meet the operating point, report on --test.

    The operating point is yours: answered accuracy at least --min-answered with at most
    --max-deferred of the messages deferred. On --val the cheapest thresholds meeting both are
    chosen; when none does, the deferral budget is kept and a warning says what was missed.
    Paste the printed min_margin and min_in_scope into the config's [routing] section."""
    from querywise.cli._phases import phase_display
    from querywise.embed import embedder_for
    from querywise.evaluation.router import ClassifierKind, evaluate_router, load_labelled
    from querywise.understand.routing.calibration import OperatingPoint

    match classifier:
        case "centroid" | "trained" | "auto":
            kind: ClassifierKind = classifier
        case _:
            raise fail(f"--classifier must be centroid, trained or auto, not {classifier!r}")
    settings = settings_from(config)
    output_path(html, "--html")
    point = OperatingPoint(
        min_answered=settings.routing.min_answered if min_answered is None else min_answered,
        max_deferred=settings.routing.max_deferred if max_deferred is None else max_deferred,
        headroom=headroom,
        min_oos_recall=settings.routing.min_oos_recall if min_oos_recall is None else min_oos_recall,
    )
    try:
        rows = {name: load_labelled(str(p)) if p else None for name, p in (("train", train), ("test", test), ("val", val))}
    except InputError as exc:
        raise fail(str(exc)) from None
    embedder = embedder_for(settings, model_folder=encoder or settings.routing.encoder)
    try:
        with phase_display(err) as phase:  # lines with an estimate on a pipe too: 23,000 messages take minutes
            report = evaluate_router(
                rows["train"] or [], rows["test"] or [], val=rows["val"], embedder=embedder,
                classifier=kind, point=point, min_margin=min_margin, oos_label=oos_label, progress=phase,
            )
    finally:
        if (close := getattr(embedder, "close", None)) is not None:
            close()  # its on-disk cache's SQLite connection: Python 3.13 warns when the collector closes one
    if html is not None:
        from querywise.evaluation.router_html import router_report_html

        write_atomic(html, router_report_html(report))
    if as_json:
        data = report.model_dump(exclude={"labels", "matrix"})
        sys.stdout.write(json.dumps(data) + "\n")
        return
    from querywise.cli.render_router import render_router_report

    render_router_report(report, out, err)


@app.command("rewrite-eval")
def rewrite_eval_cmd(
    file: Annotated[Path, typer.Argument(help='JSONL {"history": [...], "message", "standalone"} with human rewrites.', exists=True, dir_okay=False)],
    config: ConfigOpt = None,
    session: SessionOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON object.")] = False,
) -> None:
    """How well the follow-up gate, the rewrite guard and the text the plan searches agree with
    people's standalone rewrites (rows may carry assistant turns: {"role": "assistant", "text"})."""
    from querywise.evaluation.rewrites import evaluate_rewrites, load_rewrite_rows, plan_rewriter, subject_rewriter
    from querywise.service import QueryWise

    settings = settings_from(config)
    try:
        rows = load_rewrite_rows(file)
        # An evaluation is not traffic: its plans are not logged.
        with QueryWise(settings.model_copy(update={"deployment": settings.deployment.model_copy(update={"plan_log": None})})) as qw:
            print_warnings(qw.warnings)
            with progress() as phase:
                step = phase("planning the rows the gate flags", None)
                rewriter = plan_rewriter(qw, session=session_from(session))

                def searched(message: str, history: Sequence[Turn]) -> str:
                    step(1)
                    return rewriter(message, history)

                catalog = qw.understander.catalog
                report = evaluate_rewrites(rows, catalog=catalog, rewriter=searched, baseline=subject_rewriter(catalog=catalog))
    except (InputError, AccessError, LLMError) as exc:
        raise fail(str(exc)) from None
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
    out.print(
        f"the text the plan searches: added-term recall {pct(report.added_term_recall)} at precision {pct(report.added_term_precision)}, "
        f"token F1 {pct(report.token_f1)}, exact match {pct(report.exact_match)}",
        highlight=False,
    )
    if report.added_by_source:
        said = {"user_turns": "the user's turns", "last_answer": "the last answer", "earlier_answers": "earlier answers", "nowhere": "nowhere"}
        parts = [f"{said[s]} {c.person} (the form holds {pct(c.recall)}; adds {c.form}, {pct(c.precision)} right)"
                 for s, c in report.added_by_source.items() if c.person or c.form]
        out.print(f"  the terms people add, by where the history said them: {'; '.join(parts) or 'none'}", highlight=False)
    out.print(
        f"baseline, the conversation's subject + the message: added-term recall {pct(report.baseline_added_term_recall)} "
        f"at precision {pct(report.baseline_added_term_precision)}",
        highlight=False,
    )
    for ex in report.missed[:5]:
        out.print(f"  [yellow]missed[/] {esc(ex.model_dump())}", highlight=False)
    for ex in report.false_flags[:5]:
        out.print(f"  [yellow]flagged needlessly[/] {esc(ex.model_dump())}", highlight=False)
    for g in report.guard_false_alarms[:5]:
        out.print(f"  [red]guard rejected a human rewrite[/] {esc(g.model_dump())}", highlight=False)




@app.command("eval")
def eval_cmd(
    cases: Annotated[Path, typer.Argument(help="A JSONL case file, or a BEIR folder (corpus.jsonl, queries.jsonl, qrels/).", exists=True)],
    index: MaybeIndexOpt = None,
    config: ConfigOpt = None,
    retriever: RetrieverOpt = None,
    corpus: Annotated[Path | None, typer.Option("--corpus", help="With --retriever and no --index: your passages (records with the ids your retriever returns); --failures takes the gold texts from them.", exists=True)] = None,
    mode: Annotated[str, typer.Option(help="dense, bm25 or hybrid.")] = "hybrid",
    metrics: Annotated[str, typer.Option("--metrics", help="Comma-separated, e.g. ndcg@10,recall@100,mrr@10,hit_rate@5.")] = ",".join(DEFAULT_METRICS),
    ablate: Annotated[list[str] | None, typer.Option("--ablate", help="A move or mode to ablate against pass-through; repeat; 'all' for every one.")] = None,
    split: Annotated[str, typer.Option(help="BEIR qrels split (qrels/SPLIT.tsv).")] = "test",
    no_access_probe: Annotated[bool, typer.Option("--no-access-probe", help="Skip the adversarial access set.")] = False,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Skip bad case lines, corpus records, queries and judgements (a judgement of a skipped record goes too) and list each, file:line: reason, instead of stopping at the first.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run as JSON (save it for `querywise compare`).")] = False,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a standalone HTML report here.")] = None,
    failures: Annotated[Path | None, typer.Option("--failures", help="Also write every case with a relevant id as JSONL for `querywise triage`: question, history, acceptable, the retrieved ids (as deep as the search went), gold ids and text, scores.")] = None,
    acceptable_if: Annotated[list[str] | None, typer.Option("--acceptable-if", help="With --failures: when a case counts as acceptable. METRIC alone means above 0 (hit@5: a relevant id in the top 5); METRIC OP NUMBER with OP one of >=, >, <=, <, == (e.g. 'ndcg@10>=0.5'). Repeat to require all. Default: hit@5.")] = None,
    session: SessionOpt = None,
) -> None:
    """Run labelled cases through understanding and retrieval: metrics per slice, components, ablation.

    Cases run under their own "session"; --session KEY=VALUE is the session of cases that have none.
    With --failures FILE every case is also written for `querywise triage FILE --index DIR`."""
    from querywise.catalog import Catalog
    from querywise.cli._report import print_skipped
    from querywise.cli.render_eval import render_terminal
    from querywise.evaluation.acceptable import AcceptableRuleError, parse_rule
    from querywise.evaluation.cases import read_case_source
    from querywise.evaluation.metrics import MetricError, parse_metrics
    from querywise.evaluation.report import evaluate
    from querywise.evaluation.result import EvalResult
    from querywise.failures import write_failures
    from querywise.service import QueryWise

    settings = with_retriever(settings_from(config), retriever)
    search_mode = mode_from(mode)
    output_path(html, "--html")
    try:
        wanted = parse_metrics([metrics])
    except MetricError as exc:
        raise fail(str(exc)) from None
    if not wanted:
        raise fail("--metrics names no metric")
    output_path(failures, "--failures")
    if acceptable_if and failures is None:
        raise fail("--acceptable-if decides which cases --failures marks acceptable; give --failures FILE too")
    try:
        rule = parse_rule(acceptable_if or []) if failures is not None else None
    except AcceptableRuleError as exc:
        raise fail(f"--acceptable-if: {exc}") from None
    try:
        catalog = Catalog.load(settings.deployment.catalog) if settings.deployment.catalog else None
        got = read_case_source(cases, catalog=catalog, split=split, skip_invalid=skip_invalid, max_record_chars=settings.limits.max_record_chars)
    except InputError as exc:
        raise fail(str(exc)) from None
    if failures is not None and index is None and corpus is None:
        raise fail("--failures writes the gold passages' text: give --index DIR, or --corpus FILE with your passages")
    ix = open_index(index, settings)
    print_skipped(got.skipped, err)
    try:
        mine = read_corpus(corpus, whole_records=True, skip_invalid=skip_invalid) if corpus is not None and ix is None else None
    except InputError as exc:
        raise fail(str(exc)) from None
    if mine is not None:
        print_skipped(mine.skipped, err)
    try:
        with ix or contextlib.nullcontext(), QueryWise(settings, ix) as deployment, progress() as phase:
            passages = mine.chunks if mine is not None else None
            report = evaluate(
                got.cases, deployment, wanted, mode=search_mode, ablate=None if ablate is None else [a for a in ablate if a != "all"],
                probe_access=not no_access_probe, source=str(cases), on_phase=phase, session=session_from(session), rule=rule,
                passages=passages,
            )
    except (ValueError, RetrieverError, InputError) as exc:
        raise fail(str(exc)) from None
    print_warnings(report.warnings)  # the deployment's start-up warnings, judged ids the index lacks
    if failures is not None and report.failures is not None:
        write_failures(failures, report.failures.rows)
    if html is not None:
        from querywise.evaluation.eval_html import eval_report_html

        write_atomic(html, eval_report_html(report))
        err.print(f"wrote {esc(html)}", highlight=False)
    if as_json:
        sys.stdout.write(EvalResult.from_report(report).model_dump_json() + "\n")
    else:
        render_terminal(report, out)
    if failures is not None and report.failures is not None:  # last, so the next command is the last line
        err.print(_failures_note(report.failures, failures, index, config, search_mode, retriever=retriever, corpus=corpus), highlight=False, soft_wrap=True)


def _failures_note(rows: FailureRows, path: Path, index: Path | None, config: Path | None, mode: str, *,
                   retriever: str | None = None, corpus: Path | None = None) -> str:
    """What --failures wrote, and the triage command that reads it."""
    skipped = f"; {len(rows.skipped)} without a judged id skipped" if rows.skipped else ""
    head = (f"wrote {len(rows.rows)} cases ({rows.n_acceptable} acceptable by `{rows.rule.label}`, "
            f"{rows.n_failing} failing{skipped}) to {path}")
    if not rows.n_failing:
        return esc(f"{head}; nothing failing to triage")
    command = ["querywise", "triage", str(path), *(["--index", str(index)] if index is not None else [])]
    command += ["--retriever", retriever] if retriever is not None else []  # probe the system that failed
    command += ["--corpus", str(corpus)] if index is None and corpus is not None else []
    command += ["--config", str(config)] if config is not None else []
    command += ["--mode", mode] if mode != "hybrid" else []  # probe the index the way the system searched it
    shown = rows.rule.shown
    if shown is not None and shown < DEFAULT_K:  # failing = gold not in triage's top K, so its generation cut-off is K
        command += ["--context-k", str(shown)]
    return esc(f"{head}; next: {shlex.join(command)}")


@app.command("eval-schema")
def eval_schema_cmd() -> None:
    """Print the JSON schema of the `querywise eval --json` document."""
    from querywise.evaluation.result import eval_result_json_schema

    sys.stdout.write(json.dumps(eval_result_json_schema(), indent=2) + "\n")


@app.command("compare")
def compare_cmd(
    run_a: Annotated[Path, typer.Argument(help="The reference run (`querywise eval --json` output).")],
    run_b: Annotated[Path, typer.Argument(help="The candidate run.")],
    metrics: Annotated[str | None, typer.Option("--metrics", help="Comma-separated metrics to gate on (default: every metric of A).")] = None,
    min_cases: Annotated[int, typer.Option("--min-cases", help="Slices with fewer paired cases are shown but do not gate.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Exit 1 when RUN_B is significantly worse than RUN_A on any slice (paired bootstrap, fixed seed)."""
    from querywise.evaluation.compare import compare_runs, load_run

    try:
        a, b = load_run(run_a), load_run(run_b)
    except InputError as exc:
        raise fail(str(exc)) from None
    wanted = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
    report = compare_runs(a, b, metrics=wanted, min_cases=min_cases)
    if report.n_paired == 0:
        raise fail(f"{run_a} and {run_b} share no case id: nothing to compare")
    if as_json:
        data = report.model_dump()
        data["regressed"] = report.regressed
        sys.stdout.write(json.dumps(data) + "\n")
    else:
        table = Table(title=f"B − A over {report.n_paired} paired cases (seed {report.seed})")
        for col in ("slice", "metric", "n", "A", "B", "Δ", "95% interval", "p"):
            table.add_column(col, justify="left" if col in ("slice", "metric") else "right")
        for r in report.rows:
            d = r.diff
            colour = "red" if d.direction < 0 else "green" if d.direction > 0 else "dim"
            table.add_row(esc(r.slice), esc(r.metric), str(d.n) + ("" if r.gates else "*"), f"{d.a:.3f}", f"{d.b:.3f}",
                          f"[{colour}]{d.delta:+.3f}[/]", f"({d.low:+.3f}, {d.high:+.3f})", f"{d.p_value:.3f}")
        out.print(table)
        if report.only_in_a or report.only_in_b:
            out.print(f"[yellow]{report.only_in_a} case(s) only in A, {report.only_in_b} only in B: left out[/]")
        if any(not r.gates for r in report.rows):
            out.print(f"[dim]* fewer than {min_cases} cases: shown, not gating[/]")
        verdict = (
            "[bold red]regression[/]: " + esc("; ".join(f"{r.slice} {r.metric} {r.diff.delta:+.3f}" for r in report.regressions))
            if report.regressed else "[green]no significant regression[/]"
        )
        out.print(verdict, highlight=False)
    if report.regressed:
        raise typer.Exit(code=1)

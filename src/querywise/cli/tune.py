"""`querywise tune`: choose how hybrid fuses dense and BM25 (or, with --moves, which moves run on which
slice of traffic) on labelled queries, and write it into a copy of the config."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from querywise.cli._app import ConfigOpt, IndexOpt, SessionOpt, app, err, esc, fail, mode_from, out, progress, session_from, settings_from
from querywise.cli._report import print_skipped
from querywise.config import ConfigError, Settings, write_settings_file
from querywise.evaluation.cases import Case, read_case_source
from querywise.evaluation.metrics import Metric, MetricError, parse_metrics
from querywise.evaluation.tune import Candidate, TuneResult, tune
from querywise.evaluation.tune_moves import MovesTuneResult, tune_moves
from querywise.files import InputError
from querywise.index import Index, IndexStoreError
from querywise.index.engine import Mode
from querywise.service import QueryWise


def as_index_settings(chosen: Candidate, *, sentences: bool = False) -> dict[str, object]:
    """The `[index]` keys that make hybrid rank as `chosen` (a single mode: a convex weight of 1 or
    0; on an index with sentence vectors, dense alone also gives the sentence list no share)."""
    if chosen.mode == "dense":
        return {"fusion": "convex", "dense_weight": 1.0, **({"sentence_share": 0.0} if sentences else {})}
    if chosen.mode == "bm25":
        return {"fusion": "convex", "dense_weight": 0.0}
    share = {} if chosen.sentence_share is None else {"sentence_share": chosen.sentence_share}
    return {"fusion": chosen.fusion, "dense_weight": chosen.dense_weight, **share}


def _render(result: TuneResult) -> None:
    table = Table(title=f"{result.metric} on {result.n} cases (mean over all; the choice cross-validated over {result.folds} folds)")
    table.add_column("ranking")
    table.add_column(result.metric, justify="right")
    for s in result.scores[:8]:
        mark = "  ← chosen" if s.candidate == result.chosen else "  ← best, not kept" if s.candidate == result.best else ""
        table.add_row(esc(s.label) + mark, f"{s.score:.4f}")
    out.print(table)
    out.print(f"BM25 {result.bm25:.4f} · dense {result.dense:.4f} · plain RRF {result.plain_rrf:.4f} · "
              f"held out: tuned {result.cv_score:.4f}, best single mode {result.cv_single_best:.4f}", highlight=False)
    out.print(f"held-out gain over plain RRF: {result.cv_gain:+.4f} (95% interval {result.cv_gain_low:+.4f} to {result.cv_gain_high:+.4f}); "
              f"written: {esc(result.chosen.label)}", highlight=False)
    if (fb := result.feedback) is not None:
        out.print(f"feedback on {esc(result.chosen.label)}: none {fb.without:.4f} · best {esc(fb.best.label)} {fb.scores[fb.best.label]:.4f} · "
                  f"held-out gain {fb.cv_gain:+.4f} (95% interval {fb.cv_gain_low:+.4f} to {fb.cv_gain_high:+.4f}); "
                  f"written: {esc(fb.chosen.label) if fb.chosen else 'none'}", highlight=False)
    for w in result.warnings:
        err.print(f"[yellow]warning:[/] {esc(w)}", highlight=False)


def _render_moves(result: MovesTuneResult) -> None:
    sizes = " · ".join(f"{s} {n}" for s, n in result.slice_sizes.items())
    table = Table(title=f"each move's gain in {result.metric} per slice ({result.n} cases: {sizes}; {result.mode})")
    for col, justify in (("move", "left"), ("slice", "left"), ("cases", "right"), ("gain", "right"), ("95% interval", "right"), ("", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for g in result.gains:
        mark = ("off" if g.move in result.chosen else "off, not kept") if g.off else ""
        table.add_row(g.move, g.slice, str(g.n), f"{g.gain:+.4f}", f"{g.low:+.4f} to {g.high:+.4f}", mark)
    out.print(table)
    out.print(f"every move everywhere {result.baseline:.4f} · held out with the per-slice choice {result.cv_score:.4f}; "
              f"gain {result.cv_gain:+.4f} (95% interval {result.cv_gain_low:+.4f} to {result.cv_gain_high:+.4f})", highlight=False)
    written = "; ".join(f"{m} off on {', '.join(s)}" for m, s in result.chosen.items()) or "every move on everywhere"
    out.print(f"written: {esc(written)}", highlight=False)
    for w in result.warnings:
        err.print(f"[yellow]warning:[/] {esc(w)}", highlight=False)


@app.command("tune")
def tune_cmd(
    cases: Annotated[Path, typer.Argument(help="Labelled cases as `eval` reads them: a JSONL case file or a BEIR folder.", exists=True)],
    index: IndexOpt,
    write_config: Annotated[Path | None, typer.Option("--write-config", help="Write --config (or an empty config) here with the chosen [index] fusion, dense_weight (and sentence_share; with --feedback, feedback_docs, feedback_terms, feedback_weight).")] = None,
    config: ConfigOpt = None,
    split: Annotated[str, typer.Option(help="BEIR qrels split to tune on (qrels/SPLIT.tsv): dev or train, never the test you report.")] = "dev",
    metric: Annotated[str, typer.Option(help="The metric to maximise, e.g. ndcg@10 or recall@100.")] = "ndcg@10",
    folds: Annotated[int, typer.Option(min=2, max=20, help="Cross-validation folds.")] = 5,
    session: SessionOpt = None,
    feedback: Annotated[bool, typer.Option("--feedback", help="Then measure pseudo-relevance feedback on top of the chosen fusion ([index] feedback_docs, feedback_terms, feedback_weight; 12 settings, one more BM25 search each per case) and write the best when it held out above none.")] = False,
    moves: Annotated[bool, typer.Option("--moves", help="Choose instead, per slice of traffic (follow-up, standalone, weak cue, identifier, prose), which of the configured moves run: [understanding.off_in].")] = False,
    mode: Annotated[str, typer.Option(help="With --moves: the search mode the cases are asked in (dense, bm25 or hybrid).")] = "hybrid",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Skip bad case lines, corpus records, queries and judgements and list each, file:line: reason, instead of stopping at the first (as eval does).")] = False,
) -> None:
    """Choose how hybrid search fuses its dense and BM25 lists (RRF weights or a convex combination
    of normalised scores, or one mode alone) on labelled queries; with --moves, choose instead which
    moves run on which slice of traffic. With --write-config, write the choice into a copy of the
    config that `eval --config` and `ask --config` then use."""
    settings = settings_from(config)
    try:
        (wanted,) = parse_metrics([metric])
    except (MetricError, ValueError) as exc:
        raise fail(f"--metric: {exc}") from None
    try:
        got = read_case_source(cases, split=split, skip_invalid=skip_invalid, max_record_chars=settings.limits.max_record_chars)
        ix = Index.open(index, settings=settings)
    except (InputError, IndexStoreError) as exc:
        raise fail(str(exc)) from None
    print_skipped(got.skipped, err)
    default = session_from(session)
    loaded = [c if c.session or not default else c.model_copy(update={"session": default}) for c in got.cases]
    if moves:
        _tune_moves(loaded, ix, settings, config, wanted, folds=folds, mode=mode_from(mode), write_config=write_config, as_json=as_json)
        return
    try:
        with ix, QueryWise(settings, ix) as deployment, progress() as phase:
            sentences = ix.manifest.n_sentences is not None
            lists = "dense, best-sentence and BM25" if sentences else "dense and BM25"
            judged = sum(1 for c in loaded if c.relevant)
            result = tune(loaded, deployment, wanted, folds=folds, on_case=phase(f"searching {lists}", judged), feedback=feedback)
    except ValueError as exc:
        raise fail(str(exc)) from None
    _show(result, _render, as_json)
    if write_config is not None:
        chosen = as_index_settings(result.chosen, sentences=sentences)
        label = result.chosen.label
        if result.feedback is not None:
            fb = result.feedback.chosen
            # No feedback chosen writes feedback_docs = 0: a copied config that had it on gets what was measured.
            chosen |= {"feedback_docs": 0} if fb is None else {"feedback_docs": fb.docs, "feedback_terms": fb.terms, "feedback_weight": fb.weight}
            label += "" if fb is None else f", {fb.label}"
        keys = ", ".join(f"{k} = {json.dumps(v)}" for k, v in chosen.items())
        _write_copy(config, write_config, {"index": chosen}, f"[index] {keys} ({label})", index)


def _show(result: TuneResult | MovesTuneResult, render: Callable[[Any], None], as_json: bool) -> None:
    if as_json:
        sys.stdout.write(result.model_dump_json() + "\n")
    else:
        render(result)


def _write_copy(config: Path | None, target: Path, changes: dict[str, dict[str, object]], what: str, index: Path) -> None:
    """`config` (or an empty one) written to `target` with `changes`, and a line saying so."""
    try:
        write_settings_file(config, target, changes)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    err.print(f"wrote {esc(target)}: {esc(what)}; evaluate it with `querywise eval CASES -i {esc(index)} --config {esc(target)}`",
              highlight=False, soft_wrap=True)


def _tune_moves(cases: list[Case], ix: Index, settings: Settings, config: Path | None, metric: Metric, *, folds: int, mode: Mode,
                write_config: Path | None, as_json: bool) -> None:
    try:
        with ix, QueryWise(settings, ix) as deployment, progress() as phase:
            arms = 1 + sum(1 for m in dict.fromkeys(settings.understanding.moves) if m not in deployment.understander.unable())
            judged = sum(1 for c in cases if c.relevant)
            result = tune_moves(cases, deployment, metric, folds=folds, mode=mode,
                                on_case=phase(f"asking each case with every move, then without each of {arms - 1}", judged * (arms + 1)))
    except ValueError as exc:
        raise fail(str(exc)) from None
    _show(result, _render_moves, as_json)
    if write_config is not None:
        _write_copy(config, write_config, {"understanding": {"off_in": {m: list(s) for m, s in result.chosen.items()}}},
                    f"[understanding.off_in] {json.dumps(result.chosen)}", ix.root)

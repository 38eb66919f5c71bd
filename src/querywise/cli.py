"""The command line: parses, calls the library, renders. No logic of its own."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from querywise.chunking import Chunker
from querywise.conditions import WhereSyntaxError, describe, parse_where
from querywise.config import ConfigError, Settings, load_settings
from querywise.corpus import CorpusError, load_corpus
from querywise.files import InputError
from querywise.plan import QueryPlan

if TYPE_CHECKING:
    from querywise.execute import PlanResult

app = typer.Typer(
    help="querywise: understand each message before retrieval, and diagnose why retrieval fails.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)
out = Console()

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="Settings TOML file.", exists=True, dir_okay=False)]
IndexOpt = Annotated[Path, typer.Option("--index", "-i", help="Index folder.")]


def _fail(message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code=2)


@contextmanager
def _progress() -> Iterator[Callable[[str, int | None], Callable[[int], None]]]:
    """A rich progress display on stderr, adapted to the library's progress callback."""
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=False,
    ) as bar:
        current: list[int] = []

        def phase(name: str, total: int | None) -> Callable[[int], None]:
            for t in current:
                bar.update(t, completed=bar.tasks[t].total or bar.tasks[t].completed)
                bar.stop_task(t)
            task = bar.add_task(name, total=total)
            current[:] = [task]
            return lambda n: bar.advance(task, n)

        yield phase
        for t in current:
            bar.update(t, total=bar.tasks[t].total or 1, completed=bar.tasks[t].total or 1)


def _settings(config: Path | None) -> Settings:
    try:
        return load_settings(config)
    except ConfigError as exc:
        raise _fail(str(exc)) from None


@app.command("index")
def index_cmd(
    source: Annotated[Path, typer.Argument(help="A .jsonl[.gz] or .csv[.gz] file, or a folder of .txt/.md files.")],
    index: IndexOpt,
    config: ConfigOpt = None,
) -> None:
    """Build (or atomically rebuild) an index of SOURCE in the folder --index."""
    from querywise.index import IndexError_, build_index

    settings = _settings(config)
    c = settings.chunking
    try:
        chunks = load_corpus(source, chunker=Chunker(max_chars=c.max_chars, overlap=c.overlap, identifier_pattern=c.identifier_pattern))
    except CorpusError as exc:
        raise _fail(str(exc)) from None
    err.print(f"read {len(chunks):,} chunks from {source}")
    try:
        with _progress() as progress:
            ix = build_index(chunks, index, settings=settings, progress=progress)
    except IndexError_ as exc:
        raise _fail(str(exc)) from None
    m = ix.manifest
    err.print(
        f"[green]indexed[/] {m.n_chunks:,} chunks into {index} in {m.build_seconds:.1f} s "
        f"(embedder {m.embedder}; filterable fields: {', '.join(sorted(m.payload_indexes))})"
    )
    ix.close()


@app.command("search")
def search_cmd(
    query: Annotated[str, typer.Argument(help="What to search for.")],
    index: IndexOpt,
    mode: Annotated[str, typer.Option(help="dense, bm25 or hybrid.")] = "hybrid",
    k: Annotated[int, typer.Option("-k", min=1, help="How many results.")] = 10,
    where: Annotated[list[str] | None, typer.Option("--where", "-w", help="field=value, field=a,b, field<n, <=, >, >=; repeat to AND.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array of {id, score, rank} only.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Search the index; filters run inside the engine."""
    from querywise.index import Index, IndexError_

    if mode not in ("dense", "bm25", "hybrid"):
        raise _fail(f"--mode must be dense, bm25 or hybrid, not {mode!r}")
    try:
        condition = parse_where(where or [])
    except WhereSyntaxError as exc:
        raise _fail(str(exc)) from None
    try:
        ix = Index.open(index, settings=_settings(config))
    except IndexError_ as exc:
        raise _fail(str(exc)) from None
    with ix:
        hits = ix.search(query, mode=mode, k=k, where=condition or None)  # type: ignore[arg-type]
    if as_json:
        sys.stdout.write(json.dumps([{"id": h.id, "score": round(h.score, 6), "rank": h.rank} for h in hits]) + "\n")
        return
    table = Table(title=f"{mode} · {query}", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("id", style="cyan", no_wrap=True)
    table.add_column("score", justify="right")
    table.add_column("text")
    for h in hits:
        table.add_row(str(h.rank), h.id, f"{h.score:.4f}", (h.title + " · " if h.title else "") + h.text[:160])
    out.print(table)
    if not hits:
        err.print("no results" + (" (the filter may exclude everything)" if condition else ""))


def _session(pairs: list[str] | None) -> dict[str, str]:
    session: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise _fail(f"--session expects KEY=VALUE, got {pair!r}")
        session[key.strip()] = value.strip()
    return session


def _render_plan(plan: QueryPlan) -> None:
    out.print(f"[bold]route[/] {plan.route}    [bold]action[/] {plan.action.type}", highlight=False)
    for q in plan.queries:
        out.print(f"  [cyan]{q.kind}[/] (weight {q.weight:g}{', ' + q.mode if q.mode else ''}): {q.text}", highlight=False)
    for label, where in (("filters", plan.filters), ("inferred filters", plan.inferred_filters), ("access", plan.access)):
        if where:
            out.print(f"  [bold]{label}[/] " + " and ".join(describe(c) for c in where.conditions), highlight=False)
    if plan.action.type != "answer":
        out.print(f"  [bold]{plan.action.type}[/] {plan.action.model_dump(exclude={'type'})}", highlight=False)
    table = Table(title="trace", title_justify="left")
    for col in ("move", "status", "ms", "reason / change"):
        table.add_column(col)
    for step in plan.trace:
        note = step.reason + (f" → {step.changed}" if step.changed else "")
        table.add_row(step.move, step.status, f"{step.latency_ms:.1f}", note)
    out.print(table)


@app.command("plan")
def plan_cmd(
    message: Annotated[str, typer.Argument(help="The user's message.")],
    config: Annotated[Path, typer.Option("--config", "-c", help="Deployment TOML file.", exists=True, dir_okay=False)],
    history: Annotated[list[str] | None, typer.Option("--history", help="An earlier user turn, oldest first; repeat.")] = None,
    session: Annotated[list[str] | None, typer.Option("--session", help="KEY=VALUE from the authenticated session; repeat.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as one JSON line.")] = False,
) -> None:
    """Show the query plan for MESSAGE: route, queries, filters, access, action and trace."""
    from querywise.planlog import append_plan
    from querywise.understand.access import AccessError
    from querywise.understand.pipeline import Understander

    settings = _settings(config)
    sess = _session(session)
    try:
        plan = Understander(settings).plan(message, history=history or [], session=sess)
    except (AccessError, InputError) as exc:
        raise _fail(str(exc)) from None
    if settings.deployment.plan_log is not None:
        append_plan(settings.deployment.plan_log, plan, history=history or [], session=sess)
    if as_json:
        sys.stdout.write(plan.to_json_line() + "\n")
    else:
        _render_plan(plan)


def _render_result(result: PlanResult, k: int) -> None:
    _render_plan(result.plan)
    if result.relaxed:
        out.print(f"[yellow]relaxed inferred filter(s):[/] {', '.join(result.relaxed)}", highlight=False)
    if result.empty_because:
        out.print(f"[red]no results because of:[/] {', '.join(result.empty_because)}", highlight=False)
    for h in result.hits[:k]:
        out.print(f"  {h.rank}. [cyan]{h.id}[/] [dim]{h.score:.4f}[/] {h.text[:110]}", highlight=False)


@app.command("ask")
def ask_cmd(
    message: Annotated[str, typer.Argument(help="The user's message.")],
    config: Annotated[Path, typer.Option("--config", "-c", help="Deployment TOML file.", exists=True, dir_okay=False)],
    index: IndexOpt,
    history: Annotated[list[str] | None, typer.Option("--history", help="An earlier user turn, oldest first; repeat.")] = None,
    session: Annotated[list[str] | None, typer.Option("--session", help="KEY=VALUE from the authenticated session; repeat.")] = None,
    k: Annotated[int, typer.Option("-k", min=1, help="How many results.")] = 5,
    mode: Annotated[str, typer.Option(help="dense, bm25 or hybrid.")] = "hybrid",
    as_json: Annotated[bool, typer.Option("--json", help="Print {plan, hits} as one JSON object.")] = False,
) -> None:
    """Plan MESSAGE and run the plan against the index: the plan, then the top results."""
    import datetime as dt

    from querywise.execute import execute
    from querywise.index import Index, IndexError_
    from querywise.planlog import append_plan
    from querywise.understand.access import AccessError
    from querywise.understand.pipeline import Understander

    if mode not in ("dense", "bm25", "hybrid"):
        raise _fail(f"--mode must be dense, bm25 or hybrid, not {mode!r}")
    settings = _settings(config)
    sess = _session(session)
    try:
        ix = Index.open(index, settings=settings)
    except IndexError_ as exc:
        raise _fail(str(exc)) from None
    with ix:
        try:
            understander = Understander(settings, embedder=ix.embedder, lexicon=ix.lexicon)
            plan = understander.plan(message, history=history or [], session=sess, today=dt.date.today())
        except (AccessError, InputError) as exc:
            raise _fail(str(exc)) from None
        result = execute(plan, ix, k=k, mode=mode)  # type: ignore[arg-type]
    if settings.deployment.plan_log is not None:
        append_plan(settings.deployment.plan_log, result.plan, history=history or [], session=sess)
    if as_json:
        payload = {"plan": json.loads(result.plan.to_json_line()), "hits": [{"id": h.id, "score": h.score, "rank": h.rank} for h in result.hits]}
        sys.stdout.write(json.dumps(payload) + "\n")
        return
    _render_result(result, k)


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
        raise _fail(f"--classifier must be centroid, trained or auto, not {classifier!r}")
    try:
        rows = {name: load_labelled(str(p)) if p else None for name, p in (("train", train), ("test", test), ("val", val))}
    except InputError as exc:
        raise _fail(str(exc)) from None
    report = evaluate_router(
        rows["train"] or [], rows["test"] or [], val=rows["val"], embedder=embedder_for(_settings(config)),
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

    settings = _settings(config)
    try:
        rows = load_rewrite_rows(file)
        catalog = Catalog.load(settings.deployment.catalog) if settings.deployment.catalog else None
    except InputError as exc:
        raise _fail(str(exc)) from None
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


@app.command("plan-schema")
def plan_schema_cmd() -> None:
    """Print the JSON schema of the query plan."""
    from querywise.plan import plan_json_schema

    sys.stdout.write(json.dumps(plan_json_schema(), indent=2) + "\n")


@app.command("demo")
def demo_cmd(
    index: Annotated[Path, typer.Option("--index", "-i", help="Where to build the demo index.")] = Path("demo-index"),
    k: Annotated[int, typer.Option("-k", min=1, help="Results per mode.")] = 3,
    market: Annotated[str, typer.Option(help="The demo session's market (an access constraint).")] = "eu",
) -> None:
    """Index the bundled demo shop (Tessel), compare the search modes, then walk the scripted
    conversation through the query plan: follow-ups, typos, identifiers, filters, ambiguity,
    account and out-of-scope messages."""
    import datetime as dt

    from querywise.config import load_settings
    from querywise.demo import SAMPLE_SEARCHES, demo_conversation, demo_corpus, demo_file
    from querywise.execute import execute
    from querywise.index import build_index
    from querywise.understand.pipeline import Understander

    settings = load_settings(demo_file("querywise.toml"))
    with _progress() as progress:
        ix = build_index(demo_corpus(), index, settings=settings, progress=progress)
    err.print(f"[green]demo index[/] {index}: {len(ix)} chunks, embedder {ix.manifest.embedder}")
    with ix:
        for query, where in SAMPLE_SEARCHES[:2]:
            condition = parse_where(where) or None
            table = Table(title=f"{query}" + (f"  [dim]where {' and '.join(where)}[/]" if where else ""), title_justify="left")
            for mode in ("bm25", "dense", "hybrid"):
                table.add_column(mode)
            columns = [ix.search(query, mode=mode, k=k, where=condition) for mode in ("bm25", "dense", "hybrid")]  # type: ignore[arg-type]
            for rank in range(k):
                table.add_row(*(f"{c[rank].id} [dim]{c[rank].score:.4f}[/]" if rank < len(c) else "" for c in columns))
            out.print(table)
        understander = Understander(settings, embedder=ix.embedder, lexicon=ix.lexicon)
        history: list[str] = []
        for turn in demo_conversation():
            out.rule(f"turn {turn['turn']} · {turn['demonstrates']}")
            out.print(f"[bold]user:[/] {turn['message']}", highlight=False)
            plan = understander.plan(turn["message"], history=history, session={"market": market}, today=dt.date.today())
            _render_result(execute(plan, ix, k=k), k)
            history.append(turn["message"])


if __name__ == "__main__":  # pragma: no cover
    app()

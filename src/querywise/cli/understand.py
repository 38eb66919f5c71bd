"""`querywise plan`, `ask`, `plan-schema` and `demo`: the online path, one message at a time."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from querywise.cli._app import (
    DeploymentOpt,
    HistoryOpt,
    MaybeIndexOpt,
    RetrieverOpt,
    SessionOpt,
    app,
    err,
    esc,
    fail,
    history_from,
    mode_from,
    open_index,
    out,
    print_warnings,
    progress,
    session_from,
    settings_from,
    with_retriever,
)
from querywise.conditions import describe, parse_where
from querywise.config import load_settings
from querywise.demo import SAMPLE_SEARCHES, demo_conversation, demo_corpus, demo_file
from querywise.execute import PlanResult
from querywise.files import InputError
from querywise.index import build_index
from querywise.index.engine import Mode
from querywise.llm.provider import LLMError
from querywise.plan import Ask, QueryPlan, plan_json_schema
from querywise.retrieve import RetrieverError
from querywise.service import QueryWise
from querywise.understand.access import AccessError

_DEMO_MODES: tuple[Mode, ...] = ("bm25", "dense", "hybrid")
PlanIndexOpt = Annotated[Path | None, typer.Option("--index", "-i", help="Index folder: its vocabulary serves spelling and exact lookup, "
                                                   "so the plan is the one `ask` runs.")]


def render_plan(plan: QueryPlan) -> None:
    # Every piece of the plan may carry the user's words or the data's: printed through `esc`.
    out.print(f"[bold]route[/] {esc(plan.route)}    [bold]action[/] {esc(plan.action.type)}", highlight=False)
    for q in plan.queries:
        out.print(f"  [cyan]{esc(q.kind)}[/] (weight {q.weight:g}{esc(', ' + q.mode) if q.mode else ''}): {esc(q.text)}", highlight=False)
    for label, where in (("filters", plan.filters), ("inferred filters", plan.inferred_filters), ("access", plan.access)):
        if where:
            out.print(f"  [bold]{label}[/] " + esc(" and ".join(describe(c) for c in where.conditions)), highlight=False)
    filters = plan.step("filters")
    for d in (filters.details.get("dropped", []) if filters is not None else []):  # a constraint the words state but no filter holds
        out.print(f"  [yellow]dropped[/] {esc(d['field'])} {esc(repr(d['value']))}: {esc(d['reason'])}", highlight=False)
    for ask in plan.left:
        out.print(f"  [yellow]left for a follow-up[/] ({esc(ask.route)}): {esc(ask.text)}", highlight=False)
    if isinstance(plan.action, Ask):  # the question, then each option as the UI would send it back
        out.print(f"  [bold]ask[/] {esc(plan.action.question)}", highlight=False)
        for option in plan.action.options:
            out.print(f"    [cyan]option[/] {esc(option)}", highlight=False)
    elif plan.action.type != "answer":
        out.print(f"  [bold]{esc(plan.action.type)}[/] {esc(plan.action.model_dump(exclude={'type'}))}", highlight=False)
    if plan.readings is not None:  # for the generator: which readings may differ, and the one searched for
        chosen = f"; searched for: {plan.readings.chosen}" if plan.readings.chosen else ""
        out.print(f"  [bold]readings that may differ[/] {esc(plan.readings.mention)!r}: {esc(', '.join(plan.readings.readings))}{esc(chosen)}", highlight=False)
    table = Table(title="trace", title_justify="left")
    for col in ("move", "status", "ms", "reason / change"):
        table.add_column(col)
    for step in plan.trace:
        note = step.reason + (f" → {step.changed}" if step.changed else "")
        table.add_row(esc(step.move), esc(step.status), f"{step.latency_ms:.1f}", esc(note))
    out.print(table)


@app.command("plan")
def plan_cmd(
    message: Annotated[str, typer.Argument(help="The user's message.")],
    config: DeploymentOpt,
    index: PlanIndexOpt = None,
    history: HistoryOpt = None,
    session: SessionOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as one JSON line.")] = False,
) -> None:
    """Show the query plan for MESSAGE: route, queries, filters, access, action and trace. With
    --index it is exactly the plan `ask` runs (the index's vocabulary serves spelling and exact
    lookup); without one those moves say so in the trace."""
    settings = settings_from(config)
    sess = session_from(session)
    ix = open_index(index, settings) if index is not None else None
    with ix or contextlib.nullcontext():
        try:
            with QueryWise(settings, ix) as qw:
                print_warnings(qw.warnings)
                plan = qw.plan(message, history=history_from(history), session=sess)
        except (AccessError, InputError, LLMError) as exc:
            raise fail(str(exc)) from None
    if as_json:
        sys.stdout.write(plan.to_json_line() + "\n")
    else:
        render_plan(plan)


def render_result(result: PlanResult, k: int) -> None:
    render_plan(result.plan)
    for reading, hits in result.by_reading.items():  # cover: each reading's own hits
        out.print(f"  [cyan]{esc(reading)}[/]: {esc(', '.join(h.id for h in hits[:k]))}", highlight=False)
    if result.relaxed:
        out.print(f"[yellow]relaxed inferred filter(s):[/] {esc(', '.join(result.relaxed))}", highlight=False)
    if result.empty_because:  # a plan that runs no search is no failure: said, not flagged
        label = "[red]no results:[/]" if result.plan.queries else "[dim]no search:[/]"
        out.print(f"{label} {esc('; '.join(result.empty_because))}", highlight=False)
    for h in result.hits[:k]:
        out.print(f"  {h.rank}. [cyan]{esc(h.id)}[/] [dim]{h.score:.4f}[/] {esc(h.text[:110])}", highlight=False)


@app.command("ask")
def ask_cmd(
    message: Annotated[str, typer.Argument(help="The user's message.")],
    config: DeploymentOpt,
    index: MaybeIndexOpt = None,
    history: HistoryOpt = None,
    session: SessionOpt = None,
    k: Annotated[int, typer.Option("-k", min=1, help="How many results.")] = 5,
    mode: Annotated[str, typer.Option(help="dense, bm25 or hybrid.")] = "hybrid",
    retriever: RetrieverOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print {plan, hits} as one JSON object.")] = False,
) -> None:
    """Plan MESSAGE and run the plan against the index (or --retriever): the plan, then the top results."""
    search_mode = mode_from(mode)
    settings = with_retriever(settings_from(config), retriever)
    sess = session_from(session)
    ix = open_index(index, settings)
    with ix or contextlib.nullcontext():
        try:
            with QueryWise(settings, ix) as qw:
                print_warnings(qw.warnings)
                result = qw.ask(message, history=history_from(history), session=sess, k=k, mode=search_mode)
        except (AccessError, InputError, LLMError, RetrieverError) as exc:
            raise fail(str(exc)) from None
    if as_json:
        payload = {"plan": json.loads(result.plan.to_json_line()), "hits": [{"id": h.id, "score": h.score, "rank": h.rank} for h in result.hits]}
        sys.stdout.write(json.dumps(payload) + "\n")
        return
    render_result(result, k)


@app.command("plan-schema")
def plan_schema_cmd() -> None:
    """Print the JSON schema of the query plan."""
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
    settings = load_settings(demo_file("querywise.toml"))
    with progress() as report:
        ix = build_index(demo_corpus(), index, settings=settings, progress=report)
    err.print(f"[green]demo index[/] {esc(index)}: {len(ix)} chunks, embedder {esc(ix.manifest.embedder)}", highlight=False)
    with ix:
        for query, where in SAMPLE_SEARCHES[:2]:
            condition = parse_where(where) or None
            table = Table(title=esc(query) + (f"  [dim]where {esc(' and '.join(where))}[/]" if where else ""), title_justify="left")
            for mode in ("bm25", "dense", "hybrid"):
                table.add_column(mode)
            columns = [ix.search(query, mode=m, k=k, where=condition) for m in _DEMO_MODES]
            for rank in range(k):
                table.add_row(*(f"{esc(c[rank].id)} [dim]{c[rank].score:.4f}[/]" if rank < len(c) else "" for c in columns))
            out.print(table)
        with QueryWise(settings, ix) as qw:
            print_warnings(qw.warnings)
            history: list[str] = []
            for turn in demo_conversation():
                out.rule(esc(f"turn {turn['turn']} · {turn['demonstrates']}"))
                out.print(f"[bold]user:[/] {esc(turn['message'])}", highlight=False)
                result = qw.ask(turn["message"], history=history, session={"market": market}, k=k)
                render_result(result, k)
                ranks = {h.id: h.rank for h in result.hits}
                for want in turn.get("expected", []):
                    at = ranks.get(want)
                    mark = "[green]✓[/]" if at is not None and at <= 3 else "[red]✗[/]"
                    out.print(f"  {mark} expected [cyan]{esc(want)}[/]: " + (f"rank {at}" if at else "not in the results"), highlight=False)
                history.append(turn["message"])



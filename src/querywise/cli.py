"""The command line: parses, calls the library, renders. No logic of its own."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from querywise.chunking import Chunker
from querywise.conditions import WhereSyntaxError, parse_where
from querywise.config import ConfigError, Settings, load_settings
from querywise.corpus import CorpusError, load_corpus

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


@app.command("demo")
def demo_cmd(
    index: Annotated[Path, typer.Option("--index", "-i", help="Where to build the demo index.")] = Path("demo-index"),
    k: Annotated[int, typer.Option("-k", min=1, help="Results per mode.")] = 3,
    config: ConfigOpt = None,
) -> None:
    """Index the bundled demo help centre (Tessel) and compare the search modes on it."""
    from querywise.demo import SAMPLE_SEARCHES, demo_file
    from querywise.index import build_index

    settings = _settings(config)
    chunks = load_corpus(demo_file("helpcentre.jsonl"))
    with _progress() as progress:
        ix = build_index(chunks, index, settings=settings, progress=progress)
    err.print(f"[green]demo index[/] {index}: {len(ix)} chunks, embedder {ix.manifest.embedder}")
    with ix:
        for query, where in SAMPLE_SEARCHES:
            condition = parse_where(where) or None
            table = Table(title=f"{query}" + (f"  [dim]where {' and '.join(where)}[/]" if where else ""), title_justify="left")
            for mode in ("bm25", "dense", "hybrid"):
                table.add_column(mode)
            columns = [ix.search(query, mode=mode, k=k, where=condition) for mode in ("bm25", "dense", "hybrid")]  # type: ignore[arg-type]
            for rank in range(k):
                table.add_row(*(f"{c[rank].id} [dim]{c[rank].score:.4f}[/]" if rank < len(c) else "" for c in columns))
            out.print(table)


if __name__ == "__main__":  # pragma: no cover
    app()

"""`querywise index` and `querywise search`: build an index, query it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from querywise.chunking import Chunker
from querywise.cli._app import ConfigOpt, IndexOpt, app, err, esc, fail, mode_from, out, progress, settings_from
from querywise.cli._report import print_skipped
from querywise.conditions import WhereSyntaxError, parse_where
from querywise.config import Settings
from querywise.corpus import Chunk, CorpusError, read_corpus


@app.command("index")
def index_cmd(
    index: IndexOpt,
    source: Annotated[
        Path | None,
        typer.Argument(metavar="SOURCE", help="A .jsonl[.gz] or .csv[.gz] file, a BEIR folder (its corpus.jsonl[.gz] is indexed), or a folder of .txt/.md files."),
    ] = None,
    config: ConfigOpt = None,
    follow_symlinks: Annotated[bool, typer.Option("--follow-symlinks", help="In a folder SOURCE, also read links that lead outside it.")] = False,
    max_chars: Annotated[
        int | None,
        typer.Option("--max-chars", min=50, help="Cut records and files into chunks of at most N characters (default: [chunking] max_chars, 1000)."),
    ] = None,
    skip_invalid: Annotated[
        bool, typer.Option("--skip-invalid", help="Index every good row; list each bad one (file:line: reason) at the end instead of stopping at the first.")
    ] = False,
    roll_back: Annotated[bool, typer.Option("--rollback", help="Switch --index back to its previous build (no SOURCE).")] = False,
    update: Annotated[
        bool, typer.Option("--update", help="Add SOURCE's documents to --index, replacing those it already has (every chunk of each), without a rebuild."),
    ] = False,
    delete: Annotated[
        list[str] | None, typer.Option("--delete", metavar="ID", help="Remove a document (every chunk of it) or a chunk from --index without a rebuild; repeat for more."),
    ] = None,
) -> None:
    """Build (or atomically rebuild) an index of SOURCE in the folder --index; with --update and
    --delete, change the documents of an index in place of a rebuild (each change is a new build,
    so --rollback undoes it); with --rollback, switch it back to the previous build (the setting
    index.keep_builds says how many builds are kept)."""
    from querywise.index import IndexStoreError, build_index, rollback

    settings = settings_from(config)
    if roll_back:
        if source is not None or update or delete:
            raise fail("--rollback takes no SOURCE, --update or --delete")
        try:
            back = rollback(index)
        except IndexStoreError as exc:
            raise fail(str(exc)) from None
        err.print(f"[green]rolled back[/] {esc(index)} to build {esc(back.build_id)} ({back.n_chunks:,} chunks)", highlight=False)
        return
    if update and source is None:
        raise fail("--update needs SOURCE: the documents to add or replace")
    if source is None and not delete:
        raise fail("missing SOURCE: the corpus to index (or --rollback, or --delete ID)")
    if source is not None and delete and not update:
        raise fail("--delete changes an index in place: give SOURCE with --update, or no SOURCE")
    if source is None:
        _update(index, settings, [], delete or [])
        return
    c = settings.chunking
    try:
        chunker = Chunker(max_chars=max_chars or c.max_chars, overlap=c.overlap, identifier_pattern=c.identifier_pattern)
        loaded = read_corpus(
            source, chunker=chunker, follow_symlinks=follow_symlinks, max_record_chars=settings.limits.max_record_chars, skip_invalid=skip_invalid,
        )
    except CorpusError as exc:
        raise fail(str(exc)) from None
    unit = "files" if loaded.kind == "folder" else "records"
    limit = "--max-chars" if max_chars else "[chunking] max_chars"
    err.print(
        f"read {loaded.n_records:,} {unit} from {esc(source)}{' (BEIR corpus)' if loaded.kind == 'beir' else ''} into {len(loaded.chunks):,} chunks: "
        f"{loaded.n_cut:,} {unit} longer than {chunker.max_chars:,} characters ({esc(limit)}) were cut into pieces",
        highlight=False,
        soft_wrap=True,
    )
    print_skipped(loaded.skipped, err)
    if update:
        _update(index, settings, loaded.chunks, delete or [])
        return
    try:
        with progress() as report:
            ix = build_index(loaded.chunks, index, settings=settings, progress=report)
    except IndexStoreError as exc:
        raise fail(str(exc)) from None
    m = ix.manifest
    err.print(
        f"[green]indexed[/] {m.n_chunks:,} chunks" + (f" and their {m.n_sentences:,} sentences" if m.n_sentences else "")
        + f" into {esc(index)} in {m.build_seconds:.1f} s "
        f"(embedder {esc(m.embedder)}; filterable fields: {esc(', '.join(sorted(m.payload_indexes)))})",
        highlight=False,
        soft_wrap=True,
    )
    if m.n_over_window:
        err.print(
            f"[yellow]{m.n_over_window:,} chunks longer than the embedder's window of {m.embedder_window} tokens were embedded "
            f"from their first {m.embedder_window} tokens[/] "
            # With sentence vectors every sentence is embedded on its own, so a whole record loses
            # nothing to the window, and cutting it ranked lower (bench/results/sentence_build.md).
            + ("(BM25 reads them whole, and their sentence vectors every sentence)" if m.n_sentences
               else "(BM25 reads them whole; a smaller --max-chars fits more of them)"),
            highlight=False,
            soft_wrap=True,
        )
    elif m.embedder_window is not None:
        err.print(f"every chunk fits the embedder's window of {m.embedder_window} tokens", highlight=False)
    ix.close()


def _update(index: Path, settings: Settings, chunks: list[Chunk], delete: list[str]) -> None:
    """`--update` and `--delete`: one new build with every change (`Index.update`)."""
    from querywise.index import Index, IndexStoreError

    try:
        with Index.open(index, settings=settings) as ix:
            done = ix.update(upsert=chunks, delete=delete)
            now = len(ix)
    except IndexStoreError as exc:
        raise fail(str(exc)) from None
    err.print(
        f"[green]updated[/] {esc(index)} to build {esc(done.build_id)} in {done.seconds:.1f} s: {done.added:,} chunks added, "
        f"{done.replaced:,} replaced, {done.removed:,} removed ({now:,} now)"
        + ("; the average length moved past index.update_avgdl_drift, so every chunk was weighed again" if done.reweighed else ""),
        highlight=False,
        soft_wrap=True,
    )


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
    from querywise.index import Index, IndexStoreError
    from querywise.retrieve.own_index import explain_empty

    search_mode = mode_from(mode)
    try:
        condition = parse_where(where or [])
    except WhereSyntaxError as exc:
        raise fail(str(exc)) from None
    try:
        ix = Index.open(index, settings=settings_from(config))
    except IndexStoreError as exc:
        raise fail(str(exc)) from None
    with ix:
        hits = ix.search(query, mode=search_mode, k=k, where=condition or None)
        why = [] if hits else explain_empty(ix, [(query, search_mode)], filters=condition, name_fields=True)
    if as_json:
        sys.stdout.write(json.dumps([{"id": h.id, "score": round(h.score, 6), "rank": h.rank} for h in hits]) + "\n")
        _say_why_empty(why)
        return
    table = Table(title=esc(f"{mode} · {query}"), title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("id", style="cyan", no_wrap=True)
    table.add_column("score", justify="right")
    table.add_column("text")
    for h in hits:
        table.add_row(str(h.rank), esc(h.id), f"{h.score:.4f}", esc((h.title + " · " if h.title else "") + h.text[:160]))
    out.print(table)
    _say_why_empty(why)


def _say_why_empty(why: list[str]) -> None:
    """On stderr (--json keeps stdout to the array): which field, filter or text left nothing."""
    if why:
        err.print(f"no results: {esc('; '.join(why))}", highlight=False, soft_wrap=True)


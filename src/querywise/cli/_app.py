"""The shared pieces of the command line: the app, consoles, option types and small helpers.
Command modules register on `app`; none holds logic of its own."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from querywise.config import ConfigError, Settings, load_settings
from querywise.index.engine import MODES, Mode

app = typer.Typer(
    help="querywise: understand each message before retrieval, and diagnose why retrieval fails.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)
out = Console()

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="Settings TOML file.", exists=True, dir_okay=False)]
IndexOpt = Annotated[Path, typer.Option("--index", "-i", help="Index folder.")]
DeploymentOpt = Annotated[Path, typer.Option("--config", "-c", help="Deployment TOML file.", exists=True, dir_okay=False)]
HistoryOpt = Annotated[list[str] | None, typer.Option("--history", help="An earlier user turn, oldest first; repeat.")]
SessionOpt = Annotated[list[str] | None, typer.Option("--session", help="KEY=VALUE from the authenticated session; repeat.")]


def fail(message: str) -> typer.Exit:
    """Print MESSAGE as an error and return the exit (code 2) to raise."""
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code=2)


@contextmanager
def progress() -> Iterator[Callable[[str, int | None], Callable[[int], None]]]:
    """A rich progress display on stderr, adapted to the library's progress callback."""
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=False,
    ) as bar:
        current: list[TaskID] = []

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


def settings_from(config: Path | None) -> Settings:
    """The settings of --config (embedded defaults without one); a bad file is a clean error."""
    try:
        return load_settings(config)
    except ConfigError as exc:
        raise fail(str(exc)) from None


def session_from(pairs: list[str] | None) -> dict[str, str]:
    """--session KEY=VALUE pairs as a dict."""
    session: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise fail(f"--session expects KEY=VALUE, got {pair!r}")
        session[key.strip()] = value.strip()
    return session




def mode_from(name: str) -> Mode:
    """--mode as a search mode, or a clean error."""
    for mode in MODES:
        if mode == name:
            return mode
    raise fail(f"--mode must be dense, bm25 or hybrid, not {name!r}")

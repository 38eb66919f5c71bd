"""The shared pieces of the command line: the app, consoles, option types and small helpers.
Command modules register on `app`; none holds logic of its own.

Every command is guarded (`QueryWiseApp.command`): text arguments have lone surrogates replaced
(bytes that are not UTF-8 arrive as surrogates), output streams replace what they cannot encode,
and a user's error — a bad file, config, index, session, LLM failure, an OS error on a path — is
one line `error: ...` and exit code 2, never a traceback. Renderers print user and data text
through `esc` (rich markup is never interpreted in it); the consoles do not turn `:name:` into
emoji.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from querywise.conditions import WhereSyntaxError
from querywise.config import ConfigError, Settings, load_settings
from querywise.conversation import Turn
from querywise.deployment_check import DeploymentError
from querywise.evaluation.metrics import MetricError
from querywise.files import InputError, replace_surrogates
from querywise.index.engine import MODES, Mode
from querywise.index.store import Index, IndexStoreError
from querywise.llm.provider import LLMError
from querywise.understand.access import AccessError

F = TypeVar("F", bound=Callable[..., Any])

#: Errors whose message is written for the person at the terminal: printed as they are.
USER_ERRORS: tuple[type[Exception], ...] = (
    ConfigError, InputError, IndexStoreError, LLMError, AccessError, WhereSyntaxError, MetricError, DeploymentError,
)
DEBUG_ENV = "QUERYWISE_DEBUG"  # set to 1 to get the traceback of an unexpected error


def esc(value: object) -> str:
    """`value` as text that rich prints literally: `[/x]` or `[link=...]` in a message, a chunk
    or a file name is shown, never interpreted as markup."""
    return escape(str(value))


def _os_problem(exc: OSError) -> str:
    if exc.filename is None:
        return str(exc)
    target = f" -> {exc.filename2}" if exc.filename2 is not None else ""
    return f"{exc.filename}{target}: {exc.strerror or exc}"


def _clean_arg(value: Any) -> Any:
    if isinstance(value, str):
        return replace_surrogates(value)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return type(value)(replace_surrogates(v) for v in value)
    return value


def _safe_streams() -> None:
    """Replace what stdout/stderr cannot encode (a lone surrogate in a path, a non-UTF-8 terminal)
    instead of raising in the middle of the output."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            with contextlib.suppress(ValueError, OSError):  # a stream that cannot change keeps its ways
                stream.reconfigure(errors="replace")


def guarded(f: F) -> F:
    """Wrap a command: arguments cleaned, output streams safe, errors one line and exit code 2."""

    @functools.wraps(f)
    def command(*args: Any, **kwargs: Any) -> Any:
        _safe_streams()
        try:
            return f(*(_clean_arg(a) for a in args), **{k: _clean_arg(v) for k, v in kwargs.items()})
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise
        except USER_ERRORS as exc:
            raise fail(str(exc)) from None
        except OSError as exc:
            raise fail(_os_problem(exc)) from None
        except ValueError as exc:  # the library's own checks (ablation names, sample sizes, ...)
            if not isinstance(exc, ValidationError):  # a model the code built itself: a bug
                raise fail(str(exc)) from None
            if os.environ.get(DEBUG_ENV):
                raise
            raise fail(_bug(exc)) from None
        except Exception as exc:
            if os.environ.get(DEBUG_ENV):
                raise
            raise fail(_bug(exc)) from None

    return command  # type: ignore[return-value]


def _bug(exc: Exception) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return (f"unexpected {type(exc).__name__}{': ' + first if first else ''} — a bug in querywise; "
            f"please report it with the command (set {DEBUG_ENV}=1 to see the traceback)")


class QueryWiseApp(typer.Typer):
    """A typer app whose every command is `guarded`."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        register = super().command(*args, **kwargs)

        def decorator(f: F) -> F:
            register(guarded(f))
            return f

        return decorator


app = QueryWiseApp(
    help="querywise: understand each message before retrieval, and diagnose why retrieval fails.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help is plain text: "[routing]" and "[llm]" are printed as written, not read as markup
)
err = Console(stderr=True, emoji=False)
out = Console(emoji=False)

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="Settings TOML file.", exists=True, dir_okay=False)]
IndexOpt = Annotated[Path, typer.Option("--index", "-i", help="Index folder.")]
MaybeIndexOpt = Annotated[Path | None, typer.Option("--index", "-i", help="Index folder (optional with another retriever: its vocabulary still serves spelling).")]
RetrieverOpt = Annotated[
    str | None,
    typer.Option("--retriever", help="What plans run against, instead of [retriever]: 'index' (the querywise index), an http(s):// URL "
                 "(POST {query, k, filters, mode} -> {hits: [{id, score, text, payload}]}), module:function, qdrant://host:port/collection "
                 "or elasticsearch://host:port/index."),
]
DeploymentOpt = Annotated[Path, typer.Option("--config", "-c", help="Deployment TOML file.", exists=True, dir_okay=False)]
HistoryOpt = Annotated[
    list[str] | None,
    typer.Option("--history", help="An earlier turn, oldest first; repeat. A user turn as typed, or 'assistant: ...' for an answer ('user: ...' also reads)."),
]
SessionOpt = Annotated[list[str] | None, typer.Option("--session", help="KEY=VALUE from the authenticated session; repeat.")]


def fail(message: str) -> typer.Exit:
    """Print MESSAGE (plain text: never read as markup) as an error and return the exit (code 2) to raise."""
    err.print(f"[bold red]error:[/] {esc(replace_surrogates(message))}", highlight=False, soft_wrap=True)
    return typer.Exit(code=2)


def print_warnings(warnings: Iterable[object]) -> None:
    """Each warning (a deployment's start-up check, an evaluation's) on its own stderr line,
    `warning: ...`, as plain text: stdout keeps the command's output (--json stays parseable)."""
    for w in warnings:
        err.print(f"[yellow]warning:[/] {esc(replace_surrogates(str(w)))}", highlight=False, soft_wrap=True)


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


def with_retriever(settings: Settings, spec: str | None) -> Settings:
    """The settings with --retriever SPEC in place of `[retriever]` (kind and target; the rest kept)."""
    if spec is None:
        return settings
    from querywise.retrieve import settings_from_spec

    try:
        return settings.model_copy(update={"retriever": settings_from_spec(spec, settings.retriever)})
    except ValueError as exc:
        raise fail(f"--retriever: {exc}") from None


def open_index(index: Path | None, settings: Settings) -> Index | None:
    """The index of --index; without one, None when another retriever serves the plans."""
    if index is None:
        if settings.retriever.kind == "index":
            raise fail("give --index DIR, or another retriever (--retriever URL|module:function, or [retriever] in the config)")
        return None
    try:
        return Index.open(index, settings=settings)
    except IndexStoreError as exc:
        raise fail(str(exc)) from None


def session_from(pairs: list[str] | None) -> dict[str, str]:
    """--session KEY=VALUE pairs as a dict."""
    session: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise fail(f"--session expects KEY=VALUE, got {pair!r}")
        if key.strip() in session:  # a second value would silently replace (or clear) the first
            raise fail(f"--session {key.strip()} given twice; give each session key once")
        session[key.strip()] = value.strip()
    return session


def history_from(values: list[str] | None) -> list[Turn]:
    """--history values as turns: 'assistant: ...' is an answer, 'user: ...' or anything else a user turn."""
    turns = []
    for value in values or []:
        role, sep, text = value.partition(":")
        if sep and role.strip().lower() in ("user", "assistant"):
            turns.append(Turn(role="assistant" if role.strip().lower() == "assistant" else "user", text=text.strip()))
        else:
            turns.append(Turn(text=value))
    return turns


def output_path(path: Path | None, option: str) -> None:
    """Fail before any work is done when the file an option names (--html) cannot be written there."""
    if path is None:
        return
    if path.is_dir():
        raise fail(f"{option} {path} is a folder; name a file")
    if not path.parent.is_dir():
        raise fail(f"{option} {path}: the folder {path.parent} does not exist")


def mode_from(name: str) -> Mode:
    """--mode as a search mode, or a clean error."""
    for mode in MODES:
        if mode == name:
            return mode
    raise fail(f"--mode must be dense, bm25 or hybrid, not {name!r}")

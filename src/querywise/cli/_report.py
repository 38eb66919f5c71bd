"""The one report of the rows a load left out (`index --skip-invalid`, `eval --skip-invalid`)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from querywise.cli._app import esc
from querywise.corpus import BadRow

__all__ = ["print_skipped"]


def print_skipped(rows: Sequence[BadRow], console: Console) -> None:
    """Every skipped row as `file:line: reason`, one a line (never wrapped: editors and grep read
    it as is), then the count; nothing when no row was skipped."""
    if not rows:
        return
    console.print(f"[bold yellow]{len(rows):,} bad rows skipped:[/]", highlight=False)
    for row in rows:
        console.print(f"  [cyan]{esc(row.where)}[/]: {esc(row.reason)}", highlight=False, soft_wrap=True)
    console.print(f"[yellow]skipped {len(rows):,} bad rows[/] (listed above); every other row was loaded", highlight=False)

"""Progress of long commands (`router-train`, `router-eval`) on stderr, with a time estimate.

The library reports phases through a callback (`phase(name, total) -> advance(n)`, the shape of
`querywise.index.store.Progress`); this turns it into a rich bar with the time left on a
terminal, and into plain lines on a pipe or a log file, where a live bar shows nothing until it
ends (a 15-minute fine-tune used to print nothing at all there). Either way an estimate measured
on the first steps of each long phase is printed as a line of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["ESTIMATE_AFTER", "PhaseDisplay", "duration", "phase_display"]

ESTIMATE_AFTER = 3  # steps timed before the estimate is printed (the first one includes warm-up)


def duration(seconds: float) -> str:
    """'7s', '3m 05s', '1h 02m'."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


class PhaseDisplay:
    """The progress callback: one bar (or one line) per phase, an estimate line per long phase."""

    def __init__(self, console: Console, bar: Progress | None) -> None:
        self.console, self.bar = console, bar
        self.tasks: list[TaskID] = []

    def __call__(self, phase: str, total: int | None) -> Callable[[int], None]:
        started, done, tenths, estimated = time.perf_counter(), [0], [0], [False]
        if self.bar is not None:
            for t in self.tasks:  # the previous phase is over
                self.bar.update(t, completed=self.bar.tasks[t].total or 1)
                self.bar.stop_task(t)
            self.tasks = [self.bar.add_task(phase, total=total)]
        else:
            self.console.print(f"{phase}{f' ({total:,} steps)' if total and total > 1 else ''}...", highlight=False, soft_wrap=True)

        def advance(n: int) -> None:
            done[0] += n
            if self.bar is not None:
                self.bar.advance(self.tasks[0], n)
            if not total or total <= 1:
                return
            elapsed = time.perf_counter() - started
            left = elapsed / done[0] * (total - done[0])
            if not estimated[0] and ESTIMATE_AFTER <= done[0] < total:
                estimated[0] = True
                self.console.print(
                    f"estimate: {phase}: {duration(elapsed / done[0] * total)} for {total:,} steps "
                    f"({elapsed / done[0]:.3g} s a step over the first {done[0]:,}), about {duration(left)} to go",
                    highlight=False, soft_wrap=True,
                )
            elif self.bar is None and done[0] * 10 // total > tenths[0]:
                tenths[0] = done[0] * 10 // total
                self.console.print(f"  {phase}: {done[0]:,}/{total:,} steps, {duration(elapsed)} elapsed, about {duration(left)} left",
                                   highlight=False, soft_wrap=True)

        return advance


@contextmanager
def phase_display(console: Console) -> Iterator[PhaseDisplay]:
    """A progress callback on `console`: a live bar on a terminal, lines elsewhere."""
    if not console.is_terminal:
        yield PhaseDisplay(console, None)
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("left"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        display = PhaseDisplay(console, bar)
        yield display
        for t in display.tasks:
            bar.update(t, completed=bar.tasks[t].total or 1)

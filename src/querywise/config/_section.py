"""What every settings section shares: strict, frozen, and validated again when copied."""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict


def default_cache_dir() -> Path:
    """`$QUERYWISE_CACHE_DIR`, else `$XDG_CACHE_HOME/querywise`, else `~/.cache/querywise`."""
    if env := os.environ.get("QUERYWISE_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "querywise"


# A configured pattern runs on every message, in the request's thread, where Python's `re` cannot
# be interrupted: one that backtracks catastrophically (`^(\w+\s?)+$`: 25 s on 28 letters and a
# "!") would freeze a worker. So it is timed at load on the inputs that expose backtracking -- runs
# of one unit of text, growing, then a character that makes the match fail -- and refused when one
# search takes longer than the budget of CPU time. Growth is stopped at the first slow length, so
# a refused pattern costs about one budget. (A static star-height rule would refuse safe identifier
# patterns such as `[A-Z]+(?:-[A-Z0-9]+)*`; the `regex` module's timeout is not a dependency.)
_PROBE_UNITS = ("a", "1", " ", "a ", "a1", "-", "a-", "_", ".", "a.")
_PROBE_LENGTHS = (8, 12, 16, 20, 24, 28, 32, 256, 4096)  # steps of 4: (a|aa)+$ goes 17 -> 114 ms of CPU from 24 to 28
_PROBE_BUDGET_S = 0.05


@functools.lru_cache(maxsize=1024)  # settings are validated again on every copy
def _slow_input(pattern: str) -> str | None:
    """An input on which one search of `pattern` takes over the budget, or None."""
    compiled = re.compile(pattern, re.IGNORECASE)
    own = sorted({c for c in pattern if c.isalnum()} - set("".join(_PROBE_UNITS)))[:12]  # its literals: (x+x+)+y
    for unit in (*_PROBE_UNITS, *own):
        for n in _PROBE_LENGTHS:
            text = unit * max(1, n // len(unit)) + "!"
            if _cpu_s(compiled, text) > _PROBE_BUDGET_S:
                return text
    return None


def _cpu_s(compiled: re.Pattern[str], text: str) -> float:
    """The CPU time one search takes in this thread: the wall clock would count the time the
    process waits for a core, and on a loaded host refused safe patterns (a 0.07 ms search of
    `\\b[A-Z]{2,}-\\d{3,}\\b` measured over 50 ms at load 20 on 2 cores, and `import querywise` failed)."""
    started = time.thread_time()
    compiled.search(text)
    return time.thread_time() - started


def check_pattern(pattern: str, what: str) -> None:
    """ValueError naming `what` when `pattern` is no regex (they are always used case-insensitive),
    or when it backtracks catastrophically (see `_PROBE_UNITS`)."""
    try:
        re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"{what} {pattern!r} does not compile: {exc}") from None
    if (slow := _slow_input(pattern)) is not None:
        shown = slow if len(slow) <= 40 else f"{slow[:20]}...{slow[-10:]} ({len(slow)} characters)"
        raise ValueError(f"{what} {pattern!r} backtracks catastrophically: one search of {shown!r} takes over "
                         f"{_PROBE_BUDGET_S * 1000:.0f} ms (nested repetition such as (\\w+\\s?)+ ; bound the inner part, e.g. (\\w+\\s)*\\w+)")


class _Section(BaseModel):
    # No setting is infinite or NaN: `timeout_s = inf` made every LLM call fail, a NaN compares false with everything
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update` applied, validated like settings read from a file: pydantic's own
        copy skips validators, so a changed section could otherwise name a route nobody declared."""
        copied = super().model_copy(update=update, deep=deep)
        return type(self).model_validate(copied.model_dump()) if update else copied

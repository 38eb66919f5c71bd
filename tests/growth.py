"""A complexity check that holds on any machine: time that grows with the input, not a bound."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

GROWTH = 10  # the most that 4x the input may cost


def grows_linearly(run: Callable[[int], object], size: int = 100_000) -> object:
    """Assert that `run(size)` takes under 10x the time of `run(size // 4)`, and return its result.

    Linear work takes about 4x (5-6x with the cache misses of a larger input), quadratic 16x. The check compares the machine with itself,
    so a slow or busy CI runner does not fail it as an absolute bound would (CPU time, collector paused); the absolute
    figures live in `bench/understanding/crafted_inputs.py`. Runs too short to time (under 50 ms) pass.
    """
    def timed(n: int) -> tuple[float, object]:
        # CPU time of this process, with the collector paused: other processes on the machine
        # and the collector's pauses are not the algorithm's growth.
        gc.collect()
        gc.disable()
        try:
            started = time.process_time()
            out = run(n)
            return time.process_time() - started, out
        finally:
            gc.enable()

    small = min(timed(size // 4)[0] for _ in range(2))
    elapsed, out = timed(size)
    if elapsed > GROWTH * small and elapsed > 0.05:
        elapsed = min(elapsed, timed(size)[0])  # once more: a pause of the machine is not growth
    assert elapsed <= max(GROWTH * small, 0.05), f"{size // 4:,}: {small:.3f} s, {size:,}: {elapsed:.3f} s (x{elapsed / max(small, 1e-9):.1f})"
    return out

"""Elapsed time as the trace and the reports write it: milliseconds, three decimals."""

from __future__ import annotations

import time

__all__ = ["ms", "ms_since"]


def ms(seconds: float) -> float:
    """`seconds` in milliseconds, rounded as every latency querywise reports is."""
    return round(seconds * 1000, 3)


def ms_since(started: float) -> float:
    """Milliseconds since `started` (a `time.perf_counter()` reading)."""
    return ms(time.perf_counter() - started)

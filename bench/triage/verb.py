"""The library's triage verb as the triage benchmarks call it, in one place.

The only bench module that imports `querywise.triage` (its verb, buckets and HTML report): it is being reshaped (issue 32:
`triage_cases(failures, index, ...)` becomes `triage(failures, deployment, options)`), and this
module is what has to follow. Not a benchmark itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from querywise.triage import ChunkTable, Failure, Population, build_report, sample_failures, triage_cases
from querywise.triage.buckets import BUCKETS
from querywise.triage.html import triage_html

__all__ = ["BUCKETS", "ChunkTable", "Failure", "Population", "build_report", "sample_failures", "triage_failures", "triage_html"]


def triage_failures(failures: Sequence[Any], index: Any, *, table: Any, mode: str, k: int = 50, **where: Any) -> list[Any]:
    """Each failure triaged at depth `k` through `index` (or `retriever=`, with `embedder=`)."""
    return list(triage_cases(failures, index, table=table, k=k, mode=mode, **where))  # type: ignore[arg-type]

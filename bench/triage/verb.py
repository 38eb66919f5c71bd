"""The library's triage verb as the triage benchmarks call it, in one place.

The only bench module that imports `querywise.triage` (its verb, the per-case probes, buckets and
HTML report): what the benchmarks need of it is re-exported here. Not a benchmark itself.
"""

from __future__ import annotations

from querywise.failures import FailureRow, MadeBy
from querywise.triage import (
    ChunkTable,
    EvalFile,
    Population,
    TriageOptions,
    TriageTarget,
    build_report,
    probe_cases,
    sample_failures,
    triage,
)
from querywise.triage.buckets import BUCKETS
from querywise.triage.html import findings, interval_text, points_text, triage_html

__all__ = [
    "BUCKETS", "ChunkTable", "EvalFile", "FailureRow", "MadeBy", "Population", "TriageOptions", "TriageTarget", "build_report",
    "findings", "interval_text", "points_text", "probe_cases", "sample_failures", "triage", "triage_html",
]

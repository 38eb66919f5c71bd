"""Oracle-query triage: sort failing questions into the place where each is repaired, with
sizes, standard errors and the ceiling a query-side layer could reach.

    >>> from querywise.triage import load_failures, triage_cases, build_report  # doctest: +SKIP
    >>> cases = triage_cases(load_failures("failures.jsonl").failures, index)   # doctest: +SKIP
"""

from querywise.triage.buckets import BUCKETS, REPAIR, Bucket, Case, Evidence, classify
from querywise.triage.failures import (
    EvalFile,
    Failure,
    TriageInputError,
    load_failures,
    load_sources,
    sample_failures,
)
from querywise.triage.labels import Label, LabelStore, load_labels, relabel
from querywise.triage.locate import ChunkTable, Location, locate
from querywise.triage.report import (
    Population,
    TriageReport,
    build_report,
    largest_remainder,
    population_of,
)
from querywise.triage.run import triage_cases

__all__ = [
    "BUCKETS",
    "REPAIR",
    "Bucket",
    "Case",
    "ChunkTable",
    "EvalFile",
    "Evidence",
    "Failure",
    "Label",
    "LabelStore",
    "Location",
    "Population",
    "TriageInputError",
    "TriageReport",
    "build_report",
    "classify",
    "largest_remainder",
    "load_failures",
    "load_labels",
    "load_sources",
    "locate",
    "population_of",
    "relabel",
    "sample_failures",
    "triage_cases",
]

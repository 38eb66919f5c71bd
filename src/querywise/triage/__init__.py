"""Oracle-query triage: sort failing questions into the place where each is repaired, with
sizes, standard errors and the ceiling a query-side layer could reach.

    >>> from querywise.triage import TriageOptions, load_failures, triage     # doctest: +SKIP
    >>> report = triage(load_failures("failures.jsonl"), deployment, TriageOptions(sample=60))  # doctest: +SKIP
"""

from querywise.failures import FailureRow
from querywise.triage.buckets import BUCKETS, REPAIR, Bucket, Evidence, TriageCase, classify
from querywise.triage.failures import (
    EvalFile,
    TriageInputError,
    failures_from_rows,
    load_failures,
    load_sources,
    sample_failures,
)
from querywise.triage.labels import Label, LabelStore, load_labels, relabel
from querywise.triage.locate import ChunkTable, Location, locate
from querywise.triage.options import TriageOptions
from querywise.triage.report import (
    Population,
    TriageReport,
    build_report,
    largest_remainder,
    population_of,
)
from querywise.triage.run import probe_cases, triage
from querywise.triage.target import TriageTarget

__all__ = [
    "BUCKETS",
    "REPAIR",
    "Bucket",
    "ChunkTable",
    "EvalFile",
    "Evidence",
    "FailureRow",
    "Label",
    "LabelStore",
    "Location",
    "Population",
    "TriageCase",
    "TriageInputError",
    "TriageOptions",
    "TriageReport",
    "TriageTarget",
    "build_report",
    "classify",
    "failures_from_rows",
    "largest_remainder",
    "load_failures",
    "load_labels",
    "load_sources",
    "locate",
    "population_of",
    "probe_cases",
    "relabel",
    "sample_failures",
    "triage",
]

"""`querywise eval` as a library call: the cases of a file or a BEIR folder, asked through a
deployment, and, with an acceptable rule, the failures rows that `querywise triage` reads.

    >>> loaded = read_eval_cases("cases.jsonl", settings)                                  # doctest: +SKIP
    >>> run = evaluate_run(loaded.cases, deployment, parse_metrics(["ndcg@10"]), rule=parse_rule(["hit@5"]))  # doctest: +SKIP
    >>> write_failures("failures.jsonl", run.failures.rows)                                # doctest: +SKIP

The command line parses its options, calls these two, and renders the result; the service's eval
job calls `evaluate` alone (no failures file).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel

from querywise.catalog import Catalog
from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.evaluation.acceptable import AcceptableRule
from querywise.evaluation.cases import Case, LoadedCases, read_beir, read_cases
from querywise.evaluation.failures import FailureRows, failure_rows
from querywise.evaluation.harness import KEEP_IDS, JudgedIds
from querywise.evaluation.metrics import Metric
from querywise.evaluation.report import EvalReport, evaluate
from querywise.index.engine import Mode
from querywise.service import QueryWise

__all__ = ["EvalRun", "evaluate_run", "read_eval_cases"]


class EvalRun(BaseModel):
    """The report, and the failures rows when a rule was given."""

    report: EvalReport
    failures: FailureRows | None = None


def read_eval_cases(source: Path | str, settings: Settings, *, split: str = "test", skip_invalid: bool = False) -> LoadedCases:
    """The cases of a JSONL case file (slices derived with the deployment's catalog, when it has
    one) or of a BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv)."""
    source = Path(source)
    if source.is_dir():
        return read_beir(source, split=split, skip_invalid=skip_invalid, max_record_chars=settings.limits.max_record_chars)
    catalog = Catalog.load(settings.deployment.catalog) if settings.deployment.catalog else None
    return read_cases(source, catalog=catalog, skip_invalid=skip_invalid)


def evaluate_run(
    cases: Sequence[Case],
    deployment: QueryWise,
    metrics: Sequence[Metric],
    *,
    mode: Mode = "hybrid",
    ablate: Sequence[str] | None = None,
    probe_access: bool = True,
    source: str = "",
    on_phase: Callable[[str, int], Callable[[int], None] | None] | None = None,
    session: Mapping[str, str] | None = None,
    rule: AcceptableRule | None = None,
    passages: Sequence[Chunk] | None = None,
) -> EvalRun:
    """`evaluate` the cases (a case without a session gets `session`), and with `rule` every case
    with a relevant id as a failures row, acceptable by the rule.

    The rule's metrics are scored even when `metrics` leaves them out (they join the report), and
    each case keeps its whole ranking (`retrieved` is as deep as the search went). `passages`: the
    chunks the cases are judged by when the deployment's retriever is not its index (the user's
    corpus); the gold texts come from them, else from the index.
    """
    if session:
        cases = [c if c.session else c.model_copy(update={"session": dict(session)}) for c in cases]
    scored = list(metrics) + ([m for m in rule.metrics if m not in metrics] if rule is not None else [])
    report = evaluate(
        cases, deployment, scored, mode=mode, ablate=ablate, probe_access=probe_access, source=source, on_phase=on_phase,
        keep_ids=None if rule is not None else KEEP_IDS, judged=JudgedIds.of_chunks(passages) if passages is not None else None,
    )
    if rule is None:
        return EvalRun(report=report)
    chunks = deployment.index.chunks() if deployment.index is not None else passages or []
    return EvalRun(report=report, failures=failure_rows(cases, report.run.cases, chunks, rule))

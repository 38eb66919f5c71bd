"""What the service's background jobs run: a triage or an evaluation of posted rows through the
served deployment, as `querywise triage --json` and `querywise eval --json` would.

The rows are the lines of the files those commands read (`eval --failures` rows; eval cases),
posted as a JSON list and read by the same row readers (a bad row is named by its number)."""

from __future__ import annotations

from typing import Any

from querywise.evaluation.cases import cases_from_beir_rows, cases_from_rows
from querywise.evaluation.metrics import parse_metrics
from querywise.evaluation.report import evaluate
from querywise.evaluation.result import EvalResult
from querywise.files import InputError
from querywise.server.jobs import Progress
from querywise.server.schemas import EvalJobRequest, TriageJobRequest
from querywise.service import QueryWise
from querywise.triage import failures_from_rows, triage

__all__ = ["run_eval", "run_triage"]


def _rows_named(error: ValueError) -> ValueError:
    """The readers name "source:N"; here N is the posted row's number (from 1)."""
    if isinstance(error, InputError):
        return ValueError(f"row {error.line}: {error.problem}" if error.line is not None else error.problem)
    return error


def run_triage(deployment: QueryWise, body: TriageJobRequest, progress: Progress) -> dict[str, Any]:
    if deployment.index is None:
        raise ValueError("a triage job reads the chunks from the deployment's index: serve with --index "
                         "(or run `querywise triage --retriever ... --corpus FILE` where the passages are)")
    try:
        data = failures_from_rows(body.failures)
    except ValueError as exc:
        raise _rows_named(exc) from None
    return triage(data, deployment, body.options, progress=progress).to_json()


def run_eval(deployment: QueryWise, body: EvalJobRequest, progress: Progress) -> dict[str, Any]:
    try:
        cases = (cases_from_rows(body.cases, catalog=deployment.understander.catalog) if body.qrels is None
                 else cases_from_beir_rows(body.cases, body.qrels))
    except ValueError as exc:
        raise _rows_named(exc) from None
    report = evaluate(cases, deployment, parse_metrics(body.metrics), mode=body.mode, ablate=body.ablate, source="posted cases", on_phase=progress)
    result: dict[str, Any] = EvalResult.from_report(report).model_dump(mode="json")  # what `eval --json` prints
    return result

"""What the service's background jobs run: a triage or an evaluation of posted rows through the
served deployment, as `querywise triage --json` and `querywise eval --json` would.

The rows are the lines of the files those commands read (`eval --failures` rows; eval cases),
posted as a JSON list; they are read by the same loaders (a bad row is named by its number)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from querywise.evaluation.cases import load_cases
from querywise.evaluation.metrics import parse_metrics
from querywise.evaluation.report import evaluate
from querywise.evaluation.result import EvalResult
from querywise.files import InputError
from querywise.retrieve import IndexRetriever
from querywise.server.jobs import Progress
from querywise.server.schemas import EvalJobRequest, TriageJobRequest
from querywise.service import QueryWise
from querywise.triage import build_report, load_failures, population_of, sample_failures, triage_cases
from querywise.triage.probe_writer import generate_probe

__all__ = ["run_eval", "run_triage"]


def _as_file(rows: Sequence[Mapping[str, Any]], folder: str) -> Path:
    path = Path(folder) / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _rows_named(error: ValueError) -> ValueError:
    """The loaders name "file:line"; here a line is the posted row's number (from 1)."""
    if isinstance(error, InputError):
        return ValueError(f"row {error.line}: {error.problem}" if error.line is not None else error.problem)
    return error


def run_triage(deployment: QueryWise, body: TriageJobRequest, progress: Progress) -> dict[str, Any]:
    if deployment.index is None:
        raise ValueError("a triage job reads the chunks from the deployment's index: serve with --index "
                         "(or run `querywise triage --retriever ... --corpus FILE` where the passages are)")
    with tempfile.TemporaryDirectory() as folder:
        try:
            data = load_failures(_as_file(body.failures, folder))
        except ValueError as exc:
            raise _rows_named(exc) from None
    if not data.failures:
        raise ValueError("no failing rows (acceptable: false) to triage")
    population = population_of(data.n_rows, data.n_acceptable, len(data.failures), eval_total=body.eval_total, acceptable=body.acceptable)
    picked = sample_failures(data.failures, body.sample, body.seed)
    retriever = deployment.retriever if not isinstance(deployment.retriever, IndexRetriever) else None
    tier = deployment.understander.tier
    timeout = deployment.settings.llm.timeout_s
    write_probe = (lambda passage: generate_probe(tier.provider, passage, timeout_s=timeout)) if tier is not None else None
    cases = triage_cases(picked, deployment.index, retriever=retriever, k=body.k, context_k=body.context_k, mode=body.mode,
                         write_probe=write_probe, progress=progress)
    report = build_report(cases, population, k=body.k, context_k=body.context_k, mode=body.mode, seed=body.seed if body.sample else None)
    return report.to_json()


def run_eval(deployment: QueryWise, body: EvalJobRequest, progress: Progress) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        try:
            cases = load_cases(_as_file(body.cases, folder), catalog=deployment.understander.catalog)
        except ValueError as exc:
            raise _rows_named(exc) from None
    report = evaluate(cases, deployment, parse_metrics(body.metrics), mode=body.mode, ablate=body.ablate, source="posted cases", on_phase=progress)
    result: dict[str, Any] = EvalResult.from_report(report).model_dump(mode="json")  # what `eval --json` prints
    return result

"""The evaluation report: run the cases (and the ablation) into one `EvalReport`.

`evaluate` composes the harness, the ablation and the component scores into an `EvalReport`.
`evaluation.result.EvalResult.from_report` turns it into the versioned `querywise eval --json`
document; `evaluation.eval_html` and the CLI's terminal renderer (`cli.render_eval`) format it.
The renderers only format: every number is computed before they run.

Before anything runs, the cases' judged ids are checked against the index
(`deployment_check.judged_id_problems`): none of them in it is an error (the wrong index), some
missing a warning. The report's `warnings` holds those and the deployment's own start-up ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pydantic import BaseModel, Field

from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.deployment_check import DeploymentError, judged_id_problems
from querywise.evaluation.ablation import AblationReport, plan_ablation, run_ablation
from querywise.evaluation.acceptable import AcceptableRule
from querywise.evaluation.cases import Case
from querywise.evaluation.components import (
    ComponentReport,
    access_probe,
    component_scores,
)
from querywise.evaluation.failures import FailureRows, failure_rows, made_by
from querywise.evaluation.harness import KEEP_IDS, Arm, ArmResult, JudgedIds, run_arm
from querywise.evaluation.metrics import Metric
from querywise.index.engine import Mode
from querywise.service import QueryWise
from querywise.understand.access import AccessError, access_from_session

__all__ = ["EvalReport", "evaluate"]


class EvalReport(BaseModel):
    """The main run (the configured moves), its component scores and, if asked, the ablation."""

    source: str = ""
    run: ArmResult
    components: ComponentReport | None = None
    ablation: AblationReport | None = None
    warnings: list[str] = Field(default_factory=list)  # the deployment's start-up warnings, judged ids the index lacks
    failures: FailureRows | None = None  # with an acceptable rule: the rows of `eval --failures`


def evaluate(
    cases: Sequence[Case],
    deployment: QueryWise,
    metrics: Sequence[Metric],
    *,
    mode: Mode = "hybrid",
    ablate: Sequence[str] | None = None,
    probe_access: bool = True,
    source: str = "",
    on_phase: Callable[[str, int], Callable[[int], None] | None] | None = None,
    keep_ids: int | None = KEEP_IDS,
    session: Mapping[str, str] | None = None,
    rule: AcceptableRule | None = None,
    passages: Sequence[Chunk] | None = None,
) -> EvalReport:
    """Ask `cases` through `deployment` with its configured moves in `mode`, score the components
    and, when `ablate` is given (possibly empty = every move and mode), the ablation against
    pass-through. Plans are not logged: an evaluation is not traffic.

    A case without a session is asked with `session`. The main run keeps each case's top
    `keep_ids` ids (None: the whole ranking). With `rule` (`eval --failures`), every case with a
    relevant id becomes a failures row in `EvalReport.failures`, acceptable by the rule: the rule's
    metrics are scored even when `metrics` leaves them out, and each case keeps its whole ranking.
    `passages`: the chunks the cases are judged by when the deployment's retriever is not its index
    (the user's corpus); the gold texts then come from them, else from the index."""
    settings = deployment.settings
    if session:
        cases = [c if c.session else c.model_copy(update={"session": dict(session)}) for c in cases]
    _check_sessions(cases, settings)
    warnings = [p.message for p in deployment.warnings] + _check_judged_ids(cases, deployment)
    plan = plan_ablation(settings, ablate, mode=mode, unable=deployment.understander.unable()) if ablate is not None else None  # unknown names fail before anything runs
    scored = list(metrics) + ([m for m in rule.metrics if m not in metrics] if rule is not None else [])
    judged = JudgedIds.of_chunks(passages) if passages is not None else None
    main_arm = Arm(name="configured", mode=mode, moves=tuple(settings.understanding.moves))
    main = run_arm(
        cases, deployment, main_arm, scored, on_case=on_phase(f"{main_arm.name} ({mode})", len(cases)) if on_phase else None,
        keep_ids=None if rule is not None else keep_ids, judged=judged,
    )
    probe = access_probe(cases, deployment) if probe_access else None
    components = component_scores(cases, main.cases, settings, access=probe)
    ablation = None
    if plan is not None:
        ablation = run_ablation(cases, deployment, plan, scored, reuse=main, on_phase=on_phase, judged=judged)
    failures = None
    if rule is not None:
        chunks = deployment.index.chunks() if deployment.index is not None else passages or []
        chunks = list(chunks)
        index_name = str(deployment.index.root) if deployment.index is not None else None
        failures = failure_rows(cases, main.cases, chunks, rule, made=made_by(rule, mode=mode, index=index_name, n_chunks=len(chunks)))
    return EvalReport(source=source, run=main, components=components, ablation=ablation, warnings=warnings, failures=failures)



def _check_sessions(cases: Sequence[Case], settings: Settings) -> None:
    """Every case must carry a session the deployment accepts: a case without one would search
    nothing (access fails closed) and score zero, which measures the case file, not the moves."""
    problems = [(c.id, why) for c in cases if (why := _session_problem(c, settings)) is not None]
    if problems:
        first, why = problems[0]
        raise ValueError(
            f"{len(problems)} of {len(cases)} cases have no session this deployment accepts (case {first!r}: {why}); "
            'give each case a "session", or a default for cases without one (`querywise eval --session KEY=VALUE`)'
        )


def _check_judged_ids(cases: Sequence[Case], deployment: QueryWise) -> list[str]:
    """Warnings for judged ids the index lacks; a `DeploymentError` when it holds none of them.
    A judged id is known when it is a chunk id or a document id (payload `doc_id`) of the index."""
    index = deployment.index
    judged = [rid for c in cases for rid in c.relevant]
    if index is None or not judged:
        return []
    known: set[str] = set()
    for chunk in index.chunks():
        known |= {chunk.id, chunk.doc_id}
    problems = judged_id_problems(judged, known, index=str(index.root))
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise DeploymentError(errors)
    return [p.message for p in problems]


def _session_problem(case: Case, settings: Settings) -> str | None:
    try:
        access_from_session(case.session, settings.access)
    except AccessError as exc:
        return str(exc)
    return None

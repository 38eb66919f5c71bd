"""The evaluation report: run the cases (and the ablation) into one `EvalReport`.

`evaluate` composes the harness, the ablation and the component scores into an `EvalReport`.
`evaluation.result.EvalResult.from_report` turns it into the versioned `querywise eval --json`
document; `evaluation.eval_html` and the CLI's terminal renderer (`cli.render_eval`) format it.
The renderers only format: every number is computed before they run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel

from querywise.config import Settings
from querywise.evaluation.ablation import AblationReport, plan_ablation, run_ablation
from querywise.evaluation.cases import Case
from querywise.evaluation.components import (
    ComponentReport,
    access_probe,
    component_scores,
)
from querywise.evaluation.harness import Arm, ArmResult, run_arm
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
) -> EvalReport:
    """Ask `cases` through `deployment` with its configured moves in `mode`, score the components
    and, when `ablate` is given (possibly empty = every move and mode), the ablation against
    pass-through. Plans are not logged: an evaluation is not traffic."""
    settings = deployment.settings
    _check_sessions(cases, settings)
    main_arm = Arm(name="configured", mode=mode, moves=tuple(settings.understanding.moves))
    main = run_arm(cases, deployment, main_arm, metrics, on_case=on_phase(f"{main_arm.name} ({mode})", len(cases)) if on_phase else None)
    probe = access_probe(cases, deployment) if probe_access else None
    components = component_scores(cases, main.cases, settings, access=probe)
    ablation = None
    if ablate is not None:
        plan = plan_ablation(settings, ablate, mode=mode)
        ablation = run_ablation(cases, deployment, plan, metrics, reuse=main, on_phase=on_phase)
    return EvalReport(source=source, run=main, components=components, ablation=ablation)



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


def _session_problem(case: Case, settings: Settings) -> str | None:
    try:
        access_from_session(case.session, settings.access)
    except AccessError as exc:
        return str(exc)
    return None

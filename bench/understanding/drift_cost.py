"""What the answer query's drift guard costs execute (#34 item 5): one dense search of the message
per plan that carries a guarded answer query.

    .venv/bin/python -m bench.understanding.drift_cost

doc2dial's follow-up turns (the first `TURNS` whose plan has a guarded query, every split: this is a
cost, not a choice), planned once; each plan executed once as planned and once with its guard
taken away (`unless_drift=None`) unmeasured (each text's embedding then cached, as the message's is
by its own search in a live request), then both, alternating, `ROUNDS` times, on the querywise index of
`followup_recall` (bench/work/eval-doc2dial). CPU time of the process (`time.process_time`), not
wall time: the machine is shared. Also how often the guard fired on those turns.

Writes bench/results/drift_cost.json and .md.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench import log
from bench.report import publish
from bench.understanding.followup_recall import doc2dial_index

COMMAND = ".venv/bin/python -m bench.understanding.drift_cost"
TURNS = 200
ROUNDS = 3


def _unguarded(plan: Any) -> Any:
    return plan.model_copy(update={"queries": [q.model_copy(update={"unless_drift": None}) for q in plan.queries]})


def measure(qw: Any, ix: Any, cases: list[Any]) -> dict[str, Any]:
    from querywise.execute import execute

    plans = []
    for c in cases:
        if "follow_up" not in c.slices:
            continue
        plan = qw.plan(c.message, history=c.history)
        if any(q.unless_drift is not None for q in plan.queries):
            plans.append(plan)
        if len(plans) >= TURNS:
            break
    fired = 0
    for plan in plans:  # warm-up, not measured: each text's first search embeds it (then cached)
        step = execute(plan, ix, k=10).plan.step("execute")
        fired += step is not None and any(c["fired"] for c in step.details["drift_guard"])
        execute(_unguarded(plan), ix, k=10)
    guarded: list[float] = []
    bare: list[float] = []
    for r in range(ROUNDS):
        for plan in plans:
            for which, p in (("bare", _unguarded(plan)), ("guarded", plan)) if r % 2 == 0 else (("guarded", plan), ("bare", _unguarded(plan))):
                start = time.process_time()
                execute(p, ix, k=10)
                ms = (time.process_time() - start) * 1000
                (guarded if which == "guarded" else bare).append(ms)
    extra = [g - b for g, b in zip(guarded, bare, strict=True)]
    return {"plans": len(plans), "rounds": ROUNDS, "fired": fired,
            "guarded_ms": {"p50": round(statistics.median(guarded), 2), "mean": round(statistics.fmean(guarded), 2)},
            "unguarded_ms": {"p50": round(statistics.median(bare), 2), "mean": round(statistics.fmean(bare), 2)},
            "extra_ms": {"p50": round(statistics.median(extra), 2), "mean": round(statistics.fmean(extra), 2)}}


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    return "\n".join([
        "# The drift guard's cost in execute (#34 item 5)", "", f"Command: `{m['command']}` ({m['date']}, load {', '.join(f'{x:.1f}' for x in m['load_avg_at_write'])}).", "",
        f"doc2dial follow-up turns whose plan carries a guarded answer query: {result['plans']} plans, each executed "
        f"{result['rounds']} times as planned and with the guard taken away, alternating, after one unmeasured run of each (query embeddings cached); CPU time of the process per execute "
        "(k=10, hybrid, the querywise index): the guard adds one dense search of the message, 200 deep.", "",
        "| execute | p50 ms (CPU) | mean ms (CPU) |", "|---|---|---|",
        f"| as planned (guard checked) | {result['guarded_ms']['p50']:.2f} | {result['guarded_ms']['mean']:.2f} |",
        f"| guard taken away | {result['unguarded_ms']['p50']:.2f} | {result['unguarded_ms']['mean']:.2f} |",
        f"| the difference, per plan | {result['extra_ms']['p50']:.2f} | {result['extra_ms']['mean']:.2f} |", "",
        f"The guard fired on {result['fired']} of the {result['plans']} plans (the answer query left out).", ""])


def main() -> None:
    from querywise.service import QueryWise

    settings, ix, cases = doc2dial_index()
    with ix, QueryWise(settings, ix) as qw, qw.with_moves(("follow_up",)) as moved:
        result = measure(moved, ix, cases)
    out = publish("drift_cost", result, command=COMMAND, render=markdown)
    log(out.with_suffix(".md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()

"""Issue 7: the reference follow-up table, reproduced through the evaluation harness.

The reference's follow-ups become cases; the harness runs them pass-through ("raw follow-up",
reproduced exactly) and with the follow-up move, in dense mode on the 15 reference chunks. The
rank of the relevant chunk is 1 / MRR. The move's deterministic form resolves pointers and
ellipsis ("What about unopened ones?" asks the previous question of unopened earbuds), so it is
held to rank every case at least as high as the reference's "prev + follow-up" column, which
test_execute_reference.py reproduces exactly from `concat_standalone`.
"""

from __future__ import annotations

from typing import Any

from querywise.config import Settings
from querywise.evaluation.ablation import plan_ablation, run_ablation
from querywise.evaluation.cases import Case, derive_slices
from querywise.evaluation.metrics import parse_metrics
from querywise.index import Index
from querywise.service import QueryWise


def test_follow_up_table_through_the_harness(reference_index: Index, reference: dict[str, Any]) -> None:
    cases = [
        Case(id=str(n), message=f["message"], history=f["history"], relevant={f["relevant"]: 1},
             slices=derive_slices(f["message"], f["history"]))
        for n, f in enumerate(reference["follow_ups"])
    ]  # fmt: skip
    assert all("follow_up" in c.slices for c in cases)  # the gate flags every reference follow-up
    metrics = parse_metrics(["mrr", f"recall@{len(reference_index)}"])  # the whole ranking
    plan = plan_ablation(Settings(), ["follow_up"], mode="dense")
    report = run_ablation(cases, QueryWise(Settings(), reference_index), plan, metrics)
    raw, follow = report.arms
    ranks = {arm.arm.name: [round(1 / c.scores["mrr"]) for c in arm.cases] for arm in (raw, follow)}  # type: ignore[operator]
    expected = reference["expected"]["follow_up_ranks"]
    assert ranks["baseline"] == expected["raw follow-up"]
    prev = expected["prev + follow-up"]
    assert all(r <= p for r, p in zip(ranks["+follow_up"], prev, strict=True)), (ranks["+follow_up"], prev)
    delta = next(d.diff for d in report.deltas if d.slice == "all" and d.metric == "mrr")
    assert delta.n == 8 and delta.delta > 0

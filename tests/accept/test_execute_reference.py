"""Issue 4: the "prev + follow-up" ranks of the reference, through the gate and `execute`."""

from __future__ import annotations

from typing import Any

import pytest

from querywise.execute import execute
from querywise.index import Index
from querywise.plan import PlanQuery, QueryPlan
from querywise.understand.followup import check_follow_up, concat_standalone


@pytest.fixture
def index(reference_index: Index) -> Index:
    return reference_index


def test_prev_plus_follow_up_ranks_through_execute(index: Index, reference: dict[str, Any]) -> None:
    ranks = []
    for f in reference["follow_ups"]:
        gate = check_follow_up(f["message"], f["history"])
        assert gate.needs_context, f["message"]
        standalone = concat_standalone(f["message"], f["history"])
        plan = QueryPlan(message=f["message"], route="kb_search", queries=[PlanQuery(text=standalone, kind="standalone")])
        ids = [h.id for h in execute(plan, index, k=len(index), mode="dense").hits]
        ranks.append(ids.index(f["relevant"]) + 1)
    assert ranks == reference["expected"]["follow_up_ranks"]["prev + follow-up"]
    assert sum(r <= 3 for r in ranks) == 8  # recall@3 of 8/8

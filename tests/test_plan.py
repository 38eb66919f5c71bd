import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from querywise.conditions import parse_where
from querywise.plan import Ask, Assume, Cover, DriftGuard, PlanQuery, QueryPlan, TraceStep, plan_json_schema

SCHEMA_FILE = Path(__file__).parents[1] / "schemas" / "query_plan.schema.json"


def _full_plan(action) -> QueryPlan:  # type: ignore[no-untyped-def]
    return QueryPlan(
        message="does it cover water damage?\nsecond line",
        route="kb_search",
        queries=[
            PlanQuery(text="Does the Solace 7 warranty cover water damage?", kind="standalone"),
            PlanQuery(text="does it cover water damage?", kind="original", weight=0.5),
            PlanQuery(text="A liquid-damage answer...", kind="hyde", mode="dense"),
        ],
        filters=parse_where(["category=headphones", "price_usd<200"]),
        access=parse_where(["markets=eu"]),
        action=action,
        trace=[TraceStep(move="route", status="ran", reason="kb_search by margin 0.2", latency_ms=1.5, details={"scores": {"kb_search": 0.61}})],
    )


@pytest.mark.parametrize(
    "action",
    [Assume(text="Assuming the Solace 7"), Ask(question="Which one?", options=["Solace 7", "Solace 7 Pro"]), Cover(readings=["a", "b"])],
)
def test_a_plan_is_one_json_line_and_reads_back(action) -> None:  # type: ignore[no-untyped-def]
    plan = _full_plan(action)
    line = plan.to_json_line()
    assert "\n" not in line
    assert QueryPlan.from_json_line(line) == plan


def test_unknown_fields_and_kinds_are_rejected() -> None:
    data = json.loads(_full_plan(Assume(text="x")).to_json_line())
    data["queries"][0]["kind"] = "magic"
    with pytest.raises(ValidationError):
        QueryPlan.model_validate(data)
    with pytest.raises(ValidationError):
        QueryPlan.model_validate({**json.loads(_full_plan(Assume(text="x")).to_json_line()), "surprise": 1})


def test_cover_needs_two_readings() -> None:
    with pytest.raises(ValidationError):
        Cover(readings=["only one"])


def test_committed_schema_is_current() -> None:
    """`schemas/query_plan.schema.json` is what integrators read; regenerate it with
    `querywise plan-schema > schemas/query_plan.schema.json` when the plan changes."""
    assert json.loads(SCHEMA_FILE.read_text()) == plan_json_schema()


def test_a_drift_guard_reads_back_and_an_unguarded_query_does_not_carry_one() -> None:
    guard = DriftGuard(against="how long does shipping take?", clarity=0.2, away=0.15)
    plan = QueryPlan(message="how long does shipping take?", route="kb_search", queries=[
        PlanQuery(text="how long does shipping take?", kind="original"),
        PlanQuery(text="how long does shipping take? The cushions are part QR-5126.", kind="standalone", weight=10.0, unless_drift=guard),
    ])  # fmt: skip
    back = QueryPlan.from_json_line(plan.to_json_line())
    assert back == plan and back.queries[1].unless_drift == guard
    assert "unless_drift" not in json.loads(plan.to_json_line())["queries"][0]  # logs of unguarded plans are unchanged
    with pytest.raises(ValidationError):
        DriftGuard(against="x", clarity=0.2, away=0.15, depth=10)  # clarity reads the 50th cosine

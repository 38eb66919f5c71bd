from pathlib import Path

from querywise.plan import PlanQuery, QueryPlan
from querywise.planlog import append_plan, read_plans


def test_plans_are_logged_next_to_the_raw_message(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "plans.jsonl"
    a = QueryPlan(message="And the Pro?", route="kb_search", queries=[PlanQuery(text="And the Pro?", kind="original")])
    b = QueryPlan(message="where is my order", route="account")
    append_plan(log, a, history=["warranty on the Solace 7?"], session={"market": "eu", "user": "u-123"})
    append_plan(log, b)
    assert list(read_plans(log)) == [("And the Pro?", a), ("where is my order", b)]
    text = log.read_text()
    assert "u-123" not in text and '"session_keys": ["market", "user"]' in text

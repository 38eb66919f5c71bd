"""`plan` prints the plan `ask` runs: with --index the same moves see the same vocabulary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querywise import cli
from querywise.config import Settings, load_settings
from querywise.demo import demo_corpus, demo_file
from querywise.files import read_jsonl
from querywise.index import Index, build_index
from querywise.service import QueryWise

runner = CliRunner()
CONFIG = str(demo_file("querywise.toml"))
EU = {"market": "eu"}
pytestmark = pytest.mark.model  # the demo deployment routes with the real embedder
_RUN_STEPS = {"execute", "rerank", "overlap"}  # what running a plan adds to its trace


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Settings]:
    root = tmp_path_factory.mktemp("demo")
    settings = load_settings(demo_file("querywise.toml")).model_copy(update={"cache_dir": root / "cache"})
    build_index(demo_corpus(), root / "ix", settings=settings).close()
    return root / "ix", settings


def _planned(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan without what running it adds, and without timings."""
    trace = [{k: v for k, v in s.items() if k != "latency_ms"} for s in plan["trace"] if s["move"] not in _RUN_STEPS]
    return {**plan, "trace": trace}


def test_plan_with_the_index_is_the_plan_ask_runs(demo: tuple[Path, Settings]) -> None:
    ix, _ = demo
    args = ["is hc 3417 in stock", "-c", CONFIG, "--session", "market=eu", "--json"]
    planned = runner.invoke(cli.app, ["plan", *args, "-i", str(ix)])
    asked = runner.invoke(cli.app, ["ask", *args, "-i", str(ix)])
    assert planned.exit_code == 0 and asked.exit_code == 0, (planned.output, asked.output)
    plan = json.loads(planned.stdout)
    assert any(q["kind"] == "exact" for q in plan["queries"])  # the exact lookup the index's identifiers make
    assert _planned(plan) == _planned(json.loads(asked.stdout)["plan"])
    bare = json.loads(runner.invoke(cli.app, ["plan", *args]).stdout)  # no index: the moves that need one say so
    assert next(s for s in bare["trace"] if s["move"] == "exact_lookup")["reason"] == "no index vocabulary to look identifiers up in"


def test_every_demo_case_plans_as_it_is_asked(demo: tuple[Path, Settings]) -> None:
    ix, settings = demo
    cases = [row for _, row in read_jsonl(Path(demo_file("cases.jsonl")))]
    with Index.open(ix, settings=settings) as index, QueryWise(settings, index) as qw:
        for case in cases:
            plan = qw.plan(case["message"], history=case["history"], session=EU)
            asked = qw.ask(case["message"], history=case["history"], session=EU).plan
            assert _planned(plan.model_dump()) == _planned(asked.model_dump()), case["message"]

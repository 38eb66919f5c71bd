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


COMPARE = "Compare the Halden Solace 7 and the Corra Tide 4."
WATER = ["does the Halden Solace 7 cover water damage?", "does the Corra Tide 4 cover water damage?"]


def _asking_config(tmp: Path) -> Path:
    """The demo deployment with asking cheaper than covering ([ambiguity] cost_ask under cost_cover)."""
    text = demo_file("querywise.toml").read_text(encoding="utf-8")
    for name in ("catalog.jsonl", "routes.jsonl"):
        text = text.replace(f'"{name}"', json.dumps(str(demo_file(name))))
    path = tmp / "asking.toml"
    path.write_text(text + "\n[ambiguity]\ncost_ask = 3.0\n", encoding="utf-8")
    return path


def test_two_candidates_are_covered_by_default_and_asked_about_when_the_policy_says_so(demo: tuple[Path, Settings], tmp_path: Path) -> None:
    ix, _ = demo
    args = ["does it cover water damage?", "--history", COMPARE, "--session", "market=eu", "--json"]
    covered = json.loads(runner.invoke(cli.app, ["plan", *args, "-c", CONFIG]).stdout)
    assert covered["action"] == {"type": "cover", "readings": ["Halden Solace 7", "Corra Tide 4"]}
    asked = runner.invoke(cli.app, ["ask", *args, "-c", str(_asking_config(tmp_path)), "-i", str(ix)])
    assert asked.exit_code == 0, asked.output
    plan = json.loads(asked.stdout)["plan"]
    assert plan["action"]["type"] == "ask" and plan["action"]["options"] == WATER
    step = next(s for s in plan["trace"] if s["move"] == "ambiguity")
    assert step["details"]["candidates"] == ["Halden Solace 7", "Corra Tide 4"]


def test_the_plan_shows_the_question_and_each_option_to_send_back(tmp_path: Path) -> None:
    shown = runner.invoke(cli.app, ["plan", "does it cover water damage?", "--history", COMPARE, "--session", "market=eu", "-c", str(_asking_config(tmp_path))],
                          env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    assert "ask Which one do you mean: Halden Solace 7 or Corra Tide 4?" in shown.stdout
    assert all(f"option {o}" in shown.stdout for o in WATER)

"""Choosing which moves run per slice of traffic (`tune --moves`): a move that loses on a slice is
turned off there and only there, the held-out gain is measured with the choice applied, and the
config written is the one plans then follow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from querywise import cli
from querywise.config import Settings, load_settings
from querywise.corpus import Chunk
from querywise.evaluation.cases import Case
from querywise.evaluation.harness import Arm, run_arm
from querywise.evaluation.metrics import parse_metric
from querywise.evaluation.tune import MIN_CASES
from querywise.evaluation.tune_moves import tune_moves
from querywise.index import Index, build_index
from querywise.service import QueryWise

NDCG = parse_metric("ndcg@10")
# Follow-ups that change the subject: the standalone form carries the old product in, and the
# shop's hash-embedded index then ranks that product's chunk first. Standalone questions beside them.
CASES = [
    Case(id="f1", message="and when does it ship?", history=["Vela X3 warranty months"], relevant={"shipping": 1}),
    Case(id="f2", message="and the cushions?", history=["how long is the Vela X3 warranty"], relevant={"cushions": 1}),
    Case(id="s1", message="Vela X3 warranty months", relevant={"x3-warranty": 1}),
    Case(id="s2", message="how many hours do the buds play", relevant={"buds-battery": 1}),
]


def copies(n: int) -> list[Case]:
    return [c.model_copy(update={"id": f"{c.id}-{i}"}) for i in range(n) for c in CASES]


@pytest.fixture
def deployment(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> Any:
    s = Settings(cache_dir=tmp_path / "c")
    build_index(shop, tmp_path / "ix", settings=s, embedder=hash_embedder).close()
    with Index.open(tmp_path / "ix", settings=s, embedder=hash_embedder) as ix, QueryWise(s, ix) as qw:
        yield qw


def test_a_move_that_loses_on_a_slice_is_turned_off_there_and_only_there(deployment: QueryWise) -> None:
    cases = copies(8)  # 32 judged cases: the held-out gain need only be above 0
    result = tune_moves(cases, deployment, NDCG, folds=3)
    assert result.chosen == result.best == {"follow_up": ["follow_up"]}  # not all of prose, where its loss also shows
    row = next(g for g in result.gains if (g.move, g.slice) == ("follow_up", "follow_up"))
    assert row.off and row.n == 16 and row.high < 0
    # the gain is what the deployment gives with the move against without it, case by case
    everywhere = run_arm(cases, deployment, Arm(name="all", moves=tuple(deployment.settings.understanding.moves)), [NDCG])
    without = run_arm(cases, deployment, Arm(name="-follow_up", moves=tuple(m for m in deployment.settings.understanding.moves if m != "follow_up")), [NDCG])
    follow = [i for i, c in enumerate(cases) if c.history]
    diff = np.array([everywhere.cases[i].scores["ndcg@10"] or 0.0 for i in follow]) - np.array([without.cases[i].scores["ndcg@10"] or 0.0 for i in follow])
    assert row.gain == pytest.approx(diff.mean(), abs=1e-4)
    assert result.cv_gain > 0 and result.cv_score > result.baseline and not result.warnings
    # applied: the follow-ups are searched as typed, and the trace says why; standalone messages are untouched
    with deployment.with_moves(deployment.settings.understanding.moves, off_in=result.chosen) as tuned:
        plan = tuned.plan("and when does it ship?", history=["Vela X3 warranty months"])
        assert plan.queries[0].text == "and when does it ship?"
        assert plan.step("follow_up").reason == "turned off for the follow_up slice ([understanding.off_in])"  # type: ignore[union-attr]
        assert "off_in" not in (tuned.plan("Vela X3 warranty months").step("spelling").reason or "")  # type: ignore[union-attr]


def test_with_few_cases_the_choice_is_written_only_when_its_lower_bound_clears_zero(deployment: QueryWise) -> None:
    cases = copies(2)  # 8 judged cases, under MIN_CASES
    assert len(cases) < MIN_CASES
    result = tune_moves(cases, deployment, NDCG, folds=2)
    assert result.cv_gain_low <= result.cv_gain <= result.cv_gain_high
    assert result.chosen == (result.best if result.cv_gain_low > 0 else {})
    assert bool(result.best and not result.chosen) == any(w.startswith("kept every move everywhere") for w in result.warnings)


def test_no_move_to_choose_between_is_a_clear_error(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> None:
    s = Settings(cache_dir=tmp_path / "c")
    s = s.model_copy(update={"understanding": s.understanding.model_copy(update={"moves": []})})
    build_index(shop, tmp_path / "ix", settings=s, embedder=hash_embedder).close()
    with Index.open(tmp_path / "ix", settings=s, embedder=hash_embedder) as ix, QueryWise(s, ix) as qw, pytest.raises(ValueError, match="no move"):
        tune_moves(copies(2), qw, NDCG, folds=2)


@pytest.mark.model
def test_the_cli_writes_the_per_slice_choice_into_a_copy_of_the_config(tmp_path: Path, shop: list[Chunk]) -> None:
    build_index(shop, tmp_path / "real", settings=Settings(cache_dir=tmp_path / "c")).close()  # the CLI embeds with the packaged model
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(c.model_dump_json(include={"id", "message", "history", "relevant"}) + "\n" for c in copies(2)), encoding="utf-8")
    source = tmp_path / "querywise.toml"
    source.write_text('# our deployment\ncache_dir = "c"\n', encoding="utf-8")
    target = tmp_path / "tuned.toml"
    got = CliRunner().invoke(cli.app, ["tune", str(cases), "-i", str(tmp_path / "real"), "-c", str(source), "--moves", "--folds", "2",
                                       "--write-config", str(target), "--json"])
    assert got.exit_code == 0, got.output
    result = json.loads(got.stdout)
    assert {g["move"] for g in result["gains"]} == set(result["moves"]) and result["n"] == 8
    tuned = load_settings(target)
    assert tuned.understanding.off_in == result["chosen"] and "# our deployment" in target.read_text(encoding="utf-8")
    assert "[understanding.off_in]" in got.stderr

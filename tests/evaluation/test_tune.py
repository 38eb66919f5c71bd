"""Tuning hybrid fusion on labelled queries: what it scores is what the engine then ranks, and
the config it writes is the one `eval --config` reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querywise import cli
from querywise.config import IndexSettings, Settings, load_settings
from querywise.corpus import Chunk
from querywise.evaluation.cases import Case
from querywise.evaluation.harness import Arm, run_arm
from querywise.evaluation.metrics import parse_metric
from querywise.evaluation.tune import MIN_CASES, Candidate, candidates, tune
from querywise.index import Index, build_index
from querywise.service import QueryWise

CASES = [
    Case(id="q1", message="Vela X3 warranty months", relevant={"x3-warranty": 1}),
    Case(id="q2", message="warranty on the pro with rain", relevant={"x3pro-warranty": 1}),
    Case(id="q3", message="how many hours do the buds play", relevant={"buds-battery": 1}),
    Case(id="q4", message="replacement ear cushions part number", relevant={"cushions": 1}),
    Case(id="q5", message="when does my order ship", relevant={"shipping": 1}),
    Case(id="q6", message="headphones warranty against defects", relevant={"x3-warranty": 1, "x3pro-warranty": 1}),
]
NDCG = parse_metric("ndcg@10")


@pytest.fixture
def built(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> Path:
    build_index(shop, tmp_path / "ix", settings=Settings(cache_dir=tmp_path / "c"), embedder=hash_embedder).close()
    return tmp_path / "ix"


def test_each_candidates_score_is_what_the_engine_gives_with_that_setting(built: Path, tmp_path: Path, hash_embedder: Any) -> None:
    base = Settings(cache_dir=tmp_path / "c")
    with Index.open(built, settings=base, embedder=hash_embedder) as ix, QueryWise(base, ix) as qw:
        result = tune(CASES, qw, NDCG, folds=3)
    assert result.n == len(CASES) and len(result.scores) == len(candidates())
    assert [s.score for s in result.scores] == sorted((s.score for s in result.scores), reverse=True)
    assert result.best == result.scores[0].candidate
    assert result.cv_score <= max(s.score for s in result.scores) + 1e-9
    for scored in result.scores:
        c = scored.candidate
        s = base.model_copy(update={"index": IndexSettings(fusion=c.fusion, dense_weight=c.dense_weight)})
        with Index.open(built, settings=s, embedder=hash_embedder) as ix, QueryWise(s, ix) as qw:
            run = run_arm(CASES, qw, Arm(name=c.label, mode=c.mode), [NDCG])
        engine = sum(r.scores["ndcg@10"] or 0.0 for r in run.cases) / len(CASES)
        assert scored.score == pytest.approx(engine, abs=1e-4), c.label


@pytest.mark.parametrize("copies", [1, 5])
def test_a_tuned_fusion_is_written_only_when_it_beat_the_default_on_held_out_cases(built: Path, tmp_path: Path, hash_embedder: Any, copies: int) -> None:
    cases = [c.model_copy(update={"id": f"{c.id}-{i}"}) for i in range(copies) for c in CASES]  # 6 or 30 judged cases
    s = Settings(cache_dir=tmp_path / "c")
    with Index.open(built, settings=s, embedder=hash_embedder) as ix, QueryWise(s, ix) as qw:
        result = tune(cases, qw, NDCG, folds=3)
    default = Candidate(mode="hybrid", fusion="rrf", dense_weight=0.5)
    assert result.cv_gain_low <= result.cv_gain <= result.cv_gain_high
    # under MIN_CASES the held-out gain must clear 0 at the 95% bound; from MIN_CASES on, on average
    earned = result.cv_gain_low > 0 if len(cases) < MIN_CASES else result.cv_gain > 0
    assert result.chosen == (result.best if earned else default)
    kept_default = result.best != default and not earned
    assert kept_default == any(w.startswith("kept the default") for w in result.warnings)


def test_too_few_cases_to_cross_validate_is_a_clear_error(built: Path, tmp_path: Path, hash_embedder: Any) -> None:
    s = Settings(cache_dir=tmp_path / "c")
    with Index.open(built, settings=s, embedder=hash_embedder) as ix, QueryWise(s, ix) as qw, pytest.raises(ValueError, match="too few"):
        tune(CASES[:2], qw, NDCG, folds=5)


@pytest.mark.model
def test_the_cli_writes_the_choice_into_a_copy_of_the_config(tmp_path: Path, shop: list[Chunk]) -> None:
    build_index(shop, tmp_path / "real", settings=Settings(cache_dir=tmp_path / "c")).close()  # the CLI embeds with the packaged model
    built = tmp_path / "real"
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(c.model_dump_json(include={"id", "message", "relevant"}) + "\n" for c in CASES), encoding="utf-8")
    (tmp_path / "deploy").mkdir()
    source = tmp_path / "deploy" / "querywise.toml"
    (tmp_path / "deploy" / "plans").mkdir()
    source.write_text('# our deployment\ncache_dir = "../c"\n\n[deployment]\nplan_log = "plans/plans.jsonl"  # kept\n', encoding="utf-8")
    target = tmp_path / "tuned" / "querywise.toml"
    target.parent.mkdir()
    result = CliRunner().invoke(cli.app, ["tune", str(cases), "-i", str(built), "-c", str(source), "--folds", "3", "--write-config", str(target)])
    assert result.exit_code == 0, result.output
    text = target.read_text(encoding="utf-8")
    assert "# our deployment" in text and "# kept" in text  # comments survive
    tuned, original = load_settings(target), load_settings(source)
    assert tuned.deployment.plan_log == original.deployment.plan_log and tuned.cache_dir == original.cache_dir  # paths still right
    assert tuned.index.fusion in ("rrf", "convex") and f"fusion = \"{tuned.index.fusion}\"" in text
    assert "wrote" in result.stderr and "--config" in result.stderr


def test_on_an_index_with_sentence_vectors_each_choice_written_ranks_as_scored(tmp_path: Path, shop: list[Chunk], passages: list[Chunk],
                                                                              hash_embedder: Any) -> None:
    """Every hybrid candidate also weighs the best-sentence list; the `[index]` keys written for a
    candidate make the engine's hybrid rank exactly as it was scored (a single mode too)."""
    from querywise.cli.tune import as_index_settings

    cases = [*CASES, Case(id="p1", message="does the warranty cover water", relevant={"vela": 1}),
             Case(id="p2", message="battery life with the case", relevant={"tide": 1}),
             Case(id="p3", message="is there a part number for the cable", relevant={"parts": 1})]
    on = Settings(cache_dir=tmp_path / "c", index=IndexSettings(sentence_vectors=True))
    build_index([*shop, *passages], tmp_path / "ix", settings=on, embedder=hash_embedder).close()
    with Index.open(tmp_path / "ix", settings=on, embedder=hash_embedder) as ix, QueryWise(on, ix) as qw:
        result = tune(cases, qw, NDCG, folds=3)
    assert len(result.scores) == len(candidates(sentences=True)) > len(candidates())
    shares = {s.candidate.sentence_share for s in result.scores if s.candidate.mode == "hybrid"}
    assert shares == {round(0.1 * i, 1) for i in range(11)}
    checked = [s for i, s in enumerate(result.scores) if i % 23 == 0 or s.candidate.mode != "hybrid"]
    for scored in checked:
        keys = as_index_settings(scored.candidate, sentences=True)
        s = on.model_copy(update={"index": IndexSettings(sentence_vectors=True, **keys)})  # type: ignore[arg-type]
        with Index.open(tmp_path / "ix", settings=s, embedder=hash_embedder) as ix, QueryWise(s, ix) as qw:
            run = run_arm(cases, qw, Arm(name=scored.label, mode="hybrid"), [NDCG])
        engine = sum(r.scores["ndcg@10"] or 0.0 for r in run.cases) / len(cases)
        assert scored.score == pytest.approx(engine, abs=1e-4), scored.label


def test_each_feedback_setting_scores_what_the_engine_gives_with_it(built: Path, tmp_path: Path, hash_embedder: Any) -> None:
    from querywise.evaluation.tune_feedback import FEEDBACK_GRID

    cases = [c.model_copy(update={"id": f"{c.id}-{i}"}) for i in range(5) for c in CASES]  # 30: the held-out gain must be above 0
    base = Settings(cache_dir=tmp_path / "c")
    with Index.open(built, settings=base, embedder=hash_embedder) as ix, QueryWise(base, ix) as qw:
        result = tune(cases, qw, NDCG, folds=3, feedback=True)
    fb = result.feedback
    assert fb is not None and set(fb.scores) == {f.label for f in FEEDBACK_GRID}
    assert fb.without == pytest.approx(next(s.score for s in result.scores if s.candidate == result.chosen), abs=1e-4)
    assert fb.chosen == (fb.best if fb.cv_gain > 0 else None)
    assert fb.cv_gain_low <= fb.cv_gain <= fb.cv_gain_high
    c = result.chosen
    for setting in FEEDBACK_GRID[:3]:
        s = base.model_copy(update={"index": IndexSettings(fusion=c.fusion, dense_weight=c.dense_weight, feedback_docs=setting.docs,
                                                           feedback_terms=setting.terms, feedback_weight=setting.weight)})
        with Index.open(built, settings=s, embedder=hash_embedder) as ix, QueryWise(s, ix) as qw:
            run = run_arm(CASES, qw, Arm(name=setting.label, mode=c.mode), [NDCG])
        engine = sum(r.scores["ndcg@10"] or 0.0 for r in run.cases) / len(CASES)
        assert fb.scores[setting.label] == pytest.approx(engine, abs=1e-4), setting.label


def test_without_feedback_asked_tune_measures_none(built: Path, tmp_path: Path, hash_embedder: Any) -> None:
    s = Settings(cache_dir=tmp_path / "c", index=IndexSettings(feedback_docs=3))  # a config with it on: tune's lists are without it
    with Index.open(built, settings=s, embedder=hash_embedder) as ix, QueryWise(s, ix) as qw:
        on = tune(CASES, qw, NDCG, folds=3)
    off = Settings(cache_dir=tmp_path / "c")
    with Index.open(built, settings=off, embedder=hash_embedder) as ix, QueryWise(off, ix) as qw:
        plain = tune(CASES, qw, NDCG, folds=3)
    assert on.feedback is None and [x.score for x in on.scores] == [x.score for x in plain.scores]


@pytest.mark.model
def test_the_cli_with_feedback_writes_the_feedback_it_chose(tmp_path: Path, shop: list[Chunk]) -> None:
    build_index(shop, tmp_path / "real", settings=Settings(cache_dir=tmp_path / "c")).close()
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(c.model_dump_json(include={"id", "message", "relevant"}) + "\n" for c in CASES), encoding="utf-8")
    source, target = tmp_path / "querywise.toml", tmp_path / "tuned.toml"
    source.write_text(f'cache_dir = "{tmp_path / "c"}"\n\n[index]\nfeedback_docs = 7\n', encoding="utf-8")
    result = CliRunner().invoke(cli.app, ["tune", str(cases), "-i", str(tmp_path / "real"), "-c", str(source), "--folds", "3",
                                          "--feedback", "--write-config", str(target)])
    assert result.exit_code == 0, result.output
    assert "feedback on" in result.stdout and "held-out gain" in result.stdout
    tuned = load_settings(target)
    # six cases: feedback is written only if it held out above none at the 95% bound; else it is off, not the 7 copied
    assert tuned.index.feedback_docs in {0, 3, 5, 10} and "feedback_docs = " in target.read_text(encoding="utf-8")

"""`querywise eval` and `querywise compare` through typer's runner, real library underneath."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querywise import cli
from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.evaluation.result import (
    CaseScores,
    EvalConfig,
    EvalResult,
    Latency,
    LLMUsage,
)
from querywise.index import build_index

runner = CliRunner()

CASES = [
    {"id": "w", "message": "Vela X3 Pro warranty", "relevant": ["x3pro-warranty"]},
    {"id": "b", "message": "Pico Buds hours per charge", "relevant": ["buds-battery"]},
    {"id": "f", "message": "how fast is it", "history": ["express shipping next day"], "relevant": ["shipping"], "slices": ["follow-up"]},
]


@pytest.fixture
def index_dir(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> Path:  # type: ignore[no-untyped-def]
    build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder).close()
    return tmp_path / "ix"


@pytest.fixture
def case_file(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    return path


def _eval(case_file: Path, index_dir: Path, *extra: str) -> tuple[int, str, str]:
    result = runner.invoke(cli.app, ["eval", str(case_file), "--index", str(index_dir), "--mode", "bm25", *extra])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.model  # the CLI opens the index folder with the real embedder
def test_eval_json_has_the_documented_shape(case_file: Path, index_dir: Path, tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    code, stdout, stderr = _eval(case_file, index_dir, "--metrics", "ndcg@10,recall@100", "--ablate", "follow_up", "--json", "--html", str(html))
    assert code == 0, stderr
    data = json.loads(stdout)
    assert data["version"] == 1 and EvalResult.model_validate(data).n == 3
    assert data["n"] == 3
    assert set(data["overall"]) == {"ndcg@10", "recall@100", "zero_result_rate"}
    assert data["slices"]["follow_up"]["recall@100"] == 1.0  # the follow-up move is on by default
    assert set(data["ablation"]["arms"]) == {"baseline", "+follow_up"}
    assert [c["id"] for c in data["cases"]] == ["w", "b", "f"]
    page = html.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "<svg" in page
    assert "<script" not in page and "http://" not in page and "https://" not in page  # standalone, no CDN


@pytest.mark.model  # the CLI opens the index folder with the real embedder
def test_eval_terminal_report(case_file: Path, index_dir: Path) -> None:
    code, stdout, _ = _eval(case_file, index_dir, "--metrics", "mrr")
    assert code == 0 and "Retrieval per slice" in stdout and "follow_up" in stdout


def test_eval_errors_are_clean(case_file: Path, index_dir: Path, tmp_path: Path) -> None:
    code, _, stderr = _eval(case_file, index_dir, "--metrics", "map@10")
    assert code == 2 and "unknown metric 'map@10'" in stderr
    code, _, stderr = _eval(case_file, index_dir, "--ablate", "telepathy")
    assert code == 2 and "unknown ablation 'telepathy'" in stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"message": "ok"}\n{"message": 3}\n', encoding="utf-8")
    code, _, stderr = _eval(bad, index_dir)
    assert code == 2 and f"{bad}:2: missing 'message'" in stderr


@pytest.mark.model  # the CLI opens the index folder with the real embedder
def test_eval_against_the_wrong_index_is_an_error_and_missing_ids_a_warning(index_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps({"id": f"q{i}", "message": "warranty", "relevant": [f"MED-{i}"]}) + "\n" for i in range(4)), encoding="utf-8")
    code, stdout, stderr = _eval(other, index_dir, "--json")
    assert code == 2 and stdout == ""
    assert f"error: none of the 4 judged ids is in the index {index_dir}" in stderr and "wrong index?" in stderr
    some = tmp_path / "some.jsonl"
    some.write_text("".join(json.dumps(c) + "\n" for c in [*CASES, {"id": "x", "message": "warranty", "relevant": ["MED-1"]}]), encoding="utf-8")
    code, stdout, stderr = _eval(some, index_dir, "--json")
    assert code == 0 and "warning: 1 of 4 judged ids are not in the index" in stderr
    assert json.loads(stdout)["warnings"][0].startswith("1 of 4 judged ids")


def _run(path: Path, scores: list[float], slices: list[str]) -> Path:
    """A saved run with these per-case mrr scores (only the cases matter to `compare`)."""
    result = EvalResult(
        n=len(scores), overall={"mrr": sum(scores) / len(scores)}, slices={}, slice_sizes={},
        config=EvalConfig(source="test", mode="bm25", moves=[], metrics=["mrr"]),
        latency_ms=Latency(p50=1.0, p95=2.0), llm=LLMUsage(calls_per_1000=None, cost_per_1000_usd=None), components=None,
        cases=[CaseScores(id=str(i), slices=[s], scores={"mrr": v}) for i, (v, s) in enumerate(zip(scores, slices, strict=True))],
    )  # fmt: skip
    path.write_text(result.model_dump_json())
    return path


def test_compare_gates_on_a_significant_regression_in_any_slice(tmp_path: Path) -> None:
    slices = ["prose"] * 30 + ["identifier"] * 30
    a = _run(tmp_path / "a.json", [1.0] * 60, slices)
    same = _run(tmp_path / "same.json", [1.0] * 60, slices)
    worse = _run(tmp_path / "b.json", [1.0] * 30 + [1.0, 0.0] * 15, slices)  # identifier drops by half
    ok = runner.invoke(cli.app, ["compare", str(a), str(same)])
    assert ok.exit_code == 0 and "no significant regression" in ok.stdout
    bad = runner.invoke(cli.app, ["compare", str(a), str(worse), "--json"])
    assert bad.exit_code == 1
    data = json.loads(bad.stdout)
    assert data["regressed"] and {(r["slice"], r["metric"]) for r in data["regressions"]} == {("identifier", "mrr"), ("all", "mrr")}


def test_compare_small_slices_do_not_gate_and_bad_files_are_named(tmp_path: Path) -> None:
    a = _run(tmp_path / "a.json", [1.0] * 8, ["tiny"] * 8)
    b = _run(tmp_path / "b.json", [0.0] * 8, ["tiny"] * 8)
    assert runner.invoke(cli.app, ["compare", str(a), str(b)]).exit_code == 0  # 8 < --min-cases 10
    assert runner.invoke(cli.app, ["compare", str(a), str(b), "--min-cases", "8"]).exit_code == 1
    # five cases all worse is still not significant: 2 of the 32 sign flips are as extreme (p = 0.06)
    a5, b5 = _run(tmp_path / "a5.json", [1.0] * 5, ["t"] * 5), _run(tmp_path / "b5.json", [0.0] * 5, ["t"] * 5)
    assert runner.invoke(cli.app, ["compare", str(a5), str(b5), "--min-cases", "1"]).exit_code == 0
    junk = tmp_path / "junk.json"
    junk.write_text('{"n": 1}')
    result = runner.invoke(cli.app, ["compare", str(a), str(junk)])
    assert result.exit_code == 2 and f"{junk}: not a saved `querywise eval --json` run" in result.stderr


def test_compare_names_a_run_of_another_result_version(tmp_path: Path) -> None:
    a = _run(tmp_path / "a.json", [1.0] * 8, ["t"] * 8)
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({**json.loads(a.read_text()), "version": 2}))
    result = runner.invoke(cli.app, ["compare", str(a), str(newer)])
    assert result.exit_code == 2
    assert f"{newer}: not a saved `querywise eval --json` run at version" in result.stderr and "reads version 1" in result.stderr
    older = tmp_path / "older.json"  # an older shape: no config, latency, llm, components, case slices
    older.write_text(json.dumps({"n": 1, "overall": {"mrr": 1.0}, "cases": [{"id": "0", "scores": {"mrr": 1.0}}]}))
    result = runner.invoke(cli.app, ["compare", str(older), str(a)])
    assert result.exit_code == 2 and f"{older}: not a saved `querywise eval --json` run at " in result.stderr
    unversioned = tmp_path / "unversioned.json"  # written before `version` existed, same shape: version 1
    unversioned.write_text(json.dumps({k: v for k, v in json.loads(a.read_text()).items() if k != "version"}))
    assert runner.invoke(cli.app, ["compare", str(unversioned), str(a)]).exit_code == 0


@pytest.mark.model  # the CLI opens the index folder with the real embedder
def test_eval_reads_a_beir_folder(tmp_path: Path, hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    from querywise.evaluation.cases import load_beir

    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": "d1", "title": "Mitosis", "text": "Cells divide by mitosis."}, {"_id": "d2", "title": "Folding", "text": "Proteins fold."}]
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "how do cells divide"}) + "\n")
    (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    chunks, _ = load_beir(root, split="dev")
    build_index(chunks, tmp_path / "ix", settings=settings, embedder=hash_embedder).close()
    result = runner.invoke(cli.app, ["eval", str(root), "--split", "dev", "--index", str(tmp_path / "ix"), "--mode", "bm25", "--metrics", "mrr", "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["n"] == 1 and data["overall"]["mrr"] == 1.0 and data["cases"][0]["id"] == "q1"

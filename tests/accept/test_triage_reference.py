"""The triage report reproduces the worked figures of ../shared/reference/triage.json from a
project-written sample whose 60 failures are sorted by the real locator, probes and detectors."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querywise import cli
from querywise.index import build_index

TRIAGE_REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "triage.json"
_SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "triage" / "reference_sample.py"


def _sample_module() -> Any:
    spec = importlib.util.spec_from_file_location("triage_reference_sample", _SAMPLE)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def ref() -> dict[str, Any]:
    if not TRIAGE_REFERENCE.exists():
        pytest.skip(f"{TRIAGE_REFERENCE} not found")
    return json.loads(TRIAGE_REFERENCE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> dict[str, Any]:
    sample = _sample_module().build_reference_sample()
    root = tmp_path_factory.mktemp("triage")
    build_index(sample.chunks, root / "ix", embedder=embedder).close()
    for name, rows in (("failures.jsonl", sample.failures), ("sources.jsonl", sample.sources)):
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return {"root": root, "expected": sample.expected}


def _run(files: dict[str, Any], ref: dict[str, Any], *extra: str) -> dict[str, Any]:
    root = files["root"]
    pop = ref["population"]
    result = CliRunner().invoke(cli.app, [
        "triage", str(root / "failures.jsonl"), "--index", str(root / "ix"), "--sources", str(root / "sources.jsonl"),
        "--eval-total", str(pop["eval_questions"]), "--acceptable", str(pop["acceptable_rate"]),
        "--k", "50", "--mode", "bm25", "--json", *extra,
    ])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_each_case_lands_in_the_bucket_it_was_built_for(files: dict[str, Any], ref: dict[str, Any]) -> None:
    report = _run(files, ref)
    got = {c["id"]: c["bucket"] for c in report["cases"]}
    wrong = {i: (want, got[i]) for i, want in files["expected"].items() if got[i] != want}
    assert not wrong, wrong
    assert all(c["evidence"]["label_source"] in (None, "suggested") for c in report["cases"])  # no human labels


def test_report_reproduces_the_reference_figures(files: dict[str, Any], ref: dict[str, Any]) -> None:
    report = _run(files, ref)
    part, exp = ref["sample_partition"], ref["expected_report"]
    b = report["buckets"]
    assert set(report) == {"sample", "buckets", "shares", "se", "points", "part_shares", "part_points", "failing_whole", "reachable_share",
                           "reachable_points", "unreachable_points", "ceiling_points", "expected_band", "cases",
                           "exact", "intervals", "ranking_cues", "difference", "warnings", "probes_not_built"}
    assert sum(report["shares"].values()) == 100 and sum(report["points"].values()) == report["failing_whole"]
    assert report["part_points"]["reachable"] == report["reachable_points"]
    assert report["sample"]["n"] == ref["population"]["sample"] == sum(b.values()) == len(report["cases"])
    assert report["sample"]["population"]["failures"] == ref["population"]["failures"]
    unreach = part["unreachable_by_probe"]
    assert (b["absent"], b["extraction_noise"], b["chunk_boundary"], b["degenerate_embedding"]) == (
        unreach["absent_from_index"], unreach["extraction_noise"], unreach["chunk_boundary_damage"], unreach["degenerate_embedding"])
    assert b["ranking"] == part["ranking"]["count"] and b["generation"] == part["generation"]["count"]
    query = sum(b[k] for k in ("vocabulary", "compound", "referent", "filler", "unlabelled_query_defect"))
    assert query == part["query_defect"]["count"] and b["filler"] == part["query_defect"]["filler"]

    assert report["reachable_share"] == pytest.approx(exp["reachable_share_of_failures"])
    assert report["reachable_points"] == exp["reachable_points"] == report["ceiling_points"] == exp["ceiling_points"]
    assert report["unreachable_points"] == exp["unreachable_points"]
    assert report["reachable_points"] + report["unreachable_points"] == round(100 * (1 - ref["population"]["acceptable_rate"]))
    assert report["expected_band"] == [6, 8]  # "quoted as 6 to 8 points"
    filler_share = b["filler"] / report["sample"]["n"]
    assert filler_share == pytest.approx(0.05)
    assert filler_share * report["sample"]["failing_points"] == pytest.approx(1.9)  # "about 2% of traffic"

    # "about 5 points at p = 0.2 and 6.4 at p = 0.45" (one binomial SE, n = 60)
    assert report["se"]["ranking"] == pytest.approx(math.sqrt(13 / 60 * 47 / 60 / 60), abs=1e-4)
    assert 0.05 <= report["se"]["ranking"] <= 0.055
    assert report["se"]["filler"] == pytest.approx(0.0281, abs=1e-4)
    assert "no finite-population correction" in report["sample"]["se_method"]


def test_finite_population_correction_is_an_option(files: dict[str, Any], ref: dict[str, Any]) -> None:
    plain, corrected = _run(files, ref), _run(files, ref, "--fpc")
    factor = math.sqrt((152 - 60) / (152 - 1))
    assert factor == pytest.approx(0.78, abs=0.005)  # the reference's factor
    for bucket, se in plain["se"].items():
        assert corrected["se"][bucket] == pytest.approx(se * factor, abs=1e-4)
    assert "finite-population factor" in corrected["sample"]["se_method"]


def test_terminal_and_html_reports(files: dict[str, Any], ref: dict[str, Any]) -> None:
    root = files["root"]
    html = root / "triage.html"
    result = CliRunner().invoke(cli.app, [
        "triage", str(root / "failures.jsonl"), "--index", str(root / "ix"), "--sources", str(root / "sources.jsonl"),
        "--eval-total", "400", "--acceptable", "0.62", "--mode", "bm25", "--html", str(html),
    ])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "reachable points 17 + unreachable points 21 = 38" in text and "6–8 points" in text
    page = html.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "<svg" in page and "<script" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")

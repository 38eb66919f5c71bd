"""querywise.evaluation.router: figures without a denominator, the operating point, and `auto`
reporting both candidates and why it chose (on synthetic clusters behind a table embedder)."""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from querywise import cli
from querywise.evaluation.router import RouterReport, evaluate_router, load_labelled, score_decisions
from querywise.evaluation.router_html import router_report_html
from querywise.files import InputError
from querywise.understand.routing.calibration import OperatingPoint
from querywise.understand.routing.decision import Decision

Rows = list[tuple[str, str]]


class TableEmbedder:
    """Looks each text up in a table of vectors: the clusters below, behind the Embedder protocol."""

    model_id = "table/test"

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table
        self.dim = len(next(iter(table.values())))

    def embed(self, texts: Sequence[str], *, on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        out = np.stack([self.table[t] for t in texts]).astype(np.float32)
        if on_progress:
            on_progress(len(texts))
        return out


def clusters(split: str, seed: int, n_per: int, noise: float, n_oos: int, table: dict[str, np.ndarray]) -> Rows:
    """Three overlapping routes around fixed directions plus out-of-scope points elsewhere."""
    dim = 16
    centres = np.eye(dim)[:3] + 0.35 * np.eye(dim)[[1, 2, 0]]
    oos = np.eye(dim)[3:6].sum(0) / math.sqrt(3) + np.eye(dim)[:3].sum(0) * 0.15
    rng = np.random.default_rng(seed)
    rows = []
    for label, centre, n in [("a", centres[0], n_per), ("b", centres[1], n_per), ("c", centres[2], n_per), ("oos", oos, n_oos)]:
        for i in range(n):
            text = f"{split} {label} {i}"
            table[text] = centre + noise * rng.standard_normal(dim)
            rows.append((text, label))
    return rows


@pytest.fixture
def data() -> tuple[TableEmbedder, Rows, Rows, Rows]:
    table: dict[str, np.ndarray] = {}
    train = clusters("train", 1, 30, 0.35, 10, table)
    val = clusters("val", 2, 60, 0.35, 20, table)
    test = clusters("test", 3, 60, 0.35, 0, table)  # no out-of-scope message to test on
    return TableEmbedder(table), train, val, test


# ------------------------------------------------------------------------------------------------
# n/a: a figure without a denominator is None, never 0%
# ------------------------------------------------------------------------------------------------


def test_figures_without_a_denominator_are_none() -> None:
    deferred = [Decision(None, "unsure", 0.01, "a", "b"), Decision(None, "unsure", 0.02, "b", "a")]
    s = score_decisions(deferred, ["a", "b"])
    assert s["oos_recall"] is None  # no out-of-scope message
    assert s["oos_precision"] is None  # nothing decided out of scope
    assert s["answered_accuracy"] is None  # nothing answered
    assert s["in_scope_accuracy"] == 0.0 and s["deferred_share"] == 1.0  # these have denominators
    routed = [Decision("a", "route", 0.3, "a", "b"), Decision("a", "route", 0.3, "a", "b")]
    s = score_decisions(routed, ["a", "b"])
    assert s["per_route"]["b"].precision is None and s["per_route"]["b"].recall == 0.0  # b never predicted
    s = score_decisions([Decision("a", "route", 0.3, "a", "b")], ["oos"])
    assert s["in_scope_accuracy"] is None and s["per_route"]["a"].recall is None  # no in-scope message, a has no support
    assert s["oos_recall"] == 0.0


def test_a_test_set_without_out_of_scope_messages_reports_oos_figures_as_none(data: tuple[TableEmbedder, Rows, Rows, Rows]) -> None:
    embedder, train, val, test = data
    report = evaluate_router(train, test, val=val, embedder=embedder, classifier="centroid")
    assert report.n_oos == 0 and report.oos_recall is None
    assert report.in_scope_accuracy is not None and report.in_scope_accuracy > 0.5
    html = router_report_html(report)
    assert '<b>n/a</b>OOS recall' in html and "0.0%</b>OOS recall" not in html


# ------------------------------------------------------------------------------------------------
# auto: both candidates, their val figures, the rule and the reason
# ------------------------------------------------------------------------------------------------


def test_auto_reports_both_candidates_and_why_it_chose(data: tuple[TableEmbedder, Rows, Rows, Rows]) -> None:
    embedder, train, val, test = data
    point = OperatingPoint(min_answered=0.9, max_deferred=0.2)
    report = evaluate_router(train, test, val=val, embedder=embedder, classifier="auto", point=point)
    assert [c.classifier for c in report.candidates] == ["centroid", "trained"]
    for c in report.candidates:
        assert c.val is not None and c.val.n == len(val) and c.val.n_oos == 20 and c.meets_operating_point is not None
        assert c.val.deferred_share is not None and c.val.deferred_share <= 0.2 + 1e-9
    chosen = next(c for c in report.candidates if c.classifier == report.classifier)
    assert (report.min_margin, report.min_in_scope) == (chosen.min_margin, chosen.min_in_scope)
    assert report.choice.startswith(f"auto chose {report.classifier}: ")
    other = next(c for c in report.candidates if c.classifier != report.classifier)
    assert other.classifier in report.choice  # the reason names the candidate it passed over
    # the rule: one that meets the point on val wins over one that does not
    assert chosen.meets_operating_point or not other.meets_operating_point
    if chosen.meets_operating_point and other.meets_operating_point:
        assert (chosen.val_objective or 0) >= (other.val_objective or 0)
    assert report.operating_point.description == "answered accuracy >= 90.0% (90.5% on val), deferred <= 20.0%"
    assert RouterReport.model_validate_json(report.model_dump_json()) == report  # the JSON carries it all


def test_an_operating_point_out_of_reach_is_a_warning_in_the_report(data: tuple[TableEmbedder, Rows, Rows, Rows]) -> None:
    embedder, train, val, test = data
    report = evaluate_router(train, test, val=val, embedder=embedder, classifier="centroid", point=OperatingPoint(min_answered=1.0, max_deferred=0.01))
    assert report.candidates[0].meets_operating_point is False
    assert len(report.warnings) == 1 and report.warnings[0].startswith("centroid: operating point not met on val: ")
    assert "below the 100.0% asked of val" in report.warnings[0]
    assert report.deferred_share is not None and report.candidates[0].val is not None and report.candidates[0].val.deferred_share <= 0.01 + 1e-9
    assert "warning: centroid: operating point not met" in router_report_html(report)


def test_without_validation_data_nothing_is_chosen_on_data_and_it_says_so(data: tuple[TableEmbedder, Rows, Rows, Rows]) -> None:
    embedder, train, _, test = data
    report = evaluate_router(train, test, embedder=embedder, classifier="auto")
    assert report.classifier == "trained"  # 30 examples a route: as the deployed router decides
    assert report.choice.startswith("no validation data: auto chose trained by examples per route (fewest 30")
    assert report.candidates[0].val is None and report.min_in_scope is None and report.min_margin == 0.0
    assert any("operating point not checked" in w for w in report.warnings)


def test_evaluate_router_reports_each_embedding_phase(data: tuple[TableEmbedder, Rows, Rows, Rows]) -> None:
    embedder, train, val, test = data
    seen: list[tuple[str, int | None, int]] = []

    def progress(phase: str, total: int | None) -> Callable[[int], None]:
        seen.append((phase, total, 0))

        def advance(n: int) -> None:
            name, t, done = seen[-1]
            seen[-1] = (name, t, done + n)

        return advance

    evaluate_router(train, test, val=val, embedder=embedder, classifier="centroid", progress=progress)
    assert seen == [("embedding train", 100, 100), ("embedding val", 200, 200), ("embedding test", 180, 180)]


# ------------------------------------------------------------------------------------------------
# `querywise router-eval`: the operating point from the options or the config, n/a, the choice
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def files(data: tuple[TableEmbedder, Rows, Rows, Rows], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    import querywise.embed

    embedder, train, val, test = data
    monkeypatch.setattr(querywise.embed, "embedder_for", lambda settings, **_: embedder)
    paths = {}
    for name, rows in (("train", train), ("val", val), ("test", test)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"text": t, "label": lab}) + "\n" for t, lab in rows), encoding="utf-8")
        paths[name] = str(path)
    return paths


def _router_eval(files: dict[str, str], *extra: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli.app, ["router-eval", "--train", files["train"], "--val", files["val"], "--test", files["test"], *extra])
    return result.exit_code, result.stdout, result.stderr


def test_router_eval_prints_the_operating_point_both_candidates_the_reason_and_na(files: dict[str, str]) -> None:
    code, stdout, stderr = _router_eval(files, "--min-answered", "0.9", "--max-deferred", "0.2")
    assert code == 0, stderr
    assert "operating point: answered accuracy >= 90.0% (90.5% on val), deferred <= 20.0%" in stdout
    table = stdout.split("on --val")[1].split("auto chose")[0]
    assert "centroid" in table and "trained" in table and "meets" in table
    reason = " ".join(stdout.split("auto chose")[1].split("test messages")[0].split())
    assert reason.startswith("centroid: centroid meets the operating point on val with the best objective, 0.5 x in-scope accuracy + 0.5 x OOS recall")
    assert "trained also meets it but has a lower objective" in reason
    header, row = [line for line in stdout.split("test messages")[1].splitlines() if "│" in line or "┃" in line][-2:]
    cells = dict(zip([h.strip() for h in header.split("┃")[1:-1]], [c.strip() for c in row.split("│")[1:-1]], strict=True))
    assert cells["OOS recall"] == "n/a"  # no out-of-scope test message: no denominator, no 0%
    assert cells["OOS precision"] == "0.0%"  # messages were decided out of scope, none rightly: a real 0%
    assert 'for the config: [routing] classifier = "centroid", min_margin = ' in stdout


def test_router_eval_reads_the_operating_point_from_the_config_and_warns_when_out_of_reach(files: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "querywise.toml"
    config.write_text("[routing]\nmin_answered = 1.0\nmax_deferred = 0.01\n", encoding="utf-8")
    code, stdout, stderr = _router_eval(files, "--config", str(config), "--classifier", "trained", "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["operating_point"] == {"min_answered": 1.0, "max_deferred": 0.01, "headroom": 0.005, "min_oos_recall": 0.5,
                                         "description": "answered accuracy >= 100.0% (100.0% on val), deferred <= 1.0%, OOS recall >= 50%"}
    assert report["oos_recall"] is None and report["candidates"][0]["meets_operating_point"] is False
    assert report["candidates"][0]["tradeoffs"][0]["what"].startswith("chosen: the highest answered accuracy within the deferral budget")
    code, stdout, stderr = _router_eval(files, "--config", str(config), "--classifier", "trained")
    assert "warning: trained: operating point not met on val" in " ".join(stderr.split())
    # an option beats the config
    code, stdout, _ = _router_eval(files, "--config", str(config), "--classifier", "trained", "--min-answered", "0.5", "--max-deferred", "0.3")
    assert "answered accuracy >= 50.0% (50.5% on val), deferred <= 30.0%" in stdout


def test_router_eval_refuses_an_operating_point_outside_0_1(files: dict[str, str]) -> None:
    code, _, stderr = _router_eval(files, "--min-answered", "97")
    assert code == 2 and "--min-answered" in stderr


def test_labelled_rows_read_from_csv_as_from_jsonl(tmp_path: Path) -> None:
    rows = [("Where is my parcel, \"order 42\"?", "orders"), ("reset my password", "account")]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps({"text": t, "label": lab}) + "\n" for t, lab in rows), encoding="utf-8")
    csv_text = "label,text,note\r\n" + "".join(f'{lab},"{t.replace(chr(34), chr(34) * 2)}",x\r\n' for t, lab in rows)
    (tmp_path / "r.csv").write_text(csv_text, encoding="utf-8")
    (tmp_path / "r.csv.gz").write_bytes(gzip.compress(csv_text.encode()))
    assert load_labelled(str(tmp_path / "r.csv")) == load_labelled(str(tmp_path / "r.jsonl")) == rows
    assert load_labelled(str(tmp_path / "r.csv.gz")) == rows
    (tmp_path / "bad.csv").write_text("text,intent\nhello,greet\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.csv:1: header must name a 'text' and a 'label' column"):
        load_labelled(str(tmp_path / "bad.csv"))

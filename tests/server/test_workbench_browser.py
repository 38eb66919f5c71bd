"""The workbench in a real browser: Playwright driving Debian's Chromium (`apt-get install
chromium`; `.ci/run` installs it) against `querywise serve`'s app on the bundled demo.

A person signs in, starts a triage job on the demo's failures, opens a query-defect case, labels
it with the keyboard, sees the bucket table move, reloads and finds the label kept; opens two
eval runs and compares them; and in the plan inspector sees the demo's second turn rewritten.
With QUERYWISE_SCREENSHOTS=1 the screenshots go to docs/workbench/ (the README links them).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querywise import cli
from querywise.config import load_settings
from querywise.demo import demo_file
from querywise.server import running
from querywise.server.run import build_app
from querywise.triage import load_labels
from querywise.triage.buckets import QUERY_BUCKETS

pytestmark = pytest.mark.model
CHROMIUM = os.environ.get("QUERYWISE_CHROMIUM", "/usr/bin/chromium")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "workbench"
# Chromium as the machine allows it: no sandbox (root in a container), no network of its own.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync"]


def _cli(*args: str | Path) -> str:
    result = CliRunner().invoke(cli.app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The demo's index, its eval failures (what `eval --failures` writes) and two saved runs."""
    work = tmp_path_factory.mktemp("workbench")
    config = demo_file("querywise.toml")
    _cli("index", demo_file("helpcentre.jsonl"), "-i", work / "ix", "-c", config)
    _cli("eval", demo_file("cases.jsonl"), "-i", work / "ix", "-c", config, "--session", "market=eu", "--failures", work / "failures.jsonl")
    for name, extra in (("with-moves", ()), ("bm25", ("--mode", "bm25"))):
        (work / f"{name}.json").write_text(_cli("eval", demo_file("cases.jsonl"), "-i", work / "ix", "-c", config, "--session", "market=eu",
                                                "--json", *extra), encoding="utf-8")
    return {"config": config, "index": work / "ix", "failures": work / "failures.jsonl", "with-moves": work / "with-moves.json",
            "bm25": work / "bm25.json", "work": work}


@pytest.fixture
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def url(demo: dict[str, Path], tmp_path: Path, jwt_secret: str) -> Iterator[str]:
    settings = load_settings(demo["config"])
    settings = settings.model_copy(update={"server": settings.server.model_copy(update={"labels_file": tmp_path / "labels.jsonl",
                                                                                      "rate_limit": None})})
    app = build_app(settings, demo["index"])
    with running(app) as base:
        yield base


def _shot(page: Any, name: str, tmp_path: Path) -> None:
    folder = DOCS if os.environ.get("QUERYWISE_SCREENSHOTS") == "1" else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def test_a_person_triages_the_demo_labels_a_case_and_the_label_is_kept(browser: Any, url: str, demo: dict[str, Path], tmp_path: Path,
                                                                       token: Callable[..., str]) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{url}/triage")
    assert "/ui/signin" in page.url  # not signed in: to the form, and back after
    page.fill("#token", token(market="eu", sub="ann", scope="querywise:jobs"))
    page.click("#signin button[type=submit]")
    page.wait_for_url(f"{url}/triage")

    page.set_input_files("#failures", str(demo["failures"]))
    page.fill("#k", "20")
    page.fill("#context_k", "5")
    page.click("#start-triage button[type=submit]")
    page.wait_for_url(f"{url}/triage/triage-*")
    page.wait_for_selector("text=Where the failures are repaired", timeout=180_000)
    _shot(page, "triage", tmp_path)
    job = page.url.rsplit("/", 1)[-1]
    report = page.context.request.get(f"{url}/v1/jobs/{job}").json()["result"]
    defect = next(c for c in report["cases"] if c["bucket"] in QUERY_BUCKETS)  # the demo has one the query layer could reach
    was = defect["bucket"]
    to = "referent" if was != "referent" else "compound"

    def count(bucket: str) -> int:
        return int(page.inner_text(f"#buckets tr[data-bucket={bucket}] td.count"))

    before = {was: count(was), to: count(to)}
    page.click(f"#buckets tr[data-bucket={was}] a")  # the bucket's cases
    page.click(f"table.cases a:text-is('{defect['id']}')")
    page.wait_for_selector("#label-form")
    assert defect["question"] in page.inner_text("h1")
    page.keyboard.press(str(["vocabulary", "compound", "referent", "filler"].index(to) + 1))  # 1-4 pick the kind
    page.fill("#note", "the product was named two turns back")
    page.locator("body").click(position={"x": 5, "y": 5})  # out of the note field, so the key below is a shortcut
    page.keyboard.press("s")
    page.wait_for_selector(f"#label-status:text('saved ({to})')")
    assert page.inner_text("#case-bucket") == to
    _shot(page, "case", tmp_path)

    page.click(".crumbs a")
    page.wait_for_selector("#buckets")
    assert (count(was), count(to)) == (before[was] - 1, before[to] + 1)
    page.reload()
    assert (count(was), count(to)) == (before[was] - 1, before[to] + 1)  # saved, not held by the page
    assert "No case in this bucket" in page.inner_text("table.cases") or defect["id"] not in page.inner_text("table.cases")
    page.click(f"#buckets tr[data-bucket={to}] a")  # the case is in its new bucket, the person's word beside the detectors'
    row = page.inner_text(f"table.cases tr:has(a:text-is('{defect['id']}'))")
    assert to in row and was in row and "the product was named two turns back" in row
    assert load_labels(tmp_path / "labels.jsonl") == {defect["id"]: to}
    page.goto(f"{url}/triage/{job}/case/{defect['id']}")
    assert page.is_checked(f"input[name=label][value={to}]")


def test_two_eval_runs_are_shown_and_compared(browser: Any, url: str, demo: dict[str, Path], tmp_path: Path, token: Callable[..., str]) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{url}/ui/signin?next=/eval")
    page.fill("#token", token(market="eu", sub="ann", scope="querywise:jobs"))
    page.click("#signin button[type=submit]")
    page.wait_for_url(f"{url}/eval")
    for name in ("bm25", "with-moves"):
        page.goto(f"{url}/eval")
        page.set_input_files("#run-file", str(demo[name]))
        page.click("#open-run button[type=submit]")
        page.wait_for_selector("text=Slices")
    run = json.loads(demo["with-moves"].read_text(encoding="utf-8"))
    assert f"{run['n']} cases" in page.inner_text("main")
    page.click("form[action^='/eval/'] button")
    page.wait_for_selector("text=cases in both")
    text = page.inner_text("main")
    # hybrid with the moves against BM25 alone: better overall (ndcg@10 +0.05, p < 0.01), worse nowhere
    assert "this run minus" in text and "No slice regressed." in text
    assert page.locator("table.deltas tr.better").count() >= 1 and page.locator("table.deltas tr.worse").count() == 0
    _shot(page, "eval", tmp_path)


def test_the_plan_inspector_shows_the_follow_up_rewrite_of_the_demos_second_turn(browser: Any, url: str, tmp_path: Path,
                                                                                  token: Callable[..., str]) -> None:
    turns = [json.loads(line)["message"] for line in demo_file("conversation.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{url}/ui/signin?next=/plan")
    page.fill("#token", token(market="eu", sub="ann"))  # no jobs grant needed here
    page.click("#signin button[type=submit]")
    page.wait_for_url(f"{url}/plan")
    assert "market=eu" in page.inner_text("main")
    page.fill("#history", turns[0])
    page.fill("#message", turns[1])
    page.click("#inspect button[type=submit]")
    page.wait_for_selector("#plan-out:not([hidden])")
    queries = page.inner_text("#plan-queries")
    # "And the Pro?" asks the previous question of the Pro: "How long is the warranty on the Halden Solace 7 Pro?"
    assert "standalone" in queries and turns[0].rstrip("?") + " Pro?" in queries
    assert "follow_up" in page.inner_text("#plan-trace") and "markets" in page.inner_text("#plan-filters")
    assert page.locator("#plan-hits tr").count() > 1
    _shot(page, "plan", tmp_path)

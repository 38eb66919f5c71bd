"""`ask` and `eval` with --retriever: the demo index served over HTTP on 127.0.0.1 answers as the index does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from http_endpoint import Endpoint
from typer.testing import CliRunner

from querywise import cli
from querywise.config import load_settings
from querywise.demo import demo_corpus, demo_file
from querywise.index import Index, build_index

runner = CliRunner()
CONFIG = str(demo_file("querywise.toml"))


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Endpoint]]:
    root = tmp_path_factory.mktemp("demo")
    settings = load_settings(demo_file("querywise.toml")).model_copy(update={"cache_dir": root / "cache"})
    build_index(demo_corpus(), root / "ix", settings=settings).close()
    with Index.open(root / "ix", settings=settings) as ix:
        endpoint = Endpoint(ix)
        yield root / "ix", endpoint
        endpoint.server.shutdown()
        endpoint.server.server_close()


@pytest.mark.model
def test_ask_through_the_http_retriever_finds_what_the_index_finds(demo_index: tuple[Path, Endpoint]) -> None:
    ix, endpoint = demo_index
    args = ["ask", "does the Halden Solace 7 Pro cover water damage?", "-c", CONFIG, "--session", "market=eu", "--json"]
    local = runner.invoke(cli.app, [*args, "-i", str(ix)])
    remote = runner.invoke(cli.app, [*args, "-i", str(ix), "--retriever", endpoint.url])
    assert local.exit_code == 0 and remote.exit_code == 0, (local.output, remote.output)
    assert [h["id"] for h in json.loads(remote.stdout)["hits"]] == [h["id"] for h in json.loads(local.stdout)["hits"]]
    step = next(s for s in json.loads(remote.stdout)["plan"]["trace"] if s["move"] == "execute")
    assert step["details"]["retriever"] == f"HTTP retriever {endpoint.url}"
    alone = runner.invoke(cli.app, [*args, "--retriever", endpoint.url])  # no index: no spelling vocabulary, same search
    assert alone.exit_code == 0, alone.output


@pytest.mark.model
def test_eval_through_the_http_retriever_scores_what_the_index_scores(demo_index: tuple[Path, Endpoint], tmp_path: Path) -> None:
    ix, endpoint = demo_index
    cases = tmp_path / "cases.jsonl"
    lines = demo_file("eval_cases.jsonl").read_text(encoding="utf-8").splitlines()
    cases.write_text("\n".join(line for line in lines if '"exact"' not in line and "identifier" not in line) + "\n", encoding="utf-8")
    args = ["eval", str(cases), "-c", CONFIG, "-i", str(ix), "--session", "market=eu", "--no-access-probe", "--json", "--metrics", "ndcg@10,recall@5"]
    local, remote = runner.invoke(cli.app, args), runner.invoke(cli.app, [*args, "--retriever", endpoint.url])
    assert local.exit_code == 0 and remote.exit_code == 0, (local.output, remote.output)
    mine, theirs = json.loads(local.stdout), json.loads(remote.stdout)
    assert theirs["n"] == mine["n"] > 20
    assert theirs["cases"] == mine["cases"] and theirs["overall"] == mine["overall"]  # per case, every score the same


def test_no_index_and_no_retriever_or_a_bad_spec_is_a_clear_error() -> None:
    result = runner.invoke(cli.app, ["ask", "warranty?", "-c", CONFIG])
    assert result.exit_code == 2 and "give --index DIR, or another retriever" in result.stderr
    result = runner.invoke(cli.app, ["ask", "warranty?", "-c", CONFIG, "--retriever", "ftp://example"])
    assert result.exit_code == 2 and "--retriever" in result.stderr and "'module:function'" in result.stderr


def test_an_unreachable_retriever_is_a_clear_error() -> None:
    result = runner.invoke(cli.app, ["ask", "warranty?", "-c", CONFIG, "--retriever", "http://127.0.0.1:9/search", "--session", "market=eu"])
    assert result.exit_code == 2 and "HTTP retriever http://127.0.0.1:9/search" in result.stderr


@pytest.mark.model
def test_eval_failures_then_triage_through_the_retriever_match_the_index(demo_index: tuple[Path, Endpoint], tmp_path: Path) -> None:
    """The round trip a user with their own retriever runs: eval --failures, then triage, with the
    passages from a corpus file and no index: the same buckets as through the index."""
    ix, endpoint = demo_index
    passages = tmp_path / "passages.jsonl"
    with Index.open(ix, settings=load_settings(demo_file("querywise.toml"))) as opened:
        passages.write_text("".join(json.dumps({"id": c.id, "title": c.title, "text": c.text, **c.payload}) + "\n" for c in opened.chunks()), encoding="utf-8")
    cases, failures = str(demo_file("eval_cases.jsonl")), tmp_path / "failures.jsonl"
    evaluated = runner.invoke(cli.app, ["eval", cases, "-c", CONFIG, "--retriever", endpoint.url, "--corpus", str(passages), "--session", "market=eu",
                                        "--no-access-probe", "--failures", str(failures), "--acceptable-if", "hit@3"])
    assert evaluated.exit_code == 0, evaluated.output
    assert f"--retriever {endpoint.url} --corpus {passages}" in evaluated.stderr  # the next command it prints
    args = ["triage", str(failures), "-c", CONFIG, "--json", "--k", "20", "--context-k", "3"]
    mine = runner.invoke(cli.app, [*args, "-i", str(ix)])
    theirs = runner.invoke(cli.app, [*args, "--retriever", endpoint.url, "--corpus", str(passages)])
    assert mine.exit_code == 0 and theirs.exit_code == 0, (mine.output, theirs.output)
    a, b = json.loads(mine.stdout), json.loads(theirs.stdout)
    assert b["buckets"] == a["buckets"] and sum(a["buckets"].values()) > 0
    assert [(c["id"], c["bucket"]) for c in b["cases"]] == [(c["id"], c["bucket"]) for c in a["cases"]]


def test_triage_through_a_retriever_needs_its_passages() -> None:
    result = runner.invoke(cli.app, ["triage", str(demo_file("eval_cases.jsonl")), "--retriever", "http://127.0.0.1:9/x"])
    assert result.exit_code == 2 and "--corpus FILE" in result.stderr

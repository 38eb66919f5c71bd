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

"""The command line, driven through typer's runner with the real library underneath."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querywise import cli
from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.index import build_index

runner = CliRunner()


@pytest.fixture
def index_dir(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> Path:  # type: ignore[no-untyped-def]
    build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder).close()
    return tmp_path / "ix"


def test_search_json_prints_only_the_array(index_dir: Path) -> None:
    result = runner.invoke(cli.app, ["search", "Vela X3 warranty", "--index", str(index_dir), "--mode", "bm25", "-k", "2", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [set(r) for r in rows] == [{"id", "score", "rank"}] * 2
    assert rows[0]["id"] == "x3-warranty" and rows[0]["rank"] == 1 and rows[0]["score"] > rows[1]["score"]


def test_search_where_filters(index_dir: Path) -> None:
    result = runner.invoke(
        cli.app, ["search", "warranty", "--index", str(index_dir), "--mode", "bm25", "--where", "price>200", "--json"]
    )
    assert [r["id"] for r in json.loads(result.stdout)] == ["x3pro-warranty"]


def test_bad_where_is_a_clear_error(index_dir: Path) -> None:
    result = runner.invoke(cli.app, ["search", "x", "--index", str(index_dir), "--where", "price<cheap"])
    assert result.exit_code == 2 and "needs a number" in result.stderr


def test_bad_mode_is_a_clear_error(index_dir: Path) -> None:
    result = runner.invoke(cli.app, ["search", "x", "--index", str(index_dir), "--mode", "fuzzy"])
    assert result.exit_code == 2 and "--mode" in result.stderr


def test_index_of_a_malformed_file_names_the_line_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{"id": "b"}\n', encoding="utf-8")
    result = runner.invoke(cli.app, ["index", str(bad), "--index", str(tmp_path / "ix")])
    assert result.exit_code == 2 and f"{bad}:2: missing 'text'" in result.stderr
    assert not (tmp_path / "ix").exists()


def test_search_of_a_missing_index(tmp_path: Path) -> None:
    result = runner.invoke(cli.app, ["search", "x", "--index", str(tmp_path)])
    assert result.exit_code == 2 and "not a querywise index" in result.stderr


def test_bad_config_is_reported_with_its_field(tmp_path: Path, index_dir: Path) -> None:
    cfg = tmp_path / "q.toml"
    cfg.write_text("[index]\nrrf_k = -1\n", encoding="utf-8")
    result = runner.invoke(cli.app, ["search", "x", "--index", str(index_dir), "--config", str(cfg)])
    assert result.exit_code == 2 and "index.rrf_k" in result.stderr

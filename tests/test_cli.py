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


@pytest.mark.model
def test_ask_plans_and_searches_the_demo(tmp_path: Path) -> None:
    """`ask` on the demo shop: a typo'd follow-up is made standalone, corrected and searched."""
    from querywise.config import load_settings
    from querywise.demo import demo_corpus, demo_file

    settings = load_settings(demo_file("querywise.toml")).model_copy(update={"cache_dir": tmp_path / "cache"})
    build_index(demo_corpus(), tmp_path / "demo", settings=settings).close()
    result = runner.invoke(
        cli.app,
        ["ask", "how do i do a firmwear update on it", "--config", str(demo_file("querywise.toml")), "--index", str(tmp_path / "demo"),
         "--history", "How long is the warranty on the Halden Solace 7 Pro?", "--session", "market=eu", "--json"],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    kinds = [q["kind"] for q in out["plan"]["queries"]]
    assert kinds[0] == "standalone" and kinds[-1] == "spelling" and set(kinds[1:-1]) <= {"original"}  # the message may be kept beside it
    assert "firmware" in out["plan"]["queries"][-1]["text"]
    assert out["plan"]["access"]["conditions"] == [{"kind": "match", "field": "markets", "value": "eu"}]
    assert out["plan"]["queries"][0]["text"] == "how do i do a firmwear update on the Halden Solace 7 Pro"
    assert "solace-7-pro-firmware" in [h["id"] for h in out["hits"][:3]]


def test_plan_reads_assistant_turns_from_the_history_option() -> None:
    from querywise.demo import demo_file

    result = runner.invoke(
        cli.app,
        ["plan", "does it fold?", "--config", str(demo_file("querywise.toml")), "--session", "market=eu", "--json",
         "--history", "which headphones last longest?", "--history", "assistant: The Halden Solace 7 Pro, at 50 hours."],
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["queries"][0]["text"].startswith("does the Halden Solace 7 Pro fold?")  # the name the assistant said


def test_rewrite_eval_json(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl"
    f.write_text(
        '{"history": ["Warranty on the Vela X3?"], "message": "And the Pro?", "standalone": "Warranty on the Vela X3 Pro?"}\n'
        '{"history": ["Warranty on the Vela X3?"], "message": "How do I pair a Vela X3 with a laptop?", "standalone": "How do I pair a Vela X3 with a laptop?"}\n',
        encoding="utf-8",
    )
    result = runner.invoke(cli.app, ["rewrite-eval", str(f), "--json"])
    report = json.loads(result.stdout)
    assert (report["n"], report["gate_recall"], report["gate_precision"], report["guard_false_alarm_rate"]) == (2, 1.0, 1.0, 0.0)
    # The plan searched "Warranty on the Vela X3? And the Pro?": every term the person added (warranty, vela, x3) is in it.
    assert report["added_term_recall"] == 1.0
    assert report["added_by_source"]["user_turns"]["recall"] == 1.0  # each of them from the user's own turn
    printed = runner.invoke(cli.app, ["rewrite-eval", str(f)])
    assert printed.exit_code == 0, printed.output
    assert "by where the history said them: the user's turns 3 (the form holds 100.0%" in " ".join(printed.output.split())


@pytest.mark.model
def test_router_train_writes_an_encoder_folder(tmp_path: Path) -> None:
    rows = [("where is my parcel", "orders"), ("track my delivery", "orders"), ("has it shipped", "orders"),
            ("refund please", "refunds"), ("I want my money back", "refunds"), ("return for a refund", "refunds")]  # fmt: skip
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps({"text": t, "label": lab}) + "\n" for t, lab in rows), encoding="utf-8")
    result = runner.invoke(cli.app, ["router-train", "--train", str(train), "--out", str(tmp_path / "enc"), "--batch-size", "2"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "enc" / "querywise-encoder.json").read_text())
    assert (manifest["n_examples"], manifest["n_routes"]) == (6, 2)


def test_router_train_names_the_bad_line(tmp_path: Path) -> None:
    train = tmp_path / "train.jsonl"
    train.write_text('{"text": "hi", "label": "greet"}\n{"text": "", "label": "greet"}\n', encoding="utf-8")
    result = runner.invoke(cli.app, ["router-train", "--train", str(train), "--out", str(tmp_path / "enc")])
    assert result.exit_code == 2 and "train.jsonl:2" in result.output


def test_search_where_a_field_no_chunk_carries_names_the_field(index_dir: Path) -> None:
    result = runner.invoke(cli.app, ["search", "warranty", "--index", str(index_dir), "--mode", "bm25", "--where", "nosuchfield=3"])
    assert result.exit_code == 0, result.output
    assert "no chunk carries the field 'nosuchfield' (fields: category, markets, price)" in result.stderr
    assert "may exclude" not in result.stderr


def test_search_whose_filter_empties_the_results_names_the_filter(index_dir: Path) -> None:
    result = runner.invoke(cli.app, ["search", "warranty", "--index", str(index_dir), "--mode", "bm25", "--where", "price>5000", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == []  # stdout stays the array
    assert "no results: price > 5000" in result.stderr


def test_ask_with_an_access_field_no_chunk_carries_is_an_error_at_start_up(tmp_path: Path, index_dir: Path) -> None:
    cfg = tmp_path / "q.toml"
    cfg.write_text(f'cache_dir = "{tmp_path / "cache"}"\n[access]\nfields = {{ tenant = "tenant" }}\n', encoding="utf-8")
    result = runner.invoke(cli.app, ["ask", "warranty", "--config", str(cfg), "--index", str(index_dir), "--session", "tenant=acme", "--mode", "bm25"])
    assert result.exit_code == 2
    assert "error: access field 'tenant': no chunk of the index carries it" in result.stderr and "category, markets, price" in result.stderr


@pytest.mark.model
def test_ask_prints_start_up_warnings_on_stderr(tmp_path: Path, index_dir: Path) -> None:
    cfg = tmp_path / "q.toml"
    cfg.write_text(f'cache_dir = "{tmp_path / "cache"}"\n[filters.fields.colour]\ntype = "keyword"\n', encoding="utf-8")
    result = runner.invoke(cli.app, ["ask", "Vela X3 warranty", "--config", str(cfg), "--index", str(index_dir), "--mode", "bm25", "--json"])
    assert result.exit_code == 0, result.output
    assert "warning: filter field 'colour': no chunk of the index carries it" in result.stderr
    assert json.loads(result.stdout)["hits"]  # stdout is still only the JSON


def test_plan_warns_about_a_route_no_message_can_reach(tmp_path: Path) -> None:
    cfg = tmp_path / "q.toml"
    cfg.write_text(
        '[routing]\ndefault_route = "kb"\n[[routing.routes]]\nname = "kb"\n[[routing.routes]]\nname = "refunds"\n', encoding="utf-8"
    )
    result = runner.invoke(cli.app, ["plan", "refund my order", "--config", str(cfg), "--json"])
    assert result.exit_code == 0, result.output
    assert "warning: route 'refunds' has no examples" in result.stderr and json.loads(result.stdout)["route"] == "kb"


def test_help_prints_bracketed_text_as_written() -> None:
    """A config section in a command's help ("[routing]", "[retriever]") is text, not markup to drop."""
    for command, section in (("router-eval", "[routing] section"), ("eval", "instead of [retriever]"), ("tune", "[understanding.off_in]")):
        result = runner.invoke(cli.app, [command, "--help"], terminal_width=400)
        assert result.exit_code == 0 and section in " ".join(result.stdout.split()), (command, result.stdout)

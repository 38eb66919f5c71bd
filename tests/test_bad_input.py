"""No traceback for any input: every hostile or malformed input through the real command line
(typer's runner) or the loaders ends in one clear line — `error: file:line: problem` and exit
code 2 — and user or data text is printed literally, never read as rich markup.

The fixtures (corpora, case files, configs, labels, ...) are written by the tests themselves
into `tmp_path`: each states the defect it reproduces. No embedding model is loaded: the
embedders the command line would build are replaced by the suite's hash embedder
(`no_model`), so the same commands run in `make test-quick`.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from pydantic import ValidationError
from typer.testing import CliRunner

from querywise import cli
from querywise.catalog import Catalog
from querywise.config import EMBEDDING_KINDS, ConfigError, IdentifierRule, LLMSettings, RouteSpec, RoutingSettings, Settings, load_settings
from querywise.corpus import Chunk, CorpusError, load_corpus
from querywise.demo import demo_file
from querywise.evaluation.cases import CaseError, load_beir, load_cases
from querywise.evaluation.rewrites import load_rewrite_rows
from querywise.evaluation.router import load_labelled
from querywise.files import MAX_DEPTH, InputError, read_jsonl, replace_surrogates
from querywise.index import build_index
from querywise.triage import load_failures, load_labels, load_sources

runner = CliRunner()

MARKUP = "warranty [/x] [link=https://evil.example]click[/link] [bold]loud[/bold] :smile:"
NOT_UTF8 = b"caf\xe9"  # latin-1 bytes: not UTF-8


def invoke(*args: str | Path) -> Result:
    return runner.invoke(cli.app, [str(a) for a in args])


def assert_clean_error(result: Result, *needles: str) -> str:
    """Exit code 2, one `error:` line on stderr naming every needle, no exception let through."""
    assert result.exit_code == 2, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception  # nothing escaped the command
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), result.stderr  # the last line (progress bars may come before)
    error = lines[-1]
    assert not error.startswith("error: unexpected") and "a bug in querywise" not in error, error  # a known error, not the last resort
    for needle in needles:
        assert needle in error, (needle, error)
    return error


def assert_ok(result: Result) -> str:
    assert result.exit_code == 0, (result.output, result.exception)
    assert result.exception is None
    return result.stdout


# --- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch, hash_embedder: Any) -> Any:
    """Every embedder the command line would load is the suite's hash embedder (no model)."""
    import querywise.embed
    import querywise.index.store
    import querywise.index.writing
    import querywise.understand.pipeline

    def fake(settings: Settings, **_: Any) -> Any:
        return hash_embedder

    for module in (querywise.embed, querywise.index.store, querywise.index.writing, querywise.understand.pipeline):
        monkeypatch.setattr(module, "embedder_for", fake)
    return hash_embedder


def _toml(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    return path


@pytest.fixture
def deployment(tmp_path: Path) -> Path:
    """A small deployment: the demo catalog, one access field, no routes (plans need no model)."""
    return _toml(
        tmp_path / "querywise.toml",
        f'cache_dir = "cache"\n[deployment]\ncatalog = "{demo_file("catalog.jsonl")}"\n[access]\nfields = {{ market = "markets" }}\n',
    )


@pytest.fixture
def marked_index(tmp_path: Path, shop: list[Chunk], hash_embedder: Any, settings: Settings) -> Path:
    """The shop index plus a chunk whose id, title and text hold rich markup."""
    hostile = Chunk(id="tag-[/]", title="[link=https://evil.example]Title[/link]", text="Closing [/] and [/x] tags in a warranty note.",
                    payload={"markets": ["eu"]})
    build_index([*shop, hostile], tmp_path / "ix", settings=settings, embedder=hash_embedder).close()
    return tmp_path / "ix"


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --- rich markup: user and data text is printed literally ----------------------------------------


def test_plan_prints_markup_in_the_message_literally(deployment: Path, no_model: Any) -> None:
    stdout = assert_ok(invoke("plan", MARKUP, "-c", deployment, "--session", "market=eu"))
    # The closing tag did not crash rich, the link is not a live link, and nothing was swallowed.
    assert "[/x]" in stdout and "[link=https://evil.example]click[/link]" in stdout and "[bold]loud[/bold]" in stdout
    assert ":smile:" in stdout  # no emoji substitution either


def test_ask_prints_markup_in_the_message_and_in_chunks_literally(deployment: Path, marked_index: Path, no_model: Any) -> None:
    stdout = assert_ok(invoke("ask", MARKUP, "-c", deployment, "-i", marked_index, "--mode", "bm25", "--session", "market=eu", "-k", "10"))
    assert "[/x]" in stdout and "tag-[/]" in stdout and "Closing [/] and [/x] tags" in stdout


def test_search_prints_markup_in_the_query_and_in_chunks_literally(marked_index: Path) -> None:
    stdout = assert_ok(invoke("search", "warranty [/x] note", "-i", marked_index, "--mode", "bm25"))
    assert "[/x]" in stdout and "tag-[/]" in stdout and "[link=https://evil.example]Title[/link]" in stdout


def test_an_error_message_with_markup_is_printed_literally(tmp_path: Path) -> None:
    (tmp_path / "we[").mkdir()
    bad = tmp_path / "we[" / "x]rd [link=file:x]name.jsonl"  # the path reads ".../we[/x]rd [link=file:x]name.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{"id": "b"}\n', encoding="utf-8")
    assert_clean_error(invoke("index", bad, "--index", tmp_path / "ix"), f"{bad}:2: missing 'text'")


def test_eval_prints_slice_names_with_markup_literally(tmp_path: Path, marked_index: Path, no_model: Any) -> None:
    cases = _jsonl(tmp_path / "cases.jsonl", [
        {"id": "a", "message": "Vela X3 warranty", "relevant": ["x3-warranty"], "slices": ["[/x]", "[link=https://evil.example]s[/link]"]},
        {"id": "b", "message": "Pico Buds battery", "relevant": ["buds-battery"]},
    ])  # fmt: skip
    stdout = assert_ok(invoke("eval", cases, "-i", marked_index, "--mode", "bm25", "--metrics", "mrr", "--no-access-probe"))
    assert "[/x]" in stdout and "[link=https://evil.example]s[/link]" in stdout


def test_rewrite_eval_prints_messages_with_markup_literally(tmp_path: Path) -> None:
    # The gate flags the follow-up, the person left it as it was: a needless flag, printed with its text.
    rows = _jsonl(tmp_path / "r.jsonl", [{"history": ["Warranty on the Vela X3?"], "message": "and [/x] the Pro?", "standalone": "and [/x] the Pro?"}])
    stdout = assert_ok(invoke("rewrite-eval", rows))
    assert "[/x]" in stdout


def test_router_eval_prints_labels_with_markup_literally(tmp_path: Path, no_model: Any) -> None:
    train = _jsonl(tmp_path / "train.jsonl", [{"text": t, "label": lab} for t, lab in [
        ("where is my parcel", "[/x]"), ("track my delivery", "[/x]"), ("refund please", "[link=x]r"), ("money back please", "[link=x]r")]])
    # Labelled the other way round: every test message is confused, and the confusions are printed.
    test = _jsonl(tmp_path / "test.jsonl", [{"text": "where is my parcel", "label": "[link=x]r"}, {"text": "refund please", "label": "[/x]"}])
    stdout = assert_ok(invoke("router-eval", "--train", train, "--test", test, "--classifier", "centroid"))
    assert "most confused" in stdout and "[/x] → [link=x]r" in stdout


def test_compare_prints_slice_names_with_markup_literally(tmp_path: Path) -> None:
    from querywise.evaluation.result import CaseScores, EvalConfig, EvalResult, Latency, LLMUsage

    def run(path: Path, scores: list[float]) -> Path:
        result = EvalResult(
            n=len(scores), overall={"mrr": sum(scores) / len(scores)}, slices={}, slice_sizes={},
            config=EvalConfig(source="t", mode="bm25", moves=[], metrics=["mrr"]), latency_ms=Latency(p50=1.0, p95=2.0),
            llm=LLMUsage(calls_per_1000=None, cost_per_1000_usd=None), components=None,
            cases=[CaseScores(id=str(i), slices=["[/x]"], scores={"mrr": v}) for i, v in enumerate(scores)],
        )  # fmt: skip
        path.write_text(result.model_dump_json(), encoding="utf-8")
        return path

    result = invoke("compare", run(tmp_path / "a.json", [1.0] * 12), run(tmp_path / "b.json", [0.0] * 12))
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)  # a regression, reported
    assert "[/x]" in result.stdout and "Traceback" not in result.output


def test_demo_prints_the_session_market_literally(tmp_path: Path, no_model: Any) -> None:
    stdout = assert_ok(invoke("demo", "--index", tmp_path / "demo", "-k", "1", "--market", "[/x]"))
    assert "markets = [/x]" in stdout


# --- lone surrogates: from the terminal, from JSON ------------------------------------------------


def test_plan_of_a_non_utf8_argument_is_surrogate_safe(deployment: Path, no_model: Any) -> None:
    # `querywise plan $'warranty \xff'`: Python hands the byte over as the lone surrogate \udcff.
    plan = json.loads(assert_ok(invoke("plan", "warranty \udcff", "-c", deployment, "--session", "market=eu", "--json")))
    assert plan["message"] == "warranty \ufffd"
    assert "warranty \ufffd" in assert_ok(invoke("plan", "warranty \udcff", "-c", deployment, "--session", "market=eu"))


def test_ask_and_search_of_lone_surrogates_are_safe(deployment: Path, marked_index: Path, no_model: Any) -> None:
    out = json.loads(assert_ok(invoke("ask", "warranty \ud800", "-c", deployment, "-i", marked_index, "--mode", "bm25",
                                      "--session", "market=eu", "--history", "the X3 \udcff", "--json")))
    assert out["plan"]["message"] == "warranty \ufffd"
    assert json.loads(assert_ok(invoke("search", "warranty \udcff", "-i", marked_index, "--mode", "bm25", "--json")))
    assert "warranty" in assert_ok(invoke("search", "warranty \udcff", "-i", marked_index, "--mode", "bm25"))


def test_json_escapes_of_lone_surrogates_are_replaced_where_files_are_read(tmp_path: Path, no_model: Any) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "bad \\ud800 half", "tag": "x\\udc80"}\n{"id": "b", "text": "pair \\ud83d\\ude00"}\n', encoding="utf-8")
    a, b = load_corpus(corpus)
    assert a.text == "bad \ufffd half" and a.payload == {"tag": "x\ufffd"} and b.text == "pair \U0001f600"
    assert next(read_jsonl(_jsonl(tmp_path / "k.jsonl", [{"k\udfff": 1}])))[1] == {"k\ufffd": 1}  # keys too
    assert_ok(invoke("index", corpus, "--index", tmp_path / "ix"))  # embedding and hashing the text no longer fail
    assert json.loads(assert_ok(invoke("search", "bad", "-i", tmp_path / "ix", "--mode", "bm25", "--json")))[0]["id"] == "a"


def test_replace_surrogates() -> None:
    assert replace_surrogates("plain") == "plain"
    assert replace_surrogates("a\ud800b\udcffc") == "a\ufffdb\ufffdc"
    assert replace_surrogates("\ud83d\ude00") == "\U0001f600"  # a valid pair is joined, not replaced


def test_the_library_front_door_accepts_a_lone_surrogate(deployment: Path, no_model: Any) -> None:
    from querywise.service import QueryWise

    with QueryWise(load_settings(deployment)) as qw:
        plan = qw.plan("warranty \ud800", session={"market": "eu"})
    assert plan.message == "warranty \ufffd"


# --- corpus loaders: every failure names the file and line --------------------------------------


def _deep(depth: int) -> str:
    return '{"id": "a", "text": "t", "x": ' + "[" * depth + "]" * depth + "}\n"


CORPORA: list[tuple[str, str, Callable[[Path], None], str]] = [
    ("csv not utf8", "s.csv", lambda p: p.write_bytes(b"id,text\n1," + NOT_UTF8 + b"\n"), "s.csv:2: not UTF-8 text"),
    ("csv short row", "s.csv", lambda p: p.write_text("id,text,price\na\n", encoding="utf-8"), "s.csv:2: fewer fields than the header names (1 of 3: no 'text', 'price')"),
    ("csv 5000 digits", "s.csv", lambda p: p.write_text("id,text,n\na,t," + "9" * 5000 + "\n", encoding="utf-8"), "s.csv:2: column 'n' holds a 5000-digit number"),
    ("csv doubled column", "s.csv", lambda p: p.write_text("id,text,id\na,t,b\n", encoding="utf-8"), "s.csv:1: the header names 'id' more than once"),
    ("csv.gz not gzip", "s.csv.gz", lambda p: p.write_bytes(b"id,text\na,t\n"), "s.csv.gz: not a gzip file"),
    ("jsonl.gz cut short", "s.jsonl.gz", lambda p: p.write_bytes(gzip.compress(b'{"id": "a", "text": "t"}\n' * 200)[:-30]), "the gzip data is cut short or corrupt"),
    ("json 100000 deep", "s.jsonl", lambda p: p.write_text(_deep(100_000), encoding="utf-8"), "s.jsonl:1: JSON nested too deeply"),
    ("json past MAX_DEPTH", "s.jsonl", lambda p: p.write_text(_deep(MAX_DEPTH + 1), encoding="utf-8"), "s.jsonl:1: JSON nested too deeply"),
    ("json 5000 digits", "s.jsonl", lambda p: p.write_text('{"id": "a", "text": "t", "n": ' + "9" * 5000 + "}\n", encoding="utf-8"), "s.jsonl:1: a number has more than"),
    ("jsonl not utf8", "s.jsonl", lambda p: p.write_bytes(b'{"id": "a", "text": "t"}\n{"id": "b", "text": "' + NOT_UTF8 + b'"}\n'), "s.jsonl:2: not UTF-8 text"),
    ("folder not utf8", "folder", lambda p: (p.mkdir(), (p / "ok.md").write_text("# Fine\n", encoding="utf-8"), (p / "bad.md").write_bytes(b"# T\n" + NOT_UTF8)),
     "bad.md:2: not UTF-8 text"),
]


@pytest.mark.parametrize(("name", "write", "message"), [c[1:] for c in CORPORA], ids=[c[0] for c in CORPORA])
def test_malformed_corpora_name_file_and_line(tmp_path: Path, name: str, write: Callable[[Path], None], message: str) -> None:
    source = tmp_path / name
    write(source)
    with pytest.raises(CorpusError) as info:
        load_corpus(source)
    assert message in str(info.value)
    assert_clean_error(invoke("index", source, "--index", tmp_path / "ix"), message)
    assert not (tmp_path / "ix").exists()  # nothing written


def test_a_csv_row_split_over_lines_is_named_by_its_first_line(tmp_path: Path) -> None:
    source = tmp_path / "s.csv"
    source.write_text('id,text,price\na,"two\nlines",1\nb,short\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=r"s\.csv:4: fewer fields"):
        load_corpus(source)


def test_csv_with_windows_line_ends_reads_as_before(tmp_path: Path) -> None:
    source = tmp_path / "s.csv"
    source.write_bytes(b'\xef\xbb\xbfid,text,n\r\na,hello,1\r\nb,"two\r\nlines",2\r\n')  # with a byte-order mark
    assert [(c.id, c.text, c.payload) for c in load_corpus(source)] == [("a", "hello", {"n": 1}), ("b", "two\nlines", {"n": 2})]


def test_a_folder_where_a_file_belongs_is_named(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").mkdir()
    (tmp_path / "x.jsonl" / "a.txt").write_text("fine", encoding="utf-8")
    with pytest.raises(InputError, match="is a folder"):
        list(read_jsonl(tmp_path / "x.jsonl"))


# --- every other loader: cases, BEIR, triage files, catalog, labels, rewrites, scripted LLM ---------


def _bad_second_line(path: Path, first: dict[str, Any]) -> Path:
    path.write_bytes(json.dumps(first).encode() + b"\n" + b'{"text": "' + NOT_UTF8 + b'"}\n')
    return path


def test_case_files_name_file_and_line(tmp_path: Path) -> None:
    bad = _bad_second_line(tmp_path / "cases.jsonl", {"id": "a", "message": "m", "relevant": ["x"]})
    with pytest.raises(CaseError, match=r"cases\.jsonl:2: not UTF-8"):
        load_cases(bad)
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"id": "a", "message": "m", "filters": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8")
    with pytest.raises(CaseError, match=r"deep\.jsonl:1: JSON nested too deeply"):
        load_cases(deep)


def test_eval_of_a_bad_case_file_is_a_clean_error(tmp_path: Path, marked_index: Path) -> None:
    bad = _bad_second_line(tmp_path / "cases.jsonl", {"id": "a", "message": "m", "relevant": ["x"]})
    assert_clean_error(invoke("eval", bad, "-i", marked_index, "--mode", "bm25"), f"{bad}:2: not UTF-8")


def _beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    _jsonl(root / "corpus.jsonl", [{"_id": "d1", "text": "a document"}])
    _jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "a question"}])
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("broken", "write", "message"),
    [
        ("qrels/test.tsv", lambda p: p.write_bytes(b"query-id\tcorpus-id\tscore\nq1\td" + NOT_UTF8 + b"\t1\n"), "test.tsv:2: not UTF-8"),
        ("qrels/test.tsv", lambda p: p.write_text("q1\td1\tinf\n", encoding="utf-8"), "test.tsv:1: score 'inf' is not a finite number"),
        ("qrels/test.tsv", lambda p: p.write_text("q1\td1\t" + "9" * 5000 + "\n", encoding="utf-8"), "test.tsv:1: score"),
        ("queries.jsonl", lambda p: p.write_bytes(b'{"_id": "q1", "text": "' + NOT_UTF8 + b'"}\n'), "queries.jsonl:1: not UTF-8"),
        ("corpus.jsonl", lambda p: p.write_text(_deep(100_000), encoding="utf-8"), "corpus.jsonl:1: JSON nested too deeply"),
    ],
)
def test_beir_folders_name_file_and_line(tmp_path: Path, broken: str, write: Callable[[Path], None], message: str) -> None:
    root = _beir(tmp_path / "beir")
    write(root / broken)
    with pytest.raises(InputError) as info:
        load_beir(root)
    assert message in str(info.value)


def test_beir_corpus_gz_that_is_not_gzip(tmp_path: Path) -> None:
    root = _beir(tmp_path / "beir")
    (root / "corpus.jsonl").unlink()
    (root / "corpus.jsonl.gz").write_text('{"_id": "d1", "text": "plain"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"corpus\.jsonl\.gz: not a gzip file"):
        load_beir(root)


@pytest.mark.parametrize("which", ["failures", "sources", "labels"])
def test_triage_files_name_file_and_line(tmp_path: Path, which: str) -> None:
    failures = _jsonl(tmp_path / "failures.jsonl", [{"id": "1", "question": "q", "gold_text": "g"}])
    files = {"failures": failures, "sources": tmp_path / "sources.jsonl", "labels": tmp_path / "labels.jsonl"}
    _jsonl(files["sources"], [{"id": "d", "text": "t"}])
    _jsonl(files["labels"], [{"id": "1", "label": "vocabulary"}])
    _bad_second_line(files[which], {"id": "0", "question": "q", "gold_text": "g", "text": "t", "label": "filler"})
    loader = {"failures": load_failures, "sources": load_sources, "labels": load_labels}[which]
    with pytest.raises(InputError, match=rf"{which}\.jsonl:2: not UTF-8"):
        loader(files[which])
    result = invoke("triage", files["failures"], "-i", tmp_path / "no-index", "--sources", files["sources"], "--labels", files["labels"], "--mode", "bm25")
    assert_clean_error(result, f"{files[which]}:2: not UTF-8")


def test_catalog_names_file_and_line(tmp_path: Path, deployment: Path) -> None:
    catalog = _bad_second_line(tmp_path / "catalog.jsonl", {"name": "Vela X3"})
    with pytest.raises(InputError, match=r"catalog\.jsonl:2: not UTF-8"):
        Catalog.load(catalog)
    cfg = _toml(tmp_path / "q.toml", '[deployment]\ncatalog = "catalog.jsonl"\n')
    assert_clean_error(invoke("plan", "hello", "-c", cfg), f"{catalog}:2: not UTF-8")


def test_label_and_rewrite_files_name_file_and_line(tmp_path: Path) -> None:
    labelled = _bad_second_line(tmp_path / "train.jsonl", {"text": "hi", "label": "greet"})
    with pytest.raises(InputError, match=r"train\.jsonl:2: not UTF-8"):
        load_labelled(str(labelled))
    assert_clean_error(invoke("router-eval", "--train", labelled, "--test", labelled), f"{labelled}:2: not UTF-8")
    assert_clean_error(invoke("router-train", "--train", labelled, "--out", tmp_path / "enc"), f"{labelled}:2: not UTF-8")
    rewrites = _bad_second_line(tmp_path / "r.jsonl", {"message": "m", "standalone": "s"})
    with pytest.raises(InputError, match=r"r\.jsonl:2: not UTF-8"):
        load_rewrite_rows(rewrites)
    assert_clean_error(invoke("rewrite-eval", rewrites), f"{rewrites}:2: not UTF-8")


def test_scripted_llm_response_file_names_file_and_line(tmp_path: Path) -> None:
    responses = _bad_second_line(tmp_path / "responses.jsonl", {"task": "plan", "input": "hi", "output": {}})
    cfg = _toml(tmp_path / "q.toml", '[llm]\nprovider = "scripted"\nscripted_file = "responses.jsonl"\n')
    assert_clean_error(invoke("plan", "hello", "-c", cfg), f"{responses}:2: not UTF-8")


def test_compare_of_unreadable_runs_is_a_clean_error(tmp_path: Path) -> None:
    (tmp_path / "folder.json").mkdir()
    run = tmp_path / "run.json"
    run.write_bytes(b'{"n": "' + NOT_UTF8 + b'"}')
    assert_clean_error(invoke("compare", tmp_path / "folder.json", run), "folder.json")
    assert_clean_error(invoke("compare", run, run), f"{run}: not a saved")


# --- configs: every problem is a ConfigError naming the file and the key (or line) ----------------


def _routes_file(folder: Path) -> Path:
    return _jsonl(folder / "routes.jsonl", [{"text": "how do I pair it", "label": "kb_search"}, {"text": "where is my order", "label": "account"}])


CONFIGS: list[tuple[str, Callable[[Path], str | bytes], str]] = [
    ("non-utf8", lambda d: b'[deployment]\nname = "' + NOT_UTF8 + b'"\n', "q.toml:2: not UTF-8 text"),
    ("embedding.kind", lambda d: '[embedding]\nkind = "gpu"\n', "embedding.kind: unknown embedder kind 'gpu'"),
    ("routing.encoder", lambda d: '[routing]\nencoder = "no-such-encoder"\n', "routing.encoder: "),
    ("plan_log folder", lambda d: ((d / "logs").mkdir(), '[deployment]\nplan_log = "logs"\n')[1], "deployment.plan_log: "),
    ("plan_log under a file", lambda d: ((d / "f").write_text(""), '[deployment]\nplan_log = "f/plans.jsonl"\n')[1], "deployment.plan_log: "),
    ("rule, examples file", lambda d: (_routes_file(d), '[routing]\nexamples_file = "routes.jsonl"\n[[routing.rules]]\npattern = "x"\nroute = "lookup"\n')[1],
     "routing.rules[0].route: unknown route 'lookup' (routes declared by the labels of routes.jsonl: account, kb_search)"),
    ("default_route, examples file", lambda d: (_routes_file(d), '[routing]\nexamples_file = "routes.jsonl"\ndefault_route = "kb_serch"\n')[1],
     "routing.default_route: unknown route 'kb_serch'"),
    ("fail_policy, examples file", lambda d: (_routes_file(d), '[routing]\nexamples_file = "routes.jsonl"\n[llm]\nfail_policy = { acount = "closed" }\n')[1],
     "llm.fail_policy.acount: unknown route 'acount'"),
    ("label not declared", lambda d: (_routes_file(d), '[routing]\nexamples_file = "routes.jsonl"\n[[routing.routes]]\nname = "kb_search"\n')[1],
     "routing.examples_file: ", ),
    ("rule, no routes", lambda d: '[[routing.rules]]\npattern = "x"\nroute = "lookup"\n', "routing.rules[0].route: unknown route 'lookup': no route is declared"),
    ("duplicate route", lambda d: '[[routing.routes]]\nname = "a"\n[[routing.routes]]\nname = "a"\n', "route 'a' is declared more than once"),
    ("identifier_pattern", lambda d: '[chunking]\nidentifier_pattern = "(["\n', "chunking.identifier_pattern '([' does not compile"),
    ("deep TOML", lambda d: "[index]\nk1 = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    ("5000-digit integer", lambda d: "[index]\nhnsw_m = " + "9" * 5000 + "\n", "q.toml:2: invalid TOML"),
]


@pytest.mark.parametrize(("name", "body", "message"), CONFIGS, ids=[c[0] for c in CONFIGS])
def test_bad_configs_name_file_and_key(tmp_path: Path, name: str, body: Callable[[Path], str | bytes], message: str, marked_index: Path) -> None:
    cfg = tmp_path / "q.toml"
    data = body(tmp_path)
    cfg.write_bytes(data if isinstance(data, bytes) else data.encode())
    with pytest.raises(ConfigError) as info:
        load_settings(cfg)
    assert str(info.value).startswith(str(cfg)) and message in str(info.value), str(info.value)
    # Before anything runs: plan, ask and search stop with the same line.
    assert_clean_error(invoke("plan", "hello", "-c", cfg), message)
    assert_clean_error(invoke("ask", "hello", "-c", cfg, "-i", marked_index, "--mode", "bm25"), message)
    assert_clean_error(invoke("search", "hello", "-c", cfg, "-i", marked_index, "--mode", "bm25"), message)


def test_an_undeclared_label_is_named_by_its_line(tmp_path: Path) -> None:
    _routes_file(tmp_path)
    cfg = _toml(tmp_path / "q.toml", '[routing]\nexamples_file = "routes.jsonl"\n[[routing.routes]]\nname = "kb_search"\n')
    with pytest.raises(ConfigError, match=r"routes\.jsonl:2: label 'account' is not a declared route"):
        load_settings(cfg)


def test_routes_declared_by_the_examples_file_load(tmp_path: Path) -> None:
    _routes_file(tmp_path)
    cfg = _toml(tmp_path / "q.toml", '[routing]\nexamples_file = "routes.jsonl"\ndefault_route = "kb_search"\nhigh_stakes = ["account"]\n')
    assert load_settings(cfg).routing.default_route == "kb_search"


def test_route_references_are_checked_when_routing_is_built_in_python() -> None:
    with pytest.raises(ValidationError, match=r"routing.rules\[0\].route: unknown route 'lookup'"):
        RoutingSettings(routes=[RouteSpec(name="kb")], rules=[IdentifierRule(pattern="x", route="lookup")])
    with pytest.raises(ValidationError, match="no route is declared"):
        RoutingSettings(default_route="kb")
    RoutingSettings(examples_file=Path("routes.jsonl"), default_route="kb")  # declared by the file: checked when loaded


def test_route_references_are_checked_when_settings_are_copied() -> None:
    base = Settings(routing=RoutingSettings(routes=[RouteSpec(name="kb")]))
    with pytest.raises(ValidationError, match=r"llm.timeouts.nowhere: unknown route 'nowhere'"):
        base.model_copy(update={"llm": LLMSettings(timeouts={"nowhere": 1.0})})
    with pytest.raises(ValidationError, match=r"routing.high_stakes\[0\]: unknown route 'acount'"):
        base.routing.model_copy(update={"high_stakes": ["acount"]})
    assert base.model_copy(update={"llm": LLMSettings(timeouts={"kb": 1.0})}).llm.timeout_for("kb") == 1.0


def test_the_plan_log_problem_stops_plan_before_it_runs(tmp_path: Path, deployment: Path) -> None:
    (tmp_path / "logs").mkdir()
    cfg = _toml(tmp_path / "q.toml", deployment.read_text(encoding="utf-8") + "")
    cfg.write_text(cfg.read_text(encoding="utf-8").replace("[deployment]\n", '[deployment]\nplan_log = "logs"\n'), encoding="utf-8")
    assert_clean_error(invoke("plan", "warranty", "-c", cfg, "--session", "market=eu"), f"{tmp_path / 'logs'} is a folder")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_an_unwritable_plan_log_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir(mode=0o500)
    cfg = _toml(tmp_path / "q.toml", '[deployment]\nplan_log = "ro/plans.jsonl"\n')
    with pytest.raises(ConfigError, match="not writable"):
        load_settings(cfg)


def test_config_kinds_match_the_embedders() -> None:
    from querywise.embed import EMBEDDER_KINDS

    assert ("auto", *EMBEDDER_KINDS) == EMBEDDING_KINDS


def test_a_config_that_is_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder"):
        load_settings(tmp_path)


# --- the command line's last line of defence -----------------------------------------------------


def test_an_os_error_on_a_user_path_names_the_path(tmp_path: Path, marked_index: Path, no_model: Any) -> None:
    cases = _jsonl(tmp_path / "cases.jsonl", [{"id": "a", "message": "Vela X3 warranty", "relevant": ["x3-warranty"]}])
    html = tmp_path / "missing-folder" / "report.html"
    assert_clean_error(invoke("eval", cases, "-i", marked_index, "--mode", "bm25", "--metrics", "mrr", "--no-access-probe", "--html", html), str(html))


def test_an_unexpected_exception_is_one_line_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import querywise.llm.cost

    def broken(**_: Any) -> None:
        raise RuntimeError("boom [/x]")

    monkeypatch.setattr(querywise.llm.cost, "cost_model", broken)
    result = invoke("cost")
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit) and "Traceback" not in result.output
    assert "unexpected RuntimeError: boom [/x]" in result.stderr and "QUERYWISE_DEBUG" in result.stderr

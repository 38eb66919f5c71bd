"""`eval --failures`: every case written in the shape `querywise triage` reads, and eval → triage
in two commands (hash embedder, BM25, a real index; no model)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querywise import cli
from querywise.config import Settings
from querywise.conversation import Turn
from querywise.corpus import Chunk
from querywise.evaluation.acceptable import parse_rule
from querywise.evaluation.cases import Case
from querywise.evaluation.failures import failure_rows
from querywise.evaluation.harness import CaseRun
from querywise.evaluation.metrics import parse_metrics
from querywise.evaluation.report import evaluate
from querywise.failures import FailureRow, MadeBy, write_failures
from querywise.index import Index, build_index
from querywise.service import QueryWise
from querywise.triage import load_failures

runner = CliRunner()

# Twenty look-alike notes make a ranking deeper than the ten ids a run record used to keep.
NOTES = [Chunk(id=f"note-{i:02d}", text=f"Warranty note {i}: the warranty on order {i} runs {i} months.") for i in range(20)]
# A record cut into two chunks (contract: payload doc_id, start, end relative to the record).
MANUAL = [
    Chunk(id="manual#0", text="Pairing the Pico Buds: hold both buds in the case for five seconds.", title="Pico Buds manual",
          payload={"doc_id": "manual", "start": 0, "end": 68}),
    Chunk(id="manual#1", text="Resetting the Pico Buds: press the case button for fifteen seconds.", title="Pico Buds manual",
          payload={"doc_id": "manual", "start": 69, "end": 136}),
]


def _case(cid: str, message: str, relevant: dict[str, int], history: list[str] | None = None) -> Case:
    return Case(id=cid, message=message, history=history or [], relevant=relevant, slices=["standalone"])


CASES = [
    _case("pro", "Vela X3 Pro warranty", {"x3-warranty": 1, "x3pro-warranty": 2}),  # best grade listed second
    _case("deep", "warranty months", {"note-15": 1}),  # found, but far below the top 5
    _case("reset", "reset the Pico Buds", {"manual": 1}),  # judged by document
    _case("battery", "Pico Buds hours per charge", {"buds-battery": 1}, ["do the buds last long?"]),
    _case("tie", "returns of opened earbuds", {"shipping": 1, "returns": 1}),  # equal grades: the case's order
    _case("nothing", "zzzz qqqq", {"cushions": 1}),  # no hit at all
    _case("unjudged", "how fast is express shipping", {}),  # nothing to score it by
]
METRICS = parse_metrics(["recall@30,hit@5,hit@1"])  # recall@30: the search goes 30 deep


@pytest.fixture
def index(tmp_path: Path, shop: list[Chunk], hash_embedder: Any, settings: Settings) -> Iterator[Index]:
    ix = build_index([*shop, *NOTES, *MANUAL], tmp_path / "ix", settings=settings, embedder=hash_embedder)
    yield ix
    ix.close()


@pytest.fixture
def run(index: Index, settings: Settings) -> tuple[QueryWise, list[CaseRun]]:
    qw = QueryWise(settings, index)
    report = evaluate(CASES, qw, METRICS, mode="bm25", probe_access=False, keep_ids=None)
    return qw, report.run.cases


def _by_id(rows: list[FailureRow]) -> dict[str, FailureRow]:
    return {r.id: r for r in rows}


def test_every_judged_case_is_written_with_its_flag_under_each_rule(run: tuple[QueryWise, list[CaseRun]], index: Index) -> None:
    _, runs = run
    at5 = failure_rows(CASES, runs, index.chunks(), parse_rule(["hit@5"]))
    at1 = failure_rows(CASES, runs, index.chunks(), parse_rule(["hit@1"]))
    for got in (at5, at1):
        assert [r.id for r in got.rows] == ["pro", "deep", "reset", "battery", "tie", "nothing"]
        assert got.skipped == ["unjudged"]
    flags5 = {r.id: r.acceptable for r in at5.rows}
    flags1 = {r.id: r.acceptable for r in at1.rows}
    assert flags5 == {"pro": True, "deep": False, "reset": True, "battery": True, "tie": True, "nothing": False}
    assert flags1 == {"pro": False, "deep": False, "reset": True, "battery": True, "tie": True, "nothing": False}
    assert (at5.n_acceptable, at5.n_failing, at1.n_acceptable, at1.n_failing) == (4, 2, 3, 3)
    # each flag is the rule read off the written ranking itself
    for r in at5.rows:
        assert r.acceptable == any(d in r.gold_ids for d in r.retrieved[:5])
    for r in at1.rows:
        assert r.acceptable == (bool(r.retrieved) and r.retrieved[0] in r.gold_ids)


def test_retrieved_is_the_scored_ranking_as_deep_as_the_search_went(run: tuple[QueryWise, list[CaseRun]], index: Index) -> None:
    qw, runs = run
    rows = _by_id(failure_rows(CASES, runs, index.chunks(), parse_rule([])).rows)
    for case in CASES:
        if case.id in ("reset", "unjudged"):
            continue
        hits = qw.ask(case.message, history=case.history, k=30, mode="bm25", depth=50).hits
        assert rows[case.id].retrieved == [h.id for h in hits], case.id  # the system's ranking, in rank order
    deep = rows["deep"]
    assert len(deep.retrieved) == 22 > 10  # every warranty chunk, not the first ten
    assert deep.retrieved.index("note-15") >= 5 and deep.scores["recall@30"] == 1.0
    assert rows["nothing"].retrieved == []
    # a case judged by document is ranked by document: the two manual chunks count once, at the best rank
    assert rows["reset"].retrieved == ["manual", "buds-battery"]


def test_the_gold_is_the_best_graded_id_with_its_chunk_text(run: tuple[QueryWise, list[CaseRun]], index: Index, shop: list[Chunk]) -> None:
    _, runs = run
    rows = _by_id(failure_rows(CASES, runs, index.chunks(), parse_rule([])).rows)
    text = {c.id: c.text for c in shop}
    pro = rows["pro"]
    assert (pro.gold_chunk, pro.gold_text, pro.gold_doc) == ("x3pro-warranty", text["x3pro-warranty"], None)
    assert pro.gold_ids == ["x3pro-warranty", "x3-warranty"]  # best grade first
    tie = rows["tie"]
    assert (tie.gold_chunk, tie.gold_text, tie.gold_ids) == ("shipping", text["shipping"], ["shipping", "returns"])
    reset = rows["reset"]
    assert (reset.gold_doc, reset.gold_chunk, reset.gold_text) == ("manual", None, None)  # any of its chunks answers
    battery = rows["battery"]
    assert (battery.question, battery.history) == ("Pico Buds hours per charge", (Turn(text="do the buds last long?"),))
    assert set(battery.scores) == {"recall@30", "hit_rate@5", "hit_rate@1"}


def test_a_judged_id_the_index_lacks_is_written_as_a_chunk_gold_without_text() -> None:
    case = _case("ghost", "QR-5162 cushions", {"ghost-chunk": 1})
    runs = [CaseRun(id="ghost", slices=[], scores={"hit_rate@5": 0.0}, top=["cushions"])]
    row = failure_rows([case], runs, iter(MANUAL), parse_rule([])).rows[0]
    assert (row.gold_chunk, row.gold_text, row.gold_doc, row.acceptable) == ("ghost-chunk", None, None, False)


def test_the_rule_must_have_been_scored() -> None:
    runs = [CaseRun(id="pro", slices=[], scores={"ndcg@10": 1.0}, top=["x3pro-warranty"])]
    with pytest.raises(ValueError, match="did not score hit_rate@5"):
        failure_rows(CASES[:1], runs, [], parse_rule([]))


def test_the_written_file_is_what_triage_reads(run: tuple[QueryWise, list[CaseRun]], index: Index, tmp_path: Path) -> None:
    _, runs = run
    got = failure_rows(CASES, runs, index.chunks(), parse_rule(["hit@1"]))
    path = tmp_path / "failures.jsonl"
    assert write_failures(path, got.rows) == 6
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert "gold_doc" not in lines[0] and "gold_chunk" not in lines[2]  # absent golds are left out, not null
    data = load_failures(path)
    assert (data.n_rows, data.n_acceptable) == (6, got.n_acceptable) == (6, 3)
    assert [f.id for f in data.failures] == ["pro", "deep", "nothing"]
    pro = data.failures[0]
    assert (pro.gold_chunk, pro.question, pro.retrieved) == ("x3pro-warranty", "Vela X3 Pro warranty", _by_id(got.rows)["pro"].retrieved)


def test_evaluate_with_a_rule_gives_the_rows_triage_reads(run: tuple[QueryWise, list[CaseRun]], index: Index, tmp_path: Path) -> None:
    """`evaluate(..., rule=)` is `eval --failures` as a library call: the rule's metric is scored though
    `metrics` leaves it out, rankings are whole, and the rows round-trip through the file into triage."""
    qw, runs = run
    rule = parse_rule(["hit@1"])
    report = evaluate(CASES, qw, parse_metrics(["recall@30"]), mode="bm25", probe_access=False, rule=rule)
    expected = failure_rows(CASES, runs, index.chunks(), rule)  # the fixture's run scored hit@1 among others
    assert report.failures is not None and "hit_rate@1" in report.run.overall
    assert [r.model_dump(exclude={"scores", "made_by"}) for r in report.failures.rows] == [r.model_dump(exclude={"scores", "made_by"}) for r in expected.rows]
    # every row records the rule that made it: what triage reads as the generator's context
    made = {r.made_by for r in report.failures.rows}
    assert made == {MadeBy(acceptable_if="hit@1", context_k=1, mode="bm25", index=str(qw.index.root) if qw.index else None, n_chunks=len(list(index.chunks())))}
    write_failures(tmp_path / "f.jsonl", report.failures.rows)
    read = load_failures(tmp_path / "f.jsonl")
    assert read.failures == [r for r in report.failures.rows if not r.acceptable]
    assert (read.n_rows, read.n_acceptable) == (len(report.failures.rows), report.failures.n_acceptable)


def test_a_failing_document_gold_reaches_triage(index: Index, settings: Settings, tmp_path: Path) -> None:
    """Contract item 4: triage reads `gold_doc` without `gold_offset`."""
    cases = [_case("pair", "Pico Buds hours per charge", {"manual": 1})]  # the manual ranks below buds-battery
    report = evaluate(cases, QueryWise(settings, index), METRICS, mode="bm25", probe_access=False, keep_ids=None)
    got = failure_rows(cases, report.run.cases, index.chunks(), parse_rule(["hit@1"]))
    write_failures(tmp_path / "f.jsonl", got.rows)
    failure = load_failures(tmp_path / "f.jsonl").failures[0]
    assert (failure.gold_doc, failure.gold_offset, failure.retrieved) == ("manual", None, ["buds-battery", "manual"])


def test_a_write_that_fails_leaves_the_old_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "failures.jsonl"
    path.write_text("old\n", encoding="utf-8")
    row = FailureRow(id="a", question="q", history=[], acceptable=True, gold_ids=["x"], scores={}, retrieved=[], gold_chunk="x")

    def rows() -> Iterator[FailureRow]:
        yield row
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        write_failures(path, rows())
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["failures.jsonl"]  # no temporary file left behind


# --- through the command line: eval, then the triage command it prints ---------------------------


@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch, hash_embedder: Any) -> Any:
    """Every embedder the command line would load is the suite's hash embedder (no model)."""
    import querywise.embed
    import querywise.index.store
    import querywise.index.writing
    import querywise.understand.pipeline

    for module in (querywise.embed, querywise.index.store, querywise.index.writing, querywise.understand.pipeline):
        monkeypatch.setattr(module, "embedder_for", lambda settings, **_: hash_embedder)
    return hash_embedder


@pytest.fixture
def index_dir(tmp_path: Path, shop: list[Chunk], hash_embedder: Any, settings: Settings) -> Path:
    build_index([*shop, *NOTES, *MANUAL], tmp_path / "ixdir", settings=settings, embedder=hash_embedder).close()
    return tmp_path / "ixdir"


@pytest.fixture
def case_file(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps({"id": c.id, "message": c.message, "history": [t.model_dump() for t in c.history], "relevant": c.relevant}) + "\n"
                            for c in CASES), encoding="utf-8")
    return path


def test_eval_then_the_printed_triage_command(no_model: Any, case_file: Path, index_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "failures.jsonl"
    result = runner.invoke(cli.app, ["eval", str(case_file), "-i", str(index_dir), "--mode", "bm25", "--metrics", "ndcg@10",
                                     "--acceptable-if", "mrr@10 >= 1", "--failures", str(out)])
    assert result.exit_code == 0, result.stderr
    note = result.stderr.strip().splitlines()[-1]
    assert note.startswith(f"wrote 6 cases (3 acceptable by `mrr@10 >= 1`, 3 failing; 1 without a judged id skipped) to {out}; next: ")
    assert "mrr@10" in result.stdout  # the rule's metric was scored, so the table shows it
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {r["id"]: r["acceptable"] for r in rows} == {"pro": False, "deep": False, "reset": True, "battery": True, "tie": True, "nothing": False}
    assert set(rows[0]["scores"]) == {"ndcg@10", "mrr@10"}
    command = shlex.split(note.split("; next: ", 1)[1])
    assert command == ["querywise", "triage", str(out), "--index", str(index_dir), "--mode", "bm25"]  # mrr@10 >= 1: no cut-off
    triage = runner.invoke(cli.app, command[1:])
    assert triage.exit_code == 0, triage.stderr
    assert "3 failures triaged of 3 · eval set 6 at 50% acceptable" in triage.stdout
    assert "reachable by the query layer" in triage.stdout


def test_eval_says_when_nothing_fails(no_model: Any, case_file: Path, index_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "failures.jsonl"
    result = runner.invoke(cli.app, ["eval", str(case_file), "-i", str(index_dir), "--mode", "bm25", "--metrics", "recall@30",
                                     "--acceptable-if", "recall@30 >= 0", "--failures", str(out), "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 7  # the JSON document is untouched on stdout
    assert result.stderr.strip().splitlines()[-1].endswith(f"to {out}; nothing failing to triage")


def test_a_hit_at_k_rule_gives_triage_the_same_cut_off(no_model: Any, case_file: Path, index_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "failures.jsonl"
    result = runner.invoke(cli.app, ["eval", str(case_file), "-i", str(index_dir), "--mode", "bm25", "--metrics", "recall@30",
                                     "--acceptable-if", "hit@1", "--failures", str(out)])
    assert result.exit_code == 0, result.stderr
    command = shlex.split(result.stderr.strip().splitlines()[-1].split("; next: ", 1)[1])
    assert command[-2:] == ["--context-k", "1"]  # failing = not at rank 1, so a gold at rank 2 is a ranking failure
    triage = runner.invoke(cli.app, [*command[1:], "--json"])
    assert triage.exit_code == 0, triage.stderr
    buckets = {c["id"]: c["bucket"] for c in json.loads(triage.stdout)["cases"]}
    assert buckets["pro"] == "ranking"  # the best-graded gold sits at rank 2 of what the system returned


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--acceptable-if", "ndcg@10 => 0.5", "--failures", "{out}"], "error: --acceptable-if: cannot read the condition 'ndcg@10 => 0.5'"),
        (["--acceptable-if", "map@5", "--failures", "{out}"], "error: --acceptable-if: condition 'map@5': unknown metric 'map@5'"),
        (["--acceptable-if", "hit@5"], "error: --acceptable-if decides which cases --failures marks acceptable"),
        (["--failures", "{missing}"], "error: --failures"),
    ],
)
def test_eval_failures_option_errors_are_clean(case_file: Path, tmp_path: Path, args: list[str], says: str) -> None:
    out, missing = tmp_path / "f.jsonl", tmp_path / "no" / "such" / "f.jsonl"
    argv = [a.format(out=out, missing=missing) for a in args]
    result = runner.invoke(cli.app, ["eval", str(case_file), "-i", str(tmp_path / "ix"), *argv])
    assert result.exit_code == 2 and says in result.stderr
    assert not out.exists()

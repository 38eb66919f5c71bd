"""What the service's jobs run, called directly: the posted rows are read in memory (no temporary
file) by the readers the command line uses, and the triage is the one verb the CLI calls."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shop_deployment import shop_settings

from querywise.corpus import Chunk
from querywise.failures import write_failures
from querywise.index import build_index
from querywise.server.schemas import EvalJobRequest, TriageJobRequest
from querywise.server.work import run_eval, run_triage
from querywise.service import QueryWise
from querywise.triage import FailureRow, TriageTarget, load_failures, triage

ROWS = [
    {"id": "f1", "question": "how long is the warranty on the Vela X3?", "retrieved": ["shipping", "returns"], "gold_chunk": "x3-warranty"},
    {"id": "f2", "question": "replacement ear pads", "retrieved": ["shipping"], "gold_text": "Replacement cushions for the Vela X3"},
    {"id": "ok", "question": "shipping time", "acceptable": True},
]


def _progress(phase: str, total: int | None) -> Any:
    return lambda n: None


@pytest.fixture
def deployment(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> Iterator[QueryWise]:
    settings = shop_settings(tmp_path)
    with build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix, QueryWise(settings, ix) as qw:
        yield qw


@pytest.fixture
def no_temporary_files(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a job wrote the posted rows to a temporary file")

    for name in ("TemporaryDirectory", "NamedTemporaryFile", "mkstemp", "mkdtemp"):
        monkeypatch.setattr(tempfile, name, refused)


@pytest.mark.usefixtures("no_temporary_files")
def test_a_triage_job_reads_the_posted_rows_in_memory_as_the_cli_reads_the_file(deployment: QueryWise, tmp_path: Path) -> None:
    body = TriageJobRequest(failures=ROWS, k=5, context_k=2)
    got = run_triage(deployment, body, _progress)
    # the same rows from a file, through the same verb and options: the same report
    path = tmp_path / "failures.jsonl"
    write_failures(path, [FailureRow.model_validate(r) for r in ROWS])
    from_file = triage(load_failures(path), TriageTarget.of(deployment), body.options).to_json()
    assert got == from_file
    assert [c["id"] for c in got["cases"]] == ["f1", "f2"] and got["sample"]["population"]["eval_total"] == 3  # type: ignore[index]


@pytest.mark.usefixtures("no_temporary_files")
def test_a_bad_posted_row_is_named_by_its_number(deployment: QueryWise) -> None:
    body = TriageJobRequest(failures=[ROWS[0], {"id": "f9", "question": "no gold"}])
    with pytest.raises(ValueError, match=r"^row 2: .*no gold"):
        run_triage(deployment, body, _progress)
    with pytest.raises(ValueError, match=r"^row 1: missing 'message'"):
        run_eval(deployment, EvalJobRequest(cases=[{"id": "c", "relevant": ["x"]}]), _progress)


def test_the_request_is_refused_by_the_options_rule() -> None:
    with pytest.raises(ValueError, match=r"--context-k \(9\) must be below --k \(5\)"):
        TriageJobRequest(failures=ROWS, k=5, context_k=9)
    assert TriageJobRequest(failures=ROWS, k=5, context_k=2, sample=1, seed=3).options.model_dump(include={"k", "context_k", "sample", "seed"}) == \
        {"k": 5, "context_k": 2, "sample": 1, "seed": 3}


def test_a_triage_job_takes_its_context_from_the_files_rule(deployment: QueryWise) -> None:
    """Without a context_k the job cuts generation from ranking where the failures' own rule does,
    as the CLI and the workbench's form (whose default it sets) do."""
    made = {"acceptable_if": "hit@3", "context_k": 3}
    rows = [{**r, "made_by": made} for r in ROWS]
    got = run_triage(deployment, TriageJobRequest(failures=rows), _progress)
    assert got["sample"]["context_k"] == 3 and "failures file's rule" in got["sample"]["k_rule"]  # type: ignore[index]
    told = run_triage(deployment, TriageJobRequest(failures=rows, k=5, context_k=2), _progress)
    assert told["sample"]["context_k"] == 2 and any("hit@3" in w for w in told["warnings"])  # type: ignore[union-attr]

"""`evaluate` checks the cases' judged ids against the index before it runs: the wrong index is
an error, not an nDCG of 0.000; ids it lacks are a warning carried into the `eval --json` document."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from querywise.config import FilterField, FilterSettings, Settings
from querywise.corpus import Chunk
from querywise.deployment_check import DeploymentError
from querywise.evaluation.cases import Case
from querywise.evaluation.metrics import parse_metrics
from querywise.evaluation.report import evaluate
from querywise.evaluation.result import EvalResult
from querywise.index import Index, build_index
from querywise.service import QueryWise

METRICS = parse_metrics(["ndcg@10"])


@pytest.fixture
def index(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> Iterator[Index]:  # type: ignore[no-untyped-def]
    # One record of the shop cut into two chunks, as ingest does with a long record (contract: doc_id in the payload).
    manual = [
        Chunk(id="manual#0", text="Reset the Vela X3 by holding both buttons.", payload={"doc_id": "manual", "markets": ["eu"]}),
        Chunk(id="manual#1", text="Pair the Vela X3 from the Bluetooth menu.", payload={"doc_id": "manual", "markets": ["eu"]}),
    ]
    ix = build_index([*shop, *manual], tmp_path / "ix", settings=settings, embedder=hash_embedder)
    yield ix
    ix.close()


def _case(cid: str, message: str, relevant: list[str]) -> Case:
    return Case(id=cid, message=message, relevant=dict.fromkeys(relevant, 1), slices=["standalone"])


def test_cases_judged_on_another_index_are_an_error_before_anything_runs(index: Index, settings: Settings) -> None:
    cases = [_case(f"q{i}", "warranty", [f"MED-{i}", f"PMC-{i}"]) for i in range(206)]
    with pytest.raises(DeploymentError) as caught:
        evaluate(cases, QueryWise(settings, index), METRICS, mode="bm25", probe_access=False)
    message = str(caught.value)
    assert message.startswith(f"none of the 412 judged ids is in the index {index.root}")
    assert "'MED-0', 'PMC-0', 'MED-1', ..." in message and "wrong index?" in message


def test_judged_ids_the_index_lacks_are_a_warning_in_the_report_and_its_json(index: Index, settings: Settings) -> None:
    cases = [
        _case("w", "Vela X3 Pro warranty", ["x3pro-warranty"]),
        _case("m", "how do I reset the Vela X3", ["manual"]),  # a document id: its record was cut into chunks
        _case("g", "pairing", ["gone-since-the-rebuild"]),
    ]
    report = evaluate(cases, QueryWise(settings, index), METRICS, mode="bm25", probe_access=False)
    assert report.warnings == [f"1 of 3 judged ids are not in the index {index.root} (e.g. 'gone-since-the-rebuild'); cases judged on them can never find them"]
    data = json.loads(EvalResult.from_report(report).model_dump_json())
    assert data["warnings"] == report.warnings and list(data)[-1] == "warnings"
    assert EvalResult.model_validate(data).warnings == report.warnings


def test_the_deployments_start_up_warnings_reach_the_report(index: Index, settings: Settings) -> None:
    noisy = settings.model_copy(update={"filters": FilterSettings(fields={"colour": FilterField(type="keyword")})})
    report = evaluate([_case("w", "Vela X3 Pro warranty", ["x3pro-warranty"])], QueryWise(noisy, index), METRICS, mode="bm25", probe_access=False)
    assert len(report.warnings) == 1 and report.warnings[0].startswith("filter field 'colour': no chunk of the index carries it")
    clean = evaluate([_case("w", "Vela X3 Pro warranty", ["x3pro-warranty"])], QueryWise(settings, index), METRICS, mode="bm25", probe_access=False)
    assert clean.warnings == [] and "warnings" not in json.loads(EvalResult.from_report(clean).model_dump_json())

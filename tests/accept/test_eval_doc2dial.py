"""Issue 7: doc2dial through the harness: recall@5 of the gold chunk, raw vs the follow-up move.

The gold chunk is the chunk holding the grounding span's start. The follow-up move here is the
deterministic form (the conversation's referent carried into the message, with the agent's last
answer; only where the gate flags the message).
Pass-through is the default, so the standalone turns must not get worse.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from querywise.chunking import Chunker
from querywise.config import Settings
from querywise.evaluation.ablation import AblationReport, plan_ablation, run_ablation
from querywise.evaluation.cases import Case, load_doc2dial
from querywise.evaluation.metrics import parse_metrics
from querywise.index import Index, build_index
from querywise.service import QueryWise

DOC2DIAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "doc2dial"
STRIDE = 2  # every other turn (all four sites); the bench runs all 3,972


@pytest.fixture(scope="session")
def doc2dial(embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Index, list[Case]]]:
    if not DOC2DIAL.exists():
        pytest.skip(f"{DOC2DIAL} not found")
    chunks, cases = load_doc2dial(DOC2DIAL, Chunker())
    ix = build_index(chunks, tmp_path_factory.mktemp("doc2dial") / "ix", embedder=embedder)
    yield ix, cases[::STRIDE]
    ix.close()


@pytest.fixture(scope="session")
def ablation(doc2dial: tuple[Index, list[Case]]) -> AblationReport:
    ix, cases = doc2dial
    plan = plan_ablation(Settings(), ["follow_up"])
    return run_ablation(cases, QueryWise(Settings(), ix), plan, parse_metrics(["recall@5", "ndcg@10"]))


def _delta(report: AblationReport, slice_: str) -> Any:
    return next(d.diff for d in report.deltas if d.slice == slice_ and d.metric == "recall@5")


def test_loader_gold_chunk_holds_the_grounding_start(doc2dial: tuple[Index, list[Case]]) -> None:
    ix, cases = doc2dial
    chunks = {c.id: c for c in ix.chunks()}
    import gzip
    import json

    with gzip.open(DOC2DIAL / "validation_turns.jsonl.gz", "rt", encoding="utf-8") as fh:
        starts = {r["id"]: r["answer_start"] for r in map(json.loads, fh)}
    for case in cases[:300]:
        (gold,) = case.relevant
        c = chunks[gold]
        assert c.payload["start"] - 2 <= starts[case.id] < c.payload["end"], case.id  # (a blank line before a chunk goes to it)


def test_follow_up_move_helps_follow_ups_and_leaves_standalone_turns_alone(ablation: AblationReport) -> None:
    base, follow = ablation.arms
    standalone = _delta(ablation, "standalone")
    # Pass-through: the standalone turns are searched exactly as before. (The delta is not exactly 0
    # only because the engine orders equal RRF scores arbitrarily from one query to the next.)
    assert standalone.n > 500 and standalone.direction >= 0 and abs(standalone.delta) < 0.01
    searched = {arm.arm.name: {c.id: c.searched for c in arm.cases if "standalone" in c.slices} for arm in (base, follow)}
    assert searched["baseline"] == searched["+follow_up"]
    follow_ups = _delta(ablation, "follow_up")
    assert follow_ups.n > 300
    assert follow_ups.delta > 0 and follow_ups.direction == 1  # significantly better on the turns the gate flags
    assert follow.slices["follow_up"]["recall@5"] > base.slices["follow_up"]["recall@5"]

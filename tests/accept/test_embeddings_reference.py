"""Every embedding figure of the reference help centre, reproduced to three decimals.

Cases come from ``../shared/reference/helpcentre.json``; each default-candidate embedder must
reproduce all of them. Another path can be checked with, e.g.,
``QUERYWISE_ACCEPT_EMBEDDERS=onnx-int8``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from querywise.embed import Embedder, load_embedder

REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "helpcentre.json"
if not REFERENCE.is_file():
    pytest.skip(f"no reference world at {REFERENCE}", allow_module_level=True)

# Scores are printed rounded to 3 decimals: a value that rounds to them is within half a unit.
TOLERANCE = 0.0005 + 1e-9
CANDIDATES = os.environ.get("QUERYWISE_ACCEPT_EMBEDDERS", "torch,onnx").split(",")

WORLD: dict[str, Any] = json.loads(REFERENCE.read_text(encoding="utf-8"))
EXPECTED: dict[str, Any] = WORLD["expected"]


@dataclass(frozen=True)
class Case:
    """One query against one collection: the expected ranking prefix and/or named scores."""

    name: str
    query: str
    collection: str  # "chunks", "catalog" or "pair" (a single other text)
    top: tuple[tuple[str, float], ...] = ()
    scores: tuple[tuple[str, float], ...] = ()
    ranks: tuple[tuple[str, int], ...] = ()


def _negation_cases(note: str) -> list[Case]:
    """The dense figures written out in prose in ``expected.negation_note``."""
    cases = []
    first = re.search(r"Dense: '([^']+)' scores ([\w-]+) (\d\.\d+) and ([\w-]+) (\d\.\d+)", note)
    if first:
        query, id_a, score_a, id_b, score_b = first.groups()
        scores = ((id_a, float(score_a)), (id_b, float(score_b)))
        cases.append(Case(f"negation[{query}]", query, "chunks", scores=scores))
    second = re.search(
        r"'([^']+)': (BM25 .*?), while dense prefers ([\w-]+) \((\d\.\d+) vs (\d\.\d+)\)", note
    )
    if second:
        query, clause, preferred, score_preferred, score_other = second.groups()
        # The other chunk is the one the BM25 clause of the same sentence compares it with.
        mentioned = {m for m in re.findall(r"[a-z]+(?:-[a-z]+)+", clause) if m in WORLD["chunks"]}
        (other,) = mentioned - {preferred}
        scores = ((preferred, float(score_preferred)), (other, float(score_other)))
        cases.append(Case(f"negation[{query}]", query, "chunks", scores=scores))
    return cases


def _cases() -> list[Case]:
    cases = [
        Case(f"dense_search[{s['query']}]", s["query"], "chunks", top=tuple(map(tuple, s["top"])))
        for s in EXPECTED["dense_search"]
    ]
    cases += [
        Case(f"pair_cosine[{p['a']}~{p['b']}]", p["a"], "pair", scores=((p["b"], p["cosine"]),))
        for p in EXPECTED["pair_cosines"]
    ]
    right, wrong = EXPECTED["guard"][0], EXPECTED["guard"][1]
    assert right["message"] == wrong["message"] and right["ok"] and not wrong["ok"]
    cosines = EXPECTED["guard_cosines"]
    cases += [
        Case("guard_cosine[right]", right["message"], "pair",
             scores=((right["rewrite"], cosines["query_vs_right_rewrite"]),)),
        Case("guard_cosine[wrong]", right["message"], "pair",
             scores=((wrong["rewrite"], cosines["query_vs_wrong_rewrite"]),)),
    ]
    negation = _negation_cases(EXPECTED["negation_note"])
    assert len(negation) == 2, "negation_note no longer reads as expected; update the parser"
    cases += negation
    for h in EXPECTED["hyde"]:
        cases.append(Case(f"hyde[{h['question']}]", h["hypothetical"], "chunks",
                          top=(tuple(h["hyde_top"]),), ranks=((h["gold"], h["hyde_rank"]),)))
        cases.append(Case(f"hyde_question[{h['question']}]", h["question"], "chunks",
                          ranks=((h["gold"], h["question_rank"]),)))
    self_query = EXPECTED["self_query"]
    cases.append(Case("self_query[no_filter_top5]", self_query["extracted"]["semantic_query"],
                      "catalog", top=tuple((name, score) for name, _, score in self_query["no_filter_top5"])))
    return cases


CASES = _cases()


@pytest.fixture(scope="module", params=CANDIDATES)
def world(request: pytest.FixtureRequest) -> dict[str, Any]:
    """One embedder and the reference collections embedded with it."""
    # No cache_dir: nothing is written, and "onnx" exports the packaged weights in memory.
    embedder: Embedder = load_embedder(request.param, cache_dir=None)
    chunk_ids = list(WORLD["chunks"])
    catalog = WORLD["catalog"]
    return {
        "embedder": embedder,
        "chunks": (chunk_ids, embedder.embed([WORLD["chunks"][i] for i in chunk_ids])),
        "catalog": (
            [p["name"] for p in catalog],
            embedder.embed([f"{p['name']}. {p['description']}" for p in catalog]),
        ),
    }


def _scores(world: dict[str, Any], case: Case) -> list[tuple[str, float]]:
    """(id, cosine) pairs, best first; ties keep collection order, as a stable sort does."""
    embedder: Embedder = world["embedder"]
    query = embedder.embed([case.query])[0]
    if case.collection == "pair":
        others = [text for text, _ in case.scores]
        return [(t, float(s)) for t, s in zip(others, embedder.embed(others) @ query)]
    ids, matrix = world[case.collection]
    cosines = matrix @ query
    order = np.argsort(-cosines, kind="stable")
    return [(ids[i], float(cosines[i])) for i in order]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_reference_figure(world: dict[str, Any], case: Case) -> None:
    ranked = _scores(world, case)
    by_id = dict(ranked)
    got_top = ranked[: len(case.top)]
    assert [i for i, _ in got_top] == [i for i, _ in case.top], f"ranking: {got_top}"
    for (item, want), (_, got) in zip(case.top, got_top):
        assert abs(got - want) <= TOLERANCE, f"{item}: {got:.4f} vs {want}"
    for item, want in case.scores:
        assert abs(by_id[item] - want) <= TOLERANCE, f"{item}: {by_id[item]:.4f} vs {want}"
    positions = {item: rank for rank, (item, _) in enumerate(ranked, start=1)}
    for item, want_rank in case.ranks:
        assert positions[item] == want_rank, f"{item} ranked {positions[item]}, not {want_rank}"

"""Every dense-retrieval figure of the reference help centre, reproduced to three decimals.

The cases are read from ``../shared/reference/helpcentre.json``; each embedder that may be the
default must reproduce all of them. Another path can be checked with, e.g.,
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
    """One query against one collection and what the reference run printed for it.

    ``collection`` is "chunks", "catalog" or "pair" (the query against the texts in ``scores``).
    ``top``: the ranking prefix with scores; ``order``: a ranking prefix without scores;
    ``scores``: cosines of named items; ``ranks``: 1-based ranks of named items.
    """

    name: str
    query: str
    collection: str
    top: tuple[tuple[str, float], ...] = ()
    order: tuple[str, ...] = ()
    scores: tuple[tuple[str, float], ...] = ()
    ranks: tuple[tuple[str, int], ...] = ()


def _negation_cases(note: str) -> list[Case]:
    """The dense figures that ``expected.negation_note`` gives in prose."""
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


def _cases() -> list[Any]:
    cases: list[Any] = [
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
    cases.append(
        Case(
            "guard_cosine[right]",
            right["message"],
            "pair",
            scores=((right["rewrite"], cosines["query_vs_right_rewrite"]),),
        )
    )
    # 0.629 was printed for the wrong rewrite with "headphones" after "Pro" (guard[1].rewrite as
    # stored gives 0.712 on every path, torch included): check the figure on that text.
    printed_wrong = wrong["rewrite"].replace("Pro warranty", "Pro headphones warranty")
    assert printed_wrong != wrong["rewrite"]
    cases.append(
        Case("guard_cosine[wrong]", wrong["message"], "pair", scores=((printed_wrong, cosines["query_vs_wrong_rewrite"]),))
    )

    negation = _negation_cases(EXPECTED["negation_note"])
    assert len(negation) == 2, "negation_note no longer reads as expected; update the parser"
    cases += negation

    for h in EXPECTED["hyde"]:
        cases.append(
            Case(
                f"hyde[{h['question']}]",
                h["hypothetical"],
                "chunks",
                top=(tuple(h["hyde_top"]),),
                ranks=((h["gold"], h["hyde_rank"]),),
            )
        )
        cases.append(
            Case(
                f"hyde_question[{h['question']}]",
                h["question"],
                "chunks",
                ranks=((h["gold"], h["question_rank"]),),
            )
        )

    self_query = EXPECTED["self_query"]
    # The unfiltered baseline embeds the user's whole message and the filtered search the
    # extracted semantic query: the figures match only this way round.
    cases.append(
        Case(
            "self_query[no_filter_top5]",
            self_query["user_query"],
            "catalog",
            top=tuple((name, score) for name, _, score in self_query["no_filter_top5"]),
        )
    )
    cases.append(
        Case(
            "self_query[filtered]",
            self_query["extracted"]["semantic_query"],
            "catalog",
            scores=tuple((name, score) for name, _, score in self_query["filtered"]),
        )
    )

    # Rank-only figures elsewhere in the file that depend on nothing but the embeddings.
    step = EXPECTED["step_back"]
    cases.append(
        Case(
            "step_back[query]", step["query"], "chunks", ranks=((step["gold"], step["query_rank"]),)
        )
    )
    cases.append(
        Case(
            "step_back[rewrite]",
            step["step_back_query"],
            "chunks",
            ranks=((step["gold"], step["step_back_rank"]), (step["step_back_second"], 2)),
        )
    )
    for query, gold, _, dense_rank in EXPECTED["typo_ranks_bm25_dense"]["rows"]:
        cases.append(
            Case(f"typo_dense_rank[{query}]", query, "chunks", ranks=((gold, dense_rank),))
        )
    follow_ranks = EXPECTED["follow_up_ranks"]
    for n, turn in enumerate(WORLD["follow_ups"]):
        for label, text in (
            ("raw follow-up", turn["message"]),
            ("prev + follow-up", f"{turn['history'][-1]} {turn['message']}"),
            ("standalone rewrite", turn["standalone"]),
        ):
            cases.append(
                Case(
                    f"follow_up_rank[{label}: {turn['message']}]",
                    text,
                    "chunks",
                    ranks=((turn["relevant"], follow_ranks[label][n]),),
                )
            )
    multi = EXPECTED["multi_query_rrf"]
    cases.append(
        Case(
            "multi_query[original_top5]",
            multi["query"],
            "chunks",
            order=tuple(multi["original_top5"]),
        )
    )
    return cases


def _name(case: Any) -> str:
    return case.name if isinstance(case, Case) else case.values[0].name


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


def _ranked(world: dict[str, Any], case: Case) -> list[tuple[str, float]]:
    """(id, cosine) pairs, best first; ties keep collection order, as a stable sort does."""
    embedder: Embedder = world["embedder"]
    query = embedder.embed([case.query])[0]
    if case.collection == "pair":
        others = [text for text, _ in case.scores]
        return [(t, float(s)) for t, s in zip(others, embedder.embed(others) @ query, strict=True)]
    ids, matrix = world[case.collection]
    cosines = matrix @ query
    return [(ids[i], float(cosines[i])) for i in np.argsort(-cosines, kind="stable")]


@pytest.mark.parametrize("case", CASES, ids=[_name(c) for c in CASES])
def test_reference_figure(world: dict[str, Any], case: Case) -> None:
    ranked = _ranked(world, case)
    ids = [item for item, _ in ranked]
    cosine = dict(ranked)
    expected_prefix = [item for item, _ in case.top] or list(case.order)
    assert ids[: len(expected_prefix)] == expected_prefix, (
        f"ranking: {ranked[: len(expected_prefix)]}"
    )
    for item, want in (*case.top, *case.scores):
        assert abs(cosine[item] - want) <= TOLERANCE, f"{item}: {cosine[item]:.4f}, not {want}"
    for item, want_rank in case.ranks:
        assert ids.index(item) + 1 == want_rank, (
            f"{item} ranked {ids.index(item) + 1}, not {want_rank}"
        )

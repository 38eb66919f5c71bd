"""Issue 2: every retrieval figure of the reference help centre, through the product's index."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from querywise.conditions import parse_where
from querywise.corpus import Chunk
from querywise.index import Index, build_index, rrf


@pytest.fixture
def index(reference_index: Index) -> Index:
    return reference_index


def _rank(index: Index, query: str, gold: str, mode: str = "dense") -> int | None:
    ids = [h.id for h in index.search(query, mode=mode, k=len(index))]  # type: ignore[arg-type]
    return ids.index(gold) + 1 if gold in ids else None


def test_dense_search_ids_and_scores(index: Index, reference: dict[str, Any]) -> None:
    for row in reference["expected"]["dense_search"]:
        hits = index.search(row["query"], mode="dense", k=row["k"])
        assert [[h.id, round(h.score, 3)] for h in hits] == row["top"]


def test_pair_cosines(embedder: Any, reference: dict[str, Any]) -> None:
    for row in reference["expected"]["pair_cosines"]:
        a, b = embedder.embed([row["a"], row["b"]])
        assert round(float(np.dot(a, b)), 3) == row["cosine"]


@pytest.mark.parametrize(
    ("strategy", "query"),
    [
        ("raw follow-up", lambda f: f["message"]),
        ("prev + follow-up", lambda f: f["history"][-1] + " " + f["message"]),
        ("standalone rewrite", lambda f: f["standalone"]),
    ],
)
def test_follow_up_ranks(index: Index, reference: dict[str, Any], strategy: str, query: Any) -> None:
    ranks = [_rank(index, query(f), f["relevant"]) for f in reference["follow_ups"]]
    assert ranks == reference["expected"]["follow_up_ranks"][strategy]


def test_negation_note_scores(index: Index, reference: dict[str, Any]) -> None:
    note = reference["expected"]["negation_note"]
    for query, pairs in [
        ("Can I return unopened earbuds?", [("returns-opened", 0.731), ("returns-unused", 0.482)]),
        ("Can I return unused earbuds?", [("returns-opened", 0.706), ("returns-unused", 0.518)]),
    ]:
        assert query in note
        scores = {h.id: round(h.score, 3) for h in index.search(query, mode="dense", k=len(index))}
        for cid, score in pairs:
            assert f"{score}" in note and scores[cid] == score


def test_multi_query_rrf(index: Index, reference: dict[str, Any]) -> None:
    mq = reference["expected"]["multi_query_rrf"]
    lists = [[h.id for h in index.search(q, mode="dense", k=10)] for q in [mq["query"], *mq["variants"]]]
    assert lists[0][:5] == mq["original_top5"]
    fused = rrf(lists, k=60, depth=10)
    assert [cid for cid, _ in fused[:5]] == mq["fused_top5"]
    assert round(fused[0][1], 4) == 0.0645 and round(fused[3][1], 4) == 0.0623


def test_hyde_and_step_back_ranks(index: Index, reference: dict[str, Any]) -> None:
    for row in reference["expected"]["hyde"]:
        assert _rank(index, row["question"], row["gold"]) == row["question_rank"]
        assert _rank(index, row["hypothetical"], row["gold"]) == row["hyde_rank"]
        (top,) = index.search(row["hypothetical"], mode="dense", k=1)
        assert [top.id, round(top.score, 3)] == row["hyde_top"]
    sb = reference["expected"]["step_back"]
    assert _rank(index, sb["query"], sb["gold"]) == sb["query_rank"]
    first, second = index.search(sb["step_back_query"], mode="dense", k=2)
    assert (first.id, second.id) == (sb["gold"], sb["step_back_second"]) and sb["step_back_rank"] == 1


def test_self_query_filters_run_inside_the_engine(reference: dict[str, Any], embedder: Any, tmp_path: Path) -> None:
    sq = reference["expected"]["self_query"]
    products = [
        Chunk(
            id=str(p["id"]),
            text=f"{p['name']}. {p['description']}",
            payload={k: p[k] for k in ("name", "category", "brand", "price_usd", "released", "markets")},
        )
        for p in reference["catalog"]
    ]
    with build_index(products, tmp_path / "catalog", embedder=embedder) as catalog:
        # Unfiltered, the reference searched the raw message; filtered, the extracted
        # semantic query (as a self-query retriever does).
        top = catalog.search(sq["user_query"], mode="dense", k=5)
        assert [[h.payload["name"], h.payload["price_usd"], round(h.score, 3)] for h in top] == sq["no_filter_top5"]
        f = sq["extracted"]["filters"]
        where = parse_where(
            [
                f"category={f['category']}",
                f"price_usd<{f['price_below']}",
                f"released>{f['released_after']}",
                f"markets={sq['session_market']}",  # access comes from the session, never the message
            ]
        )
        hits = catalog.search(sq["extracted"]["semantic_query"], mode="dense", k=10, where=where)
        assert [[h.payload["name"], h.payload["price_usd"], round(h.score, 3)] for h in hits] == sq["filtered"]


def _reference_tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", text.lower())


def test_typo_ranks_bm25_okapi_and_dense(index: Index, reference: dict[str, Any]) -> None:
    """rank_bm25's BM25Okapi gives the BM25 column; bm25s `robertson` gives the same ranks
    here (its IDF lacks BM25Okapi's epsilon floor, which no query term of these rows hits)."""
    ids = list(reference["chunks"])
    corpus = [_reference_tokens(t) for t in reference["chunks"].values()]
    okapi = BM25Okapi(corpus)
    vocab: dict[str, int] = {}
    tokenized = bm25s.tokenization.Tokenized(ids=[[vocab.setdefault(t, len(vocab)) for t in d] for d in corpus], vocab=vocab)
    robertson = bm25s.BM25(method="robertson", k1=1.5, b=0.75)
    robertson.index(tokenized, show_progress=False)

    def rank_of(scores: Any, gold: str) -> int:
        order = sorted(range(len(ids)), key=lambda i: -scores[i])  # stable: ties by chunk order
        return order.index(ids.index(gold)) + 1

    for query, gold, bm25_rank, dense_rank in reference["expected"]["typo_ranks_bm25_dense"]["rows"]:
        terms = _reference_tokens(query)
        assert rank_of(okapi.get_scores(terms), gold) == bm25_rank
        assert rank_of(robertson.get_scores([t for t in terms if t in vocab]), gold) == bm25_rank
        assert _rank(index, query, gold) == dense_rank

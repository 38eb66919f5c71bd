"""The corpus analysed in batches and worker processes: the same lexicon and vectors as one pass."""

from __future__ import annotations

import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from querywise.conditions import parse_where
from querywise.config import IndexSettings, Settings
from querywise.corpus import Chunk
from querywise.index import Index, analysis, build_index
from querywise.index.analysis import analyse, workers_for
from querywise.index.lexical import doc_length
from querywise.text import COMBINING_END, analyze, identifier_keys, normalize

TEXTS = [
    "To pair the Aero X2, hold the button for 5 seconds. Then pair it again.",
    "Replacement cushions for the Solace 7 (part HC-3471); fits the Solace 7 Pro.",
    "Firmware 3.2 for Solace 7 fixes drop-outs: update via the app.",
    "Caf\u00e9 r\u00e9sum\u00e9 \uff23a\ufb01: Wi-Fi-6 and v1.2, e-mail xk-4471 XK-4471 Xk-4471.",
    "",
    "the the the and of",
]


def _corpus(n: int) -> list[str]:
    rng = np.random.default_rng(7)
    words = [t.split() for t in TEXTS if t]
    return [" ".join(rng.choice(words[i % len(words)], 6)) + f" WS-{i % 97}" for i in range(n)]


def test_the_lexicon_counts_what_the_analyser_says() -> None:
    result = analyse(TEXTS)
    lex = result.lexicon
    every = [analyze(t) for t in TEXTS]
    assert lex.n_docs == len(TEXTS) and lex.total_len == sum(doc_length(t) for t in every)
    # term ids in first-seen order, document frequencies counted once per text
    first_seen = list(dict.fromkeys(t for terms in every for t in terms))
    assert list(lex.terms) == first_seen
    assert lex.df == [sum(t in terms for terms in every) for t in first_seen]
    assert lex.surface == {"x2": "X2", "hc-3471": "HC-3471", "xk-4471": "XK-4471"}  # the most frequent spelling


def test_document_vectors_are_bm25_weights_of_each_texts_terms() -> None:
    result = analyse(TEXTS)
    lex, k1, b = result.lexicon, 1.2, 0.6
    for i, (ids, weights) in enumerate(result.vectors(0, len(TEXTS), k1=k1, b=b)):
        tf = Counter(lex.terms[t] for t in analyze(TEXTS[i]))
        norm = k1 * (1 - b + b * doc_length(analyze(TEXTS[i])) / lex.avgdl)
        assert ids == sorted(tf)
        assert weights == [tf[t] / (tf[t] + norm) for t in ids]  # the same floats, not merely close
    assert result.vectors(1, 3, k1=k1, b=b) == result.vectors(0, len(TEXTS), k1=k1, b=b)[1:3]


def test_worker_processes_give_exactly_what_one_process_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _corpus(3 * analysis.BATCH + 17)
    identify = [t + "\nsku AB-12" for t in texts]
    one = analyse(texts, identify=identify, workers=1)
    monkeypatch.setattr(analysis, "PARALLEL_MIN", 1)
    assert workers_for(len(texts), 2) == 2
    seen: list[int] = []
    two = analyse(texts, identify=identify, workers=2, on_progress=seen.append)
    assert sum(seen) == len(texts) and len(seen) == 4
    assert two.lexicon.dumps() == one.lexicon.dumps()
    assert two.vectors(0, len(texts), k1=1.5, b=0.75) == one.vectors(0, len(texts), k1=1.5, b=0.75)
    assert two.keys == one.keys == [identifier_keys(t) for t in identify]


def test_small_corpora_are_analysed_in_this_process() -> None:
    assert workers_for(100, 0) == 1 and workers_for(analysis.PARALLEL_MIN, 1) == 1


def test_no_combining_character_lies_past_the_folded_range() -> None:
    import sys

    assert not [c for c in range(COMBINING_END, sys.maxunicode + 1) if unicodedata.combining(chr(c))]
    assert normalize("Cafe\u0301 \u1e9b\u0323 \uff23a") == "cafe s ca"  # marks dropped, compatibility forms folded


@pytest.mark.parametrize("mode", ["graph", "acorn", "exact"])
def test_every_filtered_search_mode_finds_the_exact_neighbours(tmp_path: Path, shop: list[Chunk], hash_embedder, mode: str) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(cache_dir=tmp_path / "cache", index=IndexSettings(filtered_search=mode))  # type: ignore[arg-type]
    index = build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder)
    assert index.manifest.payload_graphs is (mode == "graph")
    config = (index.build / "shard" / "edge_config.json").read_text()
    assert ('"payload_m":0' in config.replace(" ", "")) is (mode != "graph")
    where = parse_where(["price<200"])
    for query in ("Vela X3 Pro warranty", "replacement cushions"):
        got = [h.id for h in index.search(query, mode="dense", k=3, where=where)]
        assert got == [h.id for h in index.search(query, mode="dense", k=3, where=where, exact=True)]
    index.close()
    # Reopened under another mode, the index searches the way its build allows.
    other = Index.open(tmp_path / "ix", settings=Settings(cache_dir=tmp_path / "cache"), embedder=hash_embedder)
    assert other.search("warranty", mode="hybrid", k=3, where=where)
    other.close()

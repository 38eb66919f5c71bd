"""The lexicon's spelling data: adjacent-pair counts, identifier spellings, and their files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from querywise.index import lexical
from querywise.index.analysis import analyse
from querywise.index.lexical import Lexicon, word_runs

TEXTS = [
    "To pair the Halden Solace 7, hold the button. Then pair it again.",
    "Replacement cushions for the Solace 7 are part HC-3471; the Solace 7 Pro uses HC-3417.",
]


def test_word_runs_split_at_punctuation_but_not_inside_numbers() -> None:
    assert word_runs("Firmware 3.2 (for Solace 7) fixes drop-outs. Update it.") == [
        ["firmware", "3", "2"], ["for", "solace", "7"], ["fixes", "drop", "outs"], ["update", "it"],
    ]


def test_bigrams_count_adjacent_words_within_runs() -> None:
    lex = analyse(TEXTS).lexicon
    assert lex.bigram_counts["to pair"] == 1
    assert lex.bigram_counts["pair the"] == 1
    assert lex.bigram_counts["then pair"] == 1
    assert lex.bigram_counts["solace 7"] == 3
    assert lex.bigram_counts["part hc"] == 1  # identifiers count by their parts, as `words` splits them
    assert "button then" not in lex.bigram_counts  # a full stop ends a run
    assert "3471 the" not in lex.bigram_counts  # so does a semicolon


def test_surface_keeps_the_corpus_spelling_of_codes() -> None:
    lex = analyse([*TEXTS, "the hc-3471 fits too"]).lexicon
    assert lex.surface == {"hc-3471": "HC-3471", "hc-3417": "HC-3417"}
    assert lex.word_counts["hc-3471"] == 2  # counted once per mention whatever the case


def test_bigrams_are_bounded_on_large_corpora(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["alpha beta"] * 3 + ["gamma delta"] * 2 + [f"w{i} x{i}" for i in range(10)]
    monkeypatch.setattr(lexical, "MAX_BIGRAMS", 50)
    assert len(analyse(texts).lexicon.bigram_counts) == 12  # under the bound: every pair kept
    monkeypatch.setattr(lexical, "MAX_BIGRAMS", 5)
    assert analyse(texts).lexicon.bigram_counts == {"alpha beta": 3, "gamma delta": 2}  # singletons dropped
    monkeypatch.setattr(lexical, "MAX_BIGRAMS", 1)
    assert analyse(texts).lexicon.bigram_counts == {"alpha beta": 3}  # then the rarest


def test_save_and_load_keep_bigrams_and_spellings(tmp_path: Path) -> None:
    lex = analyse(TEXTS).lexicon
    lex.save(tmp_path / "lexicon.json")
    back = Lexicon.load(tmp_path / "lexicon.json")
    assert back.bigram_counts == lex.bigram_counts
    assert back.surface == lex.surface
    assert back.word_counts == lex.word_counts and back.terms == lex.terms


def test_load_reads_lexicons_saved_before_bigrams(tmp_path: Path) -> None:
    lex = analyse(TEXTS).lexicon
    lex.save(tmp_path / "lexicon.json")
    data = json.loads((tmp_path / "lexicon.json").read_text())
    del data["bigrams"], data["surface"]
    (tmp_path / "lexicon.json").write_text(json.dumps(data))
    old = Lexicon.load(tmp_path / "lexicon.json")
    assert old.bigram_counts == {} and old.surface == {}
    assert old.word_counts == lex.word_counts and old.df == lex.df and old.n_docs == 2


def test_document_length_counts_words_not_identifier_aids() -> None:
    # "HC-3471" is indexed as hc, 3471 and hc-3471; "7" as a lone digit: matching aids, not length.
    assert lexical.doc_length(["solac", "7", "hc", "3471", "hc-3471", "cushion"]) == 4
    plain = analyse(["warranty covers cushions", "warranty covers cushions for model 7 part HC-3471"]).lexicon
    lex_words = analyse(["warranty covers cushions", "warranty covers cushions model part hc 3471"]).lexicon
    assert plain.total_len == lex_words.total_len == 3 + 7

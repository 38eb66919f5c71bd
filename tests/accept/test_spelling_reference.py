"""The spelling move on the reference help centre: the vocabulary is its 15 chunks.

`expected.naive_spelling` is what a context-free corrector does; its 'pare' -> 'are' is the
failure to avoid, its other rows and its identifier candidates are what the move must give.
"""

from __future__ import annotations

import difflib
import itertools
from typing import Any

import pytest

from querywise.index.analysis import analyse
from querywise.text import PartNumbers
from querywise.understand.spelling import SpellChecker


@pytest.fixture(scope="module")
def checker(reference: dict[str, Any]) -> SpellChecker:
    lexicon = analyse(list(reference["chunks"].values())).lexicon
    # The help centre declares its part numbers ("(case-insensitive)" is a note): near misses are offered for those.
    parts = PartNumbers([reference["identifier_pattern"].split(" (")[0].replace(r"\b", "")])
    return SpellChecker.from_lexicon(lexicon, part_numbers=parts)


def test_identifier_near_miss_offers_both_real_identifiers(checker: SpellChecker, reference: dict[str, Any]) -> None:
    expected = dict(reference["expected"]["naive_spelling"]["identifier_candidates"])
    similarity = expected.pop("similarity_each")
    ((typed, real),) = expected.items()
    (row,) = [query for query, _ in reference["expected"]["naive_spelling"]["rows"] if typed in query.split()]
    result = checker.check(row)
    offered = result.identifier_candidates[typed]
    assert [c.lower() for c in offered] == real  # never silently chosen: `typed` stays as typed
    assert all(c.isupper() for c in offered)  # in the corpus spelling, not the lower-cased token
    assert typed in (result.corrected or row).split()
    assert [round(difflib.SequenceMatcher(None, typed, c).ratio(), 3) for c in real] == [similarity] * len(real)


def test_pare_becomes_pair_not_are(checker: SpellChecker, reference: dict[str, Any]) -> None:
    (query, naive) = next(r for r in reference["expected"]["naive_spelling"]["rows"] if "pare" in r[0].split())
    assert "are" in naive.split()  # the context-free failure
    result = checker.check(query)
    assert result.corrected is not None and "are" not in result.corrected.split()
    assert result.corrected == query.replace("pare", "pair")
    (fix,) = result.corrections
    assert fix.context and fix.runner_up == "are"


def test_other_naive_rows_are_matched(checker: SpellChecker, reference: dict[str, Any]) -> None:
    rows = [r for r in reference["expected"]["naive_spelling"]["rows"] if "pare" not in r[0].split()]
    assert len(rows) == 3
    for query, naive in rows:
        assert checker.check(query).corrected == naive, query


def test_corrections_give_the_clean_queries_of_the_typo_rank_rows(checker: SpellChecker, reference: dict[str, Any]) -> None:
    """Typo rows are followed by their clean form, which ranks the gold chunk first."""
    rows = reference["expected"]["typo_ranks_bm25_dense"]["rows"]
    pairs = [(typo, clean) for (typo, gold, *_), (clean, gold2, bm25, dense) in itertools.pairwise(rows)
             if gold == gold2 and (bm25, dense) == (1, 1) and typo != clean]
    assert len(pairs) == 3
    for typo, clean in pairs:
        assert checker.check(typo).corrected == clean

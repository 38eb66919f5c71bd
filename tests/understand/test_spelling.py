"""The spelling move on the bundled demo help centre, plus small hand-built lexicons for the
scoring rules (context against frequency, the query log)."""

from __future__ import annotations

import itertools
import string
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from querywise.corpus import load_corpus
from querywise.demo import demo_file
from querywise.index.analysis import analyse
from querywise.index.lexical import Lexicon
from querywise.text import PartNumbers
from querywise.understand.spelling import _QUOTED, _TOKEN, SpellChecker, Spelling, _quoted_spans, _tokens, query_log_counts


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return analyse([c.search_text for c in load_corpus(demo_file("helpcentre.jsonl"))]).lexicon


@pytest.fixture(scope="module")
def checker(lexicon: Lexicon) -> SpellChecker:
    return SpellChecker.from_lexicon(lexicon, part_numbers=PartNumbers(PartNumbers.shapes(["HH-7100"])))  # the demo catalog's shape


def _fixes(result: Spelling) -> dict[str, str]:
    return {c.original: c.replacement for c in result.corrections}


# -- what is never touched -------------------------------------------------------------------


def test_known_identifiers_are_untouched_and_offer_nothing(checker: SpellChecker) -> None:
    result = checker.check("is HC-3417 the same as hc-3471 for the Solace 7")
    assert result.corrected is None
    assert result.corrections == () and result.identifier_candidates == {}


def test_numbers_are_untouched(checker: SpellChecker) -> None:
    result = checker.check("warrenty 2025 for 18 months 12.5")
    assert result.corrected == "warranty 2025 for 18 months 12.5"
    assert _fixes(result) == {"warrenty": "warranty"}
    assert result.identifier_candidates == {}


def test_short_words_are_untouched(checker: SpellChecker) -> None:
    # "teh" is one edit from "the" and "bnd" from "end", but three letters are too little to go on.
    assert checker.check("teh bnd of the tide 4").corrected is None


def test_words_in_the_vocabulary_are_untouched(checker: SpellChecker, lexicon: Lexicon) -> None:
    # "cushion" is rarer than its neighbour "cushions" and "ship" than "shipping": still words of the index.
    assert lexicon.word_counts["cushion"] < lexicon.word_counts["cushions"]
    result = checker.check("one cushion ship")
    assert result.corrected is None and result.declined == ()


def test_quoted_words_are_untouched(checker: SpellChecker) -> None:
    for message in ['search "warrenty" exactly', "search 'warrenty' exactly", "search \u201cwarrenty\u201d"]:
        assert checker.check(message).corrected is None, message
    assert checker.check('"solace" warrenty').corrected == '"solace" warranty'


def test_unknown_codes_without_a_near_miss_are_left_alone(checker: SpellChecker) -> None:
    result = checker.check("ZQ-9090 and AB1234 warranty")
    assert result.corrected is None and result.identifier_candidates == {}


# -- corrections ------------------------------------------------------------------------------


def test_misspelt_product_word_is_corrected_with_its_evidence(checker: SpellChecker, lexicon: Lexicon) -> None:
    result = checker.check("does the halden solce 7 fold")
    assert result.corrected == "does the halden solace 7 fold"
    (fix,) = result.corrections
    assert (fix.original, fix.replacement, fix.distance) == ("solce", "solace", 1)
    assert fix.frequency == lexicon.word_counts["solace"]
    assert "halden solace x4" in fix.context and fix.lift > 1
    assert "'solce' -> 'solace'" in result.reason


def test_leading_capital_is_kept(checker: SpellChecker) -> None:
    assert checker.check("Warrenty on reed 2 pro").corrected == "Warranty on reed 2 pro"


def test_transpositions_count_as_one_edit(checker: SpellChecker) -> None:
    (fix,) = checker.check("headphnoes return policy").corrections
    assert (fix.replacement, fix.distance) == ("headphones", 1)


def test_two_typos_in_a_row(checker: SpellChecker) -> None:
    result = checker.check("replacment cushons for solace 7 pro")
    assert result.corrected == "replacement cushions for solace 7 pro"
    # The first pass sees "lfie", which the index lacks; the second sees "life".
    result = checker.check("batery lfie")
    assert result.corrected == "battery life"
    assert result.corrections[0].context == ("battery life x4",)


def test_near_miss_part_numbers_offer_both_real_identifiers(checker: SpellChecker) -> None:
    result = checker.check("ear cushions hc-3147 for solace 7")
    assert result.identifier_candidates == {"hc-3147": ("HC-3417", "HC-3471")}
    assert result.corrected is None  # offered, never chosen
    result = checker.check("Eartips ET-2228")
    assert result.identifier_candidates == {"ET-2228": ("ET-2208", "ET-2280")}
    assert "ET-2208, ET-2280" in result.reason


def test_near_misses_are_offered_only_for_the_deployment_s_part_numbers(lexicon: Lexicon) -> None:
    # Without part numbers (no catalog, none declared) a code the index lacks is left as typed: no question.
    assert SpellChecker.from_lexicon(lexicon).check("ear cushions hc-3147 for solace 7").identifier_candidates == {}
    declared = SpellChecker.from_lexicon(lexicon, part_numbers=PartNumbers([r"ET-?\d{4}"]))
    assert declared.check("ear cushions hc-3147").identifier_candidates == {}  # not this deployment's shape
    assert declared.check("Eartips ET-2228").identifier_candidates == {"ET-2228": ("ET-2208", "ET-2280")}


# -- evidence ---------------------------------------------------------------------------------


def test_real_word_changes_only_with_context(checker: SpellChecker) -> None:
    # "pare" is an English word: a context-free corrector turns it into the frequent "are".
    alone = checker.check("pare")
    assert alone.corrected is None
    assert alone.declined[0].best == "are" and "English word" in alone.declined[0].why
    weak = checker.check("how do i pare the tide 4")  # the corpus says "save the" once: too little for 2 edits
    assert weak.corrected is None and "does not pay for 2 edit(s)" in weak.reason
    result = checker.check("how to pare solace 7 pro")
    assert result.corrected == "how to pair solace 7 pro"
    assert set(result.corrections[0].context) == {"to pair x2", "pair solace x1"}


def test_weak_best_candidate_is_left_alone_with_a_reason(checker: SpellChecker) -> None:
    result = checker.check("is the tide 4 watrproof")
    assert result.corrected is None
    assert [(d.word, d.best) for d in result.declined] == [("watrproof", None)]
    assert "no index word within 2 edits" in result.reason


def _toy(**options: object) -> SpellChecker:
    words = {"cable": 40, "table": 4, "dining": 5, "usb": 6, "charging": 3}
    pairs = {"dining table": 3, "usb cable": 2}
    return SpellChecker(words, pairs, real_words=(), **options)  # type: ignore[arg-type]


def test_context_beats_raw_frequency() -> None:
    checker = _toy()
    assert checker.check("xable").corrected == "cable"  # ten times as frequent, same distance
    assert checker.check("dining xable").corrected == "dining table"
    assert checker.check("usb xable").corrected == "usb cable"
    assert checker.candidates("xable", left="dining")[0].word == "table"


def test_margin_gate_declines_near_ties() -> None:
    checker = SpellChecker({"cable": 5, "table": 4}, {}, real_words=())
    result = checker.check("xable")
    assert result.corrected is None and "ambiguous" in result.declined[0].why


def test_two_edits_on_a_short_word_need_context_that_pays_for_them() -> None:
    words = {"cover": 3, "screen": 4, "glass": 4, "filler": 1000}
    checker = SpellChecker(words, {"screen cover": 2, "glass cover": 1}, real_words=())
    assert checker.check("kovr").corrected is None  # 2 edits on 4 letters, no context
    # One "glass cover" among 4 "glass": lift ~57, and 0.1**2 * 57 < 1.
    assert checker.check("glass kovr").corrected is None
    # Two "screen cover" among 4 "screen": lift ~113, and 0.1**2 * 113 >= 1.
    assert checker.check("screen kovr").corrected == "screen cover"
    assert checker.check("covver").corrected == "cover"  # 1 edit: frequency is enough


def test_query_log_shifts_a_choice(lexicon: Lexicon) -> None:
    without = SpellChecker.from_lexicon(lexicon)
    assert without.check("casse").corrected == "case"  # 19 against 2 in the help centre
    log = query_log_counts(["do you sell cases", "cases for the knoll", "leather cases", "is case included"])
    with_log = SpellChecker.from_lexicon(lexicon, query_log=log)
    fix = with_log.check("casse").corrections[0]
    assert (fix.replacement, fix.log_frequency) == ("cases", 3)


# -- the lexicon as saved, and the build cost ----------------------------------------------------


def test_a_saved_and_loaded_lexicon_gives_the_same_result(lexicon: Lexicon, tmp_path: Path, checker: SpellChecker) -> None:
    lexicon.save(tmp_path / "lexicon.json")
    loaded = SpellChecker.from_lexicon(Lexicon.load(tmp_path / "lexicon.json"), part_numbers=checker.part_numbers)
    for message in ["how to pare solace 7 pro", "does CC-6510 charge the Tide 4 Lite", "replacment cushons"]:
        assert loaded.check(message) == checker.check(message)


def test_building_for_300k_words_is_cheap() -> None:
    vocabulary = {"".join(t): 1 for t in itertools.islice(itertools.product(string.ascii_lowercase, repeat=4), 300_000)}
    started = time.perf_counter()
    checker = SpellChecker(vocabulary, {}, real_words=())
    assert time.perf_counter() - started < 2.0  # ~0.05 s measured; a SymSpell delete index takes ~20 s
    assert {c.word for c in checker.candidates("abcdq")} >= {"abcd", "abcq"}


# -- bounded work (issue #12) ------------------------------------------------------------------

_TEXTS = st.text(alphabet=st.sampled_from(list("aB1-._ '\u2019\"\u201c\u201d\u2018`\n,é")), max_size=24)


@given(_TEXTS)
def test_tokens_are_the_token_pattern_s_matches(text: str) -> None:
    assert [(m.span(), m.group(0)) for m in _tokens(text)] == [(m.span(), m.group(0)) for m in _TOKEN.finditer(text)]


@given(_TEXTS)
def test_quoted_spans_are_the_quote_pattern_s_matches(text: str) -> None:
    assert _quoted_spans(text) == [m.span() for m in _QUOTED.finditer(text)]


def test_look_ups_are_bounded_by_the_index_words_compared(lexicon: Lexicon) -> None:
    checker = SpellChecker.from_lexicon(lexicon)

    def cost(word: str) -> int:  # the vocabulary words of nearby lengths, compared in one look-up
        return sum(len(checker._by_length.get(n, [])) for n in range(len(word) - 2, len(word) + 3))

    typos = "warrenty firmwear warrenty cushons replacment"
    assert checker.check(typos).corrected == "warranty firmware warranty cushions replacement"
    bounded = SpellChecker.from_lexicon(lexicon, max_compared=cost("warrenty") + cost("firmwear") + cost("cushons"))
    result = bounded.check(typos)  # "warrenty" is looked up once; "replacment" no longer fits
    assert result.corrected == "warranty firmware warranty cushions replacment"
    assert "left the other unknown words as typed" in result.reason


def test_a_message_past_the_analysed_part_is_corrected_in_its_first_part_only(checker: SpellChecker) -> None:
    message = "warrenty " + "ok " * 2_000 + "warrenty"
    result = checker.check(message)
    assert result.corrected == "warranty " + "ok " * 2_000 + "warrenty"
    assert "read the first 3,998 of 6,017 characters" in result.reason

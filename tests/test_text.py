import time

from hypothesis import given
from hypothesis import strategies as st

from querywise.text import IDENTIFIER_COMPOUND, SpanSet, analysed_history, analysed_part, analyze, compounds, normalize, words


def test_identifier_is_kept_whole_and_in_parts() -> None:
    assert {"xk-4471", "xk", "4471"} <= set(analyze("Is XK-4471 in stock?"))


def test_identifiers_are_not_stemmed_but_words_are() -> None:
    terms = analyze("cushions for QR-5126 fitted")
    assert "cushion" in terms and "fit" in terms and "qr-5126" in terms


def test_stop_words_removed_only_when_asked() -> None:
    assert "the" not in analyze("the warranty")
    assert "the" in analyze("the warranty", stopwords=False)


def test_normalize_folds_ligatures_and_accents() -> None:
    assert normalize("speciﬁc conﬁguration, Café") == "specific configuration, cafe"


def test_single_digits_survive_as_words() -> None:
    assert "5" in words("hold for 5 seconds")


def test_stop_words_are_the_ones_bm25s_measured_with() -> None:
    from bm25s.stopwords import STOPWORDS_EN as BM25S_EN

    from querywise.text import STOPWORDS_EN

    assert frozenset(BM25S_EN) == STOPWORDS_EN


# --- linear time (issue #12): the same tokens as the patterns that define them ----------------

_PIECES = st.text(alphabet=st.sampled_from(list("ab19-._ 'é,x")), max_size=24)


@given(_PIECES)
def test_compounds_are_the_identifier_pattern_s_matches(text: str) -> None:
    text = normalize(text)
    assert compounds(text) == IDENTIFIER_COMPOUND.findall(text)


def test_compounds_of_a_long_run_without_digits_take_linear_time() -> None:
    started = time.perf_counter()
    assert words("ET-" * 33_334)
    assert compounds("et-" * 33_334 + "1") == ["et-" * 33_334 + "1"]
    assert time.perf_counter() - started < 2.0  # the lookahead's rescans took 131 s


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 6), st.booleans()), max_size=20))
def test_span_set_answers_as_a_scan_of_every_span(ops: list[tuple[int, int, bool]]) -> None:
    taken: list[tuple[int, int]] = []
    spans = SpanSet()
    for start, length, add in ops:
        end = start + length
        assert spans.free(start, end) == all(end <= a or start >= b for a, b in taken)
        if add:
            taken.append((start, end))
            spans.add(start, end)


def test_the_analysed_part_never_cuts_a_word() -> None:
    assert analysed_part("short", 10) == "short"
    assert analysed_part("under $150 please", 12) == "under $150"
    assert analysed_part("x" * 50, 10) == ""
    assert analysed_history(["a" * 10, "b" * 10, "c" * 10], 21) == ["b" * 10, "c" * 10]

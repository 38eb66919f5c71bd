from querywise.text import analyze, normalize, words


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

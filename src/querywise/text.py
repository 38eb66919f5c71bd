"""Tokenising shared by BM25, spelling and the rewrite guard.

One tokenizer for documents and queries, so that what is indexed is what is searched.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from typing import Protocol

__all__ = ["IDENTIFIER_COMPOUND", "STOPWORDS_EN", "analyze", "normalize", "terms_of", "words"]

# Words of two or more characters (as Lucene/bm25s do) plus single digits, which matter
# in product names ("X2", "5 seconds") more than they cost.
_WORD = re.compile(r"\w\w+|\d", re.UNICODE)
# Hyphenated or dotted compounds with at least one digit ("xk-4471", "3.2", "wi-fi-6") are
# also kept whole, so an identifier can match as one token as well as by its parts.
IDENTIFIER_COMPOUND = re.compile(r"\b(?=[\w.-]*\d)[a-z0-9]+(?:[-.][a-z0-9]+)+\b")


def normalize(text: str) -> str:
    """Lower-case, fold compatibility characters (ligatures, full-width) and accents.

    >>> normalize("Ｃaﬁ Résumé")
    'cafi resume'
    """
    if text.isascii():  # the common case, and 10x faster than decomposing
        return text.lower()
    folded = unicodedata.normalize("NFKD", text)
    return "".join(c for c in folded if not unicodedata.combining(c)).lower()


def words(text: str) -> list[str]:
    """The normalised word tokens of `text`, before stop-word removal and stemming."""
    norm = normalize(text)
    return _WORD.findall(norm) + IDENTIFIER_COMPOUND.findall(norm)


# Lucene's classic English stop set, the list bm25s uses for its SciFact numbers (a test keeps
# the two equal). Inlined: importing bm25s for it pulls scipy and numba, ~1 s at first use.
STOPWORDS_EN = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with"]
)


class _Stemmer(Protocol):
    """What we use of PyStemmer's `Stemmer.Stemmer` (the package ships no type information)."""

    def stemWord(self, word: str) -> str: ...  # noqa: N802  (PyStemmer's name)


@lru_cache(maxsize=1)
def _stemmer() -> _Stemmer:
    import Stemmer

    return Stemmer.Stemmer("english")


def analyze(text: str, *, stopwords: bool = True, stem: bool = True) -> list[str]:
    """BM25 terms of `text`: words, minus English stop words, Porter-stemmed (Snowball).

    Compound identifiers are never stemmed.

    >>> analyze("Replacement cushions, part XK-4471")
    ['replac', 'cushion', 'part', 'xk', '4471', 'xk-4471']
    """
    return terms_of(words(text), stopwords=stopwords, stem=stem)


def terms_of(tokens: Iterable[str], *, stopwords: bool = True, stem: bool = True) -> list[str]:
    """`analyze` on tokens already produced by `words` (so an index build tokenises once)."""
    if stopwords:
        tokens = [t for t in tokens if t not in STOPWORDS_EN]
    tokens = list(tokens)
    if not stem:
        return tokens
    stemmer = _stemmer()
    return [t if ("-" in t or "." in t) else stemmer.stemWord(t) for t in tokens]

"""Tokenising shared by BM25, spelling and the rewrite guard.

One tokenizer for documents and queries, so that what is indexed is what is searched.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Protocol

__all__ = [
    "ANALYSIS_CHARS",
    "CODE_TOKEN",
    "HISTORY_ANALYSIS_CHARS",
    "IDENTIFIER_COMPOUND",
    "IDENTIFIER_KEYS",
    "SENTENCE_SPAN",
    "STOPWORDS_EN",
    "PartNumbers",
    "SpanSet",
    "analysed_history",
    "analysed_part",
    "analyze",
    "compounds",
    "identifier_forms",
    "identifier_key",
    "identifier_keys",
    "normalize",
    "plain_words",
    "stem_words",
    "terms_of",
    "words",
]

# Words of two or more characters (as Lucene/bm25s do) plus single digits, which matter
# in product names ("X2", "5 seconds") more than they cost.
_WORD = re.compile(r"\w\w+|\d", re.UNICODE)
# Hyphenated or dotted compounds with at least one digit ("xk-4471", "3.2", "wi-fi-6") are
# also kept whole, so an identifier can match as one token as well as by its parts. The digit
# may come later in the same run of word characters, dots and hyphens: the pattern reads
# `\b(?=[\w.-]*\d)` + `_COMPOUND`. That lookahead scans to the end of the run from every word
# start (quadratic on "et-et-et-..."), so `compounds` matches `_COMPOUND` alone and checks the
# digit once per run; `IDENTIFIER_COMPOUND` is kept as the pattern's definition.
IDENTIFIER_COMPOUND = re.compile(r"\b(?=[\w.-]*\d)[a-z0-9]+(?:[-.][a-z0-9]+)+\b")
_COMPOUND = re.compile(r"\b[a-z0-9]+(?:[-.][a-z0-9]+)+\b")
_RUN = re.compile(r"[\w.-]*")
_LAST_DIGIT = re.compile(r".*\d", re.DOTALL)


_ID_SEPARATORS = re.compile(r"[-._\s]+")


def identifier_key(identifier: str) -> str:
    """The one form identifiers are compared in: upper case, no hyphens, dots, underscores or
    spaces (`WS4402`, `ws-4402` and `WS 4402` are one part).

    >>> identifier_key("ws-4402"), identifier_key("WS 4402")
    ('WS4402', 'WS4402')
    """
    return _ID_SEPARATORS.sub("", identifier).upper()


#: A code-like token: letters and digits, joined by hyphens, dots or underscores ("WS-4402").
CODE_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[-._][A-Za-z0-9]+)*")
#: At most this many identifiers are kept per text (a parts table stays bounded).
MAX_IDENTIFIERS = 64
#: The engine payload field that holds a chunk's `identifier_keys` (written at build, hidden from hits).
IDENTIFIER_KEYS = "_identifier_keys"


def identifier_keys(text: str) -> list[str]:
    """The `identifier_key` of each code in `text` (a token with letters and digits), distinct, in
    order: what an exact lookup matches (see `querywise.understand.exact`).

    >>> identifier_keys("Use the WS-4402 strap (or ws4402 / HC-3471) since 2024")
    ['WS4402', 'HC3471']
    """
    out: dict[str, None] = {}
    for w in CODE_TOKEN.findall(text):
        if w.isalpha() or w.isdigit():  # most tokens: all letters or all digits, told apart in C
            continue
        if any(c.isdigit() for c in w) and any(c.isalpha() for c in w):
            out[identifier_key(w)] = None
            if len(out) >= MAX_IDENTIFIERS:
                break
    return list(out)


class PartNumbers:
    """What a deployment calls a part number: patterns a token (as typed, or its `identifier_key`)
    matches whole, case aside. Declared (`[understanding] part_numbers`) or learned from the shapes
    of the catalog's part numbers (`shapes`); empty for a deployment with neither, which then has
    no part numbers: a gene name, a model name or a measurement is not one.

    >>> PartNumbers(PartNumbers.shapes(["HH-7100"])).matches("hh 7300"), PartNumbers([]).matches("IL-2")
    (True, False)
    """

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(re.compile(p, re.IGNORECASE) for p in dict.fromkeys(patterns))

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matches(self, token: str) -> bool:
        key = identifier_key(token)
        return any(p.fullmatch(token) or p.fullmatch(key) for p in self.patterns)

    @staticmethod
    def shapes(examples: Iterable[str]) -> list[str]:
        """The shapes of `examples` as patterns on their keys: "HH-7100" -> `[A-Z]{2}[0-9]{4}`."""
        out: dict[str, None] = {}
        for example in examples:
            runs = re.findall(r"[A-Z]+|[0-9]+", identifier_key(example))
            if runs:
                out["".join(f"[A-Z]{{{len(r)}}}" if r.isalpha() else f"[0-9]{{{len(r)}}}" for r in runs)] = None
        return list(out)


def identifier_forms(words: Iterable[str]) -> dict[str, str]:
    """Each identifier-like word (letters and digits) under its `identifier_key`, first one kept.

    >>> identifier_forms(["ws-4402", "strap", "WS4402"])
    {'WS4402': 'ws-4402'}
    """
    out: dict[str, str] = {}
    for w in words:
        if any(c.isdigit() for c in w) and any(c.isalpha() for c in w):
            out.setdefault(identifier_key(w), w)
    return out


def normalize(text: str) -> str:
    """Lower-case, fold compatibility characters (ligatures, full-width) and accents.

    >>> normalize("Ｃaﬁ Résumé")
    'cafi resume'
    """
    if text.isascii():  # the common case, and 10x faster than decomposing
        return text.lower()
    return _combining().sub("", unicodedata.normalize("NFKD", text)).lower()


#: Past the last combining character of Unicode (U+1E94A, Adlam).
COMBINING_END = 0x1F000


@lru_cache(maxsize=1)
def _combining() -> re.Pattern[str]:
    """Every combining character (`unicodedata.combining(c) != 0`; none lies past
    `COMBINING_END`, a test checks) as one character class: one pass in C instead of a Python
    test per character (built once, ~0.1 s)."""
    marks = [c for c in map(chr, range(COMBINING_END)) if unicodedata.combining(c)]
    return re.compile("[" + "".join(re.escape(c) for c in marks) + "]")


def words(text: str) -> list[str]:
    """The normalised word tokens of `text`, before stop-word removal and stemming."""
    norm = normalize(text)
    return plain_words(norm) + compounds(norm)


def plain_words(norm: str) -> list[str]:
    """The word tokens of normalised text other than its compounds: none holds "-" or ".".

    >>> plain_words("xk-4471 fits the x2")
    ['xk', '4471', 'fits', 'the', 'x2']
    """
    return _WORD.findall(norm)


def compounds(norm: str) -> list[str]:
    r"""`IDENTIFIER_COMPOUND.findall(norm)`, in time linear in `norm`.

    A match of `_COMPOUND` at p is one of the pattern's exactly when the run of `[\w.-]` from p
    holds a digit; where it does not, no later start in that run can match either, so skipping
    to the match's end loses nothing. The run's last digit is found once per run.

    >>> compounds("xk-4471, wi-fi-6, e-mail and v1.2")
    ['xk-4471', 'wi-fi-6', 'v1.2']
    """
    out: list[str] = []
    run_end = last_digit = -1
    for m in _COMPOUND.finditer(norm):
        start = m.start()
        if start >= run_end:
            run = _RUN.match(norm, start)
            run_end = run.end() if run else start
            digit = _LAST_DIGIT.match(norm, start, run_end)
            last_digit = digit.end() - 1 if digit else -1
        if last_digit >= start:
            out.append(m.group(0))
    return out


# Lucene's classic English stop set, the list bm25s uses for its SciFact numbers (a test keeps
# the two equal). Inlined: importing bm25s for it pulls scipy and numba, ~1 s at first use.
STOPWORDS_EN = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with"]
)


class _Stemmer(Protocol):
    """What we use of PyStemmer's `Stemmer.Stemmer` (the package ships no type information)."""

    def stemWords(self, words: list[str]) -> list[str]: ...  # noqa: N802  (PyStemmer's name)


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
    return [t if ("-" in t or "." in t) else s for t, s in zip(tokens, stem_words(tokens), strict=True)]


def stem_words(tokens: list[str]) -> list[str]:
    """The Snowball (Porter 2) stem of each token, in one call.

    >>> stem_words(["replacement", "cushions"])
    ['replac', 'cushion']
    """
    return _stemmer().stemWords(tokens)


class SpanSet:
    """Character spans taken so far, for asking "is this span still free?" in O(log n).

    `free(start, end)` is `all(end <= a or start >= b for a, b in taken)`: the span overlaps no
    taken span by a positive length. Overlapping spans are kept merged, so a long message with
    thousands of taken spans does not make every question cost thousands of comparisons.

    >>> spans = SpanSet()
    >>> spans.add(3, 7); spans.add(10, 12)
    >>> spans.free(0, 3), spans.free(6, 8), spans.free(7, 10), spans.free(11, 11)
    (True, False, True, False)
    """

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def free(self, start: int, end: int) -> bool:
        k = bisect.bisect_right(self._starts, start) - 1
        if k >= 0 and self._starts[k] < end and self._ends[k] > start:
            return False
        return not (k + 1 < len(self._starts) and self._starts[k + 1] < end)

    def add(self, start: int, end: int) -> None:
        # Merge with the spans this one overlaps by a positive length (touching spans stay apart).
        lo = bisect.bisect_left(self._ends, start + 1) if start < end else bisect.bisect_right(self._ends, start)
        hi = lo
        while hi < len(self._starts) and self._starts[hi] < end and self._ends[hi] > start:
            hi += 1
        if hi > lo:
            start, end = min(start, self._starts[lo]), max(end, self._ends[hi - 1])
        self._starts[lo:hi] = [start]
        self._ends[lo:hi] = [end]


# How much of a message, and of the conversation before it, the moves read. The limits
# (`[limits]`) reject longer messages by default; a deployment that raises them still gets moves
# whose work is bounded: past these, text is searched but not read for references,
# constraints, typos or product mentions.
ANALYSIS_CHARS = 4_000
HISTORY_ANALYSIS_CHARS = 16_000

#: A sentence as the follow-up moves cut an answer: a run up to its closing punctuation.
SENTENCE_SPAN = re.compile(r"[^.!?]+[.!?]*")


def analysed_part(text: str, limit: int = ANALYSIS_CHARS) -> str:
    """`text` if it has at most `limit` characters; else its first `limit` characters cut back
    to the last space, so that no word is read in half ("" when there is no space to cut at).

    >>> analysed_part("under $150 please", 12)
    'under $150'
    """
    if len(text) <= limit:
        return text
    for cut in range(limit, -1, -1):
        if text[cut].isspace():
            return text[:cut]
    return ""


def analysed_history(history: Sequence[str], budget: int = HISTORY_ANALYSIS_CHARS) -> list[str]:
    """The most recent turns of `history` (oldest first, as given) that fit in `budget`
    characters; the turn that does not fit whole is cut with `analysed_part`.

    >>> analysed_history(["old turn", "recent turn"], 12)
    ['recent turn']
    """
    kept: list[str] = []
    for turn in reversed(history):
        if budget <= 0:
            break
        part = analysed_part(turn, budget)
        if part or not turn:
            kept.append(part)
        budget -= len(turn) + 1
    return kept[::-1]

"""BM25 as sparse vectors: term weights computed here, IDF applied inside the engine.

Document weight of term t: tf / (tf + k1 * (1 - b + b * dl / avgdl)); the engine's IDF
modifier multiplies ln(1 + (N - df + 0.5) / (df + 0.5)) at query time. Together that is the
Lucene BM25 score (bm25s `method="lucene"`) up to the constant factor (k1 + 1), so lexical
search, filters and fusion all run inside Qdrant, embedded or as a cluster.

The document length dl counts words only. The analyser adds terms so that identifiers match
(single digits, and whole compounds such as "xk-4471" next to their parts); like Lucene's
`discountOverlaps`, those matching aids are not length: counted, they would lower the score
of every document that holds numbers for every query, including queries with no number at
all. (On SciFact this was the whole gap to bm25s: nDCG@10 0.684 -> 0.687, bm25s 0.686.)

The lexicon also keeps what the spelling move needs to correct towards this index only: raw
word counts, counts of adjacent word pairs (bigrams, for context) and the corpus spelling of
identifiers ("XK-4471" for "xk-4471").
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from querywise.text import analyze, normalize, terms_of, words

__all__ = ["MAX_BIGRAMS", "RUN_BREAK", "Lexicon", "SparseVec", "doc_length", "word_runs"]

SparseVec = tuple[list[int], list[float]]

# Above this many distinct bigrams, those seen once are dropped (then the rarest, if needed):
# bounds lexicon.json on large corpora; small corpora keep every pair, since there one
# occurrence is all the context evidence there is.
MAX_BIGRAMS = 200_000

# Pairs are counted within a run of words: sentence punctuation, brackets, quotes and line
# breaks end a run ("3.2" and "e.g" do not: a dot ends a run only before a space).
RUN_BREAK = re.compile(r"[.!?;:,]+(?=\s|$)|[\n()\[\]{}\"\u201c\u201d]")
# The plain word tokens of `words` (its compounds are split into their parts here).
_RUN_TOKEN = re.compile(r"\w\w+|\d")
# Upper-case codes as written ("XK-4471", "X2", "IPX4"); those with a digit keep their corpus
# spelling, so that a near-miss identifier can be offered as the corpus writes it.
_CODE = re.compile(r"\b[A-Z][A-Z0-9]*(?:[-.][A-Z0-9]+)*\b")


def doc_length(terms: Iterable[str]) -> int:
    """BM25 length of analysed terms: words, without the identifier aids (lone digits, compounds).

    >>> doc_length(["replac", "cushion", "part", "xk", "4471", "xk-4471", "5"])
    5
    """
    return sum(1 for t in terms if not ("-" in t or "." in t or (len(t) == 1 and t.isdigit())))


def word_runs(text: str) -> list[list[str]]:
    """The normalised words of `text` in reading order, split where punctuation breaks them.

    >>> word_runs("To pair Aero X2, hold XK-4471 for 5 s.")
    [['to', 'pair', 'aero', 'x2'], ['hold', 'xk', '4471', 'for', '5']]
    """
    runs = (_RUN_TOKEN.findall(part) for part in RUN_BREAK.split(normalize(text)))
    return [run for run in runs if run]


@dataclass
class Lexicon:
    """Term ids, document frequencies and raw word counts of one index.

    `bigram_counts` counts adjacent words ("pair aero") within a run (see `word_runs`);
    `surface` maps an identifier-like word to its most frequent corpus spelling when that is
    not lower case ("xk-4471" -> "XK-4471").
    """

    terms: dict[str, int] = field(default_factory=dict)
    df: list[int] = field(default_factory=list)
    word_counts: Counter[str] = field(default_factory=Counter)
    n_docs: int = 0
    total_len: int = 0
    bigram_counts: Counter[str] = field(default_factory=Counter)
    surface: dict[str, str] = field(default_factory=dict)

    @property
    def avgdl(self) -> float:
        return self.total_len / self.n_docs if self.n_docs else 0.0

    @classmethod
    def build(cls, texts: Iterable[str]) -> tuple[Lexicon, list[list[str]]]:
        """Analyse every text once; return the lexicon and each text's terms."""
        lex = cls()
        analysed: list[list[str]] = []
        spellings: dict[str, Counter[str]] = {}
        for text in texts:
            tokens = words(text)
            terms = terms_of(tokens)
            analysed.append(terms)
            lex.word_counts.update(tokens)
            for run in word_runs(text):
                lex.bigram_counts.update(map(" ".join, itertools.pairwise(run)))
            for code in _CODE.findall(text):
                if any(ch.isdigit() for ch in code):
                    spellings.setdefault(code.lower(), Counter())[code] += 1
            lex.n_docs += 1
            lex.total_len += doc_length(terms)
            # First-seen order, not set order (which varies with PYTHONHASHSEED): the same corpus
            # gets the same term ids, so the same sparse vectors and the same BM25 sums, bit for bit.
            for term in dict.fromkeys(terms):
                tid = lex.terms.setdefault(term, len(lex.terms))
                if tid == len(lex.df):
                    lex.df.append(0)
                lex.df[tid] += 1
        lex.bigram_counts = _bounded(lex.bigram_counts, MAX_BIGRAMS)
        lex.surface = {key: seen.most_common(1)[0][0] for key, seen in spellings.items()}
        return lex, analysed

    def document_vector(self, terms: list[str], *, k1: float, b: float) -> SparseVec:
        tf = Counter(self.terms[t] for t in terms)
        norm = k1 * (1 - b + b * doc_length(terms) / self.avgdl) if self.avgdl else k1
        ids = sorted(tf)
        return ids, [tf[i] / (tf[i] + norm) for i in ids]

    def query_vector(self, text: str) -> SparseVec:
        """Known terms of `text`, weighted by their count in the query."""
        tf = Counter(self.terms[t] for t in analyze(text) if t in self.terms)
        ids = sorted(tf)
        return ids, [float(tf[i]) for i in ids]

    def save(self, path: Path) -> None:
        path.write_bytes(self.dumps())

    def dumps(self) -> bytes:
        """The lexicon as JSON bytes (what `save` writes, `loads` reads)."""
        data = {
            "terms": sorted(self.terms, key=self.terms.__getitem__),
            "df": self.df,
            "words": dict(self.word_counts.most_common()),
            "n_docs": self.n_docs,
            "total_len": self.total_len,
            "bigrams": dict(self.bigram_counts.most_common()),
            "surface": self.surface,
        }
        return json.dumps(data, ensure_ascii=False).encode("utf-8")

    @classmethod
    def load(cls, path: Path) -> Lexicon:
        return cls.loads(path.read_bytes())

    @classmethod
    def loads(cls, raw: bytes) -> Lexicon:
        """Parse `dumps` output; ValueError (or KeyError, TypeError) when it is not a lexicon."""
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        lex = cls(
            terms={t: i for i, t in enumerate(data["terms"])},
            df=data["df"],
            word_counts=Counter(data["words"]),
            n_docs=data["n_docs"],
            total_len=data["total_len"],
            # Lexicons saved before bigrams and spellings were kept load without them.
            bigram_counts=Counter(data.get("bigrams", {})),
            surface=data.get("surface", {}),
        )
        if len(lex.terms) != len(lex.df):
            raise ValueError(f"{len(lex.terms)} terms but {len(lex.df)} document frequencies")
        return lex


def _bounded(counts: Counter[str], limit: int) -> Counter[str]:
    """`counts` itself when within `limit`; else without singletons, then the `limit` most common."""
    if len(counts) <= limit:
        return counts
    kept = Counter({k: n for k, n in counts.items() if n > 1})
    return kept if len(kept) <= limit else Counter(dict(kept.most_common(limit)))

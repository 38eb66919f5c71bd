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

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from querywise.text import analyze, normalize

__all__ = ["CODE_SPELLING", "MAX_BIGRAMS", "RUN_BREAK", "Lexicon", "SparseVec", "bounded_bigrams", "doc_length", "fold", "normalized_runs", "surface_of", "word_runs"]

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
CODE_SPELLING = re.compile(r"\b[A-Z][A-Z0-9]*(?:[-.][A-Z0-9]+)*\b")


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
    return normalized_runs(normalize(text))


def normalized_runs(norm: str) -> list[list[str]]:
    """`word_runs` of text already normalised (`text.normalize`)."""
    runs = (_RUN_TOKEN.findall(part) for part in RUN_BREAK.split(norm))
    return [run for run in runs if run]


@dataclass
class Lexicon:
    """Term ids, document frequencies and raw word counts of one index.

    `bigram_counts` counts adjacent words ("pair aero") within a run (see `word_runs`);
    `surface` maps an identifier-like word to its most frequent corpus spelling when that is
    not lower case ("xk-4471" -> "XK-4471"); `spellings` keeps each spelling's count, so that a
    live update (`fold`) moves `surface` as a rebuild would.
    """

    terms: dict[str, int] = field(default_factory=dict)
    df: list[int] = field(default_factory=list)
    word_counts: Counter[str] = field(default_factory=Counter)
    n_docs: int = 0
    total_len: int = 0
    bigram_counts: Counter[str] = field(default_factory=Counter)
    surface: dict[str, str] = field(default_factory=dict)
    spellings: dict[str, Counter[str]] = field(default_factory=dict)

    @property
    def avgdl(self) -> float:
        return self.total_len / self.n_docs if self.n_docs else 0.0

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
            "spellings": {key: dict(seen) for key, seen in self.spellings.items()},
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
            # Lexicons saved before live updates: no counts (an update then keeps their surface forms).
            spellings={key: Counter(seen) for key, seen in data.get("spellings", {}).items()},
        )
        if len(lex.terms) != len(lex.df):
            raise ValueError(f"{len(lex.terms)} terms but {len(lex.df)} document frequencies")
        return lex


def fold(lexicon: Lexicon, part: Lexicon, sign: int) -> Lexicon:
    """`lexicon` with the chunks `part` counts added (sign 1) or taken away (sign -1): what a
    live update does to the statistics a rebuild would count anew.

    Term ids only grow: a term new to the index gets the next id, a term no chunk holds any more
    keeps its id at df 0 (a query vector made before the update stays valid after it). Bigrams
    are exact while the index has at most `MAX_BIGRAMS` distinct pairs; past that a rebuild drops
    the rarest and an update cannot know which it dropped (an approximation for spelling context)."""
    out = Lexicon(
        terms=dict(lexicon.terms), df=list(lexicon.df), word_counts=Counter(lexicon.word_counts),
        n_docs=lexicon.n_docs + sign * part.n_docs, total_len=lexicon.total_len + sign * part.total_len,
        bigram_counts=Counter(lexicon.bigram_counts), surface=dict(lexicon.surface),
        spellings={key: Counter(seen) for key, seen in lexicon.spellings.items()},
    )
    for term, tid in part.terms.items():
        at = out.terms.setdefault(term, len(out.terms))
        if at == len(out.df):
            out.df.append(0)
        out.df[at] = max(0, out.df[at] + sign * part.df[tid])
    words, pairs = Counter(part.word_counts), Counter(part.bigram_counts)
    if sign > 0:
        out.word_counts.update(words)
        out.bigram_counts.update(pairs)
        out.bigram_counts = bounded_bigrams(out.bigram_counts)
    else:
        out.word_counts.subtract(words)
        out.bigram_counts.subtract(pairs)
        out.word_counts, out.bigram_counts = +out.word_counts, +out.bigram_counts  # drops counts at 0
    for key, seen in part.spellings.items():
        counts = out.spellings.setdefault(key, Counter())
        counts.update(seen) if sign > 0 else counts.subtract(seen)
        counts = +counts
        if counts:
            out.spellings[key] = counts
            out.surface[key] = surface_of(counts)
        else:
            del out.spellings[key]
            out.surface.pop(key, None)
    return out


def surface_of(seen: Counter[str]) -> str:
    """The corpus spelling of an identifier: its most frequent, the first seen among equals."""
    return seen.most_common(1)[0][0]


def bounded_bigrams(counts: Counter[str]) -> Counter[str]:
    """`counts` itself when within `MAX_BIGRAMS`; else without singletons, then the most common."""
    limit = MAX_BIGRAMS
    if len(counts) <= limit:
        return counts
    kept = Counter({k: n for k, n in counts.items() if n > 1})
    return kept if len(kept) <= limit else Counter(dict(kept.most_common(limit)))

"""BM25 as sparse vectors: term weights computed here, IDF applied inside the engine.

Document weight of term t: tf / (tf + k1 * (1 - b + b * dl / avgdl)); the engine's IDF
modifier multiplies ln(1 + (N - df + 0.5) / (df + 0.5)) at query time. Together that is the
Lucene BM25 score (bm25s `method="lucene"`) up to the constant factor (k1 + 1), so lexical
search, filters and fusion all run inside Qdrant, embedded or as a cluster.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from querywise.text import analyze, words

__all__ = ["Lexicon", "SparseVec"]

SparseVec = tuple[list[int], list[float]]


@dataclass
class Lexicon:
    """Term ids, document frequencies and raw word counts of one index."""

    terms: dict[str, int] = field(default_factory=dict)
    df: list[int] = field(default_factory=list)
    word_counts: Counter[str] = field(default_factory=Counter)
    n_docs: int = 0
    total_len: int = 0

    @property
    def avgdl(self) -> float:
        return self.total_len / self.n_docs if self.n_docs else 0.0

    @classmethod
    def build(cls, texts: Iterable[str]) -> tuple[Lexicon, list[list[str]]]:
        """Analyse every text once; return the lexicon and each text's terms."""
        lex = cls()
        analysed: list[list[str]] = []
        for text in texts:
            terms = analyze(text)
            analysed.append(terms)
            lex.word_counts.update(words(text))
            lex.n_docs += 1
            lex.total_len += len(terms)
            for term in set(terms):
                tid = lex.terms.setdefault(term, len(lex.terms))
                if tid == len(lex.df):
                    lex.df.append(0)
                lex.df[tid] += 1
        return lex, analysed

    def document_vector(self, terms: list[str], *, k1: float, b: float) -> SparseVec:
        tf = Counter(self.terms[t] for t in terms)
        norm = k1 * (1 - b + b * len(terms) / self.avgdl) if self.avgdl else k1
        ids = sorted(tf)
        return ids, [tf[i] / (tf[i] + norm) for i in ids]

    def query_vector(self, text: str) -> SparseVec:
        """Known terms of `text`, weighted by their count in the query."""
        tf = Counter(self.terms[t] for t in analyze(text) if t in self.terms)
        ids = sorted(tf)
        return ids, [float(tf[i]) for i in ids]

    def save(self, path: Path) -> None:
        data = {
            "terms": sorted(self.terms, key=self.terms.__getitem__),
            "df": self.df,
            "words": dict(self.word_counts.most_common()),
            "n_docs": self.n_docs,
            "total_len": self.total_len,
        }
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Lexicon:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            terms={t: i for i, t in enumerate(data["terms"])},
            df=data["df"],
            word_counts=Counter(data["words"]),
            n_docs=data["n_docs"],
            total_len=data["total_len"],
        )

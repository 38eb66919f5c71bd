"""The oracle probes: does the gold chunk retrieve itself?

- literal probe: the chunk's first 40 whitespace tokens, verbatim;
- generated probe: one question in the passage's own vocabulary. Written by `write_probe`
  (the LLM tier) when one is given; else built deterministically from the passage's key
  sentence (its most informative sentence by the index's IDF) and labelled `deterministic`.

Either way the vocabulary constraint is checked in code: every content word of the question
(after stemming) must occur in the passage; the words that do not are reported.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

from pydantic import BaseModel

from querywise.checks.vocabulary import vocabulary_violations
from querywise.text import STOPWORDS_EN, analyze

__all__ = ["GeneratedProbe", "WriteProbe", "deterministic_probe", "generated_probe", "key_sentence", "literal_probe"]

LITERAL_TOKENS = 40
WriteProbe = Callable[[str], str]

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
def literal_probe(text: str, n_tokens: int = LITERAL_TOKENS) -> str:
    """The first `n_tokens` whitespace tokens of `text`, verbatim."""
    return " ".join(text.split()[:n_tokens])


def key_sentence(text: str, idf: Callable[[str], float]) -> str:
    """The sentence of `text` whose distinct terms carry the most IDF (ties: the earlier one)."""
    sentences = [s.strip() for s in _SENTENCE.split(text) if len(s.split()) >= 3] or [text.strip()]
    return max(sentences, key=lambda s: sum(idf(t) for t in set(analyze(s))))


def deterministic_probe(text: str, idf: Callable[[str], float], *, max_words: int = 16) -> str:
    """A question from the key sentence's own content words: "What about <words>?"."""
    sentence = key_sentence(text, idf)
    content = [w for w in re.findall(r"[^\W_][\w'\-]*", sentence) if w.lower() not in STOPWORDS_EN]
    return "What about " + " ".join(content[:max_words]) + "?"


class GeneratedProbe(BaseModel):
    """The generated probe, who wrote it, and the words it borrowed from outside the passage."""

    text: str
    by: str  # "deterministic" or "llm"
    violations: list[str] = []
    error: str | None = None  # the LLM writer's failure, when it fell back


def generated_probe(text: str, idf: Callable[[str], float], write_probe: WriteProbe | None = None) -> GeneratedProbe:
    """The generated probe for passage `text`; an LLM writer that fails falls back to the
    deterministic question, and the failure is kept."""
    error = None
    if write_probe is not None:
        try:
            question = write_probe(text).strip()
            if question:
                return GeneratedProbe(text=question, by="llm", violations=vocabulary_violations(question, text))
            error = "the writer returned an empty question"
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
    question = deterministic_probe(text, idf)
    return GeneratedProbe(text=question, by="deterministic", violations=vocabulary_violations(question, text), error=error)


def idf_from(terms: Mapping[str, int], df: list[int], n_docs: int) -> Callable[[str], float]:
    """BM25's IDF over an index lexicon (unknown terms count as rarest)."""

    def idf(term: str) -> float:
        i = terms.get(term)
        d = df[i] if i is not None and i < len(df) else 0
        return math.log(1 + (n_docs - d + 0.5) / (d + 0.5))

    return idf

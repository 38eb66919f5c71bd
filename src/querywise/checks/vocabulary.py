"""The vocabulary rule of a generated probe: a question the passage answers, written in the
passage's own words. One definition, used by the deterministic probe and by the LLM probe writer."""

from __future__ import annotations

from querywise.text import STOPWORDS_EN, terms_of, words

__all__ = ["vocabulary_violations"]

# The words any question may use without borrowing them from the passage.
_QUESTION_WORDS = frozenset(
    ["what", "which", "how", "why", "when", "where", "who", "whom", "whose", "does", "do", "did", "can", "could", "would", "should", "shall", "may", "might", "must", "is", "are", "was", "were", "am", "been", "being", "have", "has", "had", "about", "i", "me", "my", "we", "our", "you", "your", "there", "any", "much", "many", "some", "than", "from"]
)


def vocabulary_violations(question: str, passage: str) -> list[str]:
    """Content words of `question` whose stem is not in `passage` (question words allowed)."""
    have = set(terms_of(words(passage), stopwords=False))
    out: list[str] = []
    for w in words(question):
        if w in STOPWORDS_EN or w in _QUESTION_WORDS or "-" in w or "." in w:
            continue
        if terms_of([w], stopwords=False)[0] not in have and w not in out:
            out.append(w)
    return out

"""Spelling: correct misspelt words towards the index vocabulary, and offer near-miss identifiers.

`checker` holds the corrector (`SpellChecker`; its module docstring explains the scoring);
`tokenise` reads a message's tokens and quoted spans."""

from querywise.understand.spelling.checker import (
    Candidate,
    Correction,
    Declined,
    SpellChecker,
    Spelling,
    english_words,
    query_log_counts,
)
from querywise.understand.spelling.tokenise import QUOTED, TOKEN, quoted_spans, tokens

__all__ = [
    "Candidate",
    "Correction",
    "Declined",
    "SpellChecker",
    "Spelling",
    "english_words",
    "query_log_counts",
]

# The tokeniser under the names it had when it was private to a single module (tests use them).
_QUOTED, _TOKEN, _quoted_spans, _tokens = QUOTED, TOKEN, quoted_spans, tokens

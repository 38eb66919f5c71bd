"""Detectors that read one gold chunk (or one question) and say what is wrong with it.

Each returns a small result with its evidence; none decides a bucket (`buckets.py` does).

- extraction noise: ligature characters, words broken after a ligature ("specifi c",
  "confi guration"), text that is mostly non-words (mojibake, symbol soup), a few tokens
  repeated, or no text at all;
- degenerate embedding: a vector that is not finite, (near) zero, or (near) constant;
- chunk boundary: the question names a product or identifier that the gold chunk lacks and a
  neighbouring chunk of the same document carries;
- query defects (suggestions only): an unresolved reference with history, two asks in one
  message, pleasantries around the ask, low overlap with the gold passage's words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from querywise.text import STOPWORDS_EN, analyze, normalize
from querywise.triage.failures import QueryDefectKind
from querywise.understand.followup import check_follow_up  # the same gate the pipeline uses

__all__ = [
    "BoundaryCheck",
    "NoiseCheck",
    "QueryCheck",
    "VectorCheck",
    "anchors_of",
    "check_boundary",
    "check_noise",
    "check_query",
    "check_vector",
    "term_overlap",
]

_LIGATURES = re.compile("[\ufb00-\ufb06]")
# A word cut right after an fi/fl ligature, the classic PDF-extraction break: "specifi c".
_BROKEN = re.compile(r"\b([a-z]*(?:fi|fl))\s([a-z]+)\b")
_NOT_BROKEN = frozenset({"wifi", "hifi", "scifi"})
_MOJIBAKE = re.compile("[\u00c3\u00c2\ufffd\u0000-\u0008\u000e-\u001f]|\u00e2\u20ac")
_WORDLIKE = re.compile(r"[(\[\"'\u2018\u201c]*[^\W_][\w'\u2019\-./:,]*[)\]\"'\u2019\u201d.,;:!?%]*")
_PUNCT = re.compile(r"[^\w\s]{1,3}")


class NoiseCheck(BaseModel):
    """Extraction noise in a chunk's text, with the counts that decided it."""

    flagged: bool
    reasons: list[str] = []
    n_tokens: int = 0
    ligatures: int = 0
    broken_words: list[str] = []
    nonword_share: float = 0.0
    distinct_share: float = 1.0


def check_noise(text: str) -> NoiseCheck:
    """Is `text` mis-extracted? Flags empty text, 2+ ligature characters or broken words, a
    majority of non-word tokens, or fewer than 20% distinct tokens among 10 or more.

    >>> check_noise("the specifi c confi guration fi le").broken_words
    ['specifi c', 'confi guration', 'fi le']
    """
    tokens = text.split()
    if not tokens:
        return NoiseCheck(flagged=True, reasons=["empty text"])
    ligatures = len(_LIGATURES.findall(text))
    folded = normalize(text)  # ligatures folded, so "speciﬁ c" is seen as "specifi c"
    broken = [f"{a} {b}" for a, b in _BROKEN.findall(folded) if a not in _NOT_BROKEN and b not in STOPWORDS_EN]
    nonwords = sum(1 for t in tokens if _MOJIBAKE.search(t) or not (_WORDLIKE.fullmatch(t) or _PUNCT.fullmatch(t)))
    nonword_share = nonwords / len(tokens)
    distinct = len({t.lower() for t in tokens}) / len(tokens)
    reasons = []
    if ligatures >= 2:
        reasons.append(f"{ligatures} ligature characters")
    if len(broken) >= 2:
        reasons.append(f"{len(broken)} words broken after a ligature")
    if len(tokens) >= 5 and nonword_share > 0.5:
        reasons.append(f"{nonword_share:.0%} of tokens are not words")
    if len(tokens) >= 10 and distinct < 0.2:
        reasons.append(f"only {distinct:.0%} distinct tokens")
    return NoiseCheck(
        flagged=bool(reasons), reasons=reasons, n_tokens=len(tokens), ligatures=ligatures,
        broken_words=broken, nonword_share=round(nonword_share, 4), distinct_share=round(distinct, 4),
    )


class VectorCheck(BaseModel):
    """Is a chunk's embedding degenerate? `constancy` is the cosine with the all-equal
    direction (1.0 for a constant vector)."""

    flagged: bool
    reason: str = ""
    norm: float
    constancy: float


#: Above this cosine with the constant direction a vector carries no meaning.
MAX_CONSTANCY = 0.95


def check_vector(vector: Sequence[float] | np.ndarray) -> VectorCheck:
    """Flag a vector that is not finite, (near) zero, or (near) constant."""
    v = np.asarray(vector, dtype=np.float64)
    if v.size == 0 or not np.all(np.isfinite(v)):
        return VectorCheck(flagged=True, reason="vector is empty or not finite", norm=float("nan"), constancy=float("nan"))
    norm = float(np.linalg.norm(v))
    if norm < 1e-6:
        return VectorCheck(flagged=True, reason="zero vector", norm=norm, constancy=0.0)
    constancy = float(abs(v.sum()) / (norm * math.sqrt(v.size)))
    flagged = constancy > MAX_CONSTANCY
    return VectorCheck(
        flagged=flagged, reason=f"near-constant vector (cosine {constancy:.3f} with the constant direction)" if flagged else "",
        norm=round(norm, 6), constancy=round(constancy, 6),
    )


# Product names and identifiers as people type them: a token with a digit ("X3", "XK-4471"),
# or a capitalised word that does not open the sentence ("the Vela", "on Aero").
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-.]*[A-Za-z0-9]|[A-Za-z0-9]")
_NOT_NAMES = frozenset({"I", "I'm", "OK"})


def anchors_of(question: str) -> list[str]:
    """The names and identifiers in a question (see above), in order, without repeats.

    >>> anchors_of("How long do I hold the button on the Vela X3?")
    ['Vela', 'X3']
    """
    found: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", question.strip()):
        for i, m in enumerate(_TOKEN.finditer(sentence)):
            tok = m.group(0)
            named = any(ch.isdigit() for ch in tok) or (i > 0 and tok[0].isupper() and tok not in _NOT_NAMES)
            if named and tok not in found:
                found.append(tok)
    return found


class BoundaryCheck(BaseModel):
    """Chunk-boundary damage: the gold crosses chunks, or names the question asks about are
    missing from the gold chunk but present in a neighbour of the same document."""

    flagged: bool
    crosses: bool = False
    missing: list[str] = []
    carried_by: str | None = None


def _has(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(normalize(name))}(?![\w-])", normalize(text)) is not None


def check_boundary(question: str, gold_text: str, neighbours: Sequence[tuple[str, str]], *, crosses: bool = False) -> BoundaryCheck:
    """`gold_text` and each neighbour's text are what the index searches (title line included,
    so a chunker that carries the product into the context line repairs the damage)."""
    if crosses:
        return BoundaryCheck(flagged=True, crosses=True)
    missing = [a for a in anchors_of(question) if not _has(a, gold_text)]
    for cid, text in neighbours:
        carried = [a for a in missing if _has(a, text)]
        if carried:
            return BoundaryCheck(flagged=True, missing=carried, carried_by=cid)
    return BoundaryCheck(flagged=False, missing=missing)


def term_overlap(question: str, passage: str) -> float:
    """Share of the question's distinct BM25 terms that the passage also has (1.0 if none)."""
    q = set(analyze(question))
    return len(q & set(analyze(passage))) / len(q) if q else 1.0


_PLEASANTRY = re.compile(
    r"\b(?:hi|hello|hey|greetings|dear \w+|good (?:morning|afternoon|evening)|thanks(?: a lot| so much)?|"
    r"thank you(?: (?:so|very) much)?(?: in advance)?|cheers|much appreciated|many thanks|please|kindly|"
    r"i (?:was|am) wondering(?: if)?|i hope you(?:'re| are) (?:well|doing well)|hope you(?:'re| are) (?:well|doing well)|"
    r"sorry to bother(?: you)?|if (?:it's|it is) not too much trouble|have a (?:nice|good|great) day|"
    r"(?:could|can|would) you (?:please |kindly )?help(?: me)?(?: out)?(?: with this)?|any help (?:would be|is) appreciated)\b",
    re.IGNORECASE,
)
_SECOND_ASK = re.compile(
    r"\b(?:and|also|plus|as well as)\b[, ]+(?:also )?(?:how|what|when|where|why|which|who|can|could|do|does|is|are|will|should)\b",
    re.IGNORECASE,
)
#: Below this share of its terms found in the gold passage, a question is worded apart from it.
MIN_OVERLAP = 0.34


class QueryCheck(BaseModel):
    """The query-defect kinds the detectors suggest, first the one that decides, with cues."""

    suggested: QueryDefectKind | None
    fired: list[QueryDefectKind] = []
    cues: list[str] = []
    overlap: float = 0.0


def check_query(question: str, history: Sequence[str], gold_text: str) -> QueryCheck:
    """Suggest why a question misses its passage. Precedence: referent (needs the history
    before anything else can help), compound, filler, vocabulary."""
    fired: list[QueryDefectKind] = []
    cues: list[str] = []
    follow = check_follow_up(question, list(history))
    if follow.needs_context:
        fired.append("referent")
        cues.append(f"referent: {follow.reason}")
    asks = question.count("?")
    second = _SECOND_ASK.search(question)
    if asks >= 2 or second:
        fired.append("compound")
        cues.append(f"compound: second ask at {second.group(0)!r}" if asks < 2 and second else f"compound: {asks} question marks")
    polite = [m.group(0) for m in _PLEASANTRY.finditer(question)]
    n_words = max(1, len(question.split()))
    polite_words = sum(len(p.split()) for p in polite)
    if polite and (polite_words >= 3 or polite_words / n_words >= 0.25):
        fired.append("filler")
        cues.append(f"filler: {', '.join(repr(p) for p in polite)} ({polite_words} of {n_words} words)")
    overlap = term_overlap(question, gold_text)
    if overlap < MIN_OVERLAP:
        fired.append("vocabulary")
        cues.append(f"vocabulary: {overlap:.0%} of the question's terms are in the gold passage")
    return QueryCheck(suggested=fired[0] if fired else None, fired=fired, cues=cues, overlap=round(overlap, 4))

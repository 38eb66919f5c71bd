"""Detectors that read one gold chunk (or one question) and say what is wrong with it.

Each returns a small result with its evidence; none decides a bucket (`buckets.py` does).

- extraction noise: ligature characters, words broken after a ligature ("specifi c",
  "confi guration"), words run together or split by the extractor ("warrantycovers",
  "war ranty") -- seen against the gold text the locator matched only ignoring whitespace, or
  against the index vocabulary, where both halves occur as words of other chunks and the join is
  not a stem plus an ending or a prefix plus a stem (`morphological`: "powdered",
  "intramuscularly", "synthesised" are words) -- text that is mostly non-words (mojibake, symbol soup), a few
  tokens repeated, or no text at all;
- degenerate embedding: a vector that is not finite, (near) zero, or (near) constant;
- chunk boundary: the question names a product or identifier that the gold chunk lacks and a
  neighbouring chunk of the same document carries;
- query defects (suggestions only): an unresolved reference with history, two asks in one
  message, pleasantries around the ask, low overlap with the gold passage's words;
- a suspect relevance label: the gold shares no content term with the question (or its
  history), neither a dense nor a lexical search for the question finds it, and yet it finds
  itself.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel

from querywise.text import STOPWORDS_EN, analyze, normalize, terms_of, words
from querywise.triage.failures import QueryDefectKind
from querywise.understand.followup import check_follow_up  # the same gate the pipeline uses

__all__ = [
    "ASK_WORDS",
    "BoundaryCheck",
    "LabelCheck",
    "NoiseCheck",
    "QueryCheck",
    "VectorCheck",
    "anchors_of",
    "check_boundary",
    "check_label",
    "check_noise",
    "check_query",
    "check_vector",
    "content_terms",
    "label_words",
    "morphological",
    "nearest_pair",
    "shared_terms",
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
    # The chunk's spellings that are no word of the gold text, yet lie inside it once whitespace
    # is ignored ("warrantycovers"): filled when the locator matched the gold only that way.
    whitespace_damage: list[str] = []
    # Against the index vocabulary: a word no other chunk has that splits into two words other
    # chunks have ("damageif = damage + if"), and two neighbours that join into a word other
    # chunks have while one of them is known nowhere else ("war ranty = warranty").
    run_together: list[str] = []
    split_words: list[str] = []
    nonword_share: float = 0.0
    distinct_share: float = 1.0


#: Words run together or split are noise from this many in one chunk ...
MIN_JOINED = 2
#: ... and, when seen against the index vocabulary alone, from this share of its tokens (a long
#: chunk may hold a rare compound or two that the rest of the corpus happens to spell apart).
MIN_JOINED_SHARE = 0.05
_ALPHA = re.compile(r"[^\W\d_]+")
_OPEN, _CLOSE = "([{\"'\u2018\u201c", ".,;:!?)]}\"'\u2019\u201d"


def _flat(text: str) -> tuple[str, list[int]]:
    """`text` normalised with no whitespace, and each character's position in `text`."""
    chars: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        for c in normalize(ch):
            if not c.isspace():
                chars.append(c)
                where.append(i)
    return "".join(chars), where


def _whitespace_damage(text: str, clean: str) -> list[str]:
    """The words of `text`, inside the stretch that matches `clean` once whitespace is ignored,
    that are no words of `clean`: the extractor's run-together or split spellings of them."""
    flat, where = _flat(text)
    gold = _flat(clean)[0]
    at = flat.find(gold) if gold else -1
    if at < 0:
        return []
    start, end = where[at], where[at + len(gold) - 1] + 1
    while start > 0 and text[start - 1].isalnum():  # whole words: "strapis" when the gold ends at "strap"
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    gold_words = set(words(clean))
    return list(dict.fromkeys(t for t in words(text[start:end]) if t not in gold_words))


#: Endings and beginnings that make one word of a stem, never two words: "powder + ed",
#: "intramuscular + ly", "synthesis + ed", "intra + muscular" are morphology, not extraction.
SUFFIXES = frozenset(
    ["s", "es", "d", "ed", "ing", "ings", "ly", "er", "ers", "est", "ise", "ised", "ises", "ize", "ized", "izes", "isation", "ization",
     "ation", "ations", "ment", "ments", "ness", "al", "ally", "ic", "ical", "ity", "ities", "ous", "ive", "ively", "able", "ably",
     "ible", "ful", "less", "ship", "ism", "ist", "ists", "ia", "ae", "um", "ectomy", "itis", "osis", "ology", "ological"])
PREFIXES = frozenset(
    ["intra", "inter", "extra", "un", "re", "non", "pre", "post", "sub", "super", "supra", "anti", "co", "de", "dis", "over", "under",
     "micro", "macro", "multi", "hyper", "hypo", "trans", "semi", "peri", "endo", "exo", "intro", "poly", "mono", "bio", "neuro",
     "cardio", "immuno", "auto", "counter", "out", "self", "mis"])


def morphological(word: str, head: str, tail: str) -> bool:
    """Whether `head + tail` is a stem with an ending or a prefix with a stem ("powdered" =
    "powder" + "ed"), not two words run together: the tail is an ending, the head a prefix, or
    the word stems to its head."""
    return tail in SUFFIXES or head in PREFIXES or terms_of([word], stopwords=False) == terms_of([head], stopwords=False)


def _joined_and_split(text: str, vocabulary: Mapping[str, int], searched: str) -> tuple[list[str], list[str]]:
    """Run-together and split words of `text` against the index's word counts (`vocabulary`,
    which counts this chunk's own words too: `searched` is the chunk as the index read it)."""
    own = Counter(words(searched))

    def elsewhere(w: str) -> int:
        return vocabulary.get(w, 0) - own.get(w, 0)

    joined: list[str] = []
    for m in _ALPHA.finditer(text):
        raw = m.group(0)
        w = normalize(raw)
        # Names are written capitalised ("Brightwater"); a word other chunks have is no accident.
        if len(w) < 6 or raw[0].isupper() or elsewhere(w) > 0 or any(j.startswith(f"{w} ") for j in joined):
            continue
        splits = [(min(elsewhere(w[:i]), elsewhere(w[i:])), i) for i in range(2, len(w) - 1) if not morphological(w, w[:i], w[i:])]
        best, i = max(splits, default=(0, 0))
        if best > 0:
            joined.append(f"{w} = {w[:i]} + {w[i:]}")
    split: list[str] = []
    tokens = text.split()
    for a_raw, b_raw in itertools.pairwise(tokens):
        a, b = a_raw.lstrip(_OPEN), b_raw.rstrip(_CLOSE)
        if not (a.isalpha() and b.isalpha() and len(a) >= 2 and len(b) >= 2 and b[0].islower()):
            continue
        na, nb = normalize(a), normalize(b)
        if elsewhere(na + nb) > 0 and min(elsewhere(na), elsewhere(nb)) <= 0:
            split.append(f"{a} {b} = {na + nb}")
    return joined, split


def check_noise(
    text: str, *, clean: str | None = None, vocabulary: Mapping[str, int] | None = None, searched: str | None = None,
) -> NoiseCheck:
    """Is `text` mis-extracted? Flags empty text, 2+ ligature characters or broken words, a
    majority of non-word tokens, fewer than 20% distinct tokens among 10 or more, and words
    run together or split by the extractor: 2+ of the chunk's spellings differing from `clean`
    (the gold text, when the locator matched it only ignoring whitespace), or 2+ run-together
    or split words against `vocabulary` (the index's word counts) making 5%+ of the tokens.

    >>> check_noise("the specifi c confi guration fi le").broken_words
    ['specifi c', 'confi guration', 'fi le']
    >>> check_noise("the warrantycovers water", clean="the warranty covers water").whitespace_damage
    ['warrantycovers']
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
    damage = _whitespace_damage(text, clean) if clean else []
    joined, split = _joined_and_split(text, vocabulary, searched or text) if vocabulary is not None else ([], [])
    reasons = []
    if ligatures >= 2:
        reasons.append(f"{ligatures} ligature characters")
    if len(broken) >= 2:
        reasons.append(f"{len(broken)} words broken after a ligature")
    if len(damage) >= MIN_JOINED:
        reasons.append(f"the gold text matches only ignoring whitespace: {len(damage)} of the chunk's words are run together "
                       f"or split ({', '.join(damage[:3])})")
    n_joined = len(joined) + len(split)
    if n_joined >= MIN_JOINED and n_joined / len(tokens) >= MIN_JOINED_SHARE:
        shown = [j.split(" = ")[0] for j in (joined + split)[:3]]
        reasons.append(f"{n_joined} words run together or split against the index vocabulary ({', '.join(shown)}) "
                       f"in {len(tokens)} tokens")
    if len(tokens) >= 5 and nonword_share > 0.5:
        reasons.append(f"{nonword_share:.0%} of tokens are not words")
    if len(tokens) >= 10 and distinct < 0.2:
        reasons.append(f"only {distinct:.0%} distinct tokens")
    return NoiseCheck(
        flagged=bool(reasons), reasons=reasons, n_tokens=len(tokens), ligatures=ligatures, broken_words=broken,
        whitespace_damage=damage, run_together=joined, split_words=split,
        nonword_share=round(nonword_share, 4), distinct_share=round(distinct, 4),
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


#: Words that ask rather than say what is asked about (the BM25 stop list keeps most of them):
#: "How can I ..." shares "can" with half the passages of a corpus, and that says nothing.
ASK_WORDS = frozenset(
    ["what", "which", "how", "why", "when", "where", "who", "whom", "whose", "do", "does", "did", "can", "could", "would",
     "should", "shall", "may", "might", "must", "am", "been", "being", "have", "has", "had", "me", "my", "we", "our", "you",
     "your", "any", "much", "many", "some", "than", "from", "about", "please"]
)
_ASK_TERMS = frozenset(terms_of(ASK_WORDS))


def content_terms(text: str) -> set[str]:
    """The BM25 terms of `text` (the project's analyzer) less the asking words above."""
    return set(analyze(text)) - _ASK_TERMS


def term_overlap(question: str, passage: str, *, content_only: bool = False) -> float:
    """Share of the question's distinct BM25 terms that the passage also has (1.0 if none);
    `content_only` leaves out the asking words (`ASK_WORDS`)."""
    q = content_terms(question) if content_only else set(analyze(question))
    return len(q & set(analyze(passage))) / len(q) if q else 1.0


class LabelCheck(BaseModel):
    """Is the relevance label suspect? The gold shares no content term with the question and
    its history, no search for the question's own words finds it (dense nor lexical), and yet
    it is retrievable: its own literal or generated probe finds it."""

    flagged: bool
    reason: str = ""
    question_terms: list[str] = []  # content terms of the question and its history
    shared_terms: list[str] = []  # those the gold also has
    dense_rank: int | None = None  # the gold's rank for the question alone, dense search (None: not in the top k)
    lexical_rank: int | None = None  # the same, BM25
    probe_rank: int | None = None  # the better of its literal and generated probe's ranks
    searched: bool = False  # whether the two searches ran (only when nothing is shared)
    synonym: list[str] = []  # [question word, gold word, cosine] when the embedding relates a pair (not suspect)


def shared_terms(question: str, history: Sequence[str], gold_text: str) -> tuple[list[str], list[str]]:
    """The content terms of the question and its history, and those of them the gold has."""
    q = set().union(*(content_terms(t) for t in (question, *history)))
    return sorted(q), sorted(q & set(analyze(gold_text)))


#: Two words whose embeddings are at least this close are near-synonyms ("snapped" and
#: "cracked" are 0.50 apart for all-MiniLM-L6-v2, unrelated words about 0.25): a gold that says the
#: question's thing in other words is no suspect label. Chosen on the demo help centre (its one
#: suspect label, demo-16, is such a pair at 0.50: the threshold sits below it and well above the
#: median pair, 0.24); reported on doc2dial and SciFact.
SYNONYM_COSINE = 0.45
#: ... and stands out from the median pair by this much (an embedder that puts every word in one
#: place relates nothing).
SYNONYM_STANDOUT = 0.2


def nearest_pair(question_words: Sequence[str], gold_words: Sequence[str], vectors: np.ndarray) -> tuple[str, str, float] | None:
    """The closest (question word, gold word) pair by cosine, when it stands out from the median
    pair by `SYNONYM_STANDOUT`; `vectors` are the words' embeddings, the question's first, in order."""
    if not question_words or not gold_words:
        return None
    v = np.asarray(vectors, dtype=np.float64)
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    sims = v[: len(question_words)] @ v[len(question_words):].T
    i, j = np.unravel_index(int(np.argmax(sims)), sims.shape)
    if sims.size > 1 and sims[i, j] - float(np.median(sims)) < SYNONYM_STANDOUT:
        return None  # every pair about as close: the embedder does not tell these words apart
    return question_words[int(i)], gold_words[int(j)], float(sims[i, j])


def label_words(text: str, limit: int = 80) -> list[str]:
    """The distinct content words of `text` (no stop or asking words, 3+ letters), in order, at
    most `limit`: what the synonym check embeds."""
    out = [w for w in dict.fromkeys(words(text)) if w.isalpha() and len(w) >= 3 and w not in STOPWORDS_EN and w not in ASK_WORDS]
    return out[:limit]


def check_label(
    question_terms: list[str], shared: list[str], *, dense_rank: int | None, lexical_rank: int | None,
    probe_rank: int | None, searched: bool, k: int, synonym: tuple[str, str, float] | None = None,
) -> LabelCheck:
    """The suspect-label rule on its evidence (ranks: None is "not in the top k"; `synonym`: the
    question's and the gold's closest words by the embedding, which clear the label at
    `SYNONYM_COSINE` or above)."""
    ev = LabelCheck(flagged=False, question_terms=question_terms, shared_terms=shared, dense_rank=dense_rank,
                    lexical_rank=lexical_rank, probe_rank=probe_rank, searched=searched)
    if not question_terms:
        return ev.model_copy(update={"reason": "the question has no content term to compare"})
    if shared:
        return ev.model_copy(update={"reason": f"shares {len(shared)} of the question's {len(question_terms)} content terms"})
    if not searched:
        return ev.model_copy(update={"reason": "shares no content term, but the question's search finds it"})
    found = [f"{kind} rank {r}" for kind, r in (("dense", dense_rank), ("lexical", lexical_rank)) if r is not None]
    if found:
        return ev.model_copy(update={"reason": f"shares no content term, but the question finds it ({', '.join(found)})"})
    if probe_rank is None:
        return ev.model_copy(update={"reason": f"shares no content term and the question misses it, but neither probe "
                                               f"finds it in the top {k} either: an index problem, not the label"})
    if synonym is not None and synonym[2] >= SYNONYM_COSINE:
        q, g, cos = synonym
        return ev.model_copy(update={"synonym": [q, g, f"{cos:.2f}"], "reason": (
            f"shares no content term, but the embedding relates the question's {q!r} to the gold's {g!r} "
            f"(cosine {cos:.2f} >= {SYNONYM_COSINE}): a synonym, not a suspect label")})
    return ev.model_copy(update={"flagged": True, "reason": (
        f"the gold shares none of the question's {len(question_terms)} content terms, neither a dense nor a lexical "
        f"search for the question finds it in the top {k}, yet its own probe finds it at rank {probe_rank}: "
        f"re-judge the label")})


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

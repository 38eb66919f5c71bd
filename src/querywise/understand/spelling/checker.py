"""Spelling: correct misspelt words towards the index vocabulary, and offer near-miss identifiers.

Only words the index has are correction targets (a word it lacks can never match BM25), so the
corrector learns everything from the index's `Lexicon`: word counts, adjacent-pair counts and the
corpus spelling of identifiers. The pipeline searches the corrected text *next to* the original.

Never touched: identifiers (a token with a digit, an all-caps token, or one matching an identifier
pattern), numbers, words of three letters or fewer, words the index has, words inside quotes. A
near-miss identifier is never corrected either: when it has the shape of the deployment's part
numbers (`part_numbers`; none by default), the real identifiers it resembles are *offered*.

Candidates are the index words within Damerau (optimal string alignment) distance 2 of the word.
Each candidate c of a word between neighbours l and r is scored with a noisy channel whose
language model is a bigram model smoothed towards word frequency:

    score(c) = eps**d(w, c) * P(c | l) * P(c | r) / P(c)

    P(c)     = (1 - mu) * n(c) / N  +  mu * q(c) / Q     corpus frequency, mixed with the query log
    P(c | l) = (b(l c) + kappa * P(c)) / (n(l) + kappa)   bigram evidence with the left neighbour
    P(c | r) = (b(c r) + kappa * P(c)) / (n(r) + kappa)   ... and with the right one

n: corpus word counts (N their sum); q: query-log word counts (Q their sum; mu = 0 without a
log); b: adjacent-pair counts; eps: the probability of one edit (0.1); kappa: a pseudo-count (2)
that smooths a neighbour's pairs towards P(c), so the pairs of a rarely seen neighbour say little.
A missing neighbour, or one the index lacks, gives P(c | .) = P(c): no context, frequency
decides. The context *lift* P(c | l) * P(c | r) / P(c)**2 says how much the neighbours favour c
over its base rate (1: not at all; a candidate never seen next to a frequent neighbour drops
below 1).

A correction needs evidence. The best candidate is kept only if it beats the runner-up by
`min_margin`. When the word is a real English word ("pare"), looks like a name (capitalised
mid-sentence), or would take two edits on a word of fewer than six letters, it also needs
context: an adjacent pair seen in the corpus, and enough lift to pay for the edits,
eps**d * lift >= 1 (as if the typed word were its own candidate at distance 0, without
context). So "pare" becomes "pair" next to "to ... aero" (one pair each side) but not "save"
because the corpus once says "save the". Otherwise the word is left alone and the result says
why.

Candidate generation scans length buckets of the vocabulary with rapidfuzz's bit-parallel OSA
distance instead of a SymSpell delete index: the same candidate set, but building for 300k words
takes ~0.05 s instead of ~20 s (symspellpy 6.10.1, prefix length 7), for ~7 ms per misspelt word
instead of ~1 ms.

Bounded work per message: the move reads the first `text.ANALYSIS_CHARS` characters (4,000: all
of a message within the default limits; corrections are applied to the whole text), tokenising
is linear in what it reads, and the costly look-ups are capped: each distinct unknown word (or
code) is looked up once, and only while the index words compared stay within `max_compared`
(default 1,000,000, in reading order); the rest are left as typed, and the reason says so.
That is a dozen or so distinct unknown words on a 300k-word vocabulary (~7 ms each), and every
word of a message within the default limits on a small one.
"""

from __future__ import annotations

import difflib
import importlib.util
import math
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from querywise.index.lexical import Lexicon
from querywise.text import PartNumbers, analysed_part, identifier_forms, identifier_key, normalize, words
from querywise.understand.spelling.tokenise import Tokens, inside, neighbours, quoted_spans

__all__ = [
    "Candidate",
    "Correction",
    "Declined",
    "SpellChecker",
    "Spelling",
    "english_words",
    "query_log_counts",
]

MAX_DISTANCE = 2
# Index words compared per message when looking up unknown words and codes (rapidfuzz compares
# some 3-10 million a second): on a 300k-word vocabulary, a dozen or so distinct typos; on a
# small one, every word of a message within the default limits.
MAX_COMPARED = 1_000_000
_SEPARATORS = re.compile(r"[-._\s]")
_CACHE_SIZE = 10_000  # misspelt words whose nearby vocabulary is remembered


@dataclass(frozen=True)
class Correction:
    """One word replaced, and the evidence for it."""

    original: str  # as typed
    replacement: str  # as searched (keeps a leading capital)
    distance: int  # Damerau (OSA) edits
    frequency: int  # corpus count of the replacement
    log_frequency: int  # query-log count of the replacement (0 without a log)
    context: tuple[str, ...]  # adjacent pairs seen in the corpus, e.g. ("to pair x1",)
    lift: float  # how much the neighbours favour the replacement (1 = no context)
    score: float
    runner_up: str | None
    margin: float | None  # score / runner-up score; None without a runner-up
    why: str


@dataclass(frozen=True)
class Declined:
    """A word that looked misspelt but was left alone."""

    word: str
    best: str | None  # the best candidate, if there was one
    why: str


@dataclass(frozen=True)
class Spelling:
    """The spelling move's result. `corrected` is None when nothing changed."""

    corrected: str | None
    corrections: tuple[Correction, ...]
    identifier_candidates: dict[str, tuple[str, ...]]
    reason: str
    declined: tuple[Declined, ...] = ()


@dataclass(frozen=True)
class Candidate:
    """An index word near a misspelt one, scored in its context (see the module docstring)."""

    word: str
    distance: int
    score: float
    lift: float
    context: tuple[str, ...]



@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """The 82,765 words of SymSpell's English frequency list (shipped inside symspellpy).

    Used only as a signal that a word the index lacks is nevertheless a real word ("pare"),
    whose correction therefore needs context. Corrections still target index words only.
    """
    spec = importlib.util.find_spec("symspellpy")
    if spec is None or spec.origin is None:
        raise ImportError(
            'the default English word list ships with symspellpy: pip install "symspellpy==6.10.1" '
            "(or pass real_words=... to SpellChecker)"
        )
    path = Path(spec.origin).parent / "frequency_dictionary_en_82_765.txt"
    return frozenset(line.split(" ", 1)[0] for line in path.read_text(encoding="utf-8").splitlines() if line)


def query_log_counts(messages: Iterable[str]) -> Counter[str]:
    """Word counts of past messages, normalised as the index normalises them."""
    counts: Counter[str] = Counter()
    for message in messages:
        counts.update(words(message))
    return counts


class SpellChecker:
    """Corrects a message towards one index's vocabulary, using corpus and query-log frequency
    and the neighbouring words.

    >>> checker = SpellChecker.from_lexicon(Index.open("demo-index").lexicon)  # doctest: +SKIP
    >>> checker.check("warrenty on reed 2 pro").corrected                        # doctest: +SKIP
    'warranty on reed 2 pro'
    """

    def __init__(
        self,
        word_counts: Mapping[str, int],
        bigram_counts: Mapping[str, int] | None = None,
        *,
        surface: Mapping[str, str] | None = None,
        query_log: Mapping[str, int] | None = None,
        log_weight: float = 0.3,
        real_words: Collection[str] | None = None,
        identifier_patterns: Sequence[str] = (r"[A-Za-z]{2}-?\d{4}",),
        part_numbers: PartNumbers | None = None,
        edit_probability: float = 0.1,
        kappa: float = 2.0,
        min_margin: float = 2.0,
        identifier_cutoff: float = 0.8,
        max_identifier_candidates: int = 5,
        max_compared: int = MAX_COMPARED,
    ) -> None:
        if not 0 < edit_probability < 1:
            raise ValueError("edit_probability must be in (0, 1)")
        if not 0 <= log_weight < 1:
            raise ValueError("log_weight must be in [0, 1)")
        self.counts = word_counts
        self.bigrams = bigram_counts or {}
        self.surface = surface or {}
        self.log = {k: v for k, v in (query_log or {}).items() if v > 0}
        self.mu = log_weight if self.log else 0.0
        self.real_words = english_words() if real_words is None else real_words
        self.identifier_patterns = [re.compile(p) for p in identifier_patterns]
        # Near misses are offered only for what the deployment calls a part number (none by default).
        self.part_numbers = part_numbers or PartNumbers(())
        self.eps, self.kappa = edit_probability, kappa
        self.min_margin = min_margin
        self.identifier_cutoff, self.max_identifier_candidates = identifier_cutoff, max_identifier_candidates
        self.max_compared = max_compared
        self.n_total = sum(word_counts.values()) or 1
        self.log_total = sum(self.log.values()) or 1
        # Correction targets, bucketed by length; identifier-like words, for near misses.
        self._by_length: dict[int, list[str]] = {}
        self._identifiers: list[str] = []
        for word in word_counts:
            if word.isalpha():
                self._by_length.setdefault(len(word), []).append(word)
            elif any(ch.isdigit() for ch in word) and any(ch.isalpha() for ch in word):
                self._identifiers.append(word)
        self._canonical = [_SEPARATORS.sub("", w) for w in self._identifiers]
        # The index's identifiers by `identifier_key`: "WS4402" is the index's "ws-4402", written another way.
        self.identifiers = identifier_forms(self._identifiers)
        self._bucket_sizes = {n: len(bucket) for n, bucket in self._by_length.items()}
        self._near_cache: dict[str, list[tuple[str, int]]] = {}

    @classmethod
    def from_lexicon(cls, lexicon: Lexicon, **options: Any) -> SpellChecker:
        """A checker for the index whose lexicon this is (`Index.open(dir).lexicon`)."""
        return cls(lexicon.word_counts, lexicon.bigram_counts, surface=lexicon.surface, **options)

    # -- the move ---------------------------------------------------------------------------

    def check(self, text: str) -> Spelling:
        """Corrections and identifier candidates for `text`; `corrected` is None if unchanged."""
        part = analysed_part(text)  # (all of a message within the default limits)
        tokens = Tokens(part)
        quoted = quoted_spans(part)
        quote_starts = [a for a, _ in quoted]
        kinds: dict[str, str] = {}  # token -> "skip", "code" (an unknown code) or "word" (an unknown word)
        offers: dict[str, tuple[str, ...]] = {}  # normalised code -> near misses
        identifiers: dict[str, tuple[str, ...]] = {}
        respelt: dict[int, Correction] = {}  # identifiers written another way than the index writes them
        todo: list[int] = []
        looked_up: set[str] = set()  # distinct unknown words (a repeated word costs one look-up)
        compared, capped = 0, False  # index words compared so far, and whether some look-up did not fit
        for i, m in enumerate(tokens.matches):
            token = m.group(0)
            kind = kinds.get(token)
            if kind is None:
                kind = kinds[token] = self._kind(token, tokens.pieces(i))
            if kind == "skip" or inside(m.start(), m.end(), quote_starts, quoted):
                continue
            if kind == "code":
                known = self.identifiers.get(identifier_key(token))
                if known is not None:  # the index's identifier in another spelling: its own form, no guess
                    surface = self.surface.get(known, known)
                    respelt[i] = Correction(token, surface, 0, self.counts.get(known, 0), 0, (), 1.0, 1.0, None, None,
                                            why="the index's spelling of this identifier (case, hyphens and spaces aside)")
                    continue
                # Near misses are offered for part numbers (the deployment's shape) the index
                # lacks; any other code ("IL-2", "p150N"), all-caps word or number is left as typed.
                if not self.part_numbers.matches(token):
                    continue
                key = normalize(token)
                offered = offers.get(key)
                if offered is None:
                    cost = 2 * len(self._identifiers)  # two scans of the index's identifiers
                    if compared + cost > self.max_compared:
                        capped = True
                        continue
                    compared += cost
                    offered = offers[key] = self.identifier_candidates(token)
                if offered:
                    identifiers[token] = offered
                continue
            word = normalize(token)
            if word not in looked_up:
                cost = sum(self._bucket_sizes.get(n, 0) for n in range(max(1, len(word) - MAX_DISTANCE), len(word) + MAX_DISTANCE + 1))
                if compared + cost > self.max_compared:
                    capped = True
                    continue
                compared += cost
                looked_up.add(word)
            todo.append(i)

        corrections: dict[int, Correction] = {}
        declined_at: dict[int, Declined | None] = {}
        for _ in range(2):  # the second pass sees corrected neighbours ("replacment cushons")
            changed = False
            seen: dict[tuple[str, bool, str | None, str | None], Correction | Declined | None] = {}
            for i in todo:
                left, right = neighbours(tokens, i)
                context = (tokens.token(i), tokens.run_start(i), left, right)
                if context not in seen:
                    seen[context] = self._correct(tokens, i, left, right)
                outcome = seen[context]
                if isinstance(outcome, Correction):
                    changed |= corrections.get(i) != outcome
                    corrections[i], tokens.fix[i], declined_at[i] = outcome, normalize(outcome.replacement), None
                else:  # Declined, or None for a real word with nothing near it in the index
                    changed |= i in corrections
                    corrections.pop(i, None)
                    tokens.fix.pop(i, None)
                    declined_at[i] = outcome
            if not changed:
                break

        corrections.update(respelt)
        ordered = tuple(corrections[i] for i in sorted(corrections))
        declined = tuple(d for _, d in sorted(declined_at.items()) if d is not None)
        corrected = _apply(text, [(tokens.matches[i], corrections[i].replacement) for i in sorted(corrections)])
        notes = [f"left the other unknown words as typed: looking them up would compare more than {self.max_compared:,} index words"] if capped else []
        if len(part) < len(text):
            notes.append(f"read the first {len(part):,} of {len(text):,} characters")
        return Spelling(
            corrected=corrected if ordered else None,
            corrections=ordered,
            identifier_candidates=identifiers,
            reason="; ".join([_reason(ordered, identifiers, declined), *notes]),
            declined=declined,
        )

    def _kind(self, token: str, pieces: list[str]) -> str:
        """What the move does with a token: "code" (an identifier the index lacks: offer near
        misses), "word" (a word the index lacks: try to correct it) or "skip"."""
        if not pieces:
            return "skip"
        if self._is_identifier(token):
            code = any(ch.isdigit() for ch in token) and any(ch.isalpha() for ch in token)
            return "code" if code and normalize(token) not in self.counts else "skip"
        if token.isalpha() and len(token) > 3 and normalize(token) not in self.counts:
            return "word"
        return "skip"

    def identifier_candidates(self, token: str) -> tuple[str, ...]:
        """The index's identifiers that `token` nearly matches, in their corpus spelling.

        Similarity is difflib's ratio on the lower-cased forms, or on the forms without
        separators ("xk4741" vs "xk-4471") if higher; ties keep corpus order.
        """
        query = normalize(token)
        canonical = _SEPARATORS.sub("", query)
        cutoff = self.identifier_cutoff * 100
        # rapidfuzz's Indel ratio bounds difflib's from above, so it is a safe prefilter.
        hits = {i for _, _, i in process.extract(query, self._identifiers, scorer=fuzz.ratio, score_cutoff=cutoff, limit=None)}
        hits |= {i for _, _, i in process.extract(canonical, self._canonical, scorer=fuzz.ratio, score_cutoff=cutoff, limit=None)}
        scored = []
        for i in hits:
            similarity = max(
                difflib.SequenceMatcher(None, query, self._identifiers[i]).ratio(),
                difflib.SequenceMatcher(None, canonical, self._canonical[i]).ratio(),
            )
            if similarity >= self.identifier_cutoff:
                scored.append((-similarity, i))
        scored.sort()
        return tuple(self.surface.get(self._identifiers[i], self._identifiers[i]) for _, i in scored[: self.max_identifier_candidates])

    # -- scoring ----------------------------------------------------------------------------

    def prior(self, word: str) -> float:
        """P(c): corpus frequency mixed with query-log frequency."""
        p = self.counts.get(word, 0) / self.n_total
        if self.mu:
            p = (1 - self.mu) * p + self.mu * self.log.get(word, 0) / self.log_total
        return p

    def candidates(self, word: str, left: str | None = None, right: str | None = None) -> list[Candidate]:
        """Index words within `MAX_DISTANCE` edits of `word`, best score first."""
        out = []
        for cand, d in self._near(word):
            p = self.prior(cand)
            if p <= 0:
                continue
            given_left, seen_left = self._given(p, left, f"{left} {cand}")
            given_right, seen_right = self._given(p, right, f"{cand} {right}")
            lift = given_left * given_right / (p * p)
            out.append(Candidate(cand, d, self.eps**d * p * lift, lift, seen_left + seen_right))
        out.sort(key=lambda c: (-c.score, c.distance, c.word))
        return out

    def _near(self, word: str) -> list[tuple[str, int]]:
        """Vocabulary words within `MAX_DISTANCE` OSA edits, from the buckets of nearby lengths."""
        if (found := self._near_cache.get(word)) is not None:
            return found
        found = []
        for length in range(max(1, len(word) - MAX_DISTANCE), len(word) + MAX_DISTANCE + 1):
            if bucket := self._by_length.get(length):
                hits = process.extract(word, bucket, scorer=OSA.distance, score_cutoff=MAX_DISTANCE, limit=None)
                found += [(cand, int(d)) for cand, d, _ in hits]
        if len(self._near_cache) >= _CACHE_SIZE:
            self._near_cache.clear()
        self._near_cache[word] = found
        return found

    def _given(self, p: float, neighbour: str | None, pair: str) -> tuple[float, tuple[str, ...]]:
        """P(c | neighbour), smoothed towards P(c); and the pair as evidence if it was seen."""
        n = self.counts.get(neighbour, 0) if neighbour else 0
        if not n:
            return p, ()
        b = self.bigrams.get(pair, 0)
        return (b + self.kappa * p) / (n + self.kappa), ((f"{pair} x{b}",) if b else ())

    def _correct(self, tokens: Tokens, i: int, left: str | None, right: str | None) -> Correction | Declined | None:
        token = tokens.token(i)
        word = normalize(token)
        real = None
        if word in self.real_words:
            real = f"{token!r} is an English word"
        elif token[:1].isupper() and token[1:].islower() and not tokens.run_start(i):
            real = f"{token!r} looks like a name"
        ranked = self.candidates(word, left, right)
        if not ranked:
            # A real word the index lacks is not a misspelling; anything else is worth a note.
            return None if real else Declined(token, None, f"no index word within {MAX_DISTANCE} edits")
        best = ranked[0]
        runner = ranked[1] if len(ranked) > 1 else None
        margin = best.score / runner.score if runner else None
        supported = bool(best.context) and self.eps**best.distance * best.lift >= 1
        needs_context = real
        if not needs_context and best.distance >= 2 and len(word) < 6:
            needs_context = f"{best.distance} edits on a {len(word)}-letter word"
        if needs_context and not supported:
            if best.context:
                why = f"the context ({', '.join(best.context)}, lift {best.lift:.3g}) does not pay for {best.distance} edit(s)"
            else:
                why = f"no neighbouring word supports {best.word!r}"
            return Declined(token, best.word, f"{needs_context} and {why}")
        if runner is not None and margin is not None and margin < self.min_margin:  # (a margin implies a runner)
            return Declined(
                token, best.word, f"ambiguous: {best.word!r} scores only {margin:.2f}x {runner.word!r}"
            )
        freq, log_freq = self.counts.get(best.word, 0), self.log.get(best.word, 0)
        evidence = [f"{best.distance} edit{'s' if best.distance > 1 else ''}", f"seen {freq}x in the index"]
        if log_freq:
            evidence.append(f"{log_freq}x in the query log")
        if best.context:
            evidence.append(f"context {', '.join(best.context)} (lift {best.lift:.3g})")
        if runner is not None:
            evidence.append(f"{margin:.3g}x the score of {runner.word!r}")
        if needs_context:
            evidence.append(f"needed context: {needs_context}")
        return Correction(
            original=token,
            replacement=_like(token, best.word),
            distance=best.distance,
            frequency=freq,
            log_frequency=log_freq,
            context=best.context,
            lift=round(best.lift, 4),
            score=best.score,
            runner_up=runner.word if runner else None,
            margin=None if margin is None else (round(margin, 4) if math.isfinite(margin) else None),
            why="; ".join(evidence),
        )

    # -- tokens -----------------------------------------------------------------------------

    def _is_identifier(self, token: str) -> bool:
        return (
            any(ch.isdigit() for ch in token)
            or (len(token) > 1 and token.isupper())
            or any(p.fullmatch(token) for p in self.identifier_patterns)
        )


def _like(typed: str, word: str) -> str:
    """`word` with the leading capital of `typed`, if it had one."""
    return word[:1].upper() + word[1:] if typed[:1].isupper() else word


def _apply(text: str, edits: list[tuple[re.Match[str], str]]) -> str:
    out, end = [], 0
    for m, replacement in edits:
        out += [text[end : m.start()], replacement]
        end = m.end()
    return "".join(out) + text[end:]


def _reason(
    corrections: tuple[Correction, ...], identifiers: dict[str, tuple[str, ...]], declined: tuple[Declined, ...]
) -> str:
    parts = [f"corrected {c.original!r} -> {c.replacement!r} ({c.why})" for c in corrections]
    parts += [f"offered {', '.join(found)} for unknown identifier {token!r}" for token, found in identifiers.items()]
    parts += [f"left {d.word!r} alone: {d.why}" for d in declined]
    return "; ".join(parts) if parts else "nothing to correct: every word is in the index, an identifier, a number, short, quoted or a real word"

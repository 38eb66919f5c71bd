"""The learnt choice, word by word: which of the conversation's words a follow-up's search carries (#34).

`choice.py` offered whole phrases; a phrase carries words a person's rewrite leaves out ("the newer
lithium iron phosphate battery packs" for "lithium iron phosphate batteries"), and the person's
rewrite takes words from a situation stated turns ago ("my Honda Jazz", "stolen", "catalytic
converter") that no single phrase holds. So here every content word of the conversation (the user
turns, the last two answers) that the message does not hold is a candidate, described by where and
how often it was said, whether the rules' form or a phrase the rules chose carries it, and its
phrase's cosine to the message (`choice.candidates` / `candidate_cosines`), how common the word
is in English and how often the whole conversation says it (`word_traits.py`: a situation's topic
from its story), never by the word itself; the model (`choice.PhraseModel`, trained by bench/training/phrase_choice.py) keeps the
likeliest, and the form is the message, with the rules' pronoun replaced when every word of the
referent is kept, and the kept words beside it in the order the conversation said them.

Chosen word by word because the measure is word by word: each training file (a writer) left out in
turn, rows with answers, the phrase choice met recall and precision >= 0.50 on 8 of 15 files (pooled
0.480 / 0.510), this on 9 (0.515 / 0.517); with commonness (`rarity.py`) and recurrence (`word_traits.py`), on 17
files, 10 (rules 8; 0.515 / 0.515); on 19 files, with the situation opening's topic (`situation.py`), 11 (rules 8;
0.514 / 0.515); on 20 files, with the story's places (`word_traits.Places`), 11 (rules 8; 0.504 / 0.503); on 21
files, after the situation topic's revision, 11 (rules 8; 0.499 / 0.494); on 22 files with boosted trees in place of
the logistic model, 12 (rules 8; 0.504 / 0.501, bench/results/phrase_choice.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from querywise.conversation import Turn
from querywise.text import SENTENCE_SPAN, analyze
from querywise.understand.followup.message import WH
from querywise.understand.followup.rarity import commonness
from querywise.understand.followup.tracker import ANSWER_CHARS, Standalone
from querywise.understand.followup.word_traits import Places, Recurrence

__all__ = ["ANSWERS_BACK", "PLURAL_POINTERS", "SINGULAR_POINTERS", "Phrase", "Word", "compose_words", "offered_words"]

#: How many answers back phrases and words are offered from: a follow-up takes up the latest one or two.
ANSWERS_BACK = 2

PLURAL_POINTERS = re.compile(r"\b(they|them|their|theirs|these|those)\b", re.IGNORECASE)
SINGULAR_POINTERS = re.compile(r"\b(it|its|this|that|he|him|his|she|her)\b", re.IGNORECASE)
_WH = re.compile(rf"^\s*({'|'.join(sorted(WH))})\b", re.IGNORECASE)
_TOKEN = re.compile(r"\w[\w'\-.]*\w|\w")


class Phrase(Protocol):
    """What a word learns from a phrase holding it (`choice.Candidate`)."""

    new_terms: frozenset[str]


@dataclass(frozen=True)
class Word:
    """One word the search may carry: its term, how the conversation wrote it, and what the model reads."""

    term: str
    surface: str
    features: dict[str, float]


@dataclass
class _Said:
    user: int = 0  # user turns that said it
    user_back: int = 99  # user turns since the last one that did (1: the previous)
    first_user: bool = False
    first_position: float = 1.0  # where in the first user turn (0: its first term)
    answer: int = 0  # times the last answers said it
    last_answer: bool = False
    answer_opening: bool = False  # in an answer's first sentence
    order: int = 0  # where the conversation first said it (for the form's order)


def _surfaces(text: str) -> dict[str, tuple[str, bool]]:
    """Each term of `text` -> (the first word that wrote it, capitalised inside a sentence)."""
    out: dict[str, tuple[str, bool]] = {}
    for sentence in SENTENCE_SPAN.finditer(text):
        for k, token in enumerate(_TOKEN.findall(sentence.group(0))):
            for term in analyze(token):
                out.setdefault(term, (token, k > 0 and token[:1].isupper()))
    return out


def offered_words(message: str, history: Sequence[Turn], form: Standalone, phrases: Sequence[Phrase],
                  phrase_features: Sequence[dict[str, float]], subject: str = "") -> list[Word]:
    """Every content word of the conversation the message does not hold, with its features.
    `phrases` and `phrase_features` are `choice.candidates` and `choice.phrase_features` (a word
    learns from the phrases holding it: chosen by the rules, the subject, close to the message)."""
    own = set(analyze(message))
    own_terms = len(own)
    said: dict[str, _Said] = {}
    surfaces: dict[str, tuple[str, bool]] = {}
    users = [t.text for t in history if t.role == "user"]
    answers = [t.text for t in history if t.role == "assistant" and t.text.strip()]
    order = 0
    for k, text in enumerate(users):
        terms = analyze(text)
        for pos, term in enumerate(terms):
            if term in own:
                continue
            s = said.setdefault(term, _Said(order=(order := order + 1)))
            s.user += 1
            s.user_back = min(s.user_back, len(users) - k)
            if k == 0:
                s.first_user, s.first_position = True, min(s.first_position, pos / max(len(terms), 1))
        for term, v in _surfaces(text).items():
            surfaces.setdefault(term, v)
    for back, text in enumerate(reversed(answers[-ANSWERS_BACK:])):
        text = text[:ANSWER_CHARS]
        first = SENTENCE_SPAN.match(text)
        opening = set(analyze(first.group(0))) if first else set()
        for term in analyze(text):
            if term in own:
                continue
            s = said.setdefault(term, _Said(order=(order := order + 1)))
            s.answer += 1
            s.last_answer |= back == 0
            s.answer_opening |= term in opening
        for term, v in _surfaces(text).items():
            surfaces.setdefault(term, v)
    in_form = set(analyze(form.text)) - own
    in_subject = set(analyze(subject))
    by_phrase: dict[str, list[dict[str, float]]] = {}
    for phrase, f in zip(phrases, phrase_features, strict=True):
        for term in phrase.new_terms:
            by_phrase.setdefault(term, []).append(f)
    pointer, wh, n_own = float(bool(PLURAL_POINTERS.search(message) or SINGULAR_POINTERS.search(message))), float(bool(_WH.search(message))), math.log1p(own_terms)
    whole, places = Recurrence(history), Places(history)
    out = []
    for term, s in sorted(said.items(), key=lambda kv: kv[1].order):
        surface, capital = surfaces.get(term, (term, False))
        held = by_phrase.get(term, [])
        from_user, from_answer = float(s.user > 0), float(s.answer > 0)
        f = {
            "in_form": float(term in in_form), "in_subject": float(term in in_subject),
            "from_user": from_user, "log_user_turns": math.log1p(s.user), "log_user_back": math.log1p(min(s.user_back, 20)),
            "first_user": float(s.first_user), "previous_user": float(s.user_back == 1), "first_position": s.first_position,
            "from_answer": from_answer, "log_answer_mentions": math.log1p(s.answer), "last_answer": float(s.last_answer),
            "answer_opening": float(s.answer_opening), "user_share": s.user / max(len(users), 1),
            "capital": float(capital), "number": float(any(ch.isdigit() for ch in term)), "long": float(len(term) >= 7),
            "in_phrase": float(bool(held)), "phrase_by_rules": float(any(h["by_rules"] for h in held)),
            "phrase_cosine": max((h["cosine"] for h in held), default=0.0),
            "message_terms": n_own, "pointer": pointer, "wh": wh, "log_user_count": math.log1p(len(users)), "answered": float(bool(answers)),
        }
        answer_only = from_answer * (1.0 - from_user)
        rarity, log_pieces = commonness(surface)
        f.update({"user_pointer": from_user * pointer, "first_short": f["first_user"] * float(own_terms <= 3),
                  "answer_only": answer_only, "answer_only_pointer": answer_only * pointer,
                  "form_user": f["in_form"] * from_user, "form_answer": f["in_form"] * answer_only,
                  "rarity": rarity, "log_pieces": log_pieces, "rarity_user": rarity * from_user, "rarity_answer_only": rarity * answer_only,
                  **whole.features(term), **places.features(term)})
        out.append(Word(term, surface, f))
    return out


def compose_words(message: str, form: Standalone, placed_part: str, words: Sequence[Word], keep: Sequence[bool]) -> str:
    """The searched text: the message (the rules' form up to its placed referent when every word
    that referent brought in is kept), then each kept word it does not hold yet, in the
    conversation's order."""
    kept = {w.term for w, k in zip(words, keep, strict=True) if k}
    own = set(analyze(message))
    placed = set(analyze(placed_part)) - own
    text = placed_part if placed_part != message and placed and placed <= kept else message
    held = set(analyze(text))
    extra = []
    for w, k in zip(words, keep, strict=True):
        if k and w.term not in held:
            extra.append(w.surface)
            held |= set(analyze(w.surface))
    return f"{text.rstrip()} {' '.join(extra)}" if extra else text

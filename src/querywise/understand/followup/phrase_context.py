"""Where each candidate phrase sits in the conversation, for the learned phrase choice (#34).

`choice.phrase_features` says where a phrase came from (a user turn, an answer, the rules) and how
close it is to the message. Across writers that does not tell the answer's phrase a person's rewrite
takes from the others of the same answer. These features read the answer's and the message's shape
instead (never their words): whether the phrase opens its sentence (the sentence's subject) or
stands in a list, how many candidates share its head, whether a user ever typed its head, how often
the answer repeats it, its rank by cosine among the answer's phrases only, and what the message asks
(a property of one thing, a pick among several, or a question that stands alone).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from querywise.conversation import Turn
from querywise.embed import Embedder
from querywise.text import SENTENCE_SPAN, analyze
from querywise.understand.followup.tracker import ANSWER_CHARS

__all__ = ["answer_sentences", "context_features", "message_shape", "sentence_cosines"]

#: The answers read back (as `choice.ANSWERS_BACK`: a follow-up takes up the latest one or two).
ANSWERS_BACK = 2
#: A phrase whose first word is after at most this many words of its sentence (an article) is read as its subject.
SUBJECT_WORDS = 1

# Function words only (the message's and the answer's shape, never a topic's words).
_PROPERTY = re.compile(r"^\W*(how\s+(much|many|long|often|far|big|old|fast|large|high|early|late|soon)|what\s+(is|are|was|were)\s+the\s+(\w+\s+){1,2}of)\b", re.IGNORECASE)
_PICK = re.compile(r"\b(which\s+(one|of)|the\s+(first|second|third|fourth|last|latter|former|other)( one)?|\d+(st|nd|rd|th))\b", re.IGNORECASE)
_POINTER = re.compile(r"\b(it|its|they|them|their|this|that|these|those|he|him|his|she|her|there|one|ones)\b", re.IGNORECASE)
_LIST_BEFORE = re.compile(r"(,|;|:|\band|\bor|such as|including|like|e\.g\.)\s*(the\s+|a\s+|an\s+)?$", re.IGNORECASE)
_LIST_AFTER = re.compile(r"^\s*(,|;|\band\b|\bor\b)", re.IGNORECASE)
_BULLET = re.compile(r"(^|\n)\s*([-*\u2022]|\d+[.)])\s*$")
_WORD = re.compile(r"\w+")


class _Phrase(Protocol):
    text: str
    from_answer: int


def message_shape(message: str) -> dict[str, float]:
    """What the message asks, from its function words: a property of one thing ("how much"), a
    pick among several ("which one", "the second"), and whether it stands alone (no pointer, and
    words of its own beyond a short question)."""
    own = analyze(message)
    return {"x_property": float(bool(_PROPERTY.search(message))), "x_pick": float(bool(_PICK.search(message))),
            "x_alone": float(not _POINTER.search(message) and len(own) >= 3), "x_log_own_terms": math.log1p(len(own))}


def _sentences(history: Sequence[Turn]) -> list[tuple[int, str]]:
    """(how many answers back, sentence) of the latest answers, latest first."""
    out: list[tuple[int, str]] = []
    answers = 0
    for turn in reversed(history):
        if turn.role != "assistant" or not turn.text.strip():
            continue
        answers += 1
        out += [(answers, m.group(0)) for m in SENTENCE_SPAN.finditer(turn.text[:ANSWER_CHARS]) if m.group(0).strip()]
        if answers >= ANSWERS_BACK:
            break
    return out


def answer_sentences(history: Sequence[Turn]) -> list[str]:
    """The last answer's sentences of three words or more, as the topic-shift check embeds them
    (`shift.compared_texts`): the same strings, so the embedder's memory serves them again."""
    if not history or history[-1].role != "assistant":
        return []
    return list(dict.fromkeys(s.strip() for s in SENTENCE_SPAN.findall(history[-1].text[:ANSWER_CHARS]) if len(s.split()) >= 3))


def sentence_cosines(message: str, history: Sequence[Turn], embedder: Embedder) -> dict[str, float]:
    """Each of the last answer's sentences with its cosine to the message: whether the message takes
    up the sentence a phrase sits in, not only the phrase."""
    sentences = answer_sentences(history)
    if not sentences:
        return {}
    v = np.asarray(embedder.embed([message, *sentences]), dtype=np.float32)
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return {s: float(x) for s, x in zip(sentences, v[1:] @ v[0], strict=True)}


def _position(sentence: str, phrase: str) -> tuple[bool, bool] | None:
    """(opens the sentence, stands in a list) for the phrase's first place in the sentence, or None."""
    at = sentence.lower().find(phrase.lower())
    if at < 0:
        return None
    before, after = sentence[:at], sentence[at + len(phrase):]
    opens = len(_WORD.findall(before)) <= SUBJECT_WORDS
    listed = bool(_LIST_BEFORE.search(before) or _LIST_AFTER.search(after) or _BULLET.search(before))
    return opens, listed


def context_features(message: str, history: Sequence[Turn], found: Sequence[_Phrase], cosines: Sequence[float],
                     sentences: Mapping[str, float]) -> list[dict[str, float]]:
    """The features of each candidate's place in the conversation (see the module's docstring);
    `sentences`: the last answer's sentences with their cosines to the message (`sentence_cosines`)."""
    best_sentence = max(sentences.values(), default=0.0)
    shape = message_shape(message)
    spans = _sentences(history)
    user_terms = {t for turn in history if turn.role == "user" for t in analyze(turn.text)} | set(analyze(message))
    answer_terms = Counter(t for _, s in spans for t in analyze(s))
    terms = [analyze(c.text) for c in found]
    heads = Counter(ts[-1] for ts in terms if ts)
    repeats = [max((answer_terms[t] for t in ts), default=0) for ts in terms]
    most = max(repeats, default=0)
    # The rank by cosine among the answers' phrases only: the answer offers many, a rewrite takes one.
    answer_idx = [i for i, c in enumerate(found) if c.from_answer and i < len(cosines)]
    order = sorted(answer_idx, key=lambda i: -cosines[i])
    answer_rank = {i: r for r, i in enumerate(order)}
    n_answers = sum(1 for t in history if t.role == "assistant" and t.text.strip())
    out = []
    for i, (c, ts) in enumerate(zip(found, terms, strict=True)):
        place = next(((back, p) for back, s in spans if (p := _position(s, c.text)) is not None), None)
        opens, listed = place[1] if place else (False, False)
        f = {"x_opens": float(opens), "x_listed": float(listed), "x_in_answer_text": float(place is not None),
             "x_log_same_head": math.log1p(heads[ts[-1]] - 1) if ts else 0.0,
             "x_head_typed": float(bool(ts) and ts[-1] in user_terms), "x_log_terms": math.log1p(len(ts)),
             "x_log_repeats": math.log1p(repeats[i]), "x_most_repeated": float(most > 1 and repeats[i] == most),
             "x_log_answer_cos_rank": math.log1p(min(answer_rank.get(i, 20), 20)), "x_answer_cos_top": float(answer_rank.get(i) == 0),
             "x_log_answers": math.log1p(n_answers), **shape}
        # A message's shape matters through the answer's phrases (a pick takes one of them; a message
        # that stands alone takes none): products, since a logistic model only adds its evidence.
        answer = float(c.from_answer > 0)
        said_in = [x for s, x in sentences.items() if c.text.lower() in s.lower()]
        f["x_sentence_cos"] = max(said_in, default=0.0)
        f["x_sentence_top"] = float(bool(said_in) and max(said_in) >= best_sentence)
        f["x_sentence_gap"] = best_sentence - max(said_in) if said_in else 0.0
        f.update({"x_pick_answer": shape["x_pick"] * answer, "x_alone_answer": shape["x_alone"] * answer,
                  "x_property_answer": shape["x_property"] * answer, "x_opens_answer": f["x_opens"] * answer})
        out.append(f)
    return out


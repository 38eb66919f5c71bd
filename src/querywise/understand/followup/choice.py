"""A learned choice of what a follow-up's search carries (#34): the candidates and the model.

The rules (`referent.py`, `answer_refs.py`, ...) pick one referent per pointer and often the
conversation's subject beside it. Written rule by rule on development rows, each moved those rows
and barely the held-out ones. This module offers every phrase the conversation holds -- what the
user turns named, what the last two answers named, the conversation's subject, the previous user
turn, the referents the rules chose -- and describes each by features that carry across topics
(where it was said, how long ago, how often, its cosine to the message, the message's pointer cues,
whether the rules chose it; never its words). `words.py` then offers each of the conversation's
words with what those phrases say of it, and a model (`PhraseModel`) says how likely a person's
rewrite adds that word: the search carries the likeliest (word by word, as the measure is).

The model is learnt, not written: `bench/training/phrase_choice.py` fits it on the team's training
conversations, each file (a writer) left out in turn, and writes `phrase_choice.json` with its
provenance. Gradient-boosted trees, not a weighted sum: what a feature says depends on the others
(a word of the opening situation is the person's after a bare pronoun, and not once the talk has
moved to a thing an answer named). On 22 files, each left out in turn, rows with answers: files at
added-term recall and precision >= 0.50, 11 -> 12; pooled 0.494 / 0.485 -> 0.504 / 0.501; the
passage-answer rows (CAsT 2021/22 style) 0.419 / 0.401 -> 0.434 / 0.420. Words near a message word
in the conversation and the cosine of the sentence holding them were tried beside the trees and
moved the mean of each file's lower figure by 0.002 and 0.006: not kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from querywise.catalog import Catalog
from querywise.conversation import Turn
from querywise.embed import Embedder
from querywise.text import analyze
from querywise.understand.followup.standalone import conversation_subject
from querywise.understand.followup.tracker import ANSWER_CHARS, Referent, Standalone, Tracker
from querywise.understand.followup.words import ANSWERS_BACK, compose_words, offered_words

__all__ = ["Candidate", "PhraseModel", "Trees", "answered_before", "candidate_cosines", "candidates", "decide", "phrase_features", "phrase_model", "placed_part",
           "subject_of"]

#: At most this many candidates per message (most salient first): bounded embedding work.
MAX_CANDIDATES = 24


@dataclass
class Candidate:
    """One phrase the form may carry, and what is known about where it came from."""

    text: str
    key: tuple[str, ...]
    new_terms: frozenset[str]  # its terms the message does not hold
    kind: str
    from_user: int = 0  # mentions in user turns
    from_answer: int = 0  # mentions in the last answers
    turns_back: int = 99  # turns since it was last said
    subject: bool = False  # the conversation's subject (`conversation_subject`)
    by_rules: bool = False  # carried by the rules' form
    placed: bool = False  # the rules put it in the message (a pronoun replaced)


def answered_before(history: Sequence[Turn]) -> bool:
    """Whether the history holds an assistant's answer: where `phrase_choice = "answers"` runs the
    choice, and how bench/training/phrase_choice.py splits its rows to choose that default."""
    return any(t.role == "assistant" and t.text.strip() for t in history)


def candidates(message: str, history: Sequence[Turn], form: Standalone, *, catalog: Catalog | None = None) -> list[Candidate]:
    """Every phrase the conversation offers the form, merged by its terms, with no words of
    the message's own (a phrase adding nothing is no choice)."""
    own = set(analyze(message))
    found: dict[tuple[str, ...], Candidate] = {}
    reader = Tracker(catalog)

    def offer(r: Referent, back: int) -> Candidate | None:
        new = frozenset(r.key) - own if r.kind not in ("entity", "identifier") else frozenset(analyze(r.text)) - own
        if not new:
            return None
        c = found.setdefault(r.key, Candidate(r.text, r.key, new, r.kind))
        c.turns_back = min(c.turns_back, back)
        return c

    answers = 0
    for back, turn in enumerate(reversed(history), start=1):
        if turn.role == "user":
            for r in reader.mentions(turn.text):
                if (c := offer(r, back)) is not None:
                    c.from_user += 1
        elif answers < ANSWERS_BACK:
            answers += 1
            text = turn.text[:ANSWER_CHARS]
            for r in reader.mentions(text):
                if (c := offer(r, back)) is not None:
                    c.from_answer += 1
    users = [t for t in history if t.role == "user"]
    subject = conversation_subject(history, catalog=catalog)
    if subject:
        for r in reader.mentions(subject)[:1]:
            if (c := offer(r, 99)) is not None:
                c.subject = True
    placed_text = _placed_part(message, form)
    for r in form.referents:
        if (c := offer(r, 99)) is not None:
            c.by_rules = True
            c.text = r.placed  # as the rules wrote it ("the Hanseatic League")
            c.placed = r.placed in placed_text or r.text in placed_text
    if form.method == "previous_turn" and users:
        key = ("previous-turn", *analyze(users[-1].text))
        new = frozenset(analyze(users[-1].text)) - own
        if new:
            found[key] = Candidate(users[-1].text, key, new, "turn", by_rules=True, from_user=1, turns_back=1)
    ranked = sorted(found.values(), key=lambda c: (not c.by_rules, not c.subject, c.turns_back, -(c.from_user + c.from_answer)))
    return ranked[:MAX_CANDIDATES]


def _placed_part(message: str, form: Standalone) -> str:
    """The part of the form that stands where the message stood (the form less the phrases
    appended after it)."""
    text = form.text
    for r in reversed(form.referents):
        for said in (r.placed, r.text):
            if text.endswith(f" {said}") and not message.rstrip().endswith(said):
                text = text[: -len(said) - 1].rstrip()
                break
    return text


def phrase_features(found: Sequence[Candidate], cosines: Sequence[float]) -> list[dict[str, float]]:
    """What the words read of each candidate holding them (`words.offered_words`): whether the
    rules chose it, and its cosine to the message."""
    return [{"by_rules": float(c.by_rules), "cosine": float(cosines[i]) if i < len(cosines) else 0.0} for i, c in enumerate(found)]


def candidate_cosines(message: str, found: Sequence[Candidate], embedder: Embedder) -> list[float]:
    """Each candidate's cosine to the message (the packaged MiniLM)."""
    if not found:
        return []
    v = np.asarray(embedder.embed([message, *(c.text for c in found)]), dtype=np.float32)
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return [float(x) for x in v[1:] @ v[0]]


def decide(chances: Sequence[float], threshold: float, floor: float = 1.0, cap: int = 99) -> list[bool]:
    """Which candidates are kept: those at `threshold` or over, the `cap` likeliest of them; and,
    when none is, the likeliest one if at `floor` or over (a form that carries one phrase beside the
    message reads better than the answer's words searched as they stand).

    >>> decide([0.9, 0.2, 0.7], 0.5, cap=1), decide([0.3, 0.2], 0.5, floor=0.25)
    ([True, False, False], [True, False])
    """
    order = sorted(range(len(chances)), key=lambda i: -chances[i])
    kept = {i for i in order[:cap] if chances[i] >= threshold}
    if not kept and order and chances[order[0]] >= floor:
        kept = {order[0]}
    return [i in kept for i in range(len(chances))]


@dataclass(frozen=True, eq=False)
class _Arrays:
    """The trees' lists as arrays, read once (compared by identity: the model's equality is its fields')."""

    arrays: tuple[np.ndarray, ...]


class Trees(BaseModel):
    """Gradient-boosted regression trees, every tree's nodes in one list, each before its children
    (as scikit-learn numbers them): node i tests feature `feature[i]` against `threshold[i]` (`<=`
    goes to `left[i]`), and a leaf (`left[i] == right[i] == i`) adds `value[i]` to the log-odds.
    `roots[t]` is tree t's first node."""

    model_config = ConfigDict(frozen=True)
    roots: list[int]
    feature: list[int]
    threshold: list[float]
    left: list[int]
    right: list[int]
    value: list[float]

    @model_validator(mode="after")
    def _consistent(self) -> Trees:
        n = len(self.feature)
        if not len(self.threshold) == len(self.left) == len(self.right) == len(self.value) == n:
            raise ValueError("every node needs a feature, threshold, left, right and value")
        if any(not 0 <= i < n for i in self.roots):
            raise ValueError(f"a root outside the {n} nodes")
        # A child after its node, or a leaf pointing at itself: every walk ends, within `depth` steps.
        if any(not ((a == b == i) or (i < a < n and i < b < n)) for i, (a, b) in enumerate(zip(self.left, self.right, strict=True))):
            raise ValueError(f"a child before its node or outside the {n} nodes")
        return self

    @cached_property
    def depth(self) -> int:
        """The longest walk from a root to a leaf (children come after their node: one pass)."""
        steps = [0] * len(self.feature)
        for i, (a, b) in enumerate(zip(self.left, self.right, strict=True)):
            if a != i:
                steps[a] = steps[b] = steps[i] + 1
        return max(steps, default=0)

    @cached_property
    def _arrays(self) -> _Arrays:
        return _Arrays(tuple(np.asarray(a) for a in (self.roots, self.feature, self.threshold, self.left, self.right, self.value)))

    def log_odds(self, x: np.ndarray) -> np.ndarray:
        """Each row of `x` (words by features) through every tree at once, summed per row."""
        roots, feature, threshold, left, right, value = self._arrays.arrays
        node = np.broadcast_to(roots, (len(x), len(roots))).copy()
        rows = np.arange(len(x))[:, None]
        for _ in range(self.depth):
            node = np.where(x[rows, feature[node]] <= threshold[node], left[node], right[node])
        return value[node].sum(axis=1) if len(self.roots) else np.zeros(len(x))


class PhraseModel(BaseModel):
    """Boosted trees over the features of `words.offered_words` (a feature read in a context of
    others: an opening's word is kept after a pronoun, left out once the talk has moved on), the
    chance at which a word is kept (at most `cap` of them), and where they came from."""

    model_config = ConfigDict(frozen=True)
    features: list[str]
    baseline: float  # the log-odds before any tree
    trees: Trees = Trees(roots=[], feature=[], threshold=[], left=[], right=[], value=[])
    threshold: float
    floor: float = 1.0
    cap: int = 99
    provenance: dict[str, object] = {}

    @model_validator(mode="after")
    def _features_known(self) -> PhraseModel:
        t = self.trees
        if any(t.left[i] != i and not 0 <= t.feature[i] < len(self.features) for i in range(len(t.feature))):
            raise ValueError(f"a tree asks a feature outside the {len(self.features)} named")
        return self

    def chances(self, rows: Sequence[Mapping[str, float]]) -> list[float]:
        """The chance a person's rewrite adds each word (a feature not given reads 0)."""
        if not rows:
            return []
        x = np.array([[r.get(name, 0.0) for name in self.features] for r in rows], dtype=np.float64)
        z = self.baseline + self.trees.log_odds(x)
        return [float(p) for p in 1.0 / (1.0 + np.exp(-z))]

    def choose(self, message: str, history: Sequence[Turn], form: Standalone, *, embedder: Embedder,
               catalog: Catalog | None = None) -> tuple[str, list[tuple[str, float]]]:
        """The searched text the kept words make (`words.py`) and each word with its chance, likeliest first (for the trace)."""
        found = candidates(message, history, form, catalog=catalog)
        feats = phrase_features(found, candidate_cosines(message, found, embedder))
        offered = offered_words(message, history, form, found, feats, subject_of(found))
        chances = self.chances([w.features for w in offered])
        text = compose_words(message, form, placed_part(message, form, found), offered, decide(chances, self.threshold, self.floor, self.cap))
        ranked = sorted(zip(offered, chances, strict=True), key=lambda wp: -wp[1])
        return text, [(w.surface, round(p, 3)) for w, p in ranked]


def subject_of(found: Sequence[Candidate]) -> str:
    """The conversation's subject as `candidates` offered it ("" when none)."""
    return next((c.text for c in found if c.subject), "")


def placed_part(message: str, form: Standalone, found: Sequence[Candidate]) -> str:
    """The rules' form up to the referent it put where the message's pointer stood (the message
    when it put none, or joined the previous turn)."""
    return _placed_part(message, form) if any(c.placed for c in found) and form.method != "previous_turn" else message


@cache
def phrase_model() -> PhraseModel:
    """The packaged model (trained by bench/training/phrase_choice.py)."""
    raw = resources.files("querywise.understand.followup").joinpath("phrase_choice.json").read_text(encoding="utf-8")
    return PhraseModel.model_validate(json.loads(raw))

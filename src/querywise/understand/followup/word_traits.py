"""What tells a situation's topic from its story, for the learnt word choice (#34, `words.py`).

A person who states a situation ("My dad started having problems with his kidneys. Can he get
Medicaid?") and then asks short follow-ups rewrites them with the topic ("Medicaid") and leaves the
story ("dad", "started", "problems") out. Two traits of a word, never the word itself, tell them
apart:

- how common it is in English (`rarity.commonness`: its rank in the packaged model's WordPiece
  vocabulary; "lisinopril", "hoa" split into pieces are rarer than any whole word);
- how often the whole conversation says it: every answer, not only the last two `words.py` reads,
  and every turn; a word of the first user turn that an answer echoes is the topic.

Chosen on the training files left out in turn (bench/training/phrase_choice.py, C 0.1): files at the
bar 10 of 17 either way, mean of the lower of added-term recall and precision 0.498 -> 0.504 with
the duplicate columns dropped; train_13 0.350 / 0.323 -> 0.350 / 0.341. Where the first user turn
says a word (its "?" sentence or the story) and the message's shape (a definitional question) were
tried too and added nothing (0.502, 0.504).

Where the story happened (`Places`): a person's rewrite leaves the place of a situation out unless
the question turns on it ("in Leeds"). Each of 20 files left out in turn (C 0.1, threshold 0.85, at
most 8 words): files at the bar 11 either way, mean lower figure 0.496 -> 0.498, rows with answers
0.504 / 0.499 -> 0.504 / 0.503; the files of situations train_15 0.450 / 0.369 -> 0.450 / 0.381 and
train_17 0.355 / 0.346 -> 0.353 / 0.353, train_10 0.457 / 0.483 -> 0.450 / 0.481. A time of the story
("last month") and a side question's words ("what is adaptil?") were tried beside it and lowered the
mean (0.4954, 0.4956 against 0.4962 without any).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from querywise.conversation import Turn
from querywise.text import analyze
from querywise.understand.followup.people import PLACE_NAME
from querywise.understand.followup.phrases import NOT_NAMES
from querywise.understand.followup.tracker import ANSWER_CHARS

__all__ = ["Places", "Recurrence"]



class Recurrence:
    """How often the whole conversation says each term: answers and turns in all."""

    def __init__(self, history: Sequence[Turn]) -> None:
        users = [t.text for t in history if t.role == "user"]
        answers = [t.text[:ANSWER_CHARS] for t in history if t.role == "assistant" and t.text.strip()]
        self.answers = len(answers)
        self.in_answers: dict[str, int] = {}
        self.in_turns: dict[str, int] = {}
        for k, text in enumerate([*answers, *users]):
            for term in set(analyze(text)):
                self.in_turns[term] = self.in_turns.get(term, 0) + 1
                if k < len(answers):
                    self.in_answers[term] = self.in_answers.get(term, 0) + 1
        self.first = set(analyze(users[0])) if users else set()

    def features(self, term: str) -> dict[str, float]:
        answers = self.in_answers.get(term, 0)
        return {"log_answers_all": math.log1p(answers), "answer_share_all": answers / max(self.answers, 1),
                "log_turns_all": math.log1p(self.in_turns.get(term, 0)), "first_echoed": float(term in self.first and answers > 0)}


class Places:
    """The places the user turns say a story happened in: a name after "in", "at", "near" or "from"
    that is no month or weekday ("in Leeds", not "in September")."""

    def __init__(self, history: Sequence[Turn]) -> None:
        self.places = {term for t in history if t.role == "user" for m in PLACE_NAME.finditer(t.text)
                       if m.group("prep") != "to" and not any(w.lower() in NOT_NAMES for w in m.group("name").split())
                       for term in analyze(m.group("name"))}

    def features(self, term: str) -> dict[str, float]:
        return {"place": float(term in self.places)}

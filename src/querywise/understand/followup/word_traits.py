"""What tells a situation's topic from its story, for the learnt word choice (#34, `words.py`).

A person who states a situation ("My dad started having problems with his kidneys. Can he get
Medicaid?") and then asks short follow-ups rewrites them with the topic ("Medicaid") and leaves the
story ("dad", "started", "problems") out. Two traits of a word, never the word itself, tell them
apart:

- how common it is in English: the packaged MiniLM's WordPiece vocabulary (vocab.txt beside the
  weights) lists its whole words roughly by frequency after the special tokens and single
  characters ("the" first, "can" 69th, "started" 323rd, "says" 763rd), so a word that is one piece
  has a rank, and a word that is not is rarer than any that is ("lisinopril", "hoa" split into pieces);
- how often the whole conversation says it: every answer, not only the last two `words.py` reads,
  and every turn; a word of the first user turn that an answer echoes is the topic.

Chosen on the training files left out in turn (bench/training/phrase_choice.py, C 0.1): files at the
bar 10 of 17 either way, mean of the lower of added-term recall and precision 0.498 -> 0.504 with
the duplicate columns dropped; train_13 0.350 / 0.323 -> 0.350 / 0.341. Where the first user turn
says a word (its "?" sentence or the story) and the message's shape (a definitional question) were
tried too and added nothing (0.502, 0.504).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import cache, lru_cache

from querywise.conversation import Turn
from querywise.embed import model_dir
from querywise.text import analyze
from querywise.understand.followup.tracker import ANSWER_CHARS

__all__ = ["Recurrence", "commonness"]

#: The vocabulary's first whole word ("the"): ids before it are special tokens, unused slots and characters.
_FIRST_WORD = "the"
_PIECE = re.compile(r"[a-z0-9]+")


@cache
def _vocabulary() -> tuple[dict[str, int], frozenset[str]]:
    """Whole words -> frequency rank (1: commonest), and the continuation pieces ("##ril")."""
    lines = (model_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines()
    start = lines.index(_FIRST_WORD)
    ranks = {w: i - start + 1 for i, w in enumerate(lines[start:], start=start) if not w.startswith("##")}
    pieces = frozenset(w[2:] for w in lines if w.startswith("##"))
    return ranks, pieces


def _pieces(word: str, ranks: dict[str, int], tails: frozenset[str]) -> int:
    """How many WordPiece pieces `word` takes (greedy longest match, as BERT's tokenizer splits)."""
    count, rest, first = 0, word, True
    while rest:
        for end in range(len(rest), 0, -1):
            if (rest[:end] in ranks) if first else (rest[:end] in tails):
                break
        else:
            return count + len(rest)  # no piece fits: one per character, as [UNK] would cost more
        count, rest, first = count + 1, rest[end:], False
    return count


#: Words whose commonness is remembered: a service reads every word its conversations say, so bounded.
COMMONNESS_CACHE = 1 << 16


@lru_cache(maxsize=COMMONNESS_CACHE)
def commonness(surface: str) -> tuple[float, float]:
    """(rarity in 0..1: log rank over log vocabulary size, 1.0 when the word is not one piece;
    log of its number of pieces) of the rarest part of `surface`.

    >>> commonness("says")[0] < commonness("lisinopril")[0] == 1.0
    True
    """
    ranks, tails = _vocabulary()
    parts = _PIECE.findall(surface.lower()) or [surface.lower()]
    top = math.log(len(ranks))
    rarity, pieces = 0.0, 1
    for part in parts:
        if part in ranks:
            rarity = max(rarity, math.log(ranks[part]) / top)
        else:
            rarity, pieces = 1.0, max(pieces, _pieces(part, ranks, tails))
    return rarity, math.log(pieces)


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

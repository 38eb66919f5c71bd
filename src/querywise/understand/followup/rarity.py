"""How common a word is in English, from the packaged MiniLM's WordPiece vocabulary (#34).

The vocabulary (vocab.txt beside the weights) lists its whole words roughly by frequency after the
special tokens and single characters ("the" first, "can" 69th, "started" 323rd, "says" 763rd), so
a word that is one piece has a rank, and a word that is not is rarer than any that is
("lisinopril", "hoa" split into pieces). Read by the learnt word choice (`word_traits.py`) and by
the topic of a situation opening (`situation.py`): what a person's situation is about is the
rarest thing it names ("lisinopril", not "dad" or "a month").
"""

from __future__ import annotations

import math
import re
from functools import cache, lru_cache

from querywise.embed import model_dir

__all__ = ["COMMONNESS_CACHE", "commonness"]

#: The vocabulary's first whole word ("the"): ids before it are special tokens, unused slots and characters.
_FIRST_WORD = "the"
_PIECE = re.compile(r"[a-z0-9]+")


@cache
def _vocabulary() -> tuple[dict[str, int], frozenset[str], int]:
    """Whole words -> frequency rank (1: commonest), the continuation pieces ("##ril"), and the
    length of the longest of them."""
    lines = (model_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines()
    start = lines.index(_FIRST_WORD)
    ranks = {w: i - start + 1 for i, w in enumerate(lines[start:], start=start) if not w.startswith("##")}
    pieces = frozenset(w[2:] for w in lines if w.startswith("##"))
    return ranks, pieces, max(map(len, [*ranks, *pieces]))


def _pieces(word: str, ranks: dict[str, int], tails: frozenset[str], longest: int) -> int:
    """How many WordPiece pieces `word` takes (greedy longest match, as BERT's tokenizer splits).
    No piece is longer than the vocabulary's `longest`: a long word costs linear time."""
    count, start, first = 0, 0, True
    while start < len(word):
        for end in range(min(len(word), start + longest), start, -1):
            if (word[start:end] in ranks) if first else (word[start:end] in tails):
                break
        else:
            return count + len(word) - start  # no piece fits: one per character, as [UNK] would cost more
        count, start, first = count + 1, end, False
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
    ranks, tails, longest = _vocabulary()
    parts = _PIECE.findall(surface.lower()) or [surface.lower()]
    top = math.log(len(ranks))
    rarity, pieces = 0.0, 1
    for part in parts:
        if part in ranks:
            rarity = max(rarity, math.log(ranks[part]) / top)
        else:
            rarity, pieces = 1.0, max(pieces, _pieces(part, ranks, tails, longest))
    return rarity, math.log(pieces)

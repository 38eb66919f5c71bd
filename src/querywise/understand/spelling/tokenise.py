"""The tokens of a message for the spelling move: the tokeniser, quoted spans, and the
per-message token table with the neighbours of a token (all linear in the text)."""

from __future__ import annotations

import bisect
import re

from querywise.index.lexical import RUN_BREAK
from querywise.text import normalize

__all__ = ["QUOTED", "TOKEN", "Tokens", "inside", "neighbours", "quoted_spans", "tokens"]

# A token in the message: an identifier compound with a digit ("xk-4741", "3.2") is one token;
# otherwise a word, with its apostrophes ("don't" is a contraction, not a typo of "dont").
# The definition is `TOKEN`; its lookahead scans the rest of the run from every position
# (quadratic on "ET-ET-ET-..."), so `tokens` reads the same tokens with `_TOKEN_OR_WORD` and
# checks the digit once per run.
TOKEN = re.compile(r"(?=[\w.-]*\d)\w+(?:[-.]\w+)+|\w+(?:['\u2019]\w+)*")
_TOKEN_OR_WORD = re.compile(r"(\w+(?:[-.]\w+)+)|\w+(?:['\u2019]\w+)*")
_WORDISH = re.compile(r"\w+(?:['\u2019]\w+)*")
_RUN = re.compile(r"[\w.-]*")
_LAST_DIGIT = re.compile(r".*\d", re.DOTALL)
# Quoted spans, by definition `QUOTED`; `quoted_spans` finds the same spans in linear time
# (the pattern rescans the rest of the line from every opening quote that is never closed).
QUOTED = re.compile(
    r"\"[^\"\n]*\"|\u201c[^\u201d\n]*\u201d|\u2018[^\u2019\n]*\u2019|`[^`\n]*`|(?<!\w)'[^'\n]*'(?!\w)"
)
_CLOSING = {'"': '"', "\u201c": "\u201d", "\u2018": "\u2019", "`": "`", "'": "'"}
_OPENING = re.compile("[\"\u201c\u2018`']")
_WORD_CHAR = re.compile(r"\w")
_PIECES = re.compile(r"\w\w+|\d")  # the lexicon's words (`word_runs`) inside one token


class Tokens:
    """The tokens of a message, with what the corrector needs to know about them, worked out
    only for the tokens it looks at (most tokens of a long message are never a neighbour).

    `pieces(j)`: the token's words as the lexicon counts them (maybe none: "a"); `run_start(j)`:
    punctuation (or the start of the text) separates it from the previous token; `fix`: the
    correction of a token, once made."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.matches = tokens(text)
        self.fix: dict[int, str] = {}
        self._pieces: dict[str, list[str]] = {}

    def __len__(self) -> int:
        return len(self.matches)

    def token(self, j: int) -> str:
        return self.matches[j].group(0)

    def pieces(self, j: int) -> list[str]:
        token = self.matches[j].group(0)
        found = self._pieces.get(token)
        if found is None:
            found = self._pieces[token] = _PIECES.findall(normalize(token))
        return found

    def run_start(self, j: int) -> bool:
        return j == 0 or bool(RUN_BREAK.search(self.text, self.matches[j - 1].end(), self.matches[j].start()))

    def word(self, j: int, *, last: bool) -> str:
        return self.fix.get(j) or self.pieces(j)[-1 if last else 0]


def tokens(text: str) -> list[re.Match[str]]:
    r"""`list(TOKEN.finditer(text))`, in time linear in `text`.

    Both of `TOKEN`'s branches start at a word character, so each token starts at the first
    word character after the previous one. There, a compound is a token exactly when the run of
    `[\w.-]` from its start holds a digit; where it does not, no later start in that run can
    begin a compound either, and the plain word branch alone reads up to the run's end."""
    out: list[re.Match[str]] = []
    pos = 0
    plain_until = run_end = last_digit = -1
    while True:
        m = (_WORDISH if pos < plain_until else _TOKEN_OR_WORD).search(text, pos)
        if m is None:
            return out
        start = m.start()
        if pos < plain_until <= start:
            m = _TOKEN_OR_WORD.match(text, start)
            assert m is not None  # a word character starts a token
        if m.lastindex == 1:  # a compound: a token only with a digit in its run
            if start >= run_end:
                run = _RUN.match(text, start)
                run_end = run.end() if run else start
                digit = _LAST_DIGIT.match(text, start, run_end)
                last_digit = digit.end() - 1 if digit else -1
            if last_digit < start:
                plain_until = run_end
                m = _WORDISH.match(text, start)
                assert m is not None
        out.append(m)
        pos = m.end()


def quoted_spans(text: str) -> list[tuple[int, int]]:
    """`[m.span() for m in QUOTED.finditer(text)]`, in time linear in `text`: the next closing
    quote and line break after a position are remembered, not searched again from every opening."""
    spans: list[tuple[int, int]] = []
    after: dict[str, int] = {}  # character -> its next index at or after the last position asked (-1: none)

    def next_at(ch: str, pos: int) -> int:
        k = after.get(ch)
        if k is None or 0 <= k < pos:
            k = after[ch] = text.find(ch, pos)
        return k

    pos = 0
    while (m := _OPENING.search(text, pos)) is not None:
        p, opening = m.start(), m.group(0)
        pos = p + 1
        if opening == "'" and p > 0 and _WORD_CHAR.match(text, p - 1):
            continue
        close, line_end = next_at(_CLOSING[opening], p + 1), next_at("\n", p + 1)
        if close < 0 or 0 <= line_end < close:
            continue
        if opening == "'" and _WORD_CHAR.match(text, close + 1):
            continue
        spans.append((p, close + 1))
        pos = close + 1
    return spans


def inside(start: int, end: int, starts: list[int], spans: list[tuple[int, int]]) -> bool:
    """Whether [start, end) lies inside one of `spans` (sorted, not overlapping)."""
    k = bisect.bisect_right(starts, start) - 1
    return k >= 0 and end <= spans[k][1]


def neighbours(tokens: Tokens, i: int) -> tuple[str | None, str | None]:
    """The words next to token i within its run (corrected, if they were), skipping tokens that
    the lexicon does not count ("a")."""
    left = right = None
    j = i
    while not tokens.run_start(j):
        j -= 1
        if tokens.pieces(j):
            left = tokens.word(j, last=True)
            break
    for j in range(i + 1, len(tokens)):
        if tokens.run_start(j):
            break
        if tokens.pieces(j):
            right = tokens.word(j, last=False)
            break
    return left, right

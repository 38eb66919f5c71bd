"""Several intents: "Compare the Solace 7 and the Solace 7 Pro, and cancel my order" holds two
asks for two routes. The message is cut where a coordinator starts a new ask (a request verb or a
question word after ", and" / "and also" / "then"); "the Solace 7 and the Solace 7 Pro" is one
noun phrase and stays whole. The plan serves the first ask and names the rest, each with its
route, as left for a follow-up (bench/understanding/intents.py measures the cut and the choice)."""

from __future__ import annotations

import re

from querywise.text import analysed_part

__all__ = ["split_asks"]

_ASK = (
    r"(?:please\s+)?(?:cancel|change|update|tell|show|check|track|refund|reset|add|remove|delete|send|give|find|help|"
    r"book|return|exchange|close|open|order|buy|pay|unsubscribe|subscribe|let|what|what's|whats|how|where|when|why|which|who|"
    r"can|could|would|will|is|are|do|does|did|i\s+(?:want|need|would|'d|also)|i'd|i'm|also)\b"
)
_CUT = re.compile(rf"\s*(?:(?<=[?.!])\s+also,?\s+|[,;]\s*(?:and\s+(?:also\s+)?|also\s+|then\s+|plus\s+)?|\s+and\s+(?:also\s+|then\s+)?|\s+also\s+|\s+then\s+)(?={_ASK})", re.IGNORECASE)
_MIN_WORDS = 2


def split_asks(text: str) -> list[str]:
    """The asks of `text` in reading order; one element when it holds one.

    >>> split_asks("Compare the Solace 7 and the Solace 7 Pro, and cancel my order")
    ['Compare the Solace 7 and the Solace 7 Pro', 'cancel my order']
    >>> split_asks("noise cancelling headphones and earbuds under $200")
    ['noise cancelling headphones and earbuds under $200']
    """
    part = analysed_part(text)
    pieces: list[str] = []
    start = 0
    for m in _CUT.finditer(part):
        left = part[start : m.start()].strip(" ,;")
        if len(left.split()) >= _MIN_WORDS and len(part[m.end() :].split()) >= _MIN_WORDS:
            pieces.append(left)
            start = m.end()
    rest = part[start:].strip(" ,;")
    if not pieces:
        return [text]
    return [*pieces, rest + text[len(part) :]]

"""The request limits of `[limits]`, enforced before any move reads a message.

`within_limits(message, history, limits)` returns the message and the history the moves may
read: the most recent `max_history_turns` turns (older ones are dropped: the moves weigh the
conversation by recency). A message or a kept turn longer than its limit is a `LimitError`, an
`InputError`, so the front door and the command line report it like any malformed input
(`error: message: 4,120 characters, over the limit of 4,000 ([limits] max_message_chars)`,
exit 2). It also sets the rewrite guard's limit (`max_rewrite_chars`) for the plan.

Every move is linear (or capped) in what it reads, so these limits bound the time of a request;
`bench/understanding/crafted_inputs.py` measures it with crafted messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from querywise.checks.guard import rewrite_limit
from querywise.config import LimitsSettings
from querywise.conversation import Turn, as_turns
from querywise.files import InputError

__all__ = ["LimitError", "within_limits"]


class LimitError(InputError):
    """A message or a history turn longer than `[limits]` allows.

    >>> str(LimitError("message", 4120, 4000, "max_message_chars"))
    'message: 4,120 characters, over the limit of 4,000 ([limits] max_message_chars)'
    """

    def __init__(self, what: str, length: int, limit: int, key: str) -> None:
        super().__init__(what, None, f"{length:,} characters, over the limit of {limit:,} ([limits] {key})")
        self.length, self.limit, self.key = length, limit, key


def within_limits(message: str, history: Sequence[str | Turn], limits: LimitsSettings) -> tuple[str, tuple[Turn, ...]]:
    """The message and the history to plan with (as turns); raises `LimitError` for a message or
    a kept turn over its limit. Turns are counted from 1, oldest first, as the caller passed them.

    >>> within_limits("and the Pro?", ["a", "b", "c"], LimitsSettings(max_history_turns=2))[1]
    (Turn(role='user', text='b'), Turn(role='user', text='c'))
    """
    if len(message) > limits.max_message_chars:
        raise LimitError("message", len(message), limits.max_message_chars, "max_message_chars")
    dropped = max(0, len(history) - limits.max_history_turns)
    kept = as_turns(history[dropped:])
    for n, turn in enumerate(kept, start=dropped + 1):
        if len(turn.text) > limits.max_turn_chars:
            raise LimitError(f"history turn {n}", len(turn.text), limits.max_turn_chars, "max_turn_chars")
    rewrite_limit(limits.max_rewrite_chars)
    return message, kept

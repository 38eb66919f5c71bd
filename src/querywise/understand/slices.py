"""The slices of traffic a message belongs to, as the plan can tell them before any move runs.

Two families, read from the message and its conversation alone (no index, no model), so that
an evaluation's slices and the plan's are the same thing:

- the turn: `follow_up` when the follow-up gate says the message leans on its history (and
  `weak_cue` beside it when the only cue is topic continuity), else `standalone`;
- the form: `identifier` when the message holds a code-like token (a digit or a hyphen inside
  a word: the guard's identifier patterns), else `prose`.

`[understanding.off_in]` switches a move off for a slice (`querywise tune --moves` chooses it on
labelled cases); the pipeline reads these slices for that, and `evaluation.cases` derives a
case's slices with the same functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import get_args

from querywise.catalog import Catalog
from querywise.checks.guard import DEFAULT_IDENTIFIER_PATTERNS
from querywise.config import PlanSlice
from querywise.conversation import Turn
from querywise.understand.followup import check_follow_up

__all__ = ["FORM_SLICES", "PLAN_SLICES", "TURN_SLICES", "form_slice", "message_slices", "turn_slices"]

PLAN_SLICES: tuple[str, ...] = get_args(PlanSlice)
TURN_SLICES = ("follow_up", "standalone")
FORM_SLICES = ("identifier", "prose")
_IDENTIFIER = re.compile("|".join(DEFAULT_IDENTIFIER_PATTERNS))


def turn_slices(message: str, history: Sequence[str | Turn], *, catalog: Catalog | None = None) -> list[str]:
    """`["follow_up"]`, `["follow_up", "weak_cue"]` or `["standalone"]`."""
    gate = check_follow_up(message, history, catalog=catalog)
    if not gate.needs_context:
        return ["standalone"]
    return ["follow_up", "weak_cue"] if gate.strength == "weak" else ["follow_up"]


def form_slice(message: str) -> str:
    """`"identifier"` or `"prose"`.

    >>> form_slice("does HC-3471 fit?"), form_slice("does it fit?")
    ('identifier', 'prose')
    """
    return "identifier" if _IDENTIFIER.search(message) else "prose"


def message_slices(message: str, history: Sequence[str | Turn], *, catalog: Catalog | None = None) -> list[str]:
    """Both families: the slices the plan of `message` after `history` is in.

    >>> message_slices("does HC-3471 fit?", [])
    ['standalone', 'identifier']
    """
    return [*turn_slices(message, history, catalog=catalog), form_slice(message)]

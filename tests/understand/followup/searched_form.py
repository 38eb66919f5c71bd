"""The standalone form the plan searches for a follow-up, for the tests of its rules."""

from __future__ import annotations

from querywise.conversation import Turn
from querywise.understand.followup import check_follow_up, standalone_form


def form(message: str, history: list[Turn]) -> str:
    """The form of `message` after `history`; the gate must flag it (else nothing is rewritten)."""
    gate = check_follow_up(message, history)
    assert gate.needs_context, gate
    return standalone_form(message, history, gate).text

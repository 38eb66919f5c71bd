"""Gate cues for follow-ups with no pronoun (#34 item 3): "the 1911 one", "does that insurance
cover ...", "afterwards", "are any still ...", "is X easier to learn?" and a relational adjective
that ends a message with no final punctuation. Each is read off the message's grammar; the same
words where they do not point back still stand alone. Invented conversations."""

from __future__ import annotations

import pytest

from querywise.conversation import Turn
from querywise.understand.followup import check_follow_up

U, A = "user", "assistant"

HISTORY = [
    Turn(role=U, text="Tell me about the great comets of the last century."),
    Turn(role=A, text=(
        "The Great Comet of 1910 and the Great Comet of 1911 were both bright enough to see in daylight. "
        "Halley's return in 1910 caused panic over cyanide in its tail. Several glass plates from the "
        "observatories of the time survive, and a few refractors used then are kept in museums.")),
]


@pytest.mark.parametrize(
    ("message", "cue"),
    [
        ("What happened with the 1911 one?", "pro-form:one"),
        ("How was the Kew one built?", "pro-form:one"),
        ("Does that panic show up in newspapers?", "demonstrative:that"),
        ("Why is that so famous?", "demonstrative:that"),
        ("What did astronomers do afterwards?", "pro-form:afterwards"),
        ("Are any still in use?", "pro-form:any"),
        ("Is Halley easier to see?", "comparative:easier"),
        ("was the 1911 comet different", "relation:different"),
    ],
)
def test_follow_up_without_a_pronoun_is_flagged(message: str, cue: str) -> None:
    gate = check_follow_up(message, HISTORY)
    assert gate.needs_context and gate.strength == "strong"
    assert cue in gate.cues


@pytest.mark.parametrize(
    "message",
    [
        "Is it true that comets carry water?",  # a complementiser "that", not after the opening auxiliary
        "Who won the Formula One title in 1911?",  # "One" part of a name, not a noun left out
        "Is Saturn bigger than Jupiter?",  # the comparison names its second term
        "Are any comets visible from Sydney this year?",  # the quantifier has its noun
    ],
)
def test_the_same_words_standing_alone_are_not_flagged_strongly(message: str) -> None:
    gate = check_follow_up(message, HISTORY)
    assert not (gate.needs_context and gate.strength == "strong"), gate.cues

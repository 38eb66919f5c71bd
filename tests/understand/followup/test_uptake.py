"""Implicit follow-ups after an answer passage (#34): a message that takes up a word the answer
introduced is read inside the conversation's subject, and the topic-shift check compares it with
the answer's sentences, not with the passage's average; a real change of
subject after the same answer is still searched as typed. Invented conversations."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from querywise.conversation import Turn
from querywise.embed import Embedder
from querywise.understand.followup import check_follow_up
from querywise.understand.followup.gate import ASIDE_CUE
from querywise.understand.followup.move import follow_up, shift_chance
from querywise.understand.followup.shift import compared_texts
from querywise.understand.followup.standalone import standalone_form

U, A = "user", "assistant"

# A CAsT 2021-style answer: one passage of ~110 words, about more than the question asked.
BARRAGE = [
    Turn(role=U, text="How does a tidal barrage generate electricity?"),
    Turn(role=A, text=(
        "A tidal barrage is a low dam built across the mouth of an estuary. Sluice gates let the rising tide fill the "
        "basin behind the dam and close at high water. When the sea outside has fallen a few metres, the trapped water "
        "is released through bulb turbines set in the dam wall, which turn generators much as in a river dam. Because "
        "the head of water is small, the turbines must pass very large volumes, and output comes in pulses twice a day. "
        "Some barrages also pump water into the basin at high tide to raise the head. Silt building up behind the wall "
        "is a lasting maintenance problem, and the altered flow changes the habitat of wading birds on the mudflats.")),
]


@pytest.fixture(scope="module")
def embedder() -> Iterator[Embedder]:
    from querywise.embed import load_embedder

    model = load_embedder("onnx", cache_dir=None)
    yield model
    close = getattr(model, "close", None)
    if close is not None:
        close()


def searched(message: str, history: list[Turn], embedder: Embedder) -> list[str]:
    """Every text the plan searches for the message, the main one first."""
    moved = follow_up(message, history, catalog=None, embedder=embedder)
    return [moved.text, *(q.text for q in moved.beside)]


def test_a_word_the_answer_introduced_makes_a_pointerless_question_a_follow_up() -> None:
    # No pronoun, no definite, and a definition question, which topic continuity leaves alone.
    gate = check_follow_up("What are bulb turbines?", BARRAGE)
    assert gate.needs_context and gate.strength == "weak" and gate.cues == ("continuity:answer",)
    assert "bulb" in gate.reason and "turbin" in gate.reason
    # A name the answer gave is taken up too; one it did not give opens a subject of its own.
    assert check_follow_up("How bad is the Silt problem?", BARRAGE).needs_context
    assert not check_follow_up("Which turbines does the Hoover Dam use?", BARRAGE).needs_context


def test_uptake_needs_an_answer_and_a_message_that_does_not_restate_the_subject() -> None:
    assert not check_follow_up("What are bulb turbines?", BARRAGE[:1]).needs_context  # no answer: stands alone
    # Repeating the user's own words ("tidal barrage") restates the subject: searched as typed.
    assert not check_follow_up("Do tidal barrages harm wading birds?", BARRAGE).needs_context
    # Nothing of the answer taken up: nothing says it continues.
    assert not check_follow_up("What is the capital of Mongolia?", BARRAGE).needs_context


def test_the_check_compares_with_the_answers_sentences() -> None:
    compared = compared_texts(BARRAGE, 1)
    assert compared[0] == BARRAGE[1].text[:600]  # the last turn, as before
    assert "A tidal barrage is a low dam built across the mouth of an estuary." in compared
    assert BARRAGE[0].text not in compared  # the window is still the window: one turn
    assert compared_texts(BARRAGE[:1], 1) == [BARRAGE[0].text]  # a user turn is read whole


def test_an_implicit_follow_up_after_a_passage_is_searched_with_the_subject(embedder: Embedder) -> None:
    texts = searched("What are bulb turbines?", BARRAGE, embedder)
    assert texts[0] == "What are bulb turbines?"  # a weak cue: the message stays what is searched first
    assert any("tidal barrage" in t.lower() for t in texts[1:]), texts
    # The check reads the sentence the question takes up, closer to it than the passage's average.
    gate = check_follow_up("What are bulb turbines?", BARRAGE)
    chance = shift_chance("What are bulb turbines?", BARRAGE, gate, catalog=None, embedder=embedder, window=1)
    v = np.asarray(embedder.embed(["What are bulb turbines?", BARRAGE[1].text[:600]]), dtype=np.float32)
    passage = float(v[0] @ v[1] / (np.linalg.norm(v[0]) * np.linalg.norm(v[1])))
    assert chance is not None and chance[1] > passage + 0.05 and chance[0] < 0.5


def test_a_change_of_subject_after_the_passage_is_searched_as_typed(embedder: Embedder) -> None:
    # Flagged by topic continuity (it names nothing and repeats no word), but about something else.
    message = "What should I pack for a week of hiking?"
    assert check_follow_up(message, BARRAGE).needs_context
    texts = searched(message, BARRAGE, embedder)
    assert texts[0] == message
    assert not any("barrage" in t.lower() for t in texts), texts


MAGMA = [
    Turn(role=U, text="Who were Magma, the French band?"),
    Turn(role=A, text="Magma are a French progressive rock band formed in Paris in 1969 by drummer Christian Vander. Their style is called zeuhl."),
]


def test_a_definition_of_a_rare_term_the_answer_said_is_searched_as_typed() -> None:
    verdict = check_follow_up("What is zeuhl?", MAGMA)
    assert not verdict.needs_context and verdict.cues == (ASIDE_CUE,)
    # A commoner word asks within the answer's subject: "tapering" in marathon training.
    marathon = [Turn(role=U, text="How should I train for my first marathon?"),
                Turn(role=A, text="Build your mileage slowly, then start tapering three weeks before the race.")]
    assert check_follow_up("What is tapering?", marathon).needs_context


def test_the_subject_stays_in_view_after_the_aside() -> None:
    history = [*MAGMA, Turn(role=U, text="What is zeuhl?"),
               Turn(role=A, text="Zeuhl is a style of music with chanting, repetitive bass lines and an invented language.")]
    message = "did the band release a live album?"
    form = standalone_form(message, history, check_follow_up(message, history))
    assert "Magma" in form.text and "zeuhl" not in form.text.lower()  # the aside's term is not what "the band" is

"""The subject probe's rules that weigh the answer query by how the message relates to the answer
(#34 item 5): what they read, and that they change only the answer query's weight."""

from __future__ import annotations

import pytest

from bench.understanding.subject_probe import Searched, Turn, _unless, answer_weight, leans_on_answer

ANSWER = "You can renew your licence online up to six months before it expires."


def _turn(message: str, *, chance: float | None = 0.2) -> Turn:
    form = f"{message} (licence renewal)"
    made = 10.0 if chance is None or chance < 0.5 else 1.0  # the move's step (`ANSWER_WEIGHT` under `ANSWER_MAX_CHANCE`)
    queries = (Searched(message, 1.0, "message"), Searched(form, 1.0, "form"), Searched(f"{form} {ANSWER}", made, "answer"))
    return Turn("train", message, frozenset({"c1"}), queries, "described", chance, "doc", ANSWER, 0.3)


@pytest.mark.parametrize(
    ("message", "leans"),
    [
        ("yes, what does that cost?", True),  # a reply word opens it
        ("and for a motorcycle?", True),  # so does a continuation
        ("Can someone else do it when it has already expired?", True),  # a word of the answer ("expire")
        ("fees?", True),  # too short to stand without it
        ("How do I register a boat at the harbour office?", False),  # a new subject: none of these
    ],
)
def test_a_message_leans_on_the_answer_by_a_reply_word_or_a_word_of_it(message: str, leans: bool) -> None:
    assert leans_on_answer(_turn(message)) is leans


def test_the_rule_keeps_the_move_s_step_where_the_message_leans_and_drops_the_answer_elsewhere() -> None:
    rule = answer_weight(_unless(leans_on_answer, 0.0))
    kept = rule(_turn("Can someone else do it when it has already expired?"))
    assert [(q.label, q.weight) for q in kept] == [("message", 1.0), ("form", 1.0), ("answer", 10.0)]
    # a continuation less likely than a new subject: the move's own step (the form's weight) holds
    assert [q.weight for q in rule(_turn("Can someone else do it when it has already expired?", chance=0.6))] == [1.0, 1.0, 1.0]
    dropped = rule(_turn("How do I register a boat at the harbour office?"))
    assert [(q.label, q.weight) for q in dropped if q.weight > 0] == [("message", 1.0), ("form", 1.0)]

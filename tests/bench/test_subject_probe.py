"""The subject probe's rules that weigh the answer query by how the message relates to the answer
(#34 item 5): what they read, and that they change only the answer query's weight; the third
round's signals, its choice on train, and the count of follow-ups needing the passage just answered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from bench.understanding.subject_probe import (
    THIRD,
    Drift,
    Searched,
    Turn,
    _unless,
    answer_weight,
    asks_unanswered,
    chosen,
    leans_on_answer,
    message_leads,
    no_answer_when,
    same_passage,
)

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


# The third round (#34 item 5): the retriever's own signals, an unanswered question, the message leading.


def _answered_turn(message: str, answer: str) -> Turn:
    form = f"{message} (licence renewal)"
    queries = (Searched(message, 1.0, "message"), Searched(form, 1.0, "form"), Searched(f"{form} {answer}", 10.0, "answer"))
    return Turn("train", message, frozenset({"c1"}), queries, "described", 0.2, "doc", answer, 0.3)


@pytest.mark.parametrize(
    ("message", "answer", "unanswered"),
    [
        ("Where can I register a boat at the harbour office?", "Would you like to know how to renew your licence?", True),
        ("yes, how long does it take?", "Would you like to know how to renew your licence?", False),  # it replies
        ("Can I renew the licence by post?", "Would you like to know how to renew your licence?", False),  # a word of it
        ("Where can I register a boat at the harbour office?", ANSWER, False),  # the assistant asked nothing
    ],
)
def test_an_unanswered_question_is_an_assistant_question_the_message_does_not_lean_on(message: str, answer: str, unanswered: bool) -> None:
    assert asks_unanswered(_answered_turn(message, answer)) is unanswered


def test_drift_reads_how_far_the_answer_query_s_first_hit_is_from_what_the_message_finds_best() -> None:
    d = Drift(best=0.6, fiftieth=0.35, to_answer_top=0.4)
    assert d.clarity == pytest.approx(0.25)
    assert d.drift == pytest.approx(0.2)


def test_the_message_leads_only_where_the_condition_holds_of_a_plan_with_an_answer_query() -> None:
    rule = message_leads(lambda t: t.message.startswith("How"))
    led = rule(_answered_turn("How do I register a boat?", ANSWER))
    assert [(q.label, q.weight) for q in led] == [("message", 10.0), ("form", 1.0), ("answer", 10.0)]
    assert rule(_answered_turn("what about a boat?", ANSWER)) == _answered_turn("what about a boat?", ANSWER).queries
    no_answer = Turn("train", "How much?", frozenset({"c1"}), (Searched("How much?", 1.0, "message"), Searched("How much? licence", 1.0, "form")),
                     "described", 0.2, "doc", "", None)
    assert rule(no_answer) == no_answer.queries  # no answer query: nothing to lead
    form_only = Turn("train", "How long is it?", frozenset({"c1"}), (Searched("How long is the licence?", 1.0, "form"),
                     Searched(f"How long is the licence? {ANSWER}", 10.0, "answer")), "pointer", 0.1, "doc", ANSWER, 0.3)
    assert [(q.label, q.weight) for q in rule(form_only)] == [("message", 10.0), ("form", 1.0), ("answer", 10.0)]


def test_no_answer_when_drops_only_the_answer_query() -> None:
    rule = no_answer_when(lambda t: True)
    assert [q.label for q in rule(_answered_turn("How do I register a boat?", ANSWER))] == ["message", "form"]


def test_train_chooses_the_largest_gain_after_an_answer_that_keeps_the_follow_up_floor() -> None:
    def row(rule: str, follow: float, answered: float) -> dict[str, Any]:
        return {"rule": rule, "follow": {"train": follow, "val": 0.0}, "answered": {"train": answered, "val": 1.0}}

    rows = [row("as made", 0.63, 0.70), row(f"{THIRD}a", 0.61, 0.75), row(f"{THIRD}b", 0.625, 0.74), row(f"{THIRD}c", 0.63, 0.72)]
    assert chosen(rows) == f"{THIRD}b"  # a: over the others after an answer, under the floor


@dataclass(frozen=True)
class _Said:
    text: str


@dataclass(frozen=True)
class _Case:
    message: str
    history: tuple[_Said, ...]
    relevant: frozenset[str]
    slices: tuple[str, ...] = ("follow_up",)


def test_same_passage_counts_follow_ups_whose_gold_is_the_previous_turn_s() -> None:
    opener = _Case("How do I renew my licence?", (), frozenset({"d#1"}), ("standalone",))
    again = _Case("how long does it take?", (_Said(opener.message), _Said("Online.")), frozenset({"d#1"}))
    moved = _Case("and the fee?", (*again.history, _Said(again.message), _Said("Two weeks.")), frozenset({"d#2"}))
    assert same_passage([opener, again, moved]) == (1, 2)

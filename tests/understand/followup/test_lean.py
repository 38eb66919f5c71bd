"""Whether a message takes up the assistant's last words, or leaves its question unanswered."""

from __future__ import annotations

import pytest

from querywise.understand.followup.lean import asks_unanswered, leans_on_answer

OFFER = "Would you like to know how to order personalized plates?"


@pytest.mark.parametrize("message", ["Yes, please.", "and for a motorcycle?", "How much do personalized plates cost?", "how much?"])
def test_a_reply_a_continuation_a_shared_word_or_a_short_message_leans_on_the_answer(message: str) -> None:
    assert leans_on_answer(message, OFFER)
    assert not asks_unanswered(message, OFFER)


def test_a_new_question_after_the_assistant_s_question_leaves_it_unanswered() -> None:
    message = "What does renewing a vehicle registration cost online?"
    assert not leans_on_answer(message, OFFER) and asks_unanswered(message, OFFER)
    assert not asks_unanswered(message, "Registration renewals cost $45.")  # no question asked

"""Several intents: where a message holds a second ask, and where it does not."""

from __future__ import annotations

import pytest

from querywise.understand.intents import split_asks


@pytest.mark.parametrize(
    ("message", "asks"),
    [
        ("Compare the Solace 7 and the Solace 7 Pro, and cancel my order", ["Compare the Solace 7 and the Solace 7 Pro", "cancel my order"]),
        ("where is my order and how do I return it", ["where is my order", "how do I return it"]),
        ("is the Tide 4 waterproof? also, can I pay with PayPal", ["is the Tide 4 waterproof?", "can I pay with PayPal"]),
    ],
)
def test_a_coordinator_before_a_new_ask_cuts(message: str, asks: list[str]) -> None:
    assert split_asks(message) == asks


@pytest.mark.parametrize(
    "message",
    ["noise cancelling headphones and earbuds under $200", "tell me about the Knoll and the Knoll Max", "what is the return window for opened earbuds?"],
)
def test_a_coordinated_noun_phrase_is_one_ask(message: str) -> None:
    assert split_asks(message) == [message]

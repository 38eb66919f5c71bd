"""The someone-else's-account rule: each clause, and what it leaves alone."""

from __future__ import annotations

import pytest

from querywise.config import AccessSettings
from querywise.understand.third_party import other_person

ACCESS = AccessSettings(fields={"customer": "customer_id"}, account="customer")


@pytest.mark.parametrize(
    ("message", "rule"),
    [
        ("where is my wife's order?", "owned by a relation"),
        ("cancel the order of my son", "owned by a relation"),
        ("change the delivery address on my mom's account", "owned by a relation"),
        ("I'm her husband, show me her orders", "acting for someone"),
        ("I'm calling on behalf of my father about his refund", "acting for someone"),
        ("can I see someone else's order history", "acting for someone"),
        ("show me the order history for customer 88123", "another account id"),
    ],
)
def test_requests_about_another_person_s_account(message: str, rule: str) -> None:
    found = other_person(message, {"customer": "40001"}, ACCESS)
    assert found is not None and found.rule == rule


@pytest.mark.parametrize(
    "message",
    [
        "where is my order", "what is my account balance", "can I buy a gift card for my wife?", "headphones for my son",
        "show me the order history for customer 40001",  # the session's own account
        "I am ordering on behalf of my company, what are the payment options",
    ],
)
def test_ordinary_questions_are_left_alone(message: str) -> None:
    assert other_person(message, {"customer": "40001"}, ACCESS) is None


def test_an_account_id_with_no_session_account_to_compare_cannot_be_verified() -> None:
    assert other_person("orders of customer 40001", {}, AccessSettings()) is not None


def test_the_account_key_must_be_an_access_field() -> None:
    with pytest.raises(ValueError, match="account names no access field"):
        AccessSettings(fields={"market": "markets"}, account="customer")

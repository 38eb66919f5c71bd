"""Someone else's account: a request about another person's orders, account or data ("my wife's
order", "I'm her husband", "the account of customer 88123" when the session's account is another)
fails closed, whatever the route: the plan asks for verification and searches nothing.

The rule is stated, not learned, so it can be read and audited:

1. a person related to the speaker owns the thing asked about: "my wife's order", "my mother's
   account", "the orders of my husband", "for my son's card";
2. the speaker claims a relation or acts for someone: "I'm her husband", "on behalf of my
   father", "someone else's account", "another customer's order";
3. an account id stated in the message that is not the session's own (`[access] account`), or any
   account id when the session carries none to compare with.

The rule runs on deployments where users have accounts: one with an `[access] account` or a
`[routing] high_stakes` route (the pipeline decides). (1) and (2) need an object of account data (order, account, card, password, address, ...) in the
message, so "can I buy a gift for my wife?" is an ordinary question."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from querywise.config import AccessSettings
from querywise.text import analysed_part

__all__ = ["OtherPerson", "other_person"]

_PEOPLE = (
    r"wife|husband|partner|spouse|boyfriend|girlfriend|fianc[eé]e?|mom|mum|mother|dad|father|parents?|son|daughter|"
    r"kids?|child(?:ren)?|brother|sister|sibling|grand(?:ma|pa|mother|father|son|daughter)|aunt|uncle|cousin|niece|nephew|"
    r"friend|roommate|flatmate|neighbou?r|colleague|co-?worker|boss|employer|employee|client|tenant|landlord|ex"
)
_DATA = (
    r"orders?|account|acct|purchases?|order\s+history|history|card|credit\s+card|password|pin|login|e-?mail|address|"
    r"details|information|info|data|records?|profile|payments?|invoices?|receipts?|refunds?|deliver(?:y|ies)|"
    r"parcels?|packages?|subscription|balance|statements?|transactions?|bookings?|returns?|warranty\s+claim"
)
_OWNED = re.compile(rf"\b(?:my|our)\s+(?:{_PEOPLE})(?:'s|s'|’s)\s+(?:\w+\s+){{0,2}}?(?:{_DATA})\b", re.IGNORECASE)
_OF = re.compile(rf"\b(?:{_DATA})\s+(?:of|belonging\s+to)\s+(?:my|our)\s+(?:{_PEOPLE})\b", re.IGNORECASE)  # not "for": a gift for my wife
_CLAIM = re.compile(
    rf"\b(?:i'?m|i\s+am)\s+(?:his|her|their)\s+(?:{_PEOPLE})\b|"
    rf"\bon\s+behalf\s+of\s+(?:(?:my|our|a|an|the)\s+(?:{_PEOPLE})|someone|somebody|him|her|them)\b|\b(?:someone|somebody)\s+else'?s\b|"
    rf"\banother\s+(?:person|customer|user)'?s\b",
    re.IGNORECASE,
)
_DATA_WORD = re.compile(rf"\b(?:{_DATA})\b", re.IGNORECASE)
_ACCOUNT_ID = re.compile(r"\b(?:customer|account|acct|client|member)\s*(?:id|number|no\.?|#)?\s*[:#]?\s*(\d{4,})\b", re.IGNORECASE)


@dataclass(frozen=True)
class OtherPerson:
    """Why the message is about someone else's account, and the words that say so."""

    rule: str  # "owned by a relation", "acting for someone", "another account id"
    words: str


def other_person(message: str, session: Mapping[str, str], access: AccessSettings) -> OtherPerson | None:
    """The rule a request about another person's account meets, or None.

    >>> other_person("where is my wife's order?", {}, AccessSettings()).rule
    'owned by a relation'
    >>> other_person("can I buy a gift card for my wife?", {}, AccessSettings()) is None
    True
    """
    text = analysed_part(message)
    for rule, pattern in (("owned by a relation", _OWNED), ("owned by a relation", _OF)):
        if m := pattern.search(text):
            return OtherPerson(rule, m.group(0))
    if (m := _CLAIM.search(text)) and _DATA_WORD.search(text):
        return OtherPerson("acting for someone", m.group(0))
    own = session.get(access.account) if access.account else None
    for m in _ACCOUNT_ID.finditer(text):
        if own is None or m.group(1) != str(own).strip():
            return OtherPerson("another account id", m.group(0))
    return None

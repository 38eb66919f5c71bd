"""Access comes from the session only, read strictly: every lenient reading would fail open."""

from __future__ import annotations

import pytest

from querywise.conditions import Match, Where
from querywise.config import AccessSettings
from querywise.understand.access import AccessError, access_from_session, near_misses

ACCESS = AccessSettings(fields={"market": "markets", "tenant": "tenant_id"}, optional=["tenant"])


def test_the_session_becomes_one_equality_per_field() -> None:
    assert access_from_session({"market": "eu", "tenant": "t1"}, ACCESS) == Where(
        conditions=(Match(field="markets", value="eu"), Match(field="tenant_id", value="t1")))
    assert access_from_session({"market": "eu"}, ACCESS) == Where(conditions=(Match(field="markets", value="eu"),))  # tenant is optional


@pytest.mark.parametrize(
    ("session", "why"),
    [
        ({}, "lacks required field"),                      # missing: no constraint would mean every market
        ({"tenant": "t1"}, "lacks required field"),
        ({"Market": "eu"}, "unknown session key"),         # another case is another key, not the same one
        ({"market": "eu", "markets": "us"}, "unknown session key"),
        ({"market": ""}, "empty session value"),
        ({"market": "   "}, "empty session value"),
        ({"market": "eu", "tenant": ""}, "empty session value"),  # optional may be absent, never empty
    ],
)
def test_a_session_that_would_fail_open_is_refused(session: dict[str, str], why: str) -> None:
    with pytest.raises(AccessError, match=why):
        access_from_session(session, ACCESS)


def test_optional_must_name_a_field() -> None:
    with pytest.raises(ValueError, match="optional names no access field"):
        AccessSettings(fields={"market": "markets"}, optional=["region"])


def test_a_deployment_without_access_fields_accepts_only_an_empty_session() -> None:
    assert access_from_session({}, AccessSettings()) == Where()
    with pytest.raises(AccessError, match="unknown session key"):
        access_from_session({"market": "eu"}, AccessSettings())


@pytest.mark.parametrize("session", ["market=eu", [("market", "eu")], {"market": ["eu"]}, {"market": None}])
def test_a_session_that_is_not_a_mapping_of_strings_is_a_type_error(session: object) -> None:
    with pytest.raises(TypeError, match="session"):
        access_from_session(session, ACCESS)  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["Market", "MARKET", "market ", "mаrket", "mar-ket"])  # "mаrket": Cyrillic а
def test_near_misses_name_the_keys_that_read_like_an_access_key(key: str) -> None:
    assert near_misses(["sub", "exp", key, "market"], ACCESS) == [key]
    with pytest.raises(AccessError, match="unknown session key"):
        access_from_session({"market": "eu", key: "us"}, ACCESS)

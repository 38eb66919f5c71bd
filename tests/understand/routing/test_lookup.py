"""Routes that fail soft (issue #36): a route with a lookup answers from it, and falls back to
search when the lookup matches nothing, is not wired or fails; the plan says so."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from querywise.config import AccessSettings, Settings
from querywise.config.understanding import IdentifierRule, RouteSpec, RoutingSettings
from querywise.understand.pipeline import Understander

ORDERS = {"alice": {"40017": "Solace 7, shipped", "40022": "Knoll Mini, packing"}}


def find_orders(message: str, session: Mapping[str, str]) -> Sequence[str]:
    """The session's orders the message names by number, or all of them for "my order(s)"."""
    mine = ORDERS.get(session.get("user", ""), {})
    named = [o for o in re.findall(r"\b\d{5}\b", message) if o in mine]
    return named or (list(mine) if re.search(r"\bmy orders?\b", message) else [])


def understander(hash_embedder: Any, **route: Any) -> Understander:
    routing = RoutingSettings(
        routes=[RouteSpec(name="kb", search=True), RouteSpec(name="account", **route)],
        rules=[IdentifierRule(pattern=r"\border\b", route="account")],
        default_route="kb",
    )
    access = AccessSettings(fields={"user": "owner"}, optional=["user"])
    return Understander(Settings(routing=routing, access=access), embedder=hash_embedder, lookups={"orders": find_orders})


def test_a_lookup_that_finds_the_order_answers_and_searches_nothing(hash_embedder: Any) -> None:
    plan = understander(hash_embedder, lookup="orders").plan("where is order 40017", session={"user": "alice"})
    assert plan.queries == [] and "answered by lookup 'orders'" in (plan.unsearched or "")
    step = plan.step("lookup")
    assert step is not None and step.details["found"] == ["40017"]


def test_an_account_question_matching_no_order_falls_back_to_search(hash_embedder: Any) -> None:
    plan = understander(hash_embedder, lookup="orders").plan("how do I change the address on an order", session={"user": "bob"})
    assert plan.unsearched is None and [q.text for q in plan.queries] == ["how do I change the address on an order"]
    step = plan.step("lookup")
    assert step is not None and step.status == "fallback" and "matched nothing" in step.reason
    assert step.details["fell_back_to"] == "search"


def test_a_lookup_that_is_not_wired_or_fails_falls_back_too(hash_embedder: Any) -> None:
    plan = understander(hash_embedder, lookup="tickets").plan("where is my order")
    step = plan.step("lookup")
    assert plan.queries and step is not None and "'tickets' of route account is not wired" in step.reason

    def broken(message: str, session: Mapping[str, str]) -> Sequence[str]:
        raise TimeoutError("orders service down")

    u = understander(hash_embedder, lookup="orders")
    u.resources.lookups["orders"] = broken  # type: ignore[index]
    plan = u.plan("where is my order", session={"user": "alice"})
    step = plan.step("lookup")
    assert plan.queries and step is not None and "TimeoutError: orders service down" in step.reason


def test_a_route_says_when_it_does_not_fall_back(hash_embedder: Any) -> None:
    plain = understander(hash_embedder).plan("cancel my order")
    assert plain.queries == [] and plain.unsearched == "route account does not search"  # no lookup: as before
    closed = understander(hash_embedder, lookup="orders", fallback="none").plan("cancel my order", session={"user": "bob"})
    assert closed.queries == [] and "matched nothing; fallback none" in (closed.unsearched or "")


def test_a_deployment_warns_about_a_lookup_it_does_not_wire(hash_embedder: Any) -> None:
    from querywise.service import QueryWise

    routing = RoutingSettings(routes=[RouteSpec(name="kb", search=True), RouteSpec(name="account", lookup="orders")], default_route="kb")
    with QueryWise(Settings(routing=routing), embedder=hash_embedder) as qw:
        (warning,) = [w for w in qw.warnings if "lookup" in w.message]
        assert "does not wire" in warning.message and "falls back to search" in warning.message
    with QueryWise(Settings(routing=routing), embedder=hash_embedder, lookups={"orders": find_orders}) as qw:
        assert not [w for w in qw.warnings if "lookup" in w.message]

"""Exact lookup: identifiers however typed, matched against what the index holds."""

from __future__ import annotations

from querywise.conditions import Match
from querywise.text import IDENTIFIER_KEYS, PartNumbers, identifier_forms, identifier_key, identifier_keys
from querywise.understand.exact import EXACT_WEIGHT, exact_queries, identifiers_in

KNOWN = identifier_forms(["ws-4402", "hc-3471", "strap", "tide"])
PARTS = PartNumbers(PartNumbers.shapes(["HH-7100"]))  # the demo catalog's shape: two letters, four digits


def test_one_form_for_every_spelling() -> None:
    assert {identifier_key(t) for t in ["WS4402", "ws-4402", "WS 4402", "ws.4402"]} == {"WS4402"}
    assert identifier_keys("the WS-4402 (ws4402) and HC-3471 straps of 2024") == ["WS4402", "HC3471"]


def test_identifiers_the_index_holds_however_typed_and_only_those() -> None:
    found = identifiers_in("is ws 4402 or HC3471 in stock, and XK-9999?", KNOWN)
    assert found == [("ws 4402", "ws-4402"), ("HC3471", "hc-3471")]
    assert identifiers_in("a strap for the tide 4", KNOWN) == []  # words and numbers are not identifiers


def test_each_identifier_is_one_query_restricted_to_the_chunks_that_hold_it() -> None:
    queries = exact_queries([("WS4402", "ws-4402"), ("ws 4402", "ws-4402")], part_numbers=PARTS)
    assert len(queries) == 1
    q = queries[0]
    assert (q.kind, q.text, q.weight) == ("exact", "WS-4402", EXACT_WEIGHT)
    assert q.where is not None and q.where.conditions == (Match(field=IDENTIFIER_KEYS, value="WS4402"),)


def test_only_a_part_number_is_looked_up_exactly() -> None:
    found = [("IL-2", "il-2"), ("ws 4402", "ws-4402")]
    assert [(q.text, q.weight) for q in exact_queries(found, part_numbers=PARTS)] == [("WS-4402", EXACT_WEIGHT)]
    assert exact_queries(found, part_numbers=PartNumbers([])) == []  # a deployment without part numbers


def test_part_numbers_are_declared_or_the_catalog_s_shapes() -> None:
    assert PartNumbers.shapes(["HH-7100", "hh 7300", "AB12-C"]) == ["[A-Z]{2}[0-9]{4}", "[A-Z]{2}[0-9]{2}[A-Z]{1}"]
    assert PARTS.matches("et 2208") and PARTS.matches("WS4420") and not PARTS.matches("X2") and not PARTS.matches("p150N")
    declared = PartNumbers([r"(?:WS|HC)-?\d{4}"])
    assert declared.matches("ws-4402") and not declared.matches("ET-2208")

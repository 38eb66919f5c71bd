"""Rewrite guard: the reference help centre's three guard rows, exactly (ok, lost, invented)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from querywise.catalog import Catalog, Entity
from querywise.checks.guard import check_rewrite

if not (Path(__file__).resolve().parents[2].parent / "shared").exists():
    pytest.skip("acceptance data (../shared) not found", allow_module_level=True)


def _catalog(reference: dict[str, Any]) -> Catalog:
    return Catalog(
        Entity(id=str(p["id"]), name=p["name"], aliases=tuple(p.get("aliases", ()))) for p in reference["catalog"]
    )


def _identifier_patterns(reference: dict[str, Any]) -> tuple[str, ...]:
    # Given as e.g. "\b[A-Z]{2}-\d{4}\b (case-insensitive)"; the guard always matches any case.
    return (re.sub(r"\s*\(case-insensitive\)\s*$", "", reference["identifier_pattern"]),)


def test_products_match_longest_first(reference: dict[str, Any]) -> None:
    # Each product is found whole, never as a shorter product that is its prefix.
    names = reference["products_longest_first"]
    catalog = Catalog(Entity(id=n, name=n) for n in names)
    for name in names:
        assert [m.text for m in catalog.mentions(f"about the {name} please")] == [name]


@pytest.mark.parametrize("with_catalog", [True, False], ids=["catalog", "no-catalog"])
def test_guard_rows(reference: dict[str, Any], with_catalog: bool) -> None:
    catalog = _catalog(reference) if with_catalog else None
    rows = reference["expected"]["guard"]
    assert len(rows) == 3
    for row in rows:
        history = row["history"] if isinstance(row["history"], list) else [row["history"]]
        result = check_rewrite(
            row["message"],
            row["rewrite"],
            history,
            catalog=catalog,
            identifier_patterns=_identifier_patterns(reference),
        )
        assert (result.ok, list(result.lost), list(result.invented)) == (row["ok"], row["lost"], row["invented"]), row

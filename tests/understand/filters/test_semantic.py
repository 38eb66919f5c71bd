"""The text left for search once the constraint phrases are removed."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.parametrize(
    ("message", "semantic"),
    [
        ("noise cancelling headphones under $200 released after 2024", "noise cancelling headphones"),
        ("noise cancelling headphones under 200 dollars released after 2024, and set market to us", "noise cancelling headphones"),
        ("speakers under $150 released before 2025", "speakers"),
        ("headphones sold in the EU under $150", "headphones sold in the EU"),
        ("earbuds for under $180 with long battery", "earbuds long battery"),
        ("what is the return window for opened earbuds?", "what is the return window for opened earbuds?"),
    ],
)
def test_semantic_query_drops_only_the_constraint_phrases(extract: Any, message: str, semantic: str) -> None:
    assert extract(message).semantic_query == semantic

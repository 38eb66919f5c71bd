"""The LLM enrichments: each answer is checked in code before it is searched next to the original."""

from __future__ import annotations

from typing import Any

import pytest

from querywise.catalog import Catalog, Entity
from querywise.llm.provider import LLMError, StructuredRequest
from querywise.llm.scripted import ScriptedProvider
from querywise.understand import enrich

CATALOG = Catalog(
    [
        Entity("1", "Aero X2", fields={"category": "headphones", "brand": "Northwind"}),
        Entity("2", "Aero X2 Pro", fields={"category": "headphones", "brand": "Northwind"}),
        Entity("3", "Pulse Buds", fields={"category": "earbuds", "brand": "Northwind"}),
    ]
)


def scripted(task: str, key: str, output: dict[str, Any]) -> ScriptedProvider:
    return ScriptedProvider.from_records([{"task": task, "input": key, "output": output}])


def test_multi_query_drops_repeats_and_inventions_keeps_the_rest() -> None:
    q = "my headphones got wet, am I covered?"
    out = {"variants": ["My headphones got wet, am I covered?", "Aero X2 Pro water damage", "headphones liquid damage coverage", "water damage warranty for headphones"]}
    r = enrich.multi_query(scripted("multi_query", q, out), q, n=3, catalog=CATALOG)
    assert r.value == ["headphones liquid damage coverage", "water damage warranty for headphones"]
    assert len(r.notes) == 2 and any("Aero X2 Pro" in d for d in r.notes)


def test_step_back_may_drop_names_never_invent_them() -> None:
    q = "Why does my Aero X2 cut out in the kitchen?"
    assert enrich.step_back(scripted("step_back", q, {"question": "What causes Bluetooth headphones to lose connection?"}), q, catalog=CATALOG).value
    with pytest.raises(LLMError) as info:
        enrich.step_back(scripted("step_back", q, {"question": "Why do Pulse Buds lose connection?"}), q, catalog=CATALOG)
    assert info.value.reason == "guard_rejected"


def test_hyde_and_query2doc_return_the_passage() -> None:
    q = "the headband snapped"
    assert enrich.hyde(scripted("hyde", q, {"passage": " A cracked headband is not covered. "}), q).value == "A cracked headband is not covered."
    with pytest.raises(LLMError) as info:
        enrich.query2doc(scripted("query2doc", q, {"passage": "x", "notes": "extra"}), q)
    assert info.value.reason == "schema_violation"


def test_a_request_carries_the_versioned_prompt() -> None:
    p = scripted("hyde", "q", {"passage": "p"})
    r = enrich.hyde(p, "q")
    (req,) = p.calls
    assert isinstance(req, StructuredRequest) and req.name == "hyde" and "passage" in req.instructions
    assert r.prompt_version == "hyde-1"

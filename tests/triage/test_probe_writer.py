"""The LLM probe writer keeps to the passage's vocabulary, checked in code."""

from __future__ import annotations

from typing import Any

import pytest

from querywise.checks.vocabulary import vocabulary_violations
from querywise.llm.provider import LLMError
from querywise.llm.scripted import ScriptedProvider
from querywise.triage.probe_writer import generate_probe


def scripted(task: str, key: str, output: dict[str, Any]) -> ScriptedProvider:
    return ScriptedProvider.from_records([{"task": task, "input": key, "output": output}])


def test_generate_probe_keeps_to_the_passage_vocabulary() -> None:
    passage = "Pulse Buds play for 8 hours per charge, and the case adds another 24 hours."
    assert generate_probe(scripted("probe", passage, {"question": "How many hours do Pulse Buds play per charge?"}), passage)
    with pytest.raises(LLMError, match="battery") as info:
        generate_probe(scripted("probe", passage, {"question": "What is the battery life of Pulse Buds?"}), passage)
    assert info.value.reason == "guard_rejected"
    assert vocabulary_violations("What is the battery life?", passage) == ["battery", "life"]

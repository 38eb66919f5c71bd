"""Literal and generated probes, and the vocabulary check."""

from __future__ import annotations

from querywise.checks.vocabulary import vocabulary_violations
from querywise.triage.probes import (
    deterministic_probe,
    generated_probe,
    key_sentence,
    literal_probe,
)

PASSAGE = ("Pairing mode starts after the power key is held for five seconds. "
           "The indicator blinks blue while the Vela X3 waits for a phone. Colours vary.")


def _idf(term: str) -> float:
    return {"vela": 5.0, "x3": 5.0, "indic": 3.0}.get(term, 1.0)


def test_literal_probe_is_the_first_40_tokens_verbatim() -> None:
    text = " ".join(f"w{i}," for i in range(100))
    assert literal_probe(text).split() == [f"w{i}," for i in range(40)]
    assert literal_probe("short  text\nhere") == "short text here"


def test_deterministic_probe_uses_the_key_sentence_words_only() -> None:
    assert key_sentence(PASSAGE, _idf).startswith("The indicator blinks blue")
    probe = deterministic_probe(PASSAGE, _idf)
    assert probe.startswith("What about ") and probe.endswith("?") and "Vela X3" in probe
    assert vocabulary_violations(probe, PASSAGE) == []


def test_vocabulary_check_reports_borrowed_words() -> None:
    # stems, so "colour" meets "Colours" and "blink" meets "blinks"; "hold" is not "held"
    assert vocabulary_violations("How long do I hold the power key to pair?", PASSAGE) == ["long", "hold"]
    assert vocabulary_violations("Which colour does the indicator blink?", PASSAGE) == []
    assert vocabulary_violations("Which shade does the indicator blink?", PASSAGE) == ["shade"]


def test_llm_probe_is_checked_and_a_failing_writer_falls_back() -> None:
    probe = generated_probe(PASSAGE, _idf, write_probe=lambda text: "What shade does the earbud light flash?")
    assert probe.by == "llm" and set(probe.violations) == {"shade", "earbud", "light", "flash"}

    def broken(text: str) -> str:
        raise TimeoutError("provider timed out")

    fallback = generated_probe(PASSAGE, _idf, write_probe=broken)
    assert fallback.by == "deterministic" and fallback.error == "TimeoutError: provider timed out"
    assert generated_probe(PASSAGE, _idf).by == "deterministic"

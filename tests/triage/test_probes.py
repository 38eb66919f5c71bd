"""Literal and generated probes, and the vocabulary check."""

from __future__ import annotations

import pytest

from querywise.checks.vocabulary import vocabulary_violations
from querywise.text import analyze
from querywise.triage.probes import (
    PROBE_WORDS,
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


def test_deterministic_probe_is_the_key_sentence_asked() -> None:
    assert key_sentence(PASSAGE, _idf).startswith("The indicator blinks blue")
    # Before: "What about indicator blinks blue while Vela X3 waits phone?" (its content words strung together).
    assert deterministic_probe(PASSAGE, _idf) == "Does the indicator blink blue while the Vela X3 waits for a phone?"
    assert vocabulary_violations(deterministic_probe(PASSAGE, _idf), PASSAGE) == []


@pytest.mark.parametrize(("passage", "question"), [
    # imperative, after a short heading that is kept
    ("Faucet leaks: replace the cartridge washer.", "Faucet leaks: how do I replace the cartridge washer?"),
    ("Step on the platform with bare feet and stand still.", "How do I step on the platform with bare feet and stand still?"),
    # an auxiliary after a short subject moves to the front
    ("Opened earbuds can be returned within 10 days if the hygiene seal is intact.",
     "Can opened earbuds be returned within 10 days if the hygiene seal is intact?"),
    ("Duplicate billing: refunds are issued within five working days.", "Duplicate billing: are refunds issued within five working days?"),
    # a third-person verb becomes does + its plain form (same stem, so the vocabulary rule holds)
    ("The Amberline adapter supports fast charging at 30 W with the supplied cable.",
     "Does the Amberline adapter support fast charging at 30 W with the supplied cable?"),
    ("The scale beeps twice when calibration finishes.", "Does the scale beep twice when calibration finishes?"),
    # a plural noun after a number or an adjective is not read as a verb; a heading over a verbless rest is asked for
    ("Runtime per charge: eleven hours at moderate volume.", "What is runtime per charge?"),
    # a past verb after a short subject: its subject asked for; the finding of a reporting frame is asked
    ("We found that aspirin reduced the risk of stroke in older adults.", "What reduced the risk of stroke in older adults?"),
    ("These results suggest that IL-6 mediates the inflammatory response.", "Does IL-6 mediate the inflammatory response?"),
    ("In treated mice, insulin resistance was associated with obesity.", "Was insulin resistance associated with obesity?"),
    # the key clause of a sentence cut by a semicolon, not the whole sentence
    ("Standard orders ship within 2 business days; express delivery arrives the next morning.",
     "Does express delivery arrive the next morning?"),
])
def test_deterministic_probe_reads_as_a_question_from_the_passage(passage: str, question: str) -> None:
    def idf(term: str) -> float:  # "express" and "morning" are the rare words of the second example
        return {"express": 4.0, "morn": 4.0}.get(term, 1.0)

    probe = deterministic_probe(passage, idf)
    assert probe == question
    assert vocabulary_violations(probe, passage) == []
    # every word is the passage's own (same stem) or one of the few stated question words
    own = set(analyze(passage, stopwords=False))
    added = {w.lower() for w in PROBE_WORDS}
    assert all(t in own or t in {a for w in added for a in analyze(w, stopwords=False)}
               for t in analyze(probe, stopwords=False)), probe


def test_no_question_is_made_up_where_none_can_be_built() -> None:
    """A main clause whose subject runs over six words has no verb the rules can move: no
    template ("What about ...?", the clause with a question mark) stands in; the case says so."""
    passage = ("Patients who received the vaccine, compared with those given placebo, showed fewer infections, shorter "
               "stays in hospital, lower costs of care, and no rise in adverse events over the two years of follow-up.")
    assert deterministic_probe(passage, lambda t: 1.0) is None
    probe = generated_probe(passage, lambda t: 1.0)
    assert (probe.text, probe.by) == ("", "none") and probe.error is not None and "no question built" in probe.error


def test_the_generated_probe_asks_beyond_the_literal_probe() -> None:
    """A passage longer than the literal probe is asked from a sentence the literal probe does not
    hold, so the two probes differ in words as well as in form."""
    opening = " ".join(["Background words of the opening sentence stand here."] * 5)  # 40+ tokens
    passage = opening + " The indicator blinks blue while the Vela X3 waits for a phone."
    probe = generated_probe(passage, lambda t: 1.0)
    assert probe.by == "deterministic" and probe.text == "Does the indicator blink blue while the Vela X3 waits for a phone?"
    assert probe.text.rstrip("?") not in literal_probe(passage)


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

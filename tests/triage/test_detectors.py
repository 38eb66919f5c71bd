"""Each detector on constructed cases."""

from __future__ import annotations

import numpy as np
import pytest

from querywise.chunking import Chunker
from querywise.triage.detectors import (
    anchors_of,
    check_boundary,
    check_noise,
    check_query,
    check_vector,
)


def test_ligature_soup_is_extraction_noise() -> None:
    noisy = check_noise("The speciﬁ c conﬁ guration of the ﬁ rmware requires the oﬃ ce network.")
    assert noisy.flagged and noisy.ligatures == 4
    assert noisy.broken_words[:2] == ["specifi c", "confi guration"]
    # already folded to ASCII, the broken words alone still give it away
    assert check_noise("The specifi c confi guration fi le is missing.").flagged


def test_clean_prose_is_not_noise() -> None:
    for text in ("The specific configuration of the firmware requires the office network.",
                 "Hi-fi systems: turn off the wifi module and set the fi-le flag (v2.1) to 30%.",
                 "Pairing: hold the key for 5 s, then pick Vela X3 in the list."):
        assert not check_noise(text).flagged, text


@pytest.mark.parametrize(("text", "reason"), [
    ("", "empty text"),
    ("   \n\t ", "empty text"),
    ("Ã©Ã¨ â€™â€œ ÃƒÂ© Ã¢â‚¬ Ã‚Â â€¦ ÃƒÂ¨ Ã¶", "not words"),
    ("%%$# @@!! ^^&& ~~** ||// \\\\ ++== <<>>", "not words"),
    ("page page page page page page page page page page page page", "distinct tokens"),
])
def test_empty_and_degenerate_text_is_noise(text: str, reason: str) -> None:
    check = check_noise(text)
    assert check.flagged and any(reason in r for r in check.reasons), check


def test_degenerate_vectors() -> None:
    rng = np.random.default_rng(0)
    real = rng.normal(size=384)
    assert not check_vector(real / np.linalg.norm(real)).flagged
    assert check_vector(np.full(384, 0.051)).flagged  # constant
    assert check_vector(np.full(384, 0.051) + rng.normal(scale=1e-4, size=384)).flagged  # near-constant
    assert check_vector(np.zeros(384)).reason == "zero vector"
    assert check_vector([float("nan")] * 4).flagged


def test_anchors_are_names_and_identifiers() -> None:
    assert anchors_of("How long do I hold the button on the Vela X3?") == ["Vela", "X3"]
    assert anchors_of("Part XK-4471 fits? I think so.") == ["XK-4471"]
    assert anchors_of("how do i reset it") == []


def test_span_split_across_chunks_is_boundary_damage() -> None:
    assert check_boundary("anything", "gold", [], crosses=True).crosses


def test_product_only_in_the_neighbouring_chunk_is_boundary_damage() -> None:
    doc = ("The Vela X3 headphones ship with a charging case and two sets of tips. " * 3
           + "\n\nPairing: hold the round key for five seconds until the light blinks blue. " * 3)
    first, second = Chunker(max_chars=250).split(doc, doc_id="manual", markdown=False)
    check = check_boundary("How do I pair the Vela X3?", second.text, [(first.chunk_id, first.text)])
    assert check.flagged and check.missing == ["Vela", "X3"] and check.carried_by == "manual#0"
    # the chunker's context line carries identifiers it matches: then the damage is repaired
    doc_id = doc.replace("Vela X3", "model VX-3000")
    first, second = Chunker(max_chars=250).split(doc_id, doc_id="manual", markdown=False)
    searched = f"{second.context}\n{second.text}"
    assert not check_boundary("How do I pair the VX-3000?", searched, [(first.chunk_id, first.text)]).flagged
    # a name nowhere in the document is not the chunker's fault
    assert not check_boundary("How do I pair the Aero 5?", second.text, [(first.chunk_id, first.text)]).flagged


@pytest.mark.parametrize(("question", "history", "gold", "kind"), [
    ("Does it come in other colours?", ["Tell me about the Orbis lamp."], "Orbis lamp finishes: matte black and ivory.", "referent"),
    ("Can I pay cash? Do you take cheques?", [], "Accepted tender: debit card, bank transfer.", "compound"),
    ("What time do you open and how do I park?", [], "Store hours: 09:00 to 18:00.", "compound"),
    ("Hello, sorry to bother you, could you please help me: forgotten PIN.", [], "Passcode reset: choose Security.", "filler"),
    ("my tap is dripping", [], "Faucet leaks: replace the cartridge washer.", "vocabulary"),
    ("How do I replace the cartridge washer of a leaking faucet?", [], "Faucet leaks: replace the cartridge washer.", None),
])
def test_query_defect_suggestions(question: str, history: list[str], gold: str, kind: str | None) -> None:
    check = check_query(question, history, gold)
    assert check.suggested == kind, check
    assert (kind is None) == (not check.cues)

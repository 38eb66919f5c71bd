"""Each detector on constructed cases."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from querywise.chunking import Chunker
from querywise.text import words
from querywise.triage.detectors import (
    LabelCheck,
    anchors_of,
    check_boundary,
    check_label,
    check_noise,
    check_query,
    check_vector,
    morphological,
    nearest_pair,
    shared_terms,
    term_overlap,
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


# --- words run together or split by the extractor (no ligature in sight) ---------------------

RUN_TOGETHER = "the warrantycovers water damageif the strapis intact"
CLEAN = "the warranty covers water damage if the strap is intact"
# What the rest of an index says: these words exist, spelled apart.
OTHER_CHUNKS = ["The warranty covers repairs for two years.", "Water damage is not covered if the seal is broken.",
                "A new strap fits every model.", "Keep the receipt intact if you want a refund."]


def _vocabulary(*texts: str) -> Counter[str]:
    return Counter(w for t in texts for w in words(t))


def test_run_together_words_against_the_gold_text_are_noise() -> None:
    """The locator matched the gold only ignoring whitespace: its evidence reaches the rule."""
    check = check_noise(RUN_TOGETHER, clean=CLEAN)
    assert check.whitespace_damage == ["warrantycovers", "damageif", "strapis"]
    assert check.flagged and "only ignoring whitespace" in check.reasons[0]
    assert not check_noise(RUN_TOGETHER).flagged  # no ligature, no evidence: the old rule saw nothing
    # one joined word in an otherwise clean passage is no pattern
    assert not check_noise("the warrantycovers water damage", clean="the warranty covers water damage").flagged


def test_run_together_and_split_words_against_the_index_vocabulary_are_noise() -> None:
    vocab = _vocabulary(RUN_TOGETHER, *OTHER_CHUNKS)
    check = check_noise(RUN_TOGETHER, vocabulary=vocab)
    assert check.flagged and check.run_together == [
        "warrantycovers = warranty + covers", "damageif = damage + if", "strapis = strap + is"]
    split = "the war ranty covers water dam age if the strap is intact"
    check = check_noise(split, vocabulary=_vocabulary(split, *OTHER_CHUNKS))
    assert check.flagged and check.split_words == ["war ranty = warranty", "dam age = damage"]


def test_clean_text_and_names_are_not_run_together() -> None:
    vocab = _vocabulary(CLEAN, *OTHER_CHUNKS, "Bright colours. Clear water.", "Iron frames and a bridge.")
    assert not check_noise(CLEAN, vocabulary=vocab).flagged
    # capitalised names are written as one word on purpose; a word the index knows elsewhere is no accident
    names = "The Brightwater and Ironbridge models: warranty covers water damage."
    assert check_noise(names, vocabulary=vocab | _vocabulary(names)).run_together == []
    # a single rare compound in a long chunk stays under the 5% share
    long = (f"{CLEAN}. " + " ".join(OTHER_CHUNKS) + " Claims are handled by the service desk within five working days "
            "of receipt, and a courier collects the watch from your home at no cost to you. The waterproof case and the "
            "wristband are extra.")
    vocab = _vocabulary(long, *OTHER_CHUNKS, "Proof of purchase.", "The wrist band.")
    check = check_noise(long, vocabulary=vocab)
    assert check.run_together == ["waterproof = water + proof", "wristband = wrist + band"]
    assert check.n_tokens > 40 and not check.flagged  # 2 in 60 tokens: under 5%


def test_morphology_is_not_run_together() -> None:
    """A stem and its ending, or a prefix and its stem, is one word even when both halves are words
    of the corpus ("ed" as an abbreviation, "intra" in a heading): medical abstracts are full of them."""
    text = "The drug was powdered, given intramuscularly and synthesised twice; the powder gave no rash."
    corpus = ["The powder was weighed.", "Ed. note: intra and extra.", "A muscular patient.", "Muscularly built.",
              "The synthesis failed.", "Intramuscular injection.", "Ly was the author.", "It was synthesis ed."]
    check = check_noise(text, vocabulary=_vocabulary(text, *corpus))
    assert check.run_together == [] and not check.flagged
    assert morphological("powdered", "powder", "ed") and morphological("intramuscularly", "intra", "muscularly")
    assert not morphological("damageif", "damage", "if")


def test_a_synonym_the_embedding_finds_clears_the_label() -> None:
    """Nothing shared, nothing found by the question, found by its own probe: suspect -- unless the
    embedding relates a word of the question to one of the gold's."""
    base = {"dense_rank": None, "lexical_rank": None, "probe_rank": 1, "searched": True, "k": 20}
    assert check_label(["refund"], [], **base).flagged  # type: ignore[arg-type]
    cleared = check_label(["refund"], [], synonym=("refund", "reimbursement", 0.78), **base)  # type: ignore[arg-type]
    assert not cleared.flagged and cleared.synonym == ["refund", "reimbursement", "0.78"] and "synonym" in cleared.reason
    assert check_label(["refund"], [], synonym=("refund", "store", 0.31), **base).flagged  # type: ignore[arg-type]
    vectors = np.eye(4)
    vectors[2] = vectors[0]  # "refund" and "reimbursement" in one place, the rest apart
    assert nearest_pair(["refund", "shop"], ["reimbursement", "hours"], vectors) == ("refund", "reimbursement", 1.0)
    assert nearest_pair(["a"], ["b", "c"], np.ones((3, 4))) is None  # every word in one place: relates nothing


# --- the suspect-label evidence --------------------------------------------------------------

def test_content_overlap_leaves_out_the_asking_words() -> None:
    gold = "You can cancel your membership in Billing."
    assert term_overlap("How can I stop paying?", gold) > 0  # "can" is shared, and says nothing
    assert term_overlap("How can I stop paying?", gold, content_only=True) == 0
    assert shared_terms("How can I stop paying?", ["I have a membership."], gold) == (["membership", "pay", "stop"], ["membership"])


def test_label_check_needs_no_shared_term_no_search_hit_and_a_probe_hit() -> None:
    def check(**kw: object) -> LabelCheck:
        base: dict[str, object] = {"dense_rank": None, "lexical_rank": None, "probe_rank": 1, "searched": True, "k": 50}
        return check_label(["pay", "stop"], [], **{**base, **kw})  # type: ignore[arg-type]

    assert check().flagged and "re-judge the label" in check().reason
    assert not check(dense_rank=7).flagged and "dense rank 7" in check(dense_rank=7).reason  # same topic, other words
    assert not check(lexical_rank=30).flagged
    assert not check(probe_rank=None).flagged and "index problem" in check(probe_rank=None).reason
    assert not check(searched=False).flagged
    shared = check_label(["pay", "stop"], ["stop"], dense_rank=None, lexical_rank=None, probe_rank=1, searched=False, k=50)
    assert not shared.flagged and shared.reason == "shares 1 of the question's 2 content terms"

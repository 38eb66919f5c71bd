"""Locating the gold passage: each method, and what counts as absent."""

from __future__ import annotations

from querywise.chunking import Chunker
from querywise.corpus import Chunk
from querywise.failures import FailureRow
from querywise.triage import ChunkTable, locate
from querywise.triage.locate import prefer_ranked

DOC = ("Stylo scale calibration. Place the scale on a hard floor and wait for zero. "
       "Remove any objects from the platform before you begin.\n\n"
       "Step on the platform with bare feet and stand still for five seconds. The scale beeps twice "
       "when calibration finishes.")


def _table() -> ChunkTable:
    pieces = Chunker(max_chars=150).split(DOC, doc_id="scale", markdown=False)
    chunks = [Chunk(id=p.chunk_id, text=p.text, payload={"doc_id": "scale", "start": p.start, "end": p.end}) for p in pieces]
    chunks += [
        Chunk(id="noisy", text="The speciﬁ c conﬁ guration   of the ﬁ rmware."),
        Chunk(id="plain#0", text="Refunds are issued within five working days.", payload={"doc_id": "plain"}),
    ]
    return ChunkTable.of(chunks)


def _f(**gold: object) -> FailureRow:
    return FailureRow.model_validate({"id": "x", "question": "q", **gold})


def test_by_chunk_id_and_unknown_chunk_id() -> None:
    t = _table()
    assert locate(_f(gold_chunk="plain#0"), t).model_dump(include={"method", "chunk_id", "doc_id"}) == \
        {"method": "chunk_id", "chunk_id": "plain#0", "doc_id": "plain"}
    missing = locate(_f(gold_chunk="gone#3"), t)
    assert missing.absent and "not in the index" in missing.detail


def test_exact_then_normalised_then_ignoring_whitespace() -> None:
    t = _table()
    assert locate(_f(gold_text="issued within five working"), t).method == "exact"
    loc = locate(_f(gold_text="REFUNDS are issued\n within  five"), t)
    assert (loc.method, loc.chunk_id) == ("normalised", "plain#0")
    loc = locate(_f(gold_text="The specific configuration of the firmware."), t)
    assert (loc.method, loc.chunk_id) == ("normalised", "noisy") and "whitespace" in loc.detail


def test_gold_spread_over_two_chunks_is_a_boundary_candidate() -> None:
    t = _table()
    assert t.by_doc["scale"] == ["scale#0", "scale#1"]
    loc = locate(_f(gold_text="Remove any objects from the platform before you begin. Step on the platform with bare feet"), t)
    assert loc.method == "split" and loc.crosses and loc.chunk_ids == ["scale#0", "scale#1"]


def test_text_in_a_source_but_in_no_chunk_is_absent() -> None:
    sources = {"recall": "Recall notice. Heaters of batch 7731 must be returned."}
    loc = locate(_f(gold_text="Heaters of batch 7731 must be returned."), _table(), sources=sources)
    assert loc.absent and loc.method == "source_only" and loc.doc_id == "recall"


def test_by_document_and_offset() -> None:
    t = _table()
    step = DOC.index("Step on")
    assert locate(_f(gold_doc="scale", gold_offset=step + 3), t).chunk_id == "scale#1"
    assert locate(_f(gold_doc="scale", gold_offset=0), t).chunk_id == "scale#0"
    gap = locate(_f(gold_doc="scale", gold_offset=step - 1), t)  # the blank line between the paragraphs
    assert gap.chunk_id == "scale#1" and "between chunks" in gap.detail
    gone = locate(_f(gold_doc="recall", gold_offset=4), t, sources={"recall": "Recall notice."})
    assert gone.absent and gone.method == "source_only" and "no chunk of document 'recall'" in gone.detail


def test_offset_without_chunk_offsets_uses_the_source_text() -> None:
    t = ChunkTable.of([Chunk(id="d#0", text="Intro words here.", payload={"doc_id": "d"}),
                       Chunk(id="d#1", text="The warranty lasts two years from delivery.", payload={"doc_id": "d"})])
    src = {"d": "Intro words here.\n\nThe warranty lasts two years from delivery."}
    loc = locate(_f(gold_doc="d", gold_offset=src["d"].index("The warranty")), t, sources=src)
    assert (loc.method, loc.chunk_id) == ("offset", "d#1")


def test_bm25_fallback_needs_most_of_the_gold_terms() -> None:
    t = _table()
    hit = [t.chunks["plain#0"]]
    loc = locate(_f(gold_text="refunds issued in five days"), t, bm25=lambda text: hit)
    assert (loc.method, loc.chunk_id) == ("bm25", "plain#0")
    loc = locate(_f(gold_text="warranty claims for broken hinges"), t, bm25=lambda text: hit)
    assert loc.absent and loc.method == "not_found"


def test_a_match_only_ignoring_whitespace_is_marked() -> None:
    t = _table()
    assert locate(_f(gold_text="The specific configuration of the firmware."), t).whitespace_only
    assert not locate(_f(gold_text="REFUNDS are issued\n within  five"), t).whitespace_only


def test_document_gold_without_offset_is_every_chunk_of_it() -> None:
    """Contract item 4: `gold_doc` alone means any chunk of the document answers."""
    t = _table()
    q = {"question": "Does the scale beep when calibration finishes?"}
    loc = locate(_f(gold_doc="scale", **q), t, question_ranked=["plain#0", "scale#1", "scale#0"])
    assert (loc.method, loc.doc_id, loc.chunk_ids) == ("document", "scale", ["scale#0", "scale#1"])
    assert loc.chunk_id == "scale#1" and "ranks best for the question (rank 2)" in loc.detail  # best-ranked chunk of it
    assert not loc.crosses and not loc.absent
    # none of its chunks among the question's results: the one sharing most terms with the question
    loc = locate(_f(gold_doc="scale", **q), t)
    assert loc.chunk_id == "scale#1" and "shares most of its terms" in loc.detail
    loc = locate(_f(gold_doc="scale", question="Where do I place the scale before I begin?"), t)
    assert loc.chunk_id == "scale#0"
    # later results re-point it (the run searches the question after locating)
    assert prefer_ranked(loc, ["scale#1"]).chunk_id == "scale#1"
    gone = locate(_f(gold_doc="recall"), t, sources={"recall": "Recall notice."})
    assert gone.absent and "no chunk of document 'recall'" in gone.detail

import re

import pytest

from querywise.chunking import Chunker

DOC = (
    "# Vela X3 care\n\nClean the cushions (part QR-5126) weekly.\n\n"
    "## Battery\n\n" + " ".join(f"Sentence number {i} about charging the headphones." for i in range(40)) + "\n\n"
    "## Storage\n\nKeep it in the case.\n"
)


def test_every_piece_is_an_exact_slice_within_the_size_limit() -> None:
    pieces = Chunker(max_chars=300).split(DOC, doc_id="care")
    assert len(pieces) > 4
    for p in pieces:
        assert DOC[p.start : p.end] == p.text
        assert len(p.text) <= 300


def test_heading_path_and_missing_identifiers_form_the_context() -> None:
    pieces = Chunker(max_chars=300).split(DOC, doc_id="care")
    assert pieces[0].context == "Vela X3 care"  # the part number is in its own text
    battery = [p for p in pieces if p.heading == "Battery"]
    assert battery and all(p.context == "Vela X3 care > Battery (QR-5126)" for p in battery)
    assert pieces[-1].heading == "Storage"


def test_overlap_repeats_trailing_sentences() -> None:
    plain = Chunker(max_chars=300).split(DOC, doc_id="care")
    overlapped = Chunker(max_chars=300, overlap=1).split(DOC, doc_id="care")
    b0, b1 = [p for p in overlapped if p.heading == "Battery"][:2]
    assert b1.start < b0.end  # the second begins inside the first
    assert len(overlapped) >= len(plain)


def test_text_files_have_no_headings() -> None:
    (piece,) = Chunker().split("# not a heading in txt", doc_id="n", markdown=False)
    assert piece.heading == "" and piece.text == "# not a heading in txt"


def test_ids_are_stable_per_document() -> None:
    a = Chunker(max_chars=300).split(DOC, doc_id="care")
    b = Chunker(max_chars=300).split(DOC, doc_id="care")
    assert [p.chunk_id for p in a] == [p.chunk_id for p in b]


def test_bad_settings_fail_early() -> None:
    with pytest.raises(ValueError):
        Chunker(max_chars=10)
    with pytest.raises(re.error):
        Chunker(identifier_pattern="([")

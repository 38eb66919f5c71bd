import gzip
import json
import re
from pathlib import Path

import pytest

from querywise.chunking import Chunker
from querywise.corpus import Chunk, CorpusError, document_of, load_corpus, read_corpus
from querywise.index import Hit


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_keeps_every_other_key_as_payload(tmp_path: Path) -> None:
    p = _jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "Hello", "brand": "Vela", "price": 10, "markets": ["eu"]}])
    (chunk,) = load_corpus(p)
    assert chunk.id == "a" and chunk.text == "Hello"
    assert chunk.payload == {"brand": "Vela", "price": 10, "markets": ["eu"]}


def test_beir_id_and_title_are_understood_and_gz_is_read(tmp_path: Path) -> None:
    p = tmp_path / "corpus.jsonl.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"_id": "4983", "title": "Microstructural development", "text": "Alterations of..."}) + "\n")
    (chunk,) = load_corpus(p)
    assert chunk.id == "4983" and chunk.title == "Microstructural development"
    assert chunk.search_text == "Microstructural development\nAlterations of..."


@pytest.mark.parametrize(
    ("lines", "line", "problem"),
    [
        (['{"id": "a", "text": "x"}', '{"id": "b", "text": '], 2, "invalid JSON"),
        (['{"id": "a", "text": "x"}', "", '{"text": "no id"}'], 3, "missing 'id'"),
        (['{"id": "a", "text": "x"}', '{"id": "a", "text": "y"}'], 2, "duplicate id 'a'"),
        (['{"id": "a", "text": 5}'], 1, "missing 'text'"),
        (['["a", "b"]'], 1, "expected a JSON object"),
    ],
)
def test_malformed_jsonl_names_file_and_line(tmp_path: Path, lines: list[str], line: int, problem: str) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CorpusError) as info:
        load_corpus(p)
    assert info.value.line == line and problem in str(info.value)
    assert str(info.value).startswith(f"{p}:{line}:")


def test_csv_numbers_become_numbers(tmp_path: Path) -> None:
    p = tmp_path / "c.csv"
    p.write_text('id,text,price,year,brand\nk5,"Foldable, 40-hour battery",199.5,2025,Vela\n', encoding="utf-8")
    (chunk,) = load_corpus(p)
    assert chunk.text == "Foldable, 40-hour battery"
    assert chunk.payload == {"price": 199.5, "year": 2025, "brand": "Vela"}


def test_csv_without_text_column_is_rejected(tmp_path: Path) -> None:
    p = tmp_path / "c.csv"
    p.write_text("id,body\n1,x\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"c.csv:1: header must name"):
        load_corpus(p)


def test_csv_row_with_extra_fields_names_its_line(tmp_path: Path) -> None:
    p = tmp_path / "c.csv"
    p.write_text("id,text\n1,ok\n2,bad,extra\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"c.csv:3: more fields"):
        load_corpus(p)


def test_folder_of_markdown_and_text_is_chunked_with_provenance(tmp_path: Path) -> None:
    (tmp_path / "guides").mkdir()
    src = "# Cushions\n\nPart QR-5126 fits the Vela X3.\n\n## Fitting\n\nPress until it clicks.\n"
    (tmp_path / "guides" / "cushions.md").write_text(src, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("Plain text note.", encoding="utf-8")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    chunks = load_corpus(tmp_path, chunker=Chunker(max_chars=200))
    assert [c.id for c in chunks] == ["guides/cushions#0", "guides/cushions#1", "notes#0"]
    fitting = chunks[1]
    assert fitting.payload["doc_id"] == "guides/cushions" and fitting.payload["section"] == "Fitting"
    assert src[fitting.payload["start"] : fitting.payload["end"]] == fitting.text == "Press until it clicks."
    # The heading and the document's part number travel with a chunk that lacks them.
    assert fitting.title == "Cushions > Fitting (QR-5126)"


def test_folder_with_non_utf8_file_names_it(tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_bytes(b"fine\ncaf\xe9")
    with pytest.raises(CorpusError, match=re.escape("bad.txt:2: not UTF-8")):
        load_corpus(tmp_path)


def test_unknown_format_and_missing_path(tmp_path: Path) -> None:
    (tmp_path / "x.parquet").write_bytes(b"")
    with pytest.raises(CorpusError, match="unknown format"):
        load_corpus(tmp_path / "x.parquet")
    with pytest.raises(CorpusError, match="no such file"):
        load_corpus(tmp_path / "missing.jsonl")


def test_a_record_over_the_limit_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "text": "short"}\n{"id": "b", "text": "' + "x" * 2_000 + '"}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match=re.escape("c.jsonl:2: a record of 2,000 characters, over the limit of 1,000")):
        load_corpus(path, max_record_chars=1_000)
    assert [c.id for c in load_corpus(path)] == ["a", "b#0", "b#1"]  # the default limit is far above (b is chunked)


# --- long records, BEIR folders, skipping bad rows ------------------------------------------------

SENTENCES = [f"Sentence {i} tells about topic {i} at some length." for i in range(12)]  # 48-49 characters each
LONG = " ".join(SENTENCES)


def test_a_long_record_is_cut_with_offsets_into_its_own_text(tmp_path: Path) -> None:
    p = _jsonl(tmp_path / "c.jsonl", [
        {"id": "short", "text": "Fits in one chunk.", "title": "Small", "brand": "Vela"},
        {"id": 7, "title": "Big", "text": LONG, "brand": "Pico"},
    ])  # fmt: skip
    report = read_corpus(p, chunker=Chunker(max_chars=200))
    short, *pieces = report.chunks
    # A record that fits is one chunk under its own id, with no key added.
    assert short.id == "short" and short.payload == {"brand": "Vela"} and short.title == "Small"
    assert [c.id for c in pieces] == ["7#0", "7#1", "7#2"]
    for c in pieces:
        assert c.text == LONG[c.payload["start"] : c.payload["end"]] and len(c.text) <= 200
        assert c.title == "Big" and c.payload["doc_id"] == "7" and c.payload["brand"] == "Pico"
    assert " ".join(c.text for c in pieces) == LONG  # cut at sentence ends, nothing lost
    assert (report.n_records, report.n_cut, report.max_chars, report.kind) == (2, 1, 200, "jsonl")


def test_a_beir_folder_is_read_as_its_corpus(tmp_path: Path) -> None:
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    with gzip.open(root / "corpus.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"_id": "d1", "title": "T", "text": "Cells divide."}) + "\n")
    _jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "how do cells divide"}])
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    (root / "README.md").write_text("# not a document", encoding="utf-8")  # a BEIR folder is not a folder of text
    report = read_corpus(root)
    assert report.kind == "beir" and [(c.id, c.title, c.text) for c in report.chunks] == [("d1", "T", "Cells divide.")]
    assert [c.id for c in load_corpus(root)] == ["d1"]


def test_an_empty_folder_says_what_it_looked_for(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=re.escape("no .txt or .md files in this folder (nor a BEIR corpus.jsonl)")):
        load_corpus(tmp_path)


BAD_ROWS = [
    '{"id": "a", "text": "good one"}',
    '{"id": "e1", "text": "", "title": ""}',
    '{"id": "b", "text": ',
    "",
    '{"id": "e2", "text": "   "}',
    '{"id": "a", "text": "again"}',
    '{"id": "huge", "text": "' + "y" * 300 + '"}',
    '{"id": "c", "text": "good two", "title": "C"}',
]


def test_skip_invalid_loads_the_rest_and_lists_every_bad_row(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text("\n".join(BAD_ROWS) + "\n", encoding="utf-8")
    report = read_corpus(p, skip_invalid=True, max_record_chars=200)
    assert [c.id for c in report.chunks] == ["a", "c"] and report.n_records == 2
    assert [(r.where, r.record_id) for r in report.skipped] == [
        (f"{p}:2", "e1"), (f"{p}:3", None), (f"{p}:5", "e2"), (f"{p}:6", "a"), (f"{p}:7", "huge"),
    ]  # fmt: skip
    reasons = [r.reason for r in report.skipped]
    assert reasons[0] == reasons[2] == "empty 'text' and no 'title'"
    assert reasons[1].startswith("invalid JSON") and reasons[3].startswith("duplicate id 'a' (first seen at")
    assert "over the limit of 200 ([limits] max_record_chars)" in reasons[4]
    assert str(report.skipped[0]) == f"{p}:2: empty 'text' and no 'title'"


def test_without_skip_invalid_the_first_bad_row_stops_the_load_and_says_how_to_skip(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text("\n".join(BAD_ROWS) + "\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=re.escape(f"{p}:2: empty 'text' and no 'title'; --skip-invalid")):
        read_corpus(p)


def test_skip_invalid_in_csv_and_folders(tmp_path: Path) -> None:
    csv = tmp_path / "c.csv"
    csv.write_text("id,text,n\na,alpha,1\nb,beta\nc,,2\nd,delta,3,extra\ne,epsilon,5\n", encoding="utf-8")
    report = read_corpus(csv, skip_invalid=True)
    assert [c.id for c in report.chunks] == ["a", "e"]
    assert [r.line for r in report.skipped] == [3, 4, 5]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nReadable.", encoding="utf-8")
    (docs / "bad.txt").write_bytes(b"fine\ncaf\xe9")
    report = read_corpus(docs, skip_invalid=True)
    assert [c.id for c in report.chunks] == ["good#0"] and [r.where for r in report.skipped] == [f"{docs / 'bad.txt'}:2"]


def test_nothing_left_is_still_an_error_naming_the_first_bad_row(tmp_path: Path) -> None:
    p = _jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": ""}])
    with pytest.raises(CorpusError, match=re.escape(f"no chunks (1 bad rows skipped, the first {p}:1: empty")):
        read_corpus(p, skip_invalid=True)


def test_the_document_of_a_chunk_is_its_payload_doc_id_else_itself(tmp_path: Path) -> None:
    """One rule (`Chunk.doc_id`, `Hit.doc_id`): what the loaders write on every piece they cut; an
    id is never parsed, so a record whose own id ends in `#n` is its own document."""
    assert Chunk(id="manual#1", text="t", payload={"doc_id": "manual"}).doc_id == "manual"
    assert Chunk(id="faq#2", text="t").doc_id == "faq#2"
    assert Chunk(id="x", text="t", payload={"doc_id": 7}).doc_id == "7"
    assert Chunk(id="x", text="t", payload={"doc_id": True}).doc_id == "x"  # not an id
    assert Hit(id="b#0", score=1.0, rank=1, payload={"doc_id": "b"}).doc_id == "b" == document_of("b#0", {"doc_id": "b"})
    p = _jsonl(tmp_path / "c.jsonl", [{"id": "short#1", "text": "Fits in one chunk."}, {"id": 7, "title": "Big", "text": LONG}])
    short, *pieces = read_corpus(p, chunker=Chunker(max_chars=200)).chunks
    assert short.doc_id == "short#1" and {c.doc_id for c in pieces} == {"7"} and len(pieces) == 3


def test_a_stray_quote_is_an_error_at_its_row_not_rows_merged_into_one(tmp_path: Path) -> None:
    rows = ["id,text", *(f"r{i},row {i}" for i in range(1, 41))]
    rows[4] = 'r4,"row 4 with a stray quote'
    (tmp_path / "c.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"c\.csv:5: invalid CSV.*from line 5 to 41"):
        read_corpus(tmp_path / "c.csv")


def test_a_csv_field_as_long_as_max_record_chars_allows_is_read(tmp_path: Path) -> None:
    (tmp_path / "c.csv").write_text("id,text\nbig," + "word " * 40_000 + "\n", encoding="utf-8")  # 200 KB, over csv's 128 KB default
    assert {c.doc_id for c in read_corpus(tmp_path / "c.csv").chunks} == {"big"}
    with pytest.raises(CorpusError, match=r"c\.csv"):
        read_corpus(tmp_path / "c.csv", max_record_chars=100_000)


def test_a_gzipped_line_past_the_bound_is_refused_while_it_is_read(tmp_path: Path) -> None:
    with gzip.open(tmp_path / "bomb.jsonl.gz", "wb") as fh:  # 20 MB of one line in a few KB
        fh.write(b'{"id": "a", "text": "')
        for _ in range(20):
            fh.write(b"y" * 1_000_000)
        fh.write(b'"}\n')
    with pytest.raises(CorpusError, match=r"bomb\.jsonl\.gz:1: a line over"):
        read_corpus(tmp_path / "bomb.jsonl.gz", max_record_chars=1_000)

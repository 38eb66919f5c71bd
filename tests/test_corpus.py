import gzip
import json
import re
from pathlib import Path

import pytest

from querywise.chunking import Chunker
from querywise.corpus import CorpusError, load_corpus


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
    assert [c.id for c in load_corpus(path)] == ["a", "b"]  # the default limit is far above

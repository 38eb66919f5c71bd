"""Case files and the BEIR / doc2dial loaders, on small files written here."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from querywise.chunking import Chunker
from querywise.conversation import Turn
from querywise.evaluation.cases import (
    CaseError,
    derive_slices,
    load_beir,
    load_cases,
    load_doc2dial,
    read_beir,
    read_cases,
)
from querywise.files import InputError


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_case_file_reads_lists_grades_tags_and_expectations(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "cases.jsonl", [
        {"message": "How long is the warranty on the Vela X3?", "relevant": ["x3-warranty"], "tags": ["policy"]},
        {"id": "q2", "message": "and the Pro?", "history": ["Warranty on the Vela X3?"],
         "relevant": {"x3pro-warranty": 2, "x3-warranty": 1, "judged-bad": 0},
         "route": "kb_search", "filters": {"category": "headphones"}, "action": "answer", "session": {"market": "eu"}},
    ])  # fmt: skip
    first, second = load_cases(path)
    assert first.id == "line-1" and first.relevant == {"x3-warranty": 1}
    assert first.slices == ["policy", "standalone", "prose"]
    assert second.relevant == {"x3pro-warranty": 2, "x3-warranty": 1}  # grade 0 is not relevant
    assert "follow_up" in second.slices
    assert (second.route, second.filters, second.action, second.session) == ("kb_search", {"category": "headphones"}, "answer", {"market": "eu"})


def test_slices_written_in_the_file_override_the_derived_ones() -> None:
    # The file says "follow-up" (read as follow_up): the gate is not asked; the form is still derived.
    assert derive_slices("What is the return window?", ["earlier"], ["follow-up"]) == ["follow_up", "prose"]
    assert derive_slices("does HC-3471 fit", []) == ["standalone", "identifier"]
    assert derive_slices("does it fit", ["Is HC-3471 the cushion?"]) == ["follow_up", "prose"]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ({"message": "", "relevant": []}, "missing 'message'"),
        ({"message": "x", "relevant": "a"}, "'relevant' must be"),
        ({"message": "x", "history": "a"}, "'history' must be"),
        ({"message": "x", "action": "shout"}, "action"),
        ({"message": "x", "slices": ["a"], "tags": ["b"]}, "not both"),
        ({"message": "x", "extra": 1}, "extra"),
    ],
)
def test_bad_case_lines_name_file_and_line(tmp_path: Path, line: dict[str, object], problem: str) -> None:
    path = _jsonl(tmp_path / "c.jsonl", [{"message": "fine"}, line])
    with pytest.raises(CaseError, match=f"{path}:2: .*{problem}"):
        load_cases(path)


def test_duplicate_case_ids_are_refused(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", [{"id": "a", "message": "x"}, {"id": "a", "message": "y"}])
    with pytest.raises(CaseError, match=re.escape("c.jsonl:2: duplicate id 'a' (first at line 1)")):
        load_cases(path)


def _beir(root: Path, qrels: str) -> Path:
    root.mkdir()
    with gzip.open(root / "corpus.jsonl.gz", "wt", encoding="utf-8") as fh:
        for i, text in enumerate(["Cells divide.", "Proteins fold.", "Genes express."]):
            fh.write(json.dumps({"_id": f"d{i}", "title": f"T{i}", "text": text}) + "\n")
    _jsonl(root / "queries.jsonl", [{"_id": "1", "text": "how do cells divide"}, {"_id": "2", "text": "protein folding"},
                                    {"_id": "3", "text": "unjudged"}])  # fmt: skip
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return root


def test_beir_folder_gives_chunks_and_judged_queries(tmp_path: Path) -> None:
    root = _beir(tmp_path / "b", "query-id\tcorpus-id\tscore\n1\td0\t1\n2\td1\t2\n2\td2\t0\n")
    chunks, cases = load_beir(root)
    assert [c.id for c in chunks] == ["d0", "d1", "d2"] and chunks[0].title == "T0"
    assert [(c.id, c.message, c.relevant) for c in cases] == [("1", "how do cells divide", {"d0": 1}), ("2", "protein folding", {"d1": 2})]
    assert all(c.slices == ["standalone", "prose"] for c in cases)


def test_beir_errors_name_the_file(tmp_path: Path) -> None:
    root = _beir(tmp_path / "b", "query-id\tcorpus-id\tscore\n1\tnope\t1\n")
    with pytest.raises(CaseError, match=re.escape("test.tsv:2: query '1' judges corpus id 'nope', which is not in the corpus; --skip-invalid")):
        load_beir(root)
    with pytest.raises(CaseError, match=re.escape("dev.tsv: no such qrels file (splits here: test)")):
        load_beir(root, split="dev")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td0\n", encoding="utf-8")
    with pytest.raises(CaseError, match=re.escape("test.tsv:2: expected")):
        load_beir(root)


def _beir_with_bad_rows(root: Path) -> Path:
    """Record d1 is empty, d3 has no text; queries 2 and 3 judge only them, query 1 judges d0 and d1."""
    root.mkdir()
    _jsonl(root / "corpus.jsonl", [
        {"_id": "d0", "text": "Cells divide."}, {"_id": "d1", "title": "", "text": ""},
        {"_id": "d2", "text": "Genes express."}, {"_id": "d3", "title": "no text"},
    ])  # fmt: skip
    _jsonl(root / "queries.jsonl", [{"_id": "1", "text": "cells"}, {"_id": "2", "text": "empty"}, {"_id": "3", "text": "untexted"},
                                    {"_id": "4", "text": "genes"}])  # fmt: skip
    (root / "qrels").mkdir()
    qrels = "query-id\tcorpus-id\tscore\n1\td0\t1\n1\td1\t1\n2\td1\t2\n3\td3\t1\n4\td2\t1\n"
    (root / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return root


def test_beir_skip_invalid_drops_the_judgements_of_skipped_records_and_lists_them(tmp_path: Path) -> None:
    root = _beir_with_bad_rows(tmp_path / "b")
    with pytest.raises(InputError, match=re.escape("corpus.jsonl:2: empty 'text' and no 'title'; --skip-invalid")):
        load_beir(root)
    loaded = read_beir(root, skip_invalid=True)
    assert [c.id for c in loaded.chunks] == ["d0", "d2"]
    assert [(c.id, c.relevant) for c in loaded.cases] == [("1", {"d0": 1}), ("4", {"d2": 1})]
    qrels = root / "qrels" / "test.tsv"
    assert [str(r) for r in loaded.skipped] == [
        f"{root / 'corpus.jsonl'}:2: empty 'text' and no 'title'",
        f"{root / 'corpus.jsonl'}:4: missing 'text' (a string)",
        f"{qrels}:3: query '1' judges 'd1', a corpus record skipped at {root / 'corpus.jsonl'}:2: judgement dropped",
        f"{qrels}:4: query '2' judges 'd1', a corpus record skipped at {root / 'corpus.jsonl'}:2: judgement dropped",
        f"{qrels}:4: query '2' dropped: none of its judgements is left",
        f"{qrels}:5: query '3' judges 'd3', a corpus record skipped at {root / 'corpus.jsonl'}:4: judgement dropped",
        f"{qrels}:5: query '3' dropped: none of its judgements is left",
    ]


def test_beir_judgements_may_name_documents_cut_elsewhere_and_bad_queries_are_skipped(tmp_path: Path) -> None:
    root = _beir(tmp_path / "b", "query-id\tcorpus-id\tscore\n1\td0\t1\n2\td1\t1\n2\tghost\t1\n")
    _jsonl(root / "queries.jsonl", [{"_id": "1", "text": "how do cells divide"}, {"_id": "2", "text": ""}])
    loaded = read_beir(root, skip_invalid=True)
    assert [c.id for c in loaded.cases] == ["1"]
    assert [r.reason for r in loaded.skipped] == ['expected {"_id": ..., "text": "..."}', "query '2' is judged but not in queries.jsonl"]


def test_case_file_skip_invalid_lists_every_bad_line(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", [{"id": "a", "message": "fine"}, {"id": "b"}, {"id": "a", "message": "again"}, {"id": "c", "message": "ok"}])
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    loaded = read_cases(path, skip_invalid=True)
    assert [c.id for c in loaded.cases] == ["a", "c"]
    assert [(r.line, r.reason.split(" (")[0]) for r in loaded.skipped] == [
        (2, "missing 'message'"), (3, "duplicate id 'a'"), (5, "invalid JSON"),
    ]  # fmt: skip
    with pytest.raises(CaseError, match=re.escape(f"{path}:2: missing 'message'")):
        load_cases(path)


def _doc2dial(root: Path, answer_start: int) -> Path:
    root.mkdir()
    text = "Renew your licence online at any time.\n\nBring two documents to the office.\n\nFees are listed below."
    _jsonl(root / "documents.jsonl", [{"doc_id": "renew#1", "domain": "dmv", "title": "Renewing a licence", "text": text}])
    _jsonl(root / "turns.jsonl", [
        {"id": "t1", "query": "How do I renew my licence?", "history": [], "doc_id": "renew#1", "answer_start": 0, "domain": "dmv"},
        {"id": "t3", "query": "what do I bring?", "doc_id": "renew#1", "answer_start": answer_start, "domain": "dmv",
         "history": [{"role": "user", "text": "How do I renew my licence?"}, {"role": "agent", "text": "Online or in person."}]},
    ])  # fmt: skip
    return root


def test_doc2dial_gold_chunk_holds_the_grounding_start(tmp_path: Path) -> None:
    text = "Renew your licence online at any time.\n\nBring two documents to the office.\n\nFees are listed below."
    root = _doc2dial(tmp_path / "d", text.index("two documents"))
    chunks, cases = load_doc2dial(root, Chunker(max_chars=50))
    assert [c.text for c in chunks] == ["Renew your licence online at any time.", "Bring two documents to the office.", "Fees are listed below."]
    assert chunks[1].title == "Renewing a licence" and chunks[1].payload["doc_id"] == "renew#1"
    opener, follow = cases
    assert opener.relevant == {chunks[0].id: 1} and "first_turn" in opener.slices and "standalone" in opener.slices
    assert follow.relevant == {chunks[1].id: 1}
    # The agent's turns stay, as assistant turns: real follow-ups point into the answers.
    assert follow.history == (Turn(text="How do I renew my licence?"), Turn(role="assistant", text="Online or in person."))
    assert "domain:dmv" in follow.slices


def test_doc2dial_start_in_the_blank_between_chunks_goes_to_the_next(tmp_path: Path) -> None:
    text = "Renew your licence online at any time.\n\nBring two documents to the office.\n\nFees are listed below."
    root = _doc2dial(tmp_path / "d", text.index("\n\nBring"))
    chunks, cases = load_doc2dial(root, Chunker(max_chars=50))
    assert cases[1].relevant == {chunks[1].id: 1}


def test_doc2dial_offset_past_the_document_is_an_error(tmp_path: Path) -> None:
    root = _doc2dial(tmp_path / "d", 10_000)
    with pytest.raises(CaseError, match=re.escape("turns.jsonl:2: answer_start 10000 is past the end")):
        load_doc2dial(root, Chunker(max_chars=50))

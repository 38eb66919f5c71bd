"""`querywise index` on every source `eval` reads, `--skip-invalid`, `--max-chars`, the embedder's
window in the build summary, and `eval --skip-invalid` on a BEIR folder. No model is loaded: the
command line's embedder is the suite's hash embedder, given a window of 16 "tokens" (words + 2)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import HashEmbedder
from typer.testing import CliRunner

from querywise import cli
from querywise.config import Settings
from querywise.index import Index

runner = CliRunner()


class WindowedHashEmbedder(HashEmbedder):
    """The hash embedder with a token window, as the packaged model has one of 256."""

    window = 16

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) + 2 for t in texts]  # [CLS] and [SEP], as the real tokenizer counts them


@pytest.fixture
def windowed(monkeypatch: pytest.MonkeyPatch) -> WindowedHashEmbedder:
    import querywise.embed
    import querywise.index.store
    import querywise.index.writing
    import querywise.understand.pipeline

    embedder = WindowedHashEmbedder()

    def fake(settings: Settings, **_: Any) -> WindowedHashEmbedder:
        return embedder

    for module in (querywise.embed, querywise.index.store, querywise.index.writing, querywise.understand.pipeline):
        monkeypatch.setattr(module, "embedder_for", fake)
    return embedder


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# 3 paragraphs of 10 words (59-61 characters): one chunk each at --max-chars 80.
LONG = (
    "Unpacking the base station and its cable takes one minute only.\n\n"
    "The zebra mango tariff applies to all deliveries on islands.\n\n"
    "Recycling the old unit is free at every collection point nearby."
)
# 24 words: over the window of 16 "tokens", and under 1,000 characters.
WORDY = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty a b c d"


def _beir(root: Path, corpus: list[dict[str, Any]], qrels: str) -> Path:
    (root / "qrels").mkdir(parents=True)
    _jsonl(root / "corpus.jsonl", corpus)
    _jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "zebra mango tariff"}, {"_id": "q2", "text": "opening hours"}])
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels, encoding="utf-8")
    return root


def _beir_with_a_blank_record(root: Path) -> Path:
    """Three records, the third empty (a bad row), each judged by one of two queries."""
    return _beir(root, [
        {"_id": "manual", "text": LONG},
        {"_id": "hours", "text": "Opening hours are nine to five."},
        {"_id": "blank", "text": "", "title": ""},
    ], "q1\tmanual\t1\nq2\thours\t1\nq2\tblank\t1\n")  # fmt: skip


def test_index_reads_a_beir_folder_and_states_chunking_and_the_window(tmp_path: Path, windowed: WindowedHashEmbedder) -> None:
    root = _beir(tmp_path / "beir", [
        {"_id": "manual", "title": "Base station", "text": LONG},
        {"_id": "hours", "text": "Opening hours are nine to five."},
        {"_id": "wordy", "text": WORDY},
    ], "q1\tmanual\t1\n")  # fmt: skip
    result = runner.invoke(cli.app, ["index", str(root), "--index", str(tmp_path / "ix"), "--max-chars", "80"])
    assert result.exit_code == 0, result.output
    assert f"read 3 records from {root} (BEIR corpus) into 6 chunks: 2 records longer than 80 characters (--max-chars) were cut" in result.stderr
    # Cut at 80 characters, every chunk fits: manual's are 10 words + 2 of title, wordy's at most 14 words.
    with Index.open(tmp_path / "ix") as ix:
        chunks = {c.id: c for c in ix.chunks()}
        over = sum(len(c.search_text.split()) + 2 > 16 for c in chunks.values())
        assert set(chunks) == {"manual#0", "manual#1", "manual#2", "hours", "wordy#0", "wordy#1"}
        assert chunks["manual#1"].payload == {"doc_id": "manual", "start": LONG.index("The zebra"), "end": LONG.index(".\n\nRecycling") + 1}
        assert chunks["manual#1"].title == "Base station"
        assert (ix.manifest.n_over_window, ix.manifest.embedder_window) == (over, 16)
    assert over == 0
    assert "every chunk fits the embedder's window of 16 tokens" in result.stderr

    # Whole records (a limit above the longest) leave the wordy one and the manual over the window: counted and said.
    result = runner.invoke(cli.app, ["index", str(root), "--index", str(tmp_path / "ix"), "--max-chars", "1000"])
    assert result.exit_code == 0, result.output
    assert "into 3 chunks: 0 records longer than 1,000 characters (--max-chars) were cut" in result.stderr
    assert "2 chunks longer than the embedder's window of 16 tokens were embedded from their first 16 tokens" in result.stderr
    with Index.open(tmp_path / "ix") as ix:
        assert ix.manifest.n_over_window == 2


def test_with_sentence_vectors_a_whole_record_over_the_window_is_not_told_to_be_cut(tmp_path: Path, windowed: WindowedHashEmbedder) -> None:
    root = _beir(tmp_path / "beir", [{"_id": "wordy", "title": "Numbers", "text": WORDY + ". Then more words follow here."}], "q1\twordy\t1\n")
    config = tmp_path / "q.toml"
    config.write_text("[index]\nsentence_vectors = true\n", encoding="utf-8")
    result = runner.invoke(cli.app, ["index", str(root), "--index", str(tmp_path / "ix"), "-c", str(config)])
    assert result.exit_code == 0, result.output
    assert "1 chunks longer than the embedder's window of 16 tokens" in result.stderr
    # Its sentences were embedded one by one, so the window cut nothing from them: no advice to cut the record.
    assert "their sentence vectors every sentence" in result.stderr
    assert "a smaller --max-chars" not in result.stderr
    with Index.open(tmp_path / "ix") as ix:
        assert ix.manifest.n_sentences == 3  # the title and the record's two sentences


def test_skip_invalid_indexes_the_rest_and_lists_every_bad_row(tmp_path: Path, windowed: WindowedHashEmbedder) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        '{"id": "a", "text": "Opening hours are nine to five."}\n'
        '{"id": "e1", "text": ""}\n'
        '{"id": "b", "text": \n'
        '{"id": "c", "text": "Returns within ten days."}\n'
        '{"id": "e2", "title": " ", "text": "  "}\n',
        encoding="utf-8",
    )
    stopped = runner.invoke(cli.app, ["index", str(corpus), "--index", str(tmp_path / "ix")])
    assert stopped.exit_code == 2 and f"{corpus}:2: empty 'text' and no 'title'; --skip-invalid" in stopped.stderr
    assert not (tmp_path / "ix").exists()

    result = runner.invoke(cli.app, ["index", str(corpus), "--index", str(tmp_path / "ix"), "--skip-invalid"])
    assert result.exit_code == 0, result.output
    assert "3 bad rows skipped:" in result.stderr and "skipped 3 bad rows" in result.stderr
    for line, reason in ((2, "empty 'text' and no 'title'"), (3, "invalid JSON"), (5, "empty 'text' and no 'title'")):
        assert f"{corpus}:{line}: {reason}" in result.stderr
    with Index.open(tmp_path / "ix") as ix:
        assert [c.id for c in ix.chunks()] == ["a", "c"]


def test_eval_skip_invalid_drops_and_lists_the_judgements_of_a_skipped_record(tmp_path: Path, windowed: WindowedHashEmbedder) -> None:
    root = _beir_with_a_blank_record(tmp_path / "beir")
    assert runner.invoke(cli.app, ["index", str(root), "--index", str(tmp_path / "ix"), "--max-chars", "80", "--skip-invalid"]).exit_code == 0
    args = ["eval", str(root), "--index", str(tmp_path / "ix"), "--mode", "bm25", "--metrics", "hit_rate@1", "--no-access-probe", "--json"]
    refused = runner.invoke(cli.app, args)
    assert refused.exit_code == 2 and f"{root / 'corpus.jsonl'}:3: empty 'text' and no 'title'; --skip-invalid" in refused.stderr

    result = runner.invoke(cli.app, [*args, "--skip-invalid"])
    assert result.exit_code == 0, result.output
    qrels = root / "qrels" / "test.tsv"
    assert f"{root / 'corpus.jsonl'}:3: empty 'text' and no 'title'" in result.stderr
    assert f"{qrels}:4: query 'q2' judges 'blank', a corpus record skipped at {root / 'corpus.jsonl'}:3: judgement dropped" in result.stderr
    data = json.loads(result.stdout)
    # Both cases run; q1 judges the record cut in 3 and is scored per document: found at rank 1.
    assert data["n"] == 2 and {c["id"]: c["scores"]["hit_rate@1"] for c in data["cases"]} == {"q1": 1.0, "q2": 1.0}


def test_update_replaces_a_documents_chunks_adds_new_ones_and_delete_removes(tmp_path: Path, windowed: WindowedHashEmbedder) -> None:
    ix_dir = str(tmp_path / "ix")
    first = _jsonl(tmp_path / "first.jsonl", [
        {"id": "manual", "title": "Base station", "text": LONG},
        {"id": "hours", "text": "Opening hours are nine to five."},
    ])  # fmt: skip
    assert runner.invoke(cli.app, ["index", str(first), "--index", ix_dir, "--max-chars", "80"]).exit_code == 0
    # The manual is shorter now (one chunk, not three) and a document is new.
    edits = _jsonl(tmp_path / "edits.jsonl", [
        {"id": "manual", "title": "Base station", "text": "The base station pairs in one minute."},
        {"id": "returns", "text": "Returns are free for thirty days."},
    ])  # fmt: skip
    result = runner.invoke(cli.app, ["index", str(edits), "--update", "--index", ix_dir, "--max-chars", "80"])
    assert result.exit_code == 0, result.output
    assert "2 chunks added, 0 replaced, 3 removed (3 now)" in result.stderr
    with Index.open(ix_dir) as ix:
        assert [c.id for c in ix.chunks()] == ["hours", "manual", "returns"]
        assert ix.search("pairs in one minute", mode="bm25", k=1)[0].id == "manual"
    result = runner.invoke(cli.app, ["index", "--delete", "hours", "--index", ix_dir])
    assert result.exit_code == 0, result.output
    assert "0 chunks added, 0 replaced, 1 removed (2 now)" in result.stderr
    with Index.open(ix_dir) as ix:
        assert [h.id for h in ix.search("opening hours", mode="bm25")] == []
    result = runner.invoke(cli.app, ["index", "--rollback", "--index", ix_dir])
    assert result.exit_code == 0, result.output
    with Index.open(ix_dir) as ix:
        assert [c.id for c in ix.chunks()] == ["hours", "manual", "returns"]
    result = runner.invoke(cli.app, ["index", "--update", "--index", ix_dir])
    assert result.exit_code != 0 and "--update needs SOURCE" in result.output


def test_tune_skip_invalid_tunes_on_the_rest_and_lists_every_bad_row(tmp_path: Path, windowed: WindowedHashEmbedder) -> None:
    root = _beir_with_a_blank_record(tmp_path / "beir")
    assert runner.invoke(cli.app, ["index", str(root), "--index", str(tmp_path / "ix"), "--skip-invalid"]).exit_code == 0
    args = ["tune", str(root), "--index", str(tmp_path / "ix"), "--split", "test", "--folds", "2", "--json"]
    refused = runner.invoke(cli.app, args)
    assert refused.exit_code == 2 and f"{root / 'corpus.jsonl'}:3: empty 'text' and no 'title'; --skip-invalid" in refused.stderr
    result = runner.invoke(cli.app, [*args, "--skip-invalid"])
    assert f"{root / 'corpus.jsonl'}:3: empty 'text' and no 'title'" in result.stderr
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["chosen"]


def test_eval_corpus_skip_invalid_reads_the_good_passages_and_lists_the_bad(
    tmp_path: Path, windowed: WindowedHashEmbedder, monkeypatch: pytest.MonkeyPatch,
) -> None:
    passages = _jsonl(tmp_path / "passages.jsonl", [{"id": "hours", "text": "Opening hours are nine to five."}, {"id": "blank", "text": ""}])
    cases = _jsonl(tmp_path / "cases.jsonl", [{"id": "c1", "message": "opening hours", "relevant": ["hours"]}])
    (tmp_path / "qw_skip_retriever.py").write_text(
        "def search(query, k, filters):\n    return [{'id': 'hours', 'score': 1.0}]\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ["eval", str(cases), "--retriever", "qw_skip_retriever:search", "--corpus", str(passages),
            "--failures", str(tmp_path / "failures.jsonl"), "--no-access-probe", "--json"]
    refused = runner.invoke(cli.app, args)
    assert refused.exit_code == 2 and "--skip-invalid" in refused.stderr
    result = runner.invoke(cli.app, [*args, "--skip-invalid"])
    assert result.exit_code == 0, result.output
    assert f"{passages}:2:" in result.stderr

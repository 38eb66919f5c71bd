"""The whole triage on a small real index (hash embedder, embedded engine), and the command."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from querywise import cli
from querywise.chunking import Chunker
from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.failures import FailureRow
from querywise.index import Index, build_index
from querywise.triage import Population, TriageCase, TriageOptions, TriageTarget, build_report, probe_cases, triage
from querywise.triage.buckets import Evidence, classify
from querywise.triage.detectors import NoiseCheck
from querywise.triage.locate import Location

MANUAL = ("The Vela X3 headphones ship with a charging case, a braided cable and two spare sets of ear tips. "
          "Charge the case fully before first use; a full charge takes about two hours on a USB port.\n\n"
          "Pairing: hold the round key for five seconds until the light blinks blue, then select the headset "
          "in the Bluetooth settings of your phone. Up to two devices can stay paired at once.")


class BrokenEmbedder:
    """The test suite's hash embedder, except that long texts mentioning "thermostat" get one
    constant vector: a stand-in for a model that collapsed on some inputs, through the same
    index code."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.model_id, self.dim = inner, inner.model_id, inner.dim

    def embed(self, texts: Sequence[str], *, on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        out = np.array(self.inner.embed(texts, on_progress=on_progress))
        for i, t in enumerate(texts):
            if "thermostat" in t.lower() and len(t.split()) > 12:
                out[i] = 1.0 / np.sqrt(self.dim)
        return out


def _chunks() -> list[Chunk]:
    pieces = Chunker(max_chars=220).split(MANUAL, doc_id="manual", markdown=False)
    chunks = [Chunk(id=p.chunk_id, text=p.text, payload={"doc_id": "manual", "start": p.start, "end": p.end}) for p in pieces]
    # faq1 shares one word ("sorry") with the filler question below: a gold sharing nothing with
    # its question, which the hash embedder cannot relate by topic, would be a suspect label.
    topics = ["shipping takes two business days", "sorry, returns need the original receipt", "gift cards never expire",
              "the store opens at nine on weekdays", "warranty claims need the serial number", "invoices arrive by email"]
    chunks += [Chunk(id=f"faq{i}", text=f"FAQ {i}: {t}.") for i, t in enumerate(topics)]
    # Greetings the support site publishes: what a message made of pleasantries finds first.
    chunks += [Chunk(id=f"hello{i}", text=f"Hello and thanks so much for writing, sorry to bother you with form {i}.")
               for i in range(30)]
    chunks.append(Chunk(id="halo", text="Halo thermostat code E4 signals a sensor fault; replace the probe and restart "
                                        "the unit, then check the wiring of the heating circuit once more."))
    chunks.append(Chunk(id="soup", text="The speciﬁ c conﬁ guration of the ﬁ rmware update requires the oﬃ ce network."))
    return chunks


@pytest.fixture
def broken(hash_embedder: Any) -> BrokenEmbedder:
    return BrokenEmbedder(hash_embedder)


@pytest.fixture
def index_dir(tmp_path: Path, settings: Settings, broken: BrokenEmbedder) -> Path:
    build_index(_chunks(), tmp_path / "ix", settings=settings, embedder=broken).close()
    return tmp_path / "ix"


FAILURES = [
    {"id": "missing-doc", "question": "Is my heater recalled?", "gold_doc": "recall", "gold_offset": 0},
    {"id": "noise", "question": "configuration?", "gold_text": "The specific configuration of the firmware update"},
    {"id": "degenerate", "question": "what does E4 mean", "gold_chunk": "halo"},
    {"id": "split", "question": "pairing", "gold_text": "a full charge takes about two hours on a USB port. Pairing: hold the round key"},
    {"id": "neighbour", "question": "How do I pair the Vela X3 with my phone?", "gold_chunk": "manual#1"},
    {"id": "generation", "question": "Do gift cards expire?", "gold_chunk": "faq2", "retrieved": ["faq2"]},
    {"id": "filler", "question": "Hello! Thanks so much, sorry to bother you: can I bring back stuff I bought?", "gold_chunk": "faq1"},
]


def test_each_bucket_from_real_probes(index_dir: Path, settings: Settings, broken: BrokenEmbedder) -> None:
    with Index.open(index_dir, settings=settings, embedder=broken) as ix:
        cases = probe_cases([FailureRow.model_validate(f) for f in FAILURES], TriageTarget(index=ix), TriageOptions(k=20, mode="hybrid"),
                             sources={"recall": "Recall notice."})
    got = {c.id: c.bucket for c in cases}
    assert got == {"missing-doc": "absent", "noise": "extraction_noise", "degenerate": "degenerate_embedding",
                   "split": "chunk_boundary", "neighbour": "chunk_boundary", "generation": "generation",
                   "filler": "filler"}
    by_id = {c.id: c.evidence for c in cases}
    assert by_id["degenerate"].vector is not None and by_id["degenerate"].vector.flagged
    assert by_id["neighbour"].boundary is not None and by_id["neighbour"].boundary.carried_by == "manual#0"
    assert by_id["generation"].retrieved_rank == 1 and by_id["filler"].label_source == "suggested"
    assert by_id["noise"].literal_rank == 1 and by_id["noise"].generated_by == "none"  # ligature soup: no main clause to ask
    assert by_id["noise"].generated_rank is None and "no question built" in str(by_id["noise"].probe_error)
    report = build_report(cases, Population(), TriageOptions(k=20, mode="hybrid"))
    assert sum(report.buckets.values()) == len(FAILURES)


def test_human_label_wins_over_the_suggestion(index_dir: Path, settings: Settings, broken: BrokenEmbedder) -> None:
    with Index.open(index_dir, settings=settings, embedder=broken) as ix:
        [case] = probe_cases([FailureRow.model_validate(FAILURES[-1])], TriageTarget(index=ix), TriageOptions(k=20), labels={"filler": "vocabulary"})
    assert case.bucket == "vocabulary" and case.evidence.label_source == "human"


def test_precedence_upstream_first() -> None:
    base = Evidence(location=Location(method="chunk_id", chunk_id="c"), rank_original=3, literal_rank=1, generated_rank=1)
    assert classify(base, k=50)[0] == "generation"
    noisy = base.model_copy(update={"noise": NoiseCheck(flagged=True, reasons=["empty text"])})
    assert classify(noisy, k=50)[0] == "extraction_noise"
    gone = noisy.model_copy(update={"location": Location(method="not_found", absent=True)})
    assert classify(gone, k=50)[0] == "absent"
    assert classify(base.model_copy(update={"rank_original": 11}), k=50)[0] == "ranking"
    assert classify(base.model_copy(update={"rank_original": 11, "retrieved_rank": 4}), k=50)[0] == "generation"
    assert classify(base.model_copy(update={"rank_original": None}), k=50)[0] == "unlabelled_query_defect"


def _cli(index_dir: Path, tmp_path: Path, rows: list[object], *extra: str) -> object:
    f = tmp_path / "failures.jsonl"
    f.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return CliRunner().invoke(cli.app, ["triage", str(f), "--index", str(index_dir), "--k", "20", *extra])


def test_cli_json_has_the_documented_keys(
    index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: BrokenEmbedder
) -> None:
    # The command loads the configured embedder; hand it the index's own (a real model is slow here).
    monkeypatch.setattr("querywise.index.store.embedder_for", lambda settings: broken)
    rows = [*FAILURES, {"id": "fine", "question": "ok", "acceptable": True}]
    result = _cli(index_dir, tmp_path, rows, "--json", "--sample", "4", "--seed", "3")  # type: ignore[assignment]
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    data = json.loads(result.stdout)  # type: ignore[attr-defined]
    assert list(data) == ["sample", "buckets", "shares", "se", "points", "part_shares", "part_points", "failing_whole",
                          "reachable_share", "reachable_points", "unreachable_points", "ceiling_points", "expected_band", "cases",
                          "exact", "intervals", "ranking_cues", "difference", "warnings", "probes_not_built"]
    assert data["sample"]["n"] == 4 == sum(data["buckets"].values()) and data["sample"]["seed"] == 3
    assert data["sample"]["population"] == {"eval_total": 8, "acceptable_rate": 0.125, "failures": 7, "source": "eval file"}
    assert all({"id", "bucket", "evidence"} <= set(c) for c in data["cases"])


def test_cli_malformed_input_names_the_line(index_dir: Path, tmp_path: Path) -> None:
    result = _cli(index_dir, tmp_path, [FAILURES[0], '{"id": "x", "question": "no gold"}'])
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert "failures.jsonl:2:" in " ".join(result.output.split()) and "no gold" in result.output  # type: ignore[attr-defined]
    result = _cli(index_dir, tmp_path, [FAILURES[0]], "--eval-total", "400")
    assert result.exit_code == 2 and "go together" in result.output  # type: ignore[attr-defined]


def test_cli_lets_a_configured_llm_write_the_generated_probe(
    index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: BrokenEmbedder
) -> None:
    monkeypatch.setattr("querywise.index.store.embedder_for", lambda settings: broken)
    faq = "FAQ 2: gift cards never expire."
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"task": "probe", "input": faq, "output": {"question": "Do gift cards expire?"}}) + "\n", encoding="utf-8")
    config = tmp_path / "q.toml"
    config.write_text(f'[llm]\nprovider = "scripted"\nscripted_file = "{script}"\n', encoding="utf-8")
    result = _cli(index_dir, tmp_path, [FAILURES[5], FAILURES[4]], "--json", "--config", str(config))
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    evidence = {c["id"]: c["evidence"] for c in json.loads(result.stdout)["cases"]}  # type: ignore[attr-defined]
    assert (evidence["generation"]["generated_by"], evidence["generation"]["generated_probe"]) == ("llm", "Do gift cards expire?")
    # No recorded answer for the other passage: the deterministic question, and the reason kept.
    assert evidence["neighbour"]["generated_by"] == "deterministic" and evidence["neighbour"]["probe_error"]


# --- issue 13: the cut-off, suspect labels, figures that add up, the chunks above the gold ----

def _triage(index_dir: Path, settings: Settings, embedder: Any, rows: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    with Index.open(index_dir, settings=settings, embedder=embedder) as ix:
        labels = kw.pop("labels", None)
        return {c.id: c for c in probe_cases([FailureRow.model_validate(r) for r in rows], TriageTarget(index=ix), TriageOptions(**kw), labels=labels)}


def test_context_k_decides_generation_and_ranking(index_dir: Path, settings: Settings, broken: BrokenEmbedder) -> None:
    row = {"id": "r3", "question": "Do gift cards expire?", "gold_chunk": "faq2", "retrieved": ["faq0", "faq1", "faq2"]}
    wide = _triage(index_dir, settings, broken, [row], k=20, context_k=10)["r3"]
    narrow = _triage(index_dir, settings, broken, [row], k=20, context_k=1)["r3"]
    assert wide.evidence.retrieved_rank == narrow.evidence.retrieved_rank == 3
    assert wide.bucket == "generation" and "within the top 10" in wide.evidence.reason
    assert narrow.bucket == "ranking" and "below the top 1" in narrow.evidence.reason
    # without `retrieved`, the index for the original question decides (faq2 is its rank 1 there)
    bare = {k: v for k, v in row.items() if k != "retrieved"}
    assert _triage(index_dir, settings, broken, [bare], k=20, context_k=1)["r3"].bucket == "generation"
    with pytest.raises(ValueError, match="below --k"):
        _triage(index_dir, settings, broken, [row], k=20, context_k=20)


def test_cli_context_k_is_stated_and_validated(
    index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: BrokenEmbedder
) -> None:
    monkeypatch.setattr("querywise.index.store.embedder_for", lambda settings: broken)
    row = {"id": "r3", "question": "Do gift cards expire?", "gold_chunk": "faq2", "retrieved": ["faq0", "faq1", "faq2"]}
    for ck, bucket in (("10", "generation"), ("1", "ranking")):
        result = _cli(index_dir, tmp_path, [row], "--json", "--context-k", ck)
        assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
        data = json.loads(result.stdout)  # type: ignore[attr-defined]
        assert data["sample"]["context_k"] == int(ck) and data["cases"][0]["bucket"] == bucket
    result = _cli(index_dir, tmp_path, [row], "--context-k", "1")
    assert "generation = the gold within the top 1 (--context-k)" in " ".join(result.stdout.split())  # type: ignore[attr-defined]
    for bad, message in ((["--context-k", "20"], "must be below --k (20)"), (["--context-k", "0"], "--context-k")):
        result = _cli(index_dir, tmp_path, [row], *bad)
        assert result.exit_code == 2 and message in " ".join(result.output.split())  # type: ignore[attr-defined]
        assert "Traceback" not in result.output  # type: ignore[attr-defined]


SUSPECT = {"id": "suspect", "question": "Which form do I sign?", "gold_chunk": "faq5"}  # faq5: invoices by e-mail (faq3 holds "opens", which the 64-dim hash embedder puts on "form": a synonym to it)


def test_gold_sharing_nothing_with_the_question_is_a_suspect_label(index_dir: Path, settings: Settings, broken: BrokenEmbedder) -> None:
    cases = _triage(index_dir, settings, broken, [SUSPECT, FAILURES[-1]], k=20)
    case = cases["suspect"]
    assert case.bucket == "suspect_label" and case.evidence.label_source is None
    lc = case.evidence.label_check
    assert lc is not None and lc.flagged and lc.searched
    assert (lc.question_terms, lc.shared_terms, lc.dense_rank, lc.lexical_rank, lc.probe_rank) == (["form", "sign"], [], None, None, 1)
    assert "re-judge" in case.evidence.reason
    # the filler case shares "sorry" with its gold: a query defect, not a label problem
    assert cases["filler"].bucket == "filler" and cases["filler"].evidence.label_check.shared_terms == ["sorri"]  # type: ignore[union-attr]
    # not reachable: out of the reachable share and the ceiling, reported apart
    report = build_report(list(cases.values()), Population(eval_total=10, acceptable_rate=0.8, failures=2), TriageOptions(k=20, mode="hybrid"))
    assert report.reachable_share == 0.5 and report.part_points == {"reachable": 10, "suspect_label": 10, "rest": 0}
    assert (report.reachable_points, report.unreachable_points, report.ceiling_points) == (10, 10, 10)
    # a human query-defect label does not overrule the evidence; it is kept beside it
    labelled = _triage(index_dir, settings, broken, [SUSPECT], k=20, labels={"suspect": "vocabulary"})["suspect"]
    assert labelled.bucket == "suspect_label" and "human label 'vocabulary'" in labelled.evidence.reason


def _numbers(line: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", line)]


def test_cli_terminal_figures_add_up_as_printed(
    index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: BrokenEmbedder
) -> None:
    monkeypatch.setattr("querywise.index.store.embedder_for", lambda settings: broken)
    rows = [*FAILURES, SUSPECT, {"id": "r3", "question": "Do gift cards expire?", "gold_chunk": "faq2", "retrieved": ["a", "b", "faq2"]}]
    result = _cli(index_dir, tmp_path, rows, "--eval-total", "300", "--acceptable", "0.832666", "--context-k", "1")  # 16.7334 fail
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    out = result.stdout  # type: ignore[attr-defined]
    table = {
        m.group(1): (int(m.group(2)), int(m.group(3)), int(m.group(4)))
        for m in re.finditer(r"│ (\w[\w…]*)\s*│\s*(\d+) │\s*(\d+)% │\s*\d+–\d+% │\s*(\d+) │", out)
    }
    total = re.search(r"│ total\s*│\s*(\d+) │\s*(\d+)% │\s*│\s*(\d+) │", out)
    assert total is not None and len(table) == 13
    n, share, points = (int(g) for g in total.groups())
    assert (n, share, points) == (9, 100, 17)  # 16.7334 failing points, as a whole number
    assert sum(c for c, _, _ in table.values()) == n and sum(s for _, s, _ in table.values()) == share
    assert sum(p for _, _, p in table.values()) == points
    flat = " ".join(out.split())
    reach, unreach, failing = _numbers(re.search(r"reachable points \d+ \+ unreachable points \d+ = \d+", flat).group(0))  # type: ignore[union-attr]
    assert reach + unreach == failing == points
    query = [b for b in table if b in ("vocabulary", "compound", "referent", "filler") or b.startswith("unlabelled")]
    assert reach == sum(table[b][2] for b in query)
    assert f"reachable by the query layer: {sum(table[b][1] for b in query)}% of failures" in flat
    assert f"= {reach} points" in flat
    assert f"suspect labels: 1 of 9 failures, {table['suspect_label'][1]}%" in flat
    assert f"= {table['suspect_label'][2]} points" in flat and "re-judge those labels" in flat
    assert flat.count("Rounding:") == 1 and "Failing points: 16.73 → 17." in flat  # the one rounding rule: two places, half up
    assert "of 16.7334 failing" not in flat


def test_chunks_above_the_gold_in_json_terminal_and_html(
    index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: BrokenEmbedder
) -> None:
    monkeypatch.setattr("querywise.index.store.embedder_for", lambda settings: broken)
    row = {"id": "second", "question": "charging case ear tips and pairing", "gold_chunk": "manual#1"}
    html = tmp_path / "r.html"
    result = _cli(index_dir, tmp_path, [row, SUSPECT], "--json", "--html", str(html))
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    cases = {c["id"]: c["evidence"] for c in json.loads(result.stdout)["cases"]}  # type: ignore[attr-defined]
    assert cases["second"]["rank_original"] == 2
    [above] = cases["second"]["above_original"]
    assert above["id"] == "manual#0" and above["rank"] == 1 and above["same_doc"] is True
    assert above["snippet"].startswith("The Vela X3 headphones ship with a charging case")
    top = cases["suspect"]["above_original"]  # gold outside the top k: the top results, all of them above it
    assert [a["rank"] for a in top] == [1, 2, 3, 4, 5] and all(not a["same_doc"] for a in top)
    page = html.read_text(encoding="utf-8")
    assert "manual#0</b> <small>(same document)</small> The Vela X3 headphones" in page
    assert "1 of 1 above the gold" in page and "top 5 (gold not in the top 20)" in page

    result = _cli(index_dir, tmp_path, [row, SUSPECT], "--show-cases")
    flat = " ".join(result.stdout.split())  # type: ignore[attr-defined]
    assert "second generation — gold at rank 2 in the index for the original question" in flat
    assert "gold manual#1 · ranks 2 / – / 1 / 1" in flat
    assert "above the gold (rank 2) for the original question: 1. manual#0 (same document) The Vela X3 headphones" in flat
    assert "suspect suspect_label" in flat and "the top 5 for the original question (the gold is not in the top 20)" in flat
    assert "label evidence: question terms form, sign; shared with the gold: none; dense rank –, lexical rank –, probe rank 1" in flat


def test_document_gold_ranks_by_its_best_chunk(index_dir: Path, settings: Settings, broken: BrokenEmbedder) -> None:
    """Contract item 4 through the run: the document id or any of its chunks in `retrieved`."""
    rows = [{"id": "doc", "question": "charging case ear tips", "gold_doc": "manual", "retrieved": ["faq1", "manual"]},
            {"id": "chunks", "question": "How do I pair the headset with my phone?", "gold_doc": "manual",
             "retrieved": ["faq1", "faq2", "manual#1"]}]
    cases = _triage(index_dir, settings, broken, rows, k=20, context_k=1)
    doc, chunks = cases["doc"].evidence, cases["chunks"].evidence
    assert (doc.location.method, doc.location.chunk_id, doc.location.chunk_ids) == ("document", "manual#0", ["manual#0", "manual#1"])
    assert doc.retrieved_rank == 2 and doc.rank_original == 1 and cases["doc"].bucket == "ranking"
    assert chunks.location.chunk_id == "manual#1" and chunks.retrieved_rank == 3 and not chunks.location.crosses


def test_run_together_gold_is_extraction_noise(tmp_path: Path, settings: Settings, hash_embedder: Any) -> None:
    """No ligature anywhere: the locator's whitespace-only match, or the index vocabulary, tells."""
    chunks = [Chunk(id="strap", text="Straps: the warrantycovers water damageif the strapis intact."),
              Chunk(id="a", text="The warranty covers repairs for two years."),
              Chunk(id="b", text="Water damage is not covered if the seal is broken."),
              Chunk(id="c", text="A new strap fits every model; keep the receipt intact.")]
    build_index(chunks, tmp_path / "ix", settings=settings, embedder=hash_embedder).close()
    rows = [{"id": "by-text", "question": "Is water damage covered?", "gold_text": "the warranty covers water damage if the strap is intact"},
            {"id": "by-id", "question": "Is water damage covered?", "gold_chunk": "strap"}]
    cases = _triage(tmp_path / "ix", settings, hash_embedder, rows, k=3, context_k=1)
    by_text, by_id = cases["by-text"], cases["by-id"]
    assert by_text.evidence.location.whitespace_only and by_text.bucket == "extraction_noise"
    assert by_text.evidence.noise.whitespace_damage == ["warrantycovers", "damageif", "strapis"]  # type: ignore[union-attr]
    assert by_id.bucket == "extraction_noise" and "against the index vocabulary" in by_id.evidence.reason
    assert by_id.evidence.noise.run_together[0] == "warrantycovers = warranty + covers"  # type: ignore[union-attr]


def test_the_same_index_behind_a_retriever_gives_the_same_triage(index_dir: Path, settings: Settings, broken: BrokenEmbedder) -> None:
    """Probing through the HTTP retriever (the index served on 127.0.0.1), with the chunk table read
    from the index or from the passages alone, sorts every failure as probing the index does."""
    from http_endpoint import Endpoint

    from querywise.config import RetrieverSettings
    from querywise.retrieve import HTTPRetriever
    from querywise.triage.locate import ChunkTable

    failures = [FailureRow.model_validate(f) for f in FAILURES]
    options, sources = TriageOptions(k=20, mode="hybrid"), {"recall": "Recall notice."}
    with Index.open(index_dir, settings=settings, embedder=broken) as ix:
        mine = probe_cases(failures, TriageTarget(index=ix), options, sources=sources)
        endpoint = Endpoint(ix)
        try:
            remote = HTTPRetriever(RetrieverSettings(kind="http", url=endpoint.url))
            theirs = probe_cases(failures, TriageTarget(index=ix, retriever=remote), options, sources=sources)
            passages = ChunkTable.of(ix.chunks())  # what --corpus gives: the passages, no index
            alone = probe_cases(failures, TriageTarget(retriever=remote, embedder=broken, table=passages), options, sources=sources)
        finally:
            endpoint.server.shutdown()
            endpoint.server.server_close()
    assert [(c.id, c.bucket) for c in theirs] == [(c.id, c.bucket) for c in mine]
    assert [(c.id, c.bucket) for c in alone] == [(c.id, c.bucket) for c in mine]
    assert [c.evidence.literal_rank for c in theirs] == [c.evidence.literal_rank for c in mine]
    assert {body["k"] for body, _ in endpoint.bodies} == {20}  # every probe went to the system under triage


def test_a_retriever_without_its_passages_is_a_clear_error(broken: BrokenEmbedder) -> None:
    from querywise.retrieve import FunctionRetriever

    with pytest.raises(ValueError, match="--corpus"):
        probe_cases([FailureRow.model_validate(FAILURES[0])], TriageTarget(retriever=FunctionRetriever(lambda q, k, f: []), embedder=broken),
                     TriageOptions())


def test_the_gold_is_every_relevant_document(index_dir: Path, settings: Settings, broken: BrokenEmbedder) -> None:
    """A primary gold far down the list, another relevant document at rank 1: the case is a
    generation failure at rank 1, and the case view lists both with their ranks."""
    row = FailureRow(id="multi", question="Do gift cards expire?", gold_chunk="faq4", gold_ids=["faq4", "faq2", "gone"])
    with Index.open(index_dir, settings=settings, embedder=broken) as ix:
        [case] = probe_cases([row], TriageTarget(index=ix), TriageOptions(k=20, context_k=5))
    ev = case.evidence
    assert case.bucket == "generation" and ev.rank_original == 1 and ev.location.chunk_id == "faq2"
    golds = {g.id: g for g in ev.golds}
    assert set(golds) == {"faq4", "faq2", "gone"} and golds["faq2"].rank_original == 1 and golds["gone"].chunk_ids == []
    assert "best-ranked relevant document (faq2" in ev.reason
    assert not any(a.id == "faq2" for a in ev.above_original)  # nothing relevant is listed as "(other document)" above it


def test_absent_only_when_no_relevant_document_is_in_the_index(index_dir: Path, settings: Settings, broken: BrokenEmbedder) -> None:
    gone = FailureRow(id="gone", question="Is my heater recalled?", gold_chunk="nowhere", gold_ids=["nowhere", "nor-here"])
    kept = FailureRow(id="kept", question="Is my heater recalled?", gold_chunk="nowhere", gold_ids=["nowhere", "faq4"])
    with Index.open(index_dir, settings=settings, embedder=broken) as ix:
        cases = {c.id: c for c in probe_cases([gone, kept], TriageTarget(index=ix), TriageOptions(k=20))}
    assert cases["gone"].bucket == "absent" and "none of the 2 relevant documents" in cases["gone"].evidence.reason
    assert cases["kept"].bucket != "absent" and cases["kept"].evidence.location.chunk_id == "faq4"


def test_a_plan_that_searched_nothing_or_elsewhere_is_routing(index_dir: Path, settings: Settings, broken: BrokenEmbedder) -> None:
    """Retrieval would have worked (the index ranks the gold first), but the plan never searched:
    repaired in the router, not in generation."""
    base = {"question": "Do gift cards expire?", "gold_chunk": "faq2"}
    rows = [FailureRow(id="nothing", route="account", searched=[], retrieved=[], **base),
            FailureRow(id="elsewhere", route="exact_lookup", expected_route="kb_search", searched=["gift cards"], **base),
            FailureRow(id="fine", route="kb_search", expected_route="kb_search", searched=["Do gift cards expire?"], **base)]
    with Index.open(index_dir, settings=settings, embedder=broken) as ix:
        cases = {c.id: c for c in probe_cases(rows, TriageTarget(index=ix), TriageOptions(k=20))}
    assert cases["nothing"].bucket == "routing" and "searched nothing (route account" in cases["nothing"].evidence.reason
    assert cases["elsewhere"].bucket == "routing" and "the case expects kb_search" in cases["elsewhere"].evidence.reason
    assert cases["fine"].bucket == "generation"


def test_depths_follow_the_corpus_and_the_files_rule(index_dir: Path, settings: Settings, broken: BrokenEmbedder) -> None:
    """No --k: the rule for this small corpus; no --context-k: the failures file's hit@K."""
    made = {"acceptable_if": "hit@3", "context_k": 3}
    rows = [FailureRow(id="r", question="Do gift cards expire?", gold_chunk="faq2", made_by=made)]  # type: ignore[arg-type]
    with Index.open(index_dir, settings=settings, embedder=broken) as ix:
        report = triage(rows, TriageTarget(index=ix), TriageOptions())
        n_chunks = len(list(ix.chunks()))
        told = triage(rows, TriageTarget(index=ix), TriageOptions(context_k=5))
        reranked = triage(rows, TriageTarget(index=ix, rerank_top_n=12), TriageOptions())
    assert (report.sample.k, report.sample.context_k) == (max(6, min(50, n_chunks // 20)), 3)
    assert "failures file's rule" in report.sample.k_rule and report.warnings == []
    assert told.sample.context_k == 5 and any("hit@3" in w and "context_k = 5" in w for w in told.warnings)
    assert reranked.sample.k == 12 and "[rerank] top_n" in reranked.sample.k_rule


def test_failures_made_against_another_index_are_refused_or_warned(index_dir: Path, settings: Settings, broken: BrokenEmbedder) -> None:
    other = [FailureRow(id="x", question="q", gold_chunk="elsewhere-1", retrieved=["elsewhere-2"])]
    changed = [FailureRow(id="y", question="Do gift cards expire?", gold_chunk="faq2", gold_text="Gift cards expire after a year.")]
    with Index.open(index_dir, settings=settings, embedder=broken) as ix:
        with pytest.raises(ValueError, match="not made against this index"):
            triage(other, TriageTarget(index=ix), TriageOptions())
        report = triage(changed, TriageTarget(index=ix), TriageOptions())
    assert any("no longer holds" in w for w in report.warnings)


def test_a_ranking_case_with_a_query_cue_is_reported_as_such() -> None:
    from querywise.triage.detectors import QueryCheck

    cue = QueryCheck(suggested="vocabulary", fired=["vocabulary"], cues=["vocabulary: 10% of the question's terms are in the gold passage"])
    ev = Evidence(location=Location(method="chunk_id", chunk_id="c"), rank_original=14, literal_rank=1, generated_rank=1, query=cue)
    bucket, reason, _ = classify(ev, k=20, context_k=10)
    assert bucket == "ranking" and "query-side cue: vocabulary" in reason
    cases = [TriageCase(id=str(i), question="q", bucket="ranking", evidence=ev if i < 2 else ev.model_copy(update={"query": None}))
             for i in range(4)]
    report = build_report(cases, Population(), TriageOptions(k=20, context_k=10))
    assert report.ranking_cues is not None and (report.ranking_cues.with_cue, report.ranking_cues.ranking, report.ranking_cues.share) == (2, 4, 0.5)


def test_a_gold_the_embedding_relates_to_the_question_is_no_suspect_label(index_dir: Path, settings: Settings, broken: BrokenEmbedder) -> None:
    """faq3 shares no term with the question, and neither search finds it, but the (hash) embedder
    puts the question's "form" where the gold's "opens" is: a synonym, not a label to re-judge."""
    with Index.open(index_dir, settings=settings, embedder=broken) as ix:
        [case] = probe_cases([FailureRow.model_validate({**SUSPECT, "gold_chunk": "faq3"})], TriageTarget(index=ix), TriageOptions(k=20))
    lc = case.evidence.label_check
    assert case.bucket != "suspect_label" and lc is not None and lc.synonym[:2] == ["form", "opens"] and "a synonym" in lc.reason


def test_cli_plans_the_cases_a_margin_needs(tmp_path: Path) -> None:
    """No index needed: the plan reads the failures file's size and prices the cases."""
    f = tmp_path / "failures.jsonl"
    f.write_text("".join(json.dumps({"id": f"q{i}", "question": "q", "gold_chunk": "c"}) + "\n" for i in range(152)), encoding="utf-8")
    result = CliRunner().invoke(cli.app, ["triage", str(f), "--plan-margin", "6.4", "--plan-share", "0.45", "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["population"] == 152 and plan["cases_uncorrected"] == 61 and plan["cases"] < 61
    assert plan["hours"] == [plan["cases"] * 3 / 60, plan["cases"] * 5 / 60]


def test_cli_compares_two_buckets_with_a_test(index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: BrokenEmbedder) -> None:
    monkeypatch.setattr("querywise.index.store.embedder_for", lambda settings: broken)
    result = _cli(index_dir, tmp_path, FAILURES, "--compare", "chunk_boundary,absent")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    flat = " ".join(result.stdout.split())  # type: ignore[attr-defined]
    assert "chunk_boundary (2) against absent (1) of 7: not shown to differ" in flat
    bad = _cli(index_dir, tmp_path, FAILURES, "--compare", "ranking")
    assert bad.exit_code != 0 and "two buckets" in bad.output  # type: ignore[attr-defined]


class _TimedReranker:
    """A stand-in cross-encoder that takes a known time per call."""

    name = "timed"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def reorder(self, message: str, candidates: Sequence[Any], *, route: str | None = None) -> Any:
        from querywise.retrieve.rerank import Reordering

        self.calls.append(len(candidates))
        time.sleep(0.02)
        return Reordering(scores=[0.0] * len(candidates))


def test_each_repair_is_priced_where_the_deployment_knows_it(index_dir: Path, settings: Settings, broken: BrokenEmbedder, tmp_path: Path) -> None:
    from querywise.config import LLMSettings, Price, RerankSettings
    from querywise.llm.scripted import ScriptedProvider
    from querywise.service import QueryWise
    from querywise.triage.buckets import QUERY_BUCKETS

    priced = settings.model_copy(update={
        "rerank": RerankSettings(kind="cross_encoder", model=tmp_path, top_n=5),
        "llm": LLMSettings(provider="scripted", scripted_file=tmp_path / "none.jsonl", model="m", prices={"m": Price(usd_per_m_in=1.0, usd_per_m_out=5.0)}),
    })
    reranker = _TimedReranker()
    rows = [FailureRow.model_validate(f) for f in FAILURES]
    with Index.open(index_dir, settings=priced, embedder=broken) as ix, \
            QueryWise(priced, ix, reranker=reranker, provider=ScriptedProvider.from_records([])) as qw:
        report = triage(rows, qw, TriageOptions(k=20, mode="hybrid"))
    assert reranker.calls and set(reranker.calls) == {5}  # timed over the deployment's own candidate depth
    ms = int(re.search(r"(\d+) ms", report.prices["ranking"]).group(1))  # type: ignore[union-attr]
    assert ms >= 20 and "over 5 candidates" in report.prices["ranking"]
    # one plan call of the cost model: 600 tokens in, 80 out at $1 / $5 per million -> $1.00 per 1,000
    assert all("$1.00 per 1,000" in report.prices[b] for b in QUERY_BUCKETS)
    assert not {"absent", "generation", "suspect_label"} & report.prices.keys()  # no price the deployment cannot state
    with Index.open(index_dir, settings=settings, embedder=broken) as ix, QueryWise(settings, ix) as qw:
        assert triage(rows, qw, TriageOptions(k=20, mode="hybrid")).prices == {}  # no reranker, no LLM: nothing priced

"""The whole triage on a small real index (hash embedder, embedded engine), and the command."""

from __future__ import annotations

import json
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
from querywise.index import Index, build_index
from querywise.triage import Failure, Population, build_report, triage_cases
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
    topics = ["shipping takes two business days", "returns need the original receipt", "gift cards never expire",
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
        cases = triage_cases([Failure.model_validate(f) for f in FAILURES], ix, sources={"recall": "Recall notice."},
                             k=20, mode="hybrid")
    got = {c.id: c.bucket for c in cases}
    assert got == {"missing-doc": "absent", "noise": "extraction_noise", "degenerate": "degenerate_embedding",
                   "split": "chunk_boundary", "neighbour": "chunk_boundary", "generation": "generation",
                   "filler": "filler"}
    by_id = {c.id: c.evidence for c in cases}
    assert by_id["degenerate"].vector is not None and by_id["degenerate"].vector.flagged
    assert by_id["neighbour"].boundary is not None and by_id["neighbour"].boundary.carried_by == "manual#0"
    assert by_id["generation"].retrieved_rank == 1 and by_id["filler"].label_source == "suggested"
    assert by_id["noise"].literal_rank == 1 and by_id["noise"].generated_by == "deterministic"
    report = build_report(cases, Population(), k=20, mode="hybrid")
    assert sum(report.buckets.values()) == len(FAILURES)


def test_human_label_wins_over_the_suggestion(index_dir: Path, settings: Settings, broken: BrokenEmbedder) -> None:
    with Index.open(index_dir, settings=settings, embedder=broken) as ix:
        [case] = triage_cases([Failure.model_validate(FAILURES[-1])], ix, labels={"filler": "vocabulary"}, k=20)
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
    assert list(data) == ["sample", "buckets", "se", "reachable_share", "reachable_points", "unreachable_points",
                          "ceiling_points", "expected_band", "cases"]
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

"""People's labels: saved without loss (threads, processes, a kill mid-save), read back by
`triage --labels`, and applied to a report with the detectors' word kept beside them."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from triage_sample import small_report

from querywise.files import InputError
from querywise.triage import load_labels
from querywise.triage.labels import Label, LabelError, LabelStore, read_labels, relabel


def test_a_label_names_the_kind_and_an_override_moves_any_bucket() -> None:
    labels = {"q1": Label(id="q1", label="referent", by="ann"), "q2": Label(id="q2", bucket="generation", note="the answer was there", by="bob")}
    report, agreement = relabel(small_report(), labels)
    got = {c.id: (c.bucket, c.evidence.label_source) for c in report.cases}
    assert got == {"q1": ("referent", "human"), "q2": ("generation", "human"), "q3": ("unlabelled_query_defect", None)}
    assert report.buckets["referent"] == 1 and report.buckets["vocabulary"] == 0 and report.buckets["ranking"] == 0
    assert report.buckets["generation"] == 1 and sum(report.shares.values()) == 100
    assert "set by bob: the answer was there (the detectors said ranking" in report.cases[1].evidence.reason
    assert (agreement.labelled, agreement.agreed, agreement.rate) == (2, 0, 0.0)
    assert agreement.detectors == {"q1": "vocabulary", "q2": "ranking", "q3": "unlabelled_query_defect"}
    same, agree = relabel(small_report(), {"q1": Label(id="q1", label="vocabulary")})
    assert (agree.agreed, agree.rate) == (1, 1.0) and same.cases[0].evidence.label_source == "human"


def test_relabelling_keeps_the_reports_options_and_its_standard_errors() -> None:
    """The report is rebuilt with the options it was made with (`SampleInfo.options`): a report made
    without the finite-population correction is not given one (its SE method says "no
    finite-population correction", which a substring test once read as asking for it)."""
    from querywise.triage import Population, TriageCase, TriageOptions, build_report

    cases = [TriageCase.model_validate(c) for c in small_report()["cases"]]  # type: ignore[attr-defined]
    for fpc in (False, True):
        original = build_report(cases, Population(failures=3), TriageOptions(k=10, context_k=5, mode="hybrid", fpc=fpc))
        report, _ = relabel(original.to_json(), {})
        assert report.se == original.se and report.sample.options == original.sample.options
    assert any(report.se.values()) is False  # the whole population sampled: with the correction, no sampling error
    assert any(relabel(small_report(), {})[0].se.values())  # without it (the sample report), the binomial SEs


def test_a_query_defect_label_does_not_move_a_case_the_index_side_explains() -> None:
    report, _ = relabel(small_report(), {"q2": Label(id="q2", label="filler")})
    assert report.cases[1].bucket == "ranking" and report.cases[1].evidence.label == "filler"  # kept in the evidence


def test_the_store_saves_replaces_and_removes_and_triage_reads_its_file(tmp_path: Path) -> None:
    store = LabelStore(tmp_path / "labels.jsonl")
    assert store.all() == {}
    store.save(Label(id="q1", label="vocabulary", by="ann"))
    store.save(Label(id="q2", bucket="generation", note="n"))
    store.save(Label(id="q1", label="compound", by="ann"))  # the newest word on q1 replaces the old one
    assert {k: (v.label, v.bucket, v.by) for k, v in store.all().items()} == {"q1": ("compound", None, "ann"), "q2": (None, "generation", "")}
    assert load_labels(store.path) == {"q1": "compound"}  # `querywise triage --labels FILE` reads the workbench's file
    assert store.remove("q1", "ann").keys() == {"q2"} and read_labels(store.path).keys() == {"q2"}
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_bad_labels_row_is_named_by_its_line(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"id": "a", "label": "filler"}) + "\n" + json.dumps({"id": "b", "note": "no label"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"labels\.jsonl:2: .*needs 'label'"):
        read_labels(path)
    path.write_text(json.dumps({"id": "a", "label": "typo"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"labels\.jsonl:1: label"):
        load_labels(path)


def test_labellers_saving_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"

    def label(who: str) -> None:
        store = LabelStore(path)  # each labeller its own store, as each request or worker has
        for i in range(40):
            store.save(Label(id=f"{who}-{i}", label="filler", by=who))

    threads = [threading.Thread(target=label, args=(w,)) for w in ("ann", "bob", "cy")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_label_in_a_process, args=(str(path), w)) for w in ("dee", "eve")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert all(p.exitcode == 0 for p in procs)
    saved = read_labels(path)
    assert len(saved) == 5 * 40 and {v.by for v in saved.values()} == {"ann", "bob", "cy", "dee", "eve"}


def _label_in_a_process(path: str, who: str) -> None:
    store = LabelStore(path)
    for i in range(40):
        store.save(Label(id=f"{who}-{i}", label="referent", by=who))


_SAVER = """
import sys
from querywise.triage.labels import Label, LabelStore
store = LabelStore(sys.argv[1])
i = 0
while True:
    store.save(Label(id=f"k-{i % 50}", label="vocabulary", note="x" * (i % 997), by="killed"))
    i += 1
"""


def test_a_process_killed_while_saving_leaves_a_valid_file(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    LabelStore(path).save(Label(id="kept", bucket="ranking", by="ann"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for delay in (0.3, 0.45, 0.6, 0.75, 0.9):
        saver = subprocess.Popen([sys.executable, "-c", _SAVER, str(path)], env=env)
        time.sleep(delay)  # mid-save more often than not: it saves in a tight loop
        saver.send_signal(signal.SIGKILL)
        saver.wait()
        saved = read_labels(path)  # parses: the old file or the new one, never a torn one
        assert saved["kept"].bucket == "ranking"
    store = LabelStore(path)
    store.save(Label(id="after", label="filler"))  # the lock a killed process held is free again
    assert "after" in store.all()


def test_a_label_is_its_author_s_to_replace_or_remove(tmp_path: Path) -> None:
    store = LabelStore(tmp_path / "labels.jsonl")
    store.save(Label(id="q1", label="vocabulary", by="ann"))
    for change in (lambda: store.remove("q1", "bob"), lambda: store.save(Label(id="q1", label="compound", by="bob"))):
        with pytest.raises(LabelError, match="ann's") as info:
            change()
        assert info.value.why == "owner"
    assert store.all()["q1"].label == "vocabulary"


def test_a_bad_row_is_reported_not_fatal_and_is_never_dropped_by_a_save(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    good = json.dumps({"id": "a", "label": "filler", "by": "ann"})
    path.write_text(good + "\n{not json\n", encoding="utf-8")
    store = LabelStore(path)
    assert store.all().keys() == {"a"} and len(store.problems) == 1 and "labels.jsonl:2" in store.problems[0]
    with pytest.raises(LabelError, match="mend") as info:
        store.save(Label(id="b", label="filler", by="ann"))
    assert info.value.why == "bad_rows" and path.read_text(encoding="utf-8") == good + "\n{not json\n"


def test_a_symlinked_labels_file_is_written_through_its_link(tmp_path: Path) -> None:
    real = tmp_path / "shared" / "labels.jsonl"
    real.parent.mkdir()
    real.write_text("", encoding="utf-8")
    link = tmp_path / "labels.jsonl"
    link.symlink_to(real)
    LabelStore(link).save(Label(id="q1", label="filler", by="ann"))
    assert link.is_symlink() and read_labels(real).keys() == {"q1"}


def test_an_unwritable_labels_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("", encoding="utf-8")  # a folder that is a file: unwritable even for root
    with pytest.raises(LabelError, match="cannot be written") as info:
        LabelStore(tmp_path / "a-file" / "labels.jsonl").save(Label(id="q1", label="filler", by="ann"))
    assert info.value.why == "unwritable"

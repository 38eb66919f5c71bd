"""Failure triage on real data: SciFact (dense) and doc2dial (hybrid), plus the 60-failure timing.

    python -m bench.triage.failures            # both real runs + the timing run; reports in bench/results/triage_*
    python -m bench.triage.failures --quick    # only the timing run: triage 60 SciFact failures, index built

SciFact (BEIR test split, 300 judged queries): a failure is a query with no relevant document in
the dense top 10; its gold is its first relevant document. doc2dial (validation turns): documents
cut by the project's Chunker; the gold chunk holds the grounding span's start; a failure is a
turn whose gold chunk is not in the hybrid top 10 for the raw message (history kept for the
referent detector). No LLM: the generated probe is the deterministic one.

Committed reports hold ids, buckets, ranks and detector figures only: the questions and probe
texts of the data sets are blanked (nothing from ../shared/data is stored in the repository).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench import RESULTS, WORK, datasets, log
from bench.report import write_json


def _index(name: str, chunks: list[Any], embedder: Any) -> Any:
    from querywise.index import Index, build_index

    path = WORK / f"triage-{name}"
    if (path / "CURRENT").exists():
        ix = Index.open(path, embedder=embedder)
        if len(ix) == len(chunks):
            return ix
        ix.close()
    log(f"building {path} ({len(chunks)} chunks)")
    return build_index(chunks, path, embedder=embedder)


def _failures(ix: Any, cases: list[Any], mode: str) -> tuple[list[Any], int]:
    """Failure rows (gold = first relevant chunk, retrieved = the top 10) and the eval size."""
    from bench.triage.verb import FailureRow

    vecs = ix.embedder.embed([c.message for c in cases]) if mode != "bm25" else None
    rows = []
    for i, c in enumerate(cases):
        hits = ix.query(mode=mode, k=10, dense=vecs[i].tolist() if vecs is not None else None,
                        sparse=ix.lexicon.query_vector(c.message) if mode != "dense" else None)
        top = [h.id for h in hits]
        if not set(top) & set(c.relevant):
            gold = max(c.relevant, key=lambda cid: (c.relevant[cid], -list(c.relevant).index(cid)))
            rows.append(FailureRow(id=c.id, question=c.message, history=c.history, retrieved=top, gold_chunk=gold))
    return rows, len(cases)


def _pseudo(cid: str | None) -> str | None:
    """A chunk or document id as a short stable hash when it is not a plain number (doc2dial's
    ids are document titles, which are data-set text)."""
    if cid is None or cid.isdigit():
        return cid
    import hashlib

    return "h" + hashlib.sha1(cid.encode()).hexdigest()[:10]


def _redact(report: Any) -> Any:
    """The report without data-set text (questions, probes, quoted words, titles in ids)."""
    cases = []
    for c in report.cases:
        ev = c.evidence
        loc = ev.location
        upd: dict[str, Any] = {"literal_probe": "", "generated_probe": "",
                               "location": loc.model_copy(update={
                                   "chunk_id": _pseudo(loc.chunk_id), "chunk_ids": [_pseudo(i) for i in loc.chunk_ids],
                                   "doc_id": _pseudo(loc.doc_id), "detail": loc.detail and "see chunk ids"}),
                               "above_literal": [n.model_copy(update={"id": _pseudo(n.id)}) for n in ev.above_literal],
                               "vocabulary_violations": [f"<{len(ev.vocabulary_violations)} words>"] if ev.vocabulary_violations else []}
        if ev.noise is not None:
            upd["noise"] = ev.noise.model_copy(update={"broken_words": [f"<{len(ev.noise.broken_words)} broken words>"] if ev.noise.broken_words else []})
        if ev.boundary is not None:
            upd["boundary"] = ev.boundary.model_copy(update={"missing": [f"<{len(ev.boundary.missing)} names>"] if ev.boundary.missing else [],
                                                             "carried_by": _pseudo(ev.boundary.carried_by)})
        if ev.query is not None:
            upd["query"] = ev.query.model_copy(update={"cues": [cue.split(":", 1)[0] for cue in ev.query.cues]})
        reason = ev.reason
        if c.bucket in ("vocabulary", "compound", "referent", "filler", "chunk_boundary", "absent"):
            reason = reason.split(":", 1)[0] if ":" in reason else f"{c.bucket}: see the detector figures"
        cases.append(c.model_copy(update={"question": "", "evidence": ev.model_copy(update={**upd, "reason": reason})}))
    return report.model_copy(update={"cases": cases})


def _run(name: str, ix: Any, failures: list[Any], n_eval: int, mode: str, *, sample: int | None, seed: int,
         fpc: bool, about: str) -> dict[str, Any]:
    from bench.triage.verb import ChunkTable, Population, TriageOptions, TriageTarget, build_report, probe_cases, sample_failures, triage_html

    picked = sample_failures(failures, sample, seed)
    population = Population(eval_total=n_eval, acceptable_rate=round(1 - len(failures) / n_eval, 6),
                            failures=len(failures), source="bench: eval set run through the index")
    t0 = time.perf_counter()
    table = ChunkTable.of(ix.chunks())
    options = TriageOptions(k=50, mode=mode, sample=sample, seed=seed, fpc=fpc)
    cases = probe_cases(picked, TriageTarget(index=ix, table=table), options)
    report = build_report(cases, population, options)
    seconds = round(time.perf_counter() - t0, 3)
    report = _redact(report.model_copy(update={"seconds": seconds}))
    (RESULTS / f"triage_{name}.html").write_text(triage_html(report, title=f"Failure triage: {name} ({about})"), encoding="utf-8")
    data = {
        "about": about, "seconds": seconds, **report.to_json(),
        "shares_percent": report.shares, "points_of_traffic": report.points, "groups": report.groups,
        "reachable_se": report.reachable_se, "repair": report.repair, "notes": report.notes,
        "texts": "questions and probe texts of the data set are blanked in this file",
    }
    write_json(f"triage_{name}.json", data, command=f"python -m bench.triage.failures ({name})")
    _markdown(name, about, report, seconds)
    log(f"{name}: {report.sample.n} failures triaged in {seconds}s: {report.buckets}")
    return data


def _markdown(name: str, about: str, report: Any, seconds: float) -> None:
    from bench.triage.verb import BUCKETS

    s = report.sample
    lines = [f"Command: `python -m bench.triage.failures` · {about}", "",
             (f"{s.n} failures triaged of {s.population.failures} ({s.population.eval_total} questions, "
             f"{s.population.acceptable_rate:.1%} with the gold in the top 10, so {s.failing_points:g} points fail); "
             f"mode {s.mode}, k = {s.k}; {seconds} s. SE: {s.se_method}."), "",
             "| bucket | count | share | ± SE | points of traffic | repaired in |", "|---|---|---|---|---|---|"]
    for b in BUCKETS:
        lines.append(f"| {b} | {report.buckets[b]} | {report.shares[b]}% | {100 * report.se[b]:.1f} | "
                     f"{report.points[b]:.1f} | {report.repair[b]} |")
    lines += ["", (f"Reachable share {report.reachable_share:.1%} (± {100 * report.reachable_se:.1f}); reachable points "
              f"{report.reachable_points} + unreachable {report.unreachable_points} = {report.reachable_points + report.unreachable_points} (failing: {s.failing_points:g}, rounded); ceiling "
              f"{report.ceiling_points}, expected band {report.expected_band}."), ""]
    (RESULTS / f"triage_{name}.md").write_text("\n".join(lines), encoding="utf-8")


def scifact(embedder: Any, *, quick: bool) -> dict[str, Any]:

    chunks, cases = datasets.scifact("test")
    ix = _index("scifact", chunks, embedder)
    failures, n = _failures(ix, cases, "dense")
    if quick:
        return timing(ix, failures, n)
    return _run("scifact", ix, failures, n, "dense", sample=None, seed=0, fpc=False,
                about="SciFact test, dense all-MiniLM-L6-v2, every failure triaged")


def doc2dial(embedder: Any) -> dict[str, Any]:
    from querywise.chunking import Chunker

    chunks, cases = datasets.doc2dial(Chunker())
    ix = _index("doc2dial", chunks, embedder)
    failures, n = _failures(ix, cases, "hybrid")
    return _run("doc2dial", ix, failures, n, "hybrid", sample=300, seed=0, fpc=True,
                about="doc2dial validation turns, hybrid, random sample of 300 failures (seed 0), finite-population corrected")


def timing(ix: Any, failures: list[Any], n_eval: int, repeats: int = 3) -> dict[str, Any]:
    """Triage of 60 failures, index open and model loaded; the first run embeds new probe texts."""
    from bench.triage.verb import ChunkTable, EvalFile, TriageOptions, TriageTarget, triage

    rows = EvalFile(failures=failures, n_rows=n_eval, n_acceptable=n_eval - len(failures))
    options = TriageOptions(k=50, mode="dense", sample=60, seed=0)
    ix.embedder.embed(["warm-up"])  # model load is not triage time
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        table = ChunkTable.of(ix.chunks())
        t1 = time.perf_counter()
        report = triage(rows, TriageTarget(index=ix, table=table), options)
        t2 = time.perf_counter()
        runs.append({"read_chunks_s": round(t1 - t0, 3), "triage_s": round(t2 - t1, 3), "total_s": round(t2 - t0, 3)})
    data = {
        "what": "triage of 60 SciFact failures (random sample, seed 0), dense, k = 50, no LLM; index open, model loaded. "
                "Run 1 may embed probe texts not yet in the embedding cache; later runs hit it.",
        "n_failures": report.sample.n, "n_chunks": len(ix), "runs": runs, "target_s": 2.0,
        "best_total_s": min(r["total_s"] for r in runs), "first_total_s": runs[0]["total_s"],
    }
    write_json("triage_quick.json", data, command="python -m bench.triage.failures --quick")
    log(f"timing: {runs}")
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="only the 60-failure timing run")
    a = ap.parse_args()
    from querywise.config import Settings
    from querywise.embed import embedder_for

    RESULTS.mkdir(parents=True, exist_ok=True)
    WORK.mkdir(parents=True, exist_ok=True)
    embedder = embedder_for(Settings())
    scifact(embedder, quick=True)
    if not a.quick:
        scifact(embedder, quick=False)
        doc2dial(embedder)


if __name__ == "__main__":
    main()

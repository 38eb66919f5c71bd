"""Failure triage on real data: SciFact, Medline (dense) and doc2dial (hybrid), plus the 60-failure timing.

    python -m bench.triage.failures            # the three real runs + the timing run; reports in bench/results/triage_*
    python -m bench.triage.failures --quick    # only the timing run: triage 60 SciFact failures, index built
    python -m bench.triage.failures --only medline   # one collection

Each eval set is run through its index as `eval --failures` would write it: every judged query
searched in the index (`mode`), its ranking scored at the judged granularity (documents for the
BEIR sets, chunks for doc2dial), acceptable by a stated rule, and every row carrying the whole
set of judged relevant ids (`gold_ids`) and the rule that made it (`made_by`). The depths are the
triage's own rule (5% of the corpus, capped at 50, at least 2 x context_k; no reranker here).

- SciFact (BEIR test split, 300 claims): acceptable = hit@10 (a relevant abstract in the top 10).
- Medline (`../shared/data/medline`, 30 queries, 23 relevant abstracts each on average):
  acceptable = ndcg@10 >= 0.8, a strict rule for a set with many relevant documents (hit@10 and
  ndcg@10 >= 0.5 pass all but 0 and 2 of 30 dense queries: nothing to triage); its failing
  queries still hold 3 to 8 relevant abstracts in their top 10, which the gold set files as
  generation.
- doc2dial (validation turns): documents cut by the project's Chunker; the gold chunk holds the
  grounding span's start; acceptable = hit@10; a random sample of 300 failures, finite-population corrected.

The indexes: `QW_TRIAGE_IDX` (default /work/idx) holds indexes built with `querywise index` for
scifact and medline; one is used when it holds every judged id, else the bench builds its own in
bench/work. No LLM: the generated probe is the deterministic one (or none, where none can be built).

Committed reports hold ids, buckets, ranks and detector figures only: the questions, probe texts,
snippets and quoted words of the data sets are blanked (nothing from ../shared/data is stored in
the repository); `--cases-to DIR` writes the unblanked cases there, for checking them by hand.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

from bench import DATA, RESULTS, WORK, datasets, log
from bench.report import write_json

IDX = Path(os.environ.get("QW_TRIAGE_IDX", "/work/idx"))
DEPTH = 100  # how deep the system's own ranking is kept (the `retrieved` list)


def _index(name: str, chunks: list[Any], embedder: Any, judged: set[str]) -> Any:
    """A prebuilt index under IDX that holds every judged id (as a chunk or document id), else the bench's own."""
    from querywise.index import Index, build_index

    pre = IDX / name
    if (pre / "CURRENT").exists():
        ix = Index.open(pre, embedder=embedder)
        known = {c.id for c in ix.chunks()} | {c.doc_id for c in ix.chunks()}
        if judged <= known:
            log(f"using {pre} ({len(ix)} chunks)")
            return ix
        log(f"{pre} lacks {len(judged - known)} judged ids: building the bench's own")
        ix.close()
    path = WORK / f"triage-{name}"
    if (path / "CURRENT").exists():
        ix = Index.open(path, embedder=embedder)
        if len(ix) == len(chunks):
            return ix
        ix.close()
    log(f"building {path} ({len(chunks)} chunks)")
    return build_index(chunks, path, embedder=embedder)


def _ndcg10(ranked: list[str], relevant: dict[str, int]) -> float:
    gains = [relevant.get(d, 0) for d in ranked[:10]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def _rows(ix: Any, cases: list[Any], mode: str, rule: str, path: Path) -> list[Any]:
    """Every judged case as a failures row (acceptable by `rule`: "hit@10" or "ndcg@10>=X"), its
    ranking at the judged granularity (documents when the judged ids are document ids)."""
    from bench.triage.verb import FailureRow, MadeBy

    chunk_ids = {c.id for c in ix.chunks()}
    vecs = ix.embedder.embed([c.message for c in cases]) if mode != "bm25" else None
    made = MadeBy(acceptable_if=rule, context_k=10 if rule == "hit@10" else None, mode=mode, index=str(path), n_chunks=len(ix))
    rows = []
    for i, c in enumerate(cases):
        hits = ix.query(mode=mode, k=DEPTH, dense=vecs[i].tolist() if vecs is not None else None,
                        sparse=ix.lexicon.query_vector(c.message) if mode != "dense" else None)
        per_doc = not set(c.relevant) <= chunk_ids  # judged per document: a hit counts as its document
        ranked = list(dict.fromkeys(str(h.payload.get("doc_id", h.id)) if per_doc else h.id for h in hits))
        gold = sorted((d for d, g in c.relevant.items() if g > 0), key=lambda d: -c.relevant[d])
        ok = bool(set(ranked[:10]) & set(gold)) if rule == "hit@10" else _ndcg10(ranked, c.relevant) >= float(rule.split(">=")[1])
        where = {"gold_doc": gold[0]} if per_doc else {"gold_chunk": gold[0]}
        rows.append(FailureRow(id=c.id, question=c.message, history=c.history, acceptable=ok, retrieved=ranked,
                               gold_ids=gold, made_by=made, **where))
    return rows


def _pseudo(cid: str | None) -> str | None:
    """A chunk or document id as a short stable hash when it is not a plain number (doc2dial's
    ids are document titles, which are data-set text)."""
    if cid is None or cid.isdigit():
        return cid
    import hashlib

    return "h" + hashlib.sha1(cid.encode()).hexdigest()[:10]


def _pseudo_all(ids: list[str]) -> list[str]:
    return [str(_pseudo(i)) for i in ids]


def _redact(report: Any) -> Any:
    """The report without data-set text (questions, probes, snippets, quoted words, titles in ids)."""
    cases = []
    for c in report.cases:
        ev = c.evidence
        loc = ev.location
        upd: dict[str, Any] = {
            "literal_probe": "", "generated_probe": "",
            "location": loc.model_copy(update={"chunk_id": _pseudo(loc.chunk_id), "chunk_ids": _pseudo_all(loc.chunk_ids),
                                               "doc_id": _pseudo(loc.doc_id), "detail": loc.detail and "see chunk ids"}),
            "golds": [g.model_copy(update={"id": _pseudo(g.id), "chunk_ids": _pseudo_all(g.chunk_ids)}) for g in ev.golds],
            "above_literal": [n.model_copy(update={"id": _pseudo(n.id)}) for n in ev.above_literal],
            "above_original": [],  # data-set text, and without it a list of other chunks' ids says little
            "vocabulary_violations": [f"<{len(ev.vocabulary_violations)} words>"] if ev.vocabulary_violations else [],
        }
        if ev.noise is not None:
            upd["noise"] = ev.noise.model_copy(update={k: [f"<{len(v)}>"] if v else [] for k, v in (
                ("broken_words", ev.noise.broken_words), ("whitespace_damage", ev.noise.whitespace_damage),
                ("run_together", ev.noise.run_together), ("split_words", ev.noise.split_words))} | {"reasons": [r.split(" (")[0] for r in ev.noise.reasons]})
        if ev.boundary is not None:
            upd["boundary"] = ev.boundary.model_copy(update={"missing": [f"<{len(ev.boundary.missing)} names>"] if ev.boundary.missing else [],
                                                             "carried_by": _pseudo(ev.boundary.carried_by)})
        if ev.query is not None:
            upd["query"] = ev.query.model_copy(update={"cues": [cue.split(":", 1)[0] for cue in ev.query.cues]})
        if ev.label_check is not None:
            upd["label_check"] = ev.label_check.model_copy(update={
                "question_terms": [f"<{len(ev.label_check.question_terms)} terms>"], "shared_terms": [f"<{len(ev.label_check.shared_terms)} terms>"],
                "synonym": ev.label_check.synonym[2:], "reason": ev.label_check.reason.split(":")[0].split(" (")[0]})
        reason = ev.reason
        if c.bucket in ("vocabulary", "compound", "referent", "filler", "chunk_boundary", "absent", "extraction_noise", "suspect_label"):
            reason = reason.split(":", 1)[0] if ":" in reason else f"{c.bucket}: see the detector figures"
        elif "(" in reason:  # the relevant document named in "best-ranked relevant document (id; ...)"
            reason = reason.replace(reason[reason.find("(") + 1:reason.find(";")], "see golds") if ";" in reason else reason
        reason = reason.split("; query-side cue:")[0] + ("; query-side cue" if "; query-side cue:" in reason else "")
        cases.append(c.model_copy(update={"question": "", "history": (), "gold_text": None,
                                          "evidence": ev.model_copy(update={**upd, "reason": reason})}))
    return report.model_copy(update={"cases": cases})


def _run(name: str, ix: Any, rows: list[Any], mode: str, *, sample: int | None, seed: int, fpc: bool, about: str,
         cases_to: Path | None) -> dict[str, Any]:
    from bench.triage.verb import ChunkTable, EvalFile, TriageOptions, TriageTarget, triage, triage_html

    data_rows = EvalFile.of(rows)
    t0 = time.perf_counter()
    table = ChunkTable.of(ix.chunks())
    options = TriageOptions(mode=mode, sample=sample, seed=seed, fpc=fpc)  # depths by the triage's own rule
    report = triage(data_rows, TriageTarget(index=ix, table=table), options)
    seconds = round(time.perf_counter() - t0, 3)
    if cases_to is not None:  # unblanked, outside the repository: for checking cases by hand
        cases_to.mkdir(parents=True, exist_ok=True)
        (cases_to / f"triage_{name}.json").write_text(json.dumps(report.to_json(), indent=1), encoding="utf-8")
    report = _redact(report.model_copy(update={"seconds": seconds}))
    (RESULTS / f"triage_{name}.html").write_text(triage_html(report, title=f"Failure triage: {name} ({about})"), encoding="utf-8")
    data = {
        "about": about, "seconds": seconds, **report.to_json(),
        "shares_percent": report.shares, "points_of_traffic": report.points, "groups": report.groups,
        "reachable_se": report.reachable_se, "repair": report.repair, "notes": report.notes,
        "texts": "questions, probe texts, snippets and quoted words of the data set are blanked in this file",
    }
    write_json(f"triage_{name}.json", data, command=f"python -m bench.triage.failures --only {name}")
    _markdown(name, about, report, seconds)
    log(f"{name}: {report.sample.n} failures triaged in {seconds}s: {report.buckets}")
    return data


def _markdown(name: str, about: str, report: Any, seconds: float) -> None:
    from bench.triage.verb import BUCKETS, findings, interval_text, points_text

    s = report.sample
    pop = s.population
    lines = [f"Command: `python -m bench.triage.failures --only {name}` · {about}", "",
             (f"{s.n} failures triaged of {pop.failures} ({pop.eval_total} questions, {100 * pop.acceptable_rate:.1f}% acceptable, "
              f"so {points_text(s.failing_points, 2)} points fail); mode {s.mode}, k = {s.k}, context_k = {s.context_k}; {seconds} s. "
              f"SE: {s.se_method}; intervals: {s.interval_method}."), "",
             "| bucket | count | share | interval (1 SE) | points of traffic | repaired in |", "|---|---|---|---|---|---|"]
    for b in BUCKETS:
        lines.append(f"| {b} | {report.buckets[b]} | {report.shares[b]}% | {interval_text(report, b)} | {report.points[b]} | {report.repair[b]} |")
    ex = report.exact
    lines += ["", (f"Reachable share {report.part_shares['reachable']}% (exact {ex.reachable_share:.4f}, ± {100 * report.reachable_se:.1f}); "
                   f"reachable points {report.reachable_points} + unreachable {report.unreachable_points} = {report.failing_whole} "
                   f"(exact {ex.reachable_points:.3f} + {ex.unreachable_points:.3f} = {ex.failing_points:.3f}); ceiling "
                   f"{report.ceiling_points}, expected band {report.expected_band} (exact {ex.expected_band[0]:.2f} to {ex.expected_band[1]:.2f})."), ""]
    lines += [f"- {line}" for line in findings(report)]
    (RESULTS / f"triage_{name}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def scifact(embedder: Any, *, quick: bool, cases_to: Path | None = None) -> dict[str, Any]:
    chunks, cases = datasets.scifact("test")
    judged = {d for c in cases for d in c.relevant}
    ix = _index("scifact", chunks, embedder, judged)
    rows = _rows(ix, cases, "dense", "hit@10", ix.root)
    if quick:
        return timing(ix, rows)
    return _run("scifact", ix, rows, "dense", sample=None, seed=0, fpc=False, cases_to=cases_to,
                about="SciFact test, dense all-MiniLM-L6-v2, acceptable = hit@10 per abstract, every failure triaged")


def medline(embedder: Any, *, cases_to: Path | None = None) -> dict[str, Any]:
    chunks, cases = datasets.beir(DATA / "medline", "test")
    judged = {d for c in cases for d in c.relevant}
    ix = _index("medline", chunks, embedder, judged)
    rows = _rows(ix, cases, "dense", "ndcg@10>=0.8", ix.root)
    return _run("medline", ix, rows, "dense", sample=None, seed=0, fpc=False, cases_to=cases_to,
                about="Medline (1,033 abstracts, 30 queries, ~23 relevant each), dense, acceptable = ndcg@10 >= 0.8, every failure triaged")


def doc2dial(embedder: Any, *, cases_to: Path | None = None) -> dict[str, Any]:
    from querywise.chunking import Chunker

    chunks, cases = datasets.doc2dial(Chunker())
    ix = _index("doc2dial", chunks, embedder, set())
    rows = _rows(ix, cases, "hybrid", "hit@10", ix.root)
    return _run("doc2dial", ix, rows, "hybrid", sample=300, seed=0, fpc=True, cases_to=cases_to,
                about="doc2dial validation turns, hybrid, acceptable = hit@10 per chunk, random sample of 300 failures (seed 0), finite-population corrected")


def timing(ix: Any, rows: list[Any], repeats: int = 3) -> dict[str, Any]:
    """Triage of 60 failures, index open and model loaded; the first run embeds new probe texts."""
    from bench.triage.verb import ChunkTable, EvalFile, TriageOptions, TriageTarget, triage

    data = EvalFile.of(rows)
    options = TriageOptions(mode="dense", sample=60, seed=0)
    ix.embedder.embed(["warm-up"])  # model load is not triage time
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        table = ChunkTable.of(ix.chunks())
        t1 = time.perf_counter()
        report = triage(data, TriageTarget(index=ix, table=table), options)
        t2 = time.perf_counter()
        runs.append({"read_chunks_s": round(t1 - t0, 3), "triage_s": round(t2 - t1, 3), "total_s": round(t2 - t0, 3)})
    out = {
        "what": f"triage of 60 SciFact failures (random sample, seed 0), dense, k = {report.sample.k} (the depth rule), no LLM; "
                "index open, model loaded. Run 1 may embed probe texts not yet in the embedding cache; later runs hit it.",
        "n_failures": report.sample.n, "n_chunks": len(ix), "runs": runs, "target_s": 2.0,
        "best_total_s": min(r["total_s"] for r in runs), "first_total_s": runs[0]["total_s"],
    }
    write_json("triage_quick.json", out, command="python -m bench.triage.failures --quick")
    log(f"timing: {runs}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="only the 60-failure timing run")
    ap.add_argument("--only", choices=("scifact", "medline", "doc2dial"), help="one collection's report")
    ap.add_argument("--cases-to", type=Path, help="also write the unblanked cases here (outside the repository), to check by hand")
    a = ap.parse_args()
    from querywise.config import Settings
    from querywise.embed import embedder_for

    RESULTS.mkdir(parents=True, exist_ok=True)
    WORK.mkdir(parents=True, exist_ok=True)
    embedder = embedder_for(Settings())
    if a.quick:
        scifact(embedder, quick=True)
        return
    if a.only in (None, "scifact"):
        scifact(embedder, quick=False, cases_to=a.cases_to)
    if a.only in (None, "medline"):
        medline(embedder, cases_to=a.cases_to)
    if a.only in (None, "doc2dial"):
        doc2dial(embedder, cases_to=a.cases_to)


if __name__ == "__main__":
    main()

"""The evaluation harness on public data: speed of an ablation, and the figures issue 7 asks for.

    python -m bench.retrieval.evaluation --quick   # doc2dial: 1,000 turns x 6 arms, timed (target <= 60 s warm)
    python -m bench.retrieval.evaluation           # + all 3,972 doc2dial turns (raw vs follow-up move)
                                         # + SciFact (300 test queries): bm25 / dense / hybrid

Everything runs through the product: `load_doc2dial` / `load_beir`, `build_index`, then
`QueryWise.ask` per case (`querywise.evaluation`). No LLM. Indexes are built under
bench/work/; the embedding cache (~/.cache/querywise) makes reruns fast. Writes
bench/results/evaluation[-quick].json and bench/results/evaluation.html (the HTML report of the
doc2dial run, screenshotted for docs/eval-report.png).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench import RESULTS, WORK, datasets, log
from bench.report import publish

# Published anchors (nDCG@10 on SciFact test): BEIR paper BM25, Anserini flat index, and the
# all-MiniLM-L6-v2 figure of the sentence-transformers / MTEB tables.
SCIFACT_ANCHORS = {"bm25 (BEIR paper)": 0.665, "bm25 (Anserini flat)": 0.679, "all-MiniLM-L6-v2 dense": 0.645}
D2D_METRICS = ["recall@5", "ndcg@10", "mrr@10", "recall@20"]
SCIFACT_METRICS = ["ndcg@10", "recall@100"]


def _build(chunks: list[Any], name: str, settings: Any) -> Any:
    from querywise.index import build_index

    path = WORK / name
    shutil.rmtree(path, ignore_errors=True)
    t = time.perf_counter()
    ix = build_index(chunks, path, settings=settings)
    log(f"built {name}: {len(chunks)} chunks in {time.perf_counter() - t:.1f}s")
    return ix


def _arm_summary(r: Any) -> dict[str, Any]:
    return {"mode": r.arm.mode, "moves": list(r.arm.moves), "n": r.n, "overall": r.overall, "slices": r.slices,
            "slice_sizes": r.slice_sizes, "latency_ms": r.latency_ms}  # fmt: skip


def _delta(d: Any) -> dict[str, Any]:
    x = d.diff
    return {"n": x.n, "a": round(x.a, 4), "b": round(x.b, 4), "delta": round(x.delta, 4), "low": round(x.low, 4),
            "high": round(x.high, 4), "p_value": round(x.p_value, 4), "significant": x.significant}  # fmt: skip


def doc2dial(n_cases: int | None, settings: Any, *, html: Path | None) -> dict[str, Any]:
    """The ablation on doc2dial turns: timed, with per-slice deltas against pass-through."""
    from querywise.chunking import Chunker
    from querywise.evaluation.ablation import plan_ablation, run_ablation
    from querywise.evaluation.components import component_scores
    from querywise.evaluation.harness import Arm, run_arm
    from querywise.evaluation.metrics import parse_metrics
    from querywise.evaluation.report import EvalReport
    from querywise.service import QueryWise

    c = settings.chunking
    chunker = Chunker(max_chars=c.max_chars, overlap=c.overlap, identifier_pattern=c.identifier_pattern)
    chunks, cases = datasets.doc2dial(chunker)
    if n_cases:  # every k-th turn: all four sites, not just the first in the file
        cases = cases[:: max(1, len(cases) // n_cases)][:n_cases]
    log(f"doc2dial: {len(chunks)} chunks, {len(cases)} turns")
    ix = _build(chunks, "eval-doc2dial", settings)
    metrics = parse_metrics(D2D_METRICS)
    t = time.perf_counter()
    qw = QueryWise(settings, ix)
    main = run_arm(cases, qw, Arm(name="configured", moves=tuple(settings.understanding.moves)), metrics)
    warm_s = time.perf_counter() - t  # first pass: embeds what the cache lacks
    plan = plan_ablation(settings, ["all", "follow_up", "spelling", "filters", "ambiguity", "dense", "bm25"])
    t = time.perf_counter()
    ablation = run_ablation(cases, qw, plan, metrics)
    ablation_s = time.perf_counter() - t
    log(f"doc2dial ablation: {len(cases)} cases x {len(plan.arms)} arms in {ablation_s:.1f}s (first pass {warm_s:.1f}s)")
    for r in ablation.arms:
        log(f"  {r.arm.name:12s} recall@5 {r.overall['recall@5']:.4f}  follow_up {r.slices['follow_up']['recall@5']:.4f}  "
            f"standalone {r.slices['standalone']['recall@5']:.4f}  p50 {r.latency_ms['p50']:.1f} ms")  # fmt: skip
    if html is not None:
        from querywise.evaluation.eval_html import eval_report_html

        report = EvalReport(source=f"doc2dial validation, {len(cases)} user turns", run=main,
                            components=component_scores(cases, main.cases, settings), ablation=ablation)  # fmt: skip
        html.write_text(eval_report_html(report, title="querywise evaluation: doc2dial"), encoding="utf-8")
        log(f"wrote {html}")
    fu = {(d.slice, d.metric): _delta(d) for d in ablation.deltas if d.arm == "+follow_up"}
    qw.close()
    ix.close()
    return {
        "n_cases": len(cases),
        "n_chunks": len(chunks),
        "arms": [a.name for a in plan.arms],
        "skipped": plan.skipped,
        "ablation_seconds": round(ablation_s, 2),
        "first_pass_seconds": round(warm_s, 2),
        "cases_x_arms_per_second": round(len(cases) * len(plan.arms) / ablation_s, 1),
        "results": {r.arm.name: _arm_summary(r) for r in ablation.arms},
        "follow_up_move": {
            "what": "recall@5 of the gold chunk (the chunk holding the grounding span's start): raw message "
                    "(baseline, pass-through) vs the follow-up move (deterministic fallback: previous user turn + "
                    "message, only where the gate flags the message)",
            **{f"{s}.{m}": fu[(s, m)] for s in ("all", "follow_up", "standalone", "first_turn") for m in ("recall@5", "ndcg@10")
               if (s, m) in fu},
        },
        "deltas": [{"arm": d.arm, "slice": d.slice, "metric": d.metric, **_delta(d)} for d in ablation.deltas],
        "flags": ablation.flags,
    }


def scifact(settings: Any) -> dict[str, Any]:
    """The 300 test queries, pass-through, in each mode; beside the published anchors."""
    from querywise.evaluation.harness import Arm, run_arm
    from querywise.evaluation.metrics import parse_metrics
    from querywise.service import QueryWise

    chunks, cases = datasets.scifact("test")
    log(f"SciFact: {len(chunks)} docs, {len(cases)} test queries")
    ix = _build(chunks, "eval-scifact", settings)
    metrics = parse_metrics(SCIFACT_METRICS)
    out: dict[str, Any] = {"n_docs": len(chunks), "n_queries": len(cases), "anchors_ndcg@10": SCIFACT_ANCHORS}
    qw = QueryWise(settings, ix)
    for mode in ("bm25", "dense", "hybrid"):
        r = run_arm(cases, qw, Arm(name=mode, mode=mode), metrics)
        out[mode] = {k: round(v, 4) for k, v in r.overall.items()} | {"latency_ms": r.latency_ms}
        log(f"SciFact {mode}: {out[mode]}")
    qw.close()
    ix.close()
    out["bm25s_lucene_reference"] = _bm25s_reference(chunks, cases)
    return out


def _bm25s_reference(chunks: list[Any], cases: list[Any]) -> dict[str, float]:
    """bm25s (method lucene, English stop words, Snowball stemmer): the 20-line script of the issue."""
    import bm25s
    import Stemmer

    from querywise.evaluation.metrics import parse_metrics, score_many

    stem = Stemmer.Stemmer("english")
    tokens = bm25s.tokenize([f"{c.title} {c.text}" for c in chunks], stopwords="en", stemmer=stem, show_progress=False)
    r = bm25s.BM25(method="lucene")
    r.index(tokens, show_progress=False)
    q = bm25s.tokenize([c.message for c in cases], stopwords="en", stemmer=stem, show_progress=False)
    docs, _ = r.retrieve(q, k=100, show_progress=False, n_threads=0)
    runs = [[chunks[i].id for i in row] for row in docs]
    scores = score_many(parse_metrics(SCIFACT_METRICS), runs, [c.relevant for c in cases]).mean(axis=0)
    return {m: round(float(v), 4) for m, v in zip(SCIFACT_METRICS, scores, strict=True)}


def markdown(result: dict[str, Any], command: str) -> str:
    """The tables of docs/evaluation.md, from a result of this script."""
    head = f"Command: `{command}`; seed {result['seed']}, {result['resamples']} bootstrap resamples; {result['note']}."
    out = ["## Evaluation harness (`bench/retrieval/evaluation.py`)", "", head, ""]
    for key in ("doc2dial_1000", "doc2dial_all"):
        d = result.get(key)
        if not d:
            continue
        timing = (f"Ablation of {len(d['arms'])} arms x {d['n_cases']:,} cases: **{d['ablation_seconds']} s** "
                  f"({d['cases_x_arms_per_second']} case-arms/s; the first pass, which fills the embedding cache, "
                  f"{d['first_pass_seconds']} s).")
        out += [f"### doc2dial, {d['n_cases']:,} user turns over {d['n_chunks']:,} chunks", "", timing, "",
                "| arm | mode | moves | recall@5 | follow_up recall@5 | standalone recall@5 | ndcg@10 | p50 / p95 ms |",
                "|---|---|---|---|---|---|---|---|"]
        for name, r in d["results"].items():
            sl = r["slices"]
            out.append(f"| {name} | {r['mode']} | {', '.join(r['moves']) or '–'} | {r['overall']['recall@5']:.4f} | "
                       f"{sl['follow_up']['recall@5']:.4f} (n={r['slice_sizes']['follow_up']}) | "
                       f"{sl['standalone']['recall@5']:.4f} (n={r['slice_sizes']['standalone']}) | "
                       f"{r['overall']['ndcg@10']:.4f} | {r['latency_ms']['p50']:.1f} / {r['latency_ms']['p95']:.1f} |")
        fu = d["follow_up_move"]
        out += ["", "Follow-up move minus pass-through (recall@5, 95% interval, permutation p):", ""]
        for s in ("all", "follow_up", "standalone", "first_turn"):
            x = fu.get(f"{s}.recall@5")
            if x:
                out.append(f"- {s} (n={x['n']}): {x['a']:.4f} -> {x['b']:.4f}, {x['delta']:+.4f} "
                           f"[{x['low']:+.4f}, {x['high']:+.4f}], p={x['p_value']:.4f}"
                           + (" (significant)" if x["significant"] else ""))
        out += [f"- flags: {'; '.join(d['flags']) or 'none'}", ""]
    sc = result.get("scifact")
    if sc:
        out += [f"### SciFact, {sc['n_queries']} test queries over {sc['n_docs']:,} abstracts (pass-through)", "",
                "| way | nDCG@10 | recall@100 |", "|---|---|---|"]
        for mode in ("bm25", "dense", "hybrid"):
            out.append(f"| querywise {mode} | {sc[mode]['ndcg@10']:.4f} | {sc[mode]['recall@100']:.4f} |")
        ref = sc["bm25s_lucene_reference"]
        out.append(f"| bm25s lucene (reference script) | {ref['ndcg@10']:.4f} | {ref['recall@100']:.4f} |")
        out += [f"| published: {k} | {v:.3f} | – |" for k, v in sc["anchors_ndcg@10"].items()]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="doc2dial 1,000 turns x 6 arms only")
    ap.add_argument("--command", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    command = a.command or "python -m bench.retrieval.evaluation " + " ".join(sys.argv[1:])
    from querywise.config import Settings

    settings = Settings()  # the defaults: what a first `querywise eval` gets
    started = time.time()
    result: dict[str, Any] = {"seed": 42, "resamples": 2000, "note": "no LLM configured; LLM moves are skipped with a note"}
    result["doc2dial_1000"] = doc2dial(1000, settings, html=RESULTS / "evaluation.html")
    if not a.quick:
        result["doc2dial_all"] = doc2dial(None, settings, html=None)
        result["scifact"] = scifact(settings)
    result["wall_s"] = round(time.time() - started, 1)
    name = "evaluation-quick" if a.quick else "evaluation"
    path = publish(name, result, command=command, render=lambda d: markdown(d, d["machine"]["command"]))
    log(f"wrote {path} and {name}.md")


if __name__ == "__main__":
    main()

"""Run every benchmark and write bench/results/*.json and bench/results/README.md.

    python -m bench.run            # full: 10k/100k/400k + HNSW tuning at 100k (~1 h on 2 cores)
    python -m bench.run --quick    # 10k only, no tuning sweep (a few minutes once embeddings are cached)
    python -m bench.run --readme   # only re-render README.md from the JSON files
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench import BENCH, RESULTS, ROOT, log, run_module


def _load(name: str) -> dict[str, Any] | None:
    p = RESULTS / name
    return json.loads(p.read_text()) if p.exists() else None


def _ms(d: dict[str, Any] | None, key: str = "p50_ms") -> str:
    return "–" if not d else f"{d[key]:.2f}"


def _machine_line(m: dict[str, Any]) -> str:
    pk = m.get("packages", {})
    vers = ", ".join(f"{k} {v}" for k, v in pk.items() if v)
    return (f"{m.get('date')} · {m.get('cores')} cores ({m.get('cpu')}) · {m.get('ram_gib')} GiB · "
            f"Python {m.get('python')} · {vers}")


def _links(r: dict[str, Any]) -> str:
    """A build's filtered-search links: "graph" (Qdrant's per-value links; "graph=a+b": on fields a
    and b only) or none ("acorn"); older runs recorded the experiment's payload_m instead."""
    if "filtered_search" in r:
        return str(r["filtered_search"])
    return "graph" if r.get("payload_m") is None else f"payload_m={r['payload_m']}"


def render_scale(s: dict[str, Any], extra_tuning: tuple[tuple[str, Any], ...] = ()) -> list[str]:
    out = ["## Scale: build, latency, recall (`bench/retrieval/scale.py`)", "",
           f"Command: `{s['machine']['command']}`  ", f"Machine: {_machine_line(s['machine'])}", ""]
    syn = s["synthetic_corpus"]
    out += [f"**Corpus.** {syn['method']} {syn['n_sentences']} distinct sentences from {syn['n_source_docs']} documents. "
            f"Filter: `{' AND '.join(syn['filter'])}` (expected selectivity {syn['filter_expected_selectivity']:.0%}).", ""]
    qe = s.get("query_embedding")
    if qe:
        out += [f"**Query embedding** (real model `{qe['model_id']}`, one query at a time, measured once): "
                f"p50 {_ms(qe['single_query'])} ms, p95 {_ms(qe['single_query'], 'p95_ms')} ms "
                f"(model load {qe['model_load_s']} s). Not included in the search latencies below.", ""]
    for label, tune in (("", s.get("hnsw_tuning")), *extra_tuning):
        if not tune:
            continue
        out += [f"### HNSW tuning at {tune['n']:,} chunks{label}", "",
                "recall@10 of HNSW dense search against exact (brute-force) search, same 200 queries; "
                "dense latency p50 in ms. Build = the whole `build_index` (vectors precomputed), wall seconds; "
                "HNSW = its `EdgeShard.optimize()` part, wall and CPU seconds (CPU = user+system of all threads, "
                "less sensitive to other load on the machine).", "",
                "| m | ef_construct | built for | build s | HNSW s | HNSW CPU s | ef | recall@10 | recall@10 filtered | p50 ms | p50 ms filtered |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in tune["runs"]:
            b = r["build"]
            cpu = b.get("cpu_s", {}).get("hnsw_optimize_and_finalize", "–")
            for row in r["search"]["ef_sweep"]:
                out.append(f"| {r['m']} | {r['ef_construct']} | {_links(r)} | {b['build_s']} | "
                           f"{b['phases_s']['hnsw_optimize_and_finalize']} | {cpu} | {row['ef']} | "
                           f"{row['recall@10_none']:.4f} | {row['recall@10_filter']:.4f} | "
                           f"{_ms(row['dense_none'])} | {_ms(row['dense_filter'])} |")
        p = tune.get("pick")
        out += ["", f"Automatic pick (cheapest build meeting recall@10 ≥ {s['recall_thresholds']['unfiltered']} unfiltered "
                f"and ≥ {s['recall_thresholds']['filtered']} filtered, then smallest ef): "
                + (f"**m={p['m']}, ef_construct={p['ef_construct']}, ef={p['ef']}, built for {p.get('built_for', 'graph')}**"
                   if p else "none met the thresholds"),
                ""]
    tunings = [t for t in (s.get("hnsw_tuning"), *(t for _, t in extra_tuning)) if t]
    if len(tunings) > 1:
        out += render_tuning_summary(tunings)
    used = s.get("hnsw_used", {})
    sizes = s.get("sizes", [])
    if sizes:
        out += [f"### Per size (m={used.get('m')}, ef_construct={used.get('ef_construct')}, ef={used.get('ef')})", "",
                "| chunks | build s | lexicon+setup s | upsert s | HNSW s | HNSW CPU s | disk MiB | peak RSS build MiB | "
                "peak RSS search MiB | filter matches | recall@10 | recall@10 filtered |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for z in sizes:
            b, q = z["build"], z["search"]
            row = next(r for r in q["ef_sweep"] if r["ef"] == q["ef"])
            ph = b["phases_s"]
            out.append(f"| {z['n']:,} | {b['build_s']} | {ph['lexicon_and_setup']} | {ph['upsert']} | "
                       f"{ph['hnsw_optimize_and_finalize']} | {b.get('cpu_s', {}).get('hnsw_optimize_and_finalize', '–')} | "
                       f"{b['disk_mib']} | {b['peak_rss_build_mib']} | "
                       f"{q['peak_rss_search_mib']} | {q['filter_matches']:,} ({q['filter_selectivity']:.1%}) | "
                       f"{row['recall@10_none']:.4f} | {row['recall@10_filter']:.4f} |")
        out += ["", "Search latency, ms, p50 / p95 (`index.query`, k=10, precomputed query vectors, payload returned; "
                "200 queries, one at a time):", "",
                "| chunks | dense | dense + filter | bm25 | bm25 + filter | hybrid | hybrid + filter | exact dense | exact dense + filter | BM25 query analysis |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for z in sizes:
            q = z["search"]
            lt = q["latency"]
            cells = [f"{_ms(lt[k])} / {_ms(lt[k], 'p95_ms')}" for k in
                     ("dense_none", "dense_filter", "bm25_none", "bm25_filter", "hybrid_none", "hybrid_filter")]
            ex = q["exact_dense_latency"]
            cells += [f"{_ms(ex['none'])} / {_ms(ex['none'], 'p95_ms')}", f"{_ms(ex['filter'])} / {_ms(ex['filter'], 'p95_ms')}",
                      f"{q['query_analysis_ms']}"]
            out.append(f"| {z['n']:,} | " + " | ".join(cells) + " |")
        out += ["", "Same queries straight to the engine without fetching payload (unfiltered, p50 / p95 ms) — "
                "the difference to the table above is the cost of returning each hit's payload (text):", "",
                "| chunks | dense | bm25 | hybrid |", "|---|---|---|---|"]
        for z in sizes:
            lt = z["search"]["latency"]
            out.append(f"| {z['n']:,} | " + " | ".join(
                f"{_ms(lt.get(f'{m}_none_engine_no_payload'))} / {_ms(lt.get(f'{m}_none_engine_no_payload'), 'p95_ms')}"
                for m in ("dense", "bm25", "hybrid")) + " |")
        out += ["", "ef sweep at each size (recall@10 unfiltered / filtered):", ""]
        for z in sizes:
            out.append(f"- {z['n']:,}: " + "; ".join(
                f"ef={r['ef']}: {r['recall@10_none']:.4f} / {r['recall@10_filter']:.4f} "
                f"({_ms(r['dense_none'])} / {_ms(r['dense_filter'])} ms)" for r in z["search"]["ef_sweep"]))
    for f in s.get("followups", []):
        b, q = f["build"], f["search"]
        cpu = b.get("cpu_s", {})
        out += [f"### Follow-up at {f['n']:,} chunks (m={f['m']}, ef_construct={f['ef_construct']}, built for {_links(f)}"
                + (f", in segments of {f['build']['segment_chunks']:,}" if f["build"].get("segment_chunks") else "") + "): "
                "wider ef sweep" + (" and ACORN" if q.get("acorn_sweep") else ""), "",
                f"Command: `{f['machine']['command']}` ({f['machine']['date']}, load {b.get('load_avg_1min_start_end')})", "",
                f"Rebuilt: {b['build_s']} s wall (lexicon+setup {b['phases_s']['lexicon_and_setup']}, upsert "
                f"{b['phases_s']['upsert']}, HNSW {b['phases_s']['hnsw_optimize_and_finalize']}); CPU s: "
                f"{cpu.get('total', '–')} total (lexicon+setup {cpu.get('lexicon_and_setup', '–')}, upsert "
                f"{cpu.get('upsert', '–')}, HNSW {cpu.get('hnsw_optimize_and_finalize', '–')}). Disk {b['disk_mib']} MiB, "
                f"peak RSS build {b['peak_rss_build_mib']} MiB, search {q['peak_rss_search_mib']} MiB. "
                f"Filter matches {q['filter_matches']:,} ({q['filter_selectivity']:.1%}).", "",
                f"Filtered search {'walks the per-value links' if _links(f).startswith('graph') else 'walks the plain graph with ACORN'}; "
                f"`filtered_search = \"exact\"` on the same build: recall 1.0 at p50 / p95 "
                f"{_ms(q['exact_dense_latency']['filter'])} / {_ms(q['exact_dense_latency']['filter'], 'p95_ms')} ms.", "",
                "| ef | recall@10 | recall@10 filtered | dense p50 / p95 ms | dense + filter p50 / p95 ms |", "|---|---|---|---|---|"]
        for r in q["ef_sweep"]:
            out.append(f"| {r['ef']} | {r['recall@10_none']:.4f} | {r['recall@10_filter']:.4f} | "
                       f"{_ms(r['dense_none'])} / {_ms(r['dense_none'], 'p95_ms')} | "
                       f"{_ms(r['dense_filter'])} / {_ms(r['dense_filter'], 'p95_ms')} |")
        if q.get("acorn_sweep"):
            out += ["", "ACORN (Qdrant's filtered-search mode, `SearchParams(acorn=AcornSearchParams(enable=True))`; "
                    "not exposed by the library, patched in for this experiment):", "",
                    "| ef | recall@10 filtered | dense + filter p50 / p95 ms |", "|---|---|---|"]
            for r in q["acorn_sweep"]:
                out.append(f"| {r['ef']} | {r['recall@10_filter']:.4f} | "
                           f"{_ms(r['dense_filter'])} / {_ms(r['dense_filter'], 'p95_ms')} |")
        lt = q.get("latency")
        if lt:
            out += ["", f"Latency at ef={q.get('ef')}, p50 / p95 ms: " + ", ".join(
                f"{k.replace('_none', '').replace('_filter', ' + filter')} {_ms(v)} / {_ms(v, 'p95_ms')}"
                for k, v in lt.items() if "engine" not in k)]
        out.append("")
    fp = s.get("followup_pick")
    if fp and fp.get("pick"):
        p = fp["pick"]
        out += [f"**Defaults chosen at {fp['n']:,} chunks** (builds compared: "
                + ", ".join(f"m={c[0]} ef_construct={c[1]} {c[2]}" + (f" in segments of {c[3]:,}" if c[3] else "")
                            for c in fp["compared"])
                + f"; cheapest meeting recall@10 ≥ {s['recall_thresholds']['unfiltered']} unfiltered and ≥ "
                f"{s['recall_thresholds']['filtered']} filtered at p95 ≤ {s['recall_thresholds'].get('filtered_p95_max_ms', '–')} ms): "
                f"`filtered_search = \"{p['filtered_search']}\"`, "
                + (f"`graph_fields = {json.dumps(p['graph_fields'])}`, " if p.get("graph_fields") else "")
                + (f"`segment_chunks = {p['segment_chunks']:_}`, " if p.get("segment_chunks") else "")
                + f"`hnsw_ef = {p['ef']}`, `hnsw_ef_filtered = {p['hnsw_ef_filtered']}` "
                f"(filtered recall@10 {p['filtered_recall@10']}, p95 {p['filtered_p95_ms']} ms; build {p['build_s']} s).", ""]
    out.append("")
    return out


def render_tuning_summary(tunings: list[dict[str, Any]]) -> list[str]:
    """Every build of each (m, ef_construct) across repeated sweeps: min HNSW time, recall range per ef.

    On a shared 2-core machine one build's time can be off by 3x (other jobs; idle worker threads
    that spin also inflate CPU seconds), so the minimum over builds is the fairer cost, and the
    recall range shows how much one HNSW graph differs from the next with the same settings.
    """
    groups: dict[tuple[int, int, Any], list[dict[str, Any]]] = {}
    for t in tunings:
        for r in t["runs"]:
            groups.setdefault((r["m"], r["ef_construct"], _links(r)), []).append(r)
    efs = sorted({row["ef"] for t in tunings for r in t["runs"] for row in r["search"]["ef_sweep"]})
    out = ["### HNSW tuning: all builds together", "",
           "Min over builds of the HNSW wall / CPU seconds (the least disturbed measurement), and the range "
           "(min–max over builds) of unfiltered recall@10 per search ef.", "",
           "| m | ef_construct | built for | builds | HNSW s (min) | HNSW CPU s (min) | "
           + " | ".join(f"recall@10 ef={e}" for e in efs) + " |",
           "|---|---|---|---|---|---|" + "---|" * len(efs)]
    for (m, efc, links), runs in groups.items():
        walls = [r["build"]["phases_s"]["hnsw_optimize_and_finalize"] for r in runs]
        cpus = [r["build"]["cpu_s"]["hnsw_optimize_and_finalize"] for r in runs if "cpu_s" in r["build"]]
        cells = []
        for e in efs:
            vals = [row["recall@10_none"] for r in runs for row in r["search"]["ef_sweep"] if row["ef"] == e]
            cells.append("–" if not vals else f"{min(vals):.4f}–{max(vals):.4f}" if len(vals) > 1 else f"{vals[0]:.4f}")
        out.append(f"| {m} | {efc} | {links} | {len(runs)} | "
                   f"{min(walls)} | {min(cpus) if cpus else '–'} | " + " | ".join(cells) + " |")
    return [*out, ""]


def render_bm25(b: dict[str, Any]) -> list[str]:
    out = ["## BM25: three ways, plus the library's dense and hybrid (`bench/retrieval/bm25_engines.py`)", "",
           f"Command: `{b['machine']['command']}`  ", f"Machine: {_machine_line(b['machine'])}", ""]
    sc = b["scifact"]
    out += [f"SciFact (BEIR test): {sc['n_docs']:,} docs, {sc['n_queries']} queries. Latency: one query at a time, "
            "k=10, query analysis included.", "",
            "| way | nDCG@10 | recall@100 | index build s | latency p50 ms | p95 ms | top-10 overlap with bm25s-lucene |",
            "|---|---|---|---|---|---|---|"]
    agree = sc.get("agreement_overlap@10_vs_bm25s-lucene", {})
    for name, q in sc["quality"].items():
        lat = q.get("latency_k10") or q.get("latency_k10_precomputed_vector")
        out.append(f"| {name} | {q['ndcg@10']:.4f} | {q['recall@100']:.4f} | {q.get('index_build_s', '–')} | "
                   f"{_ms(lat)} | {_ms(lat, 'p95_ms')} | {agree.get(name, '–' if name != 'bm25s-lucene' else '1')} |")
    mc = b.get("metric_check", {})
    rx = mc.get("ranx_cross_check_bm25s-lucene", {})
    out += ["", f"Metric check: hand case nDCG@10 {mc.get('hand_case_ndcg@10')} (expected {mc.get('expected')}); "
            f"ranx on bm25s-lucene {rx.get('ranx')} vs ours {rx.get('ours')}.", ""]
    syn = b.get("synthetic")
    if syn:
        out += [f"Speed at {syn['n']:,} synthetic chunks ({syn['n_queries']} real queries; {syn['library_index']}):", "",
                "| way | index build s | latency p50 ms | p95 ms | top-10 overlap with bm25s-lucene |", "|---|---|---|---|---|"]
        ag = syn.get("agreement_overlap@10_vs_bm25s-lucene", {})
        for name, q in syn["speed"].items():
            out.append(f"| {name} | {q['index_build_s'] if q['index_build_s'] is not None else 'see scale'} | "
                       f"{_ms(q['latency_k10'])} | {_ms(q['latency_k10'], 'p95_ms')} | {ag.get(name, '1' if name == 'bm25s-lucene' else '–')} |")
    for n in b.get("notes", []):
        out.append(f"\n- {n}")
    out.append("")
    return out


def _flatten(d: Any, prefix: str = "") -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    if isinstance(d, dict):
        for k, v in d.items():
            rows += _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(d, list):
        if all(not isinstance(x, dict | list) for x in d) and len(d) <= 12:
            rows.append((prefix, ", ".join(map(str, d))))
        else:
            rows.append((prefix, f"({len(d)} items: see the JSON file)"))
    else:
        rows.append((prefix, str(d)))
    return rows


def render_generic(name: str, d: dict[str, Any]) -> list[str]:
    """Another benchmark's results: its own markdown (`<name>.md`) if it writes one, else a flat table."""
    m = d.get("machine") or {}
    out = [f"## {name}", ""]
    companion = RESULTS / f"{name}.md"
    if companion.exists():
        return [*out, f"Rendered by its own script: [{companion.name}]({companion.name}).", ""]
    command = d.get("command") or m.get("command")
    if command:
        out += [f"Command: `{command}`", ""]
    if name == "embed_throughput":  # the colleague's script renders its own table
        try:
            from bench.retrieval.embed_throughput import _markdown

            return [*out, _markdown(d), ""]
        except Exception:
            pass
    if m.get("packages"):
        out += [f"Machine: {_machine_line(m)}", ""]
    if isinstance(d.get("markdown"), str):
        return [*out, d["markdown"], ""]
    out += ["| field | value |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in _flatten({k: v for k, v in d.items() if k != "machine"})]
    return [*out, ""]


#: Written from the full run of 2026-12-02 and the segmented follow-up of 2026-12-03 (scale.json, scale_memory.json,
#: bm25_engines.json of 2026-11-29);
#: rewrite it when a new run changes the picture.
ANALYSIS = """## Reading (full run of 2026-12-02)

- **HNSW default: m=16, ef_construct=64, hnsw_ef=128, filtered_search="graph", hnsw_ef_filtered=512.**
  Chosen at 400k chunks (the follow-ups: `followup_pick` in scale.json), where the 5% filter is no longer
  answered exactly through the payload index (up to 100k it is: recall 1.0 in every build, so the 100k
  tuning cannot tell the modes apart; its automatic pick, a build without per-value links, then fell short
  at 400k in the size run). With Qdrant's per-value graph links ("graph"): recall@10 0.9935 unfiltered at
  ef 128; filtered 0.9465 / 0.9715 / 0.987 at ef 128 / 256 / 512, p95 2.5 / 3.7 / 6.2 ms.
- **Without the links ("acorn" / "exact" builds) the graph is built 3.7x faster but is weaker.** HNSW 85 s
  against 317 s at 400k, 18 s against 53 s at 100k; but the per-value links also serve unfiltered
  searches: unfiltered recall@10 0.9395 at ef 128, 0.986 at 512 (0.982 at ef 128 at 100k, against 0.9985).
  ACORN on it: filtered 0.852 / 0.90 / 0.9335 / 0.9425 at ef 128 / 256 / 512 / 1024 (p95 up to 17 ms).
  `filtered_search = "exact"` (the matches read through the payload index and all scored): recall 1.0 at
  p50 / p95 10.3 / 12.1 ms for 20,001 matches, a cost that grows with the matches.
- **Links on one field ("graph=category", `[index] graph_fields`): 258 s at 400k (HNSW 130 s).** Each
  indexed field with links costs about one more graph: links only on the field the filter is selective on
  keep recall@10 0.983 unfiltered at ef 128 (0.995 at 256) and 0.9845 filtered at ef 512 (p95 3.0 ms; the
  `year > 2020` condition is evaluated inside category's links). This is the cheapest build meeting every
  recall target (`followup_pick`), and the library's default links just the fields `[filters]` and
  `[access]` name (every indexed field when they name none, as in this benchmark's default row).
- **Build at 400k, vectors cached: 224-241 s, peak RSS 2.13 GiB, in segments of 100,000 chunks** (the
  `[index] segment_chunks` default; links on `category`): each segment's graph is built as it fills and the
  shard reopened, which gives that build's memory back. Recall@10 0.996 unfiltered at ef 128 and 0.992 /
  0.9955 filtered at ef 128 / 512 (p95 4.2 ms), higher than one graph of 400,000 at the same ef
  (`followups`, `scale_memory.json`). In one segment: 453 s with links on every field (text analysis in 2
  worker processes 78 s, vectors and upserts 58 s, HNSW 317 s), 258 s with links on `category`, peak RSS
  5.9 GiB either way, of which the graph build added 2.78 GiB; the earlier single-process build took 1,003 s
  (293 / 130 / 580 s) on a loaded Intel machine. The size rows above were built in one segment.
- **BM25 default: the library's own (Lucene-form sparse vectors, IDF in Qdrant).** SciFact nDCG@10 0.684 vs
  0.686 for bm25s-lucene (top-10 overlap 0.96; the gap is the tokeniser: single digits, identifier compounds,
  accent folding), 0.684 robertson, 0.661 tantivy (no stop words, k1=1.2). Its latency is in the same range
  (0.20 ms at 5k; 2.0 ms p50 at 100k vs 3.5 ms bm25s, 1.2 ms tantivy) and it is the only one whose filters and
  hybrid fusion run inside the engine, embedded or on a server. In-engine hybrid reaches nDCG@10 0.714
  (client-side RRF of bm25s + dense: 0.717; dense alone 0.645).
"""


def render_readme() -> Path:
    lines = ["# querywise benchmarks", "",
             "Every number below was produced by the command shown with it on the machine described "
             "(`make bench` = `.venv/bin/python -m bench.run`; `--quick` for a 10k smoke run). Raw numbers, "
             "with machine info and package versions, are in the JSON files beside this one. Data are read at "
             "run time from `../shared/data`; nothing from the data sets is stored in the repository.", "",
             "Caveat: the machine has 2 cores and may be shared with other work while a benchmark runs "
             "(`load_avg_at_write` in each JSON); latencies are single-query, single-client.", ""]
    if (RESULTS / "scale.json").exists():
        lines += [ANALYSIS]
    s = _load("scale.json") or _load("scale-quick.json")
    rerun = _load("scale-tuning.json")
    if s:
        extra = ((f" — repeated run (`{rerun['machine']['command']}`, {rerun['machine']['date']})",
                  rerun.get("hnsw_tuning")),) if rerun else ()
        lines += render_scale(s, extra)
    b = _load("bm25_engines.json") or _load("bm25_engines-quick.json")
    if b:
        lines += render_bm25(b)
    for p in sorted(RESULTS.glob("*.json")):
        if not p.name.startswith(("scale", "bm25_engines")):  # scale-tuning.json is rendered with scale
            lines += render_generic(p.stem, json.loads(p.read_text()))
    path = RESULTS / "README.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10k chunks, no HNSW sweep, 10k BM25 speed run")
    ap.add_argument("--readme", action="store_true", help="only re-render README.md")
    ap.add_argument("--skip", default="", help="comma-separated: scale,bm25,embed,latency,adversarial,access,rewrite,router,triage,evaluation,third_party,intents,conversations,llm_latency,first_contact,fusion,triage_retriever,peers,rerank,embed_batching,service_load,service_adversarial,service_faults")
    a = ap.parse_args()
    if a.readme:
        log(f"wrote {render_readme()}")
        return
    skip = set(filter(None, a.skip.split(",")))
    me = "python -m bench.run" + (" --quick" if a.quick else "")
    t0 = time.time()
    if "scale" not in skip:
        args = ["--sizes", "10000", "--tune-size", "0", "--results-name", "scale-quick.json"] if a.quick else \
            ["--sizes", "10000,100000,400000", "--tune-size", "100000"]
        run_module("bench.retrieval.scale", [*args, "--command", f"{me} → python -m bench.retrieval.scale {' '.join(args)}"])
    if "bm25" not in skip:
        args = ["--synth-size", "10000", "--results-name", "bm25_engines-quick.json"] if a.quick else \
            ["--synth-size", "100000"]
        run_module("bench.retrieval.bm25_engines", [*args, "--command", f"{me} → python -m bench.retrieval.bm25_engines {' '.join(args)}"])
    script = BENCH / "embed_throughput.py"
    if "embed" not in skip and script.exists():
        import subprocess

        cmd = [sys.executable, str(script.relative_to(ROOT))] + (["--repeats", "1"] if a.quick else [])
        log("$ " + " ".join(cmd))
        subprocess.run(cmd, check=True, cwd=ROOT)
    if "latency" not in skip:
        run_module("bench.understanding.plan_latency", ["--n", "1000"])
    if "adversarial" not in skip:  # bounded time per request: crafted messages at 1, 10 and 100 KB
        run_module("bench.understanding.crafted_inputs", ["--repeats", "1" if a.quick else "3"])
    if "access" not in skip:  # generated attacks on access, with a hostile LLM: 0 widenings, 0 fail-open
        run_module("bench.understanding.access_attack", ["--n", "2000" if a.quick else "10000"])
    if "rewrite" not in skip:
        run_module("bench.understanding.followup_gate", [])
    if "router" not in skip and not a.quick:  # about 12 minutes: the full run only
        run_module("bench.routing.clinc150", [])
    for name in ("triage", "evaluation", "llm_latency"):  # each writes bench/results/<name>*.json
        if name not in skip:
            run_module(f"bench.{name}", ["--quick"] if a.quick else [])
    if "third_party" not in skip:  # the someone-else's-account rule (seconds)
        run_module("bench.understanding.third_party", [])
    if "intents" not in skip:  # several intents on the demo's held-out labels (~1 min)
        run_module("bench.understanding.intents", [])
    if "conversations" not in skip and not a.quick:  # doc2dial follow-ups and changes of subject, the demo (~8 min)
        run_module("bench.understanding.followup_recall", [])
    if "first_contact" not in skip and not a.quick:  # index → eval --failures → triage, as a user runs them (~15 min)
        run_module("bench.triage.first_contact", [])
    # The retrieval stage: fusion and triage through a retriever read first_contact's indexes.
    for name in ("fusion", "triage_retriever"):
        if name not in skip and not a.quick:
            run_module(f"bench.{name}", [])
    if "peers" not in skip and not a.quick:  # Haystack, LlamaIndex, LangChain, semantic-router on the same tasks (~30 min)
        from bench.retrieval.peers import SYSTEMS, missing_modules

        missing = sorted({m for s in SYSTEMS if not s.name.startswith("querywise") for m in missing_modules(s)})
        if missing:
            log(f"bench.retrieval.peers skipped: {', '.join(missing)} not installed (pip install -c requirements.lock -r bench/requirements-peers.txt, "
                "then pip install --no-deps -r bench/requirements-peers-nodeps.txt)")
        else:
            run_module("bench.retrieval.peers", [])
    # The reranker's latency and cost; the service: embeddings under concurrency, load, access attacks, faults.
    for name in ("rerank", "embed_batching", "service_load", "service_adversarial", "service_faults"):
        if name == "service_load" and importlib.util.find_spec("locust") is None:
            log("bench.service.load skipped: locust is not installed (pip install 'querywise[bench]')")
        elif name not in skip and (BENCH / f"{name}.py").exists():
            run_module(f"bench.{name}", [])
    log(f"wrote {render_readme()} ({time.time() - t0:.0f}s)")


if __name__ == "__main__":
    main()

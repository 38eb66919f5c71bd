"""Results: written as JSON with the machine and the command, rendered to markdown from that JSON.

    path = publish("fusion", {"rows": rows}, command=COMMAND, render=markdown)

`publish` writes bench/results/<name>.json (`write_json`: machine info, command, data) and, given a
renderer, <name>.md rendered from the JSON as written, so a table never shows a figure the file
does not hold. `render_readme` assembles bench/results/README.md from the JSON files: the scale and
BM25 tables in full, a link to each benchmark's own markdown, a flat table for the rest. Its prose
states no figure: every number in it comes from a result file (`python -m bench.run --readme`
re-renders it).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import RESULTS

Renderer = Callable[[dict[str, Any]], str]


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def cpu_name() -> str:
    """The CPU's model name and its vector extensions: hosts sold under one name differ (ONNX
    Runtime runs 2x faster where AVX-512 is present), so every figure says which it had."""
    name, flags = "", set[str]()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not name:
                name = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        return platform.processor()
    vector = sorted(f for f in flags if f in ("avx2", "avx_vnni", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile"))
    return f"{name} ({', '.join(vector) or 'no AVX2'})" if name else platform.processor()


def machine_info() -> dict[str, Any]:
    """Date, command line, cores, CPU, RAM, load and package versions: what every result file starts with."""
    mem_kib = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    except OSError:
        pass
    cpu = cpu_name()
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    packages = [
        "querywise", "qdrant-edge-py", "qdrant-client", "bm25s", "PyStemmer", "tantivy", "rank-bm25",
        "sentence-transformers", "torch", "onnxruntime", "numpy", "pydantic", "ranx",
    ]
    return {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]) if sys.argv else "",
        "argv": sys.argv,
        "cwd": os.getcwd(),
        "cores": os.cpu_count(),
        "cpu": cpu,
        "ram_gib": round(mem_kib / 2**20, 1),
        "load_avg_at_write": load,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": {p: _version(p) for p in packages},
    }


def write_json(name: str, data: dict[str, Any], command: str | None = None, folder: Path = RESULTS) -> Path:
    """Write `folder/name` (a .json name): the machine and the command that ran (this process's
    command line unless `command` says otherwise), then `data`."""
    folder.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    if command:
        info["command"] = command
    out = {"machine": info, **data}
    path = folder / name
    path.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def publish(name: str, data: dict[str, Any], *, command: str | None = None, render: Renderer | None = None,
            folder: Path = RESULTS) -> Path:
    """Write `folder/<name>.json` (machine, command, data) and, given `render`, `folder/<name>.md`
    rendered from the JSON as written."""
    path = write_json(f"{name}.json", data, command, folder)
    if render is not None:
        written = json.loads(path.read_text(encoding="utf-8"))
        text = render(written)
        (folder / f"{name}.md").write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    return path


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


def load_line(m: dict[str, Any]) -> str:
    """The machine and how busy it was when the result was written: on a shared host a figure
    means little without it."""
    load = ", ".join(f"{x:.1f}" for x in m.get("load_avg_at_write") or [])
    return f"Machine: {m.get('cores')} cores ({m.get('cpu')}), load average {load or 'unknown'} (1, 5, 15 min) when written."


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
        return [*out, f"Its own page: [{companion.name}]({companion.name}).", ""]
    command = d.get("command") or m.get("command")
    if command:
        out += [f"Command: `{command}`", ""]
    if name == "embed_throughput":  # its own renderer, from the JSON
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


#: The reading of the scale and BM25 runs. No figure here: the figures are the tables below, each
#: rendered from its result file (scale.json, scale_memory.json's follow-ups, bm25_engines.json).
READING = """## Reading

- **HNSW defaults** are the build the scale run's follow-ups pick at its largest size (`followup_pick` in
  scale.json, rendered as "Defaults chosen" below): the cheapest build meeting every recall target. Up to
  100k chunks the filter is answered exactly through the payload index, so the tuning at 100k cannot tell
  the filtered-search modes apart; only the largest size does.
- **Filtered-search links.** Builds without Qdrant's per-value graph links ("acorn", "exact") are faster to
  build but weaker, unfiltered too; links on the one selective field (`[index] graph_fields`) cost about one
  more graph per field and keep recall; `filtered_search = "exact"` scores every match (recall 1.0, at a
  cost that grows with the matches). The library links the fields `[filters]` and `[access]` name.
- **Segments** (`[index] segment_chunks`) build each segment's graph as it fills and give its memory back:
  compare the segmented follow-up with the one-graph rows for build time, peak RSS and recall.
- **BM25 default: the library's own** (Lucene-form sparse vectors, IDF in Qdrant): within noise of bm25s on
  SciFact (the gap is the tokeniser), latency in the same range, and the only one whose filters and hybrid
  fusion run inside the engine, embedded or on a server.
"""


def render_readme() -> Path:
    """bench/results/README.md from the result files beside it."""
    lines = ["# querywise benchmarks", "",
             "Every number below was produced by the command shown with it on the machine described "
             "(`make bench` = `.venv/bin/python -m bench.run`; `make bench ARGS=--quick` for the quick suite; "
             "`python -m bench.run --list` names every benchmark). Raw numbers, "
             "with machine info and package versions, are in the JSON files beside this one. Data are read at "
             "run time from `../shared/data`; nothing from the data sets is stored in the repository.", "",
             "Caveat: the machine has 2 cores and may be shared with other work while a benchmark runs "
             "(`load_avg_at_write` in each JSON); latencies are single-query, single-client.", ""]
    if (RESULTS / "scale.json").exists():
        lines += [READING]
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

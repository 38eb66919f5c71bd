"""Scale benchmark: build time, search latency, HNSW recall@10, disk and memory at 10k-400k chunks.

Chunks and vectors come from bench/retrieval/synthetic_corpus.py (real sentences, vectors = mean of real sentence
embeddings; see there). Each index is built through the library's normal path
(`querywise.index.build_index`) with an embedder that looks the precomputed vectors up by text,
so build time is the library's own work (lexicon, sparse vectors, upserts, Qdrant's HNSW build)
without model inference. Query-embedding time is measured once with the real model and
reported separately.

Each build runs in its own child process and each search phase in another (a fresh process
that opens the index, as a server would), so peak RSS (getrusage) is per phase.

    python -m bench.retrieval.scale --sizes 10000                       # quick
    python -m bench.retrieval.scale --sizes 10000,100000,400000 --tune-size 100000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np

from bench import RESULTS, ROOT, WORK, dir_size_mib, log, peak_rss_mib, percentiles
from bench.measures import latency
from bench.report import write_json
from bench.retrieval.synthetic_corpus import LIB_DEFAULT, index_path

K = 10
MODES: tuple[Literal["dense", "bm25", "hybrid"], ...] = ("dense", "bm25", "hybrid")
# Builds tried at the tuning size, m:ef_construct:filtered_search ("graph": Qdrant's per-value
# graph links; "acorn": none, filtered searches walk with ACORN, or score the matches exactly);
# each is searched with every ef below.
TUNE_BUILDS = ["16:100:graph", "16:64:graph", "16:64:acorn", "16:32:acorn", "8:64:acorn"]
TUNE_EFS = [32, 64, 128, 256]
RECALL_MIN, RECALL_MIN_FILTERED = 0.98, 0.98
FILTERED_P95_MAX_MS = 10.0  # #19's target for a filtered search at 400k


def _walk(filtered: str) -> tuple[str, list[str] | None]:
    """A build kind as `[index]` settings: `filtered_search`, and "graph=a+b" as graph_fields [a, b]."""
    mode, _, fields = filtered.partition("=")
    return mode, fields.split("+") if fields else None


def _settings(m: int, efc: int, ef: int, filtered: str = "graph", segment_chunks: int | None = None) -> Any:
    from querywise.config import IndexSettings, Settings

    mode, fields = _walk(filtered)
    segments = {} if segment_chunks is None else {"segment_chunks": segment_chunks}
    # hnsw_ef_filtered = ef: the sweep moves both
    return Settings(index=IndexSettings(hnsw_m=m, hnsw_ef_construct=efc, hnsw_ef=ef, hnsw_ef_filtered=ef, filtered_search=mode,
                                        graph_fields=fields, **segments))


def _vm_status(field: str) -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024.0, 1)
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Reset the kernel's RSS high-water mark (Linux clear_refs 5) so a phase's peak can be read."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


# --------------------------------------------------------------------------- child: build


def do_build(n: int, m: int, efc: int, out: Path, filtered: str = "graph", segment_chunks: int | None = None) -> None:
    from bench.retrieval.synthetic_corpus import cached_synth_embedder, describe, synth_corpus
    from querywise.index import build_index

    t = time.perf_counter()
    chunks = synth_corpus(n)  # made as read, as from a corpus file
    emb = cached_synth_embedder(n)  # filled beforehand, in the parent (see _child)
    synth_s = time.perf_counter() - t
    rss_data = _vm_status("VmRSS")
    reset = _reset_peak_rss()
    path = index_path(n, m, efc, filtered)
    shutil.rmtree(path, ignore_errors=True)
    load0 = os.getloadavg()[0]
    phases: dict[str, float] = {}

    cpu: dict[str, float] = {}

    # RSS now and peak so far as each phase starts: where the build's memory goes
    rss: dict[str, dict[str, float | None]] = {}

    def progress(phase: str, total: int | None) -> Callable[[int], None]:
        phases.setdefault(phase, time.perf_counter())
        cpu.setdefault(phase, time.process_time())
        rss.setdefault(phase, {"rss_mib": _vm_status("VmRSS"), "peak_so_far_mib": _vm_status("VmHWM") if reset else None})
        return lambda k: None

    settings = _settings(m, efc, LIB_DEFAULT[2], filtered, segment_chunks)
    log(f"build n={n} m={m} ef_construct={efc} filtered_search={filtered}")
    t0, c0 = time.perf_counter(), time.process_time()
    index = build_index(chunks, path, settings=settings, embedder=emb, progress=progress)
    t_end, c_end = time.perf_counter(), time.process_time()
    index.close()
    hnsw0 = phases.get("building HNSW graph", t_end)
    idx0 = phases.get("embedding and indexing", hnsw0)
    res = {
        "n": n, "m": m, "ef_construct": efc, "filtered_search": filtered,
        "build_workers": settings.index.build_workers, "segment_chunks": settings.index.segment_chunks,
        "build_s": round(t_end - t0, 2),
        "load_avg_1min_start_end": [round(load0, 2), round(os.getloadavg()[0], 2)],
        "phases_s": {
            # analysis of every text (worker processes) + engine/payload-index creation
            "lexicon_and_setup": round(idx0 - t0, 2),
            # vector lookup (no model), BM25 doc vectors, chunks.jsonl, upserts into the engine
            "upsert": round(hnsw0 - idx0, 2),
            # EdgeShard.optimize() (the HNSW graph build) + flush, lexicon/manifest write, reopen
            "hnsw_optimize_and_finalize": round(t_end - hnsw0, 2),
        },
        # CPU seconds (user + system, all threads of the process): robust to other load on the machine
        # of this process only: the analysis workers' CPU is not counted here
        "cpu_s": {
            "total": round(c_end - c0, 2),
            "lexicon_and_setup": round(cpu.get("embedding and indexing", c_end) - c0, 2),
            "upsert": round(cpu.get("building HNSW graph", c_end) - cpu.get("embedding and indexing", c_end), 2),
            "hnsw_optimize_and_finalize": round(c_end - cpu.get("building HNSW graph", c_end), 2),
        },
        "disk_mib": dir_size_mib(path),
        "disk_apparent_mib": dir_size_mib(path, apparent=True),
        "rss_after_data_mib": rss_data,
        "peak_rss_build_mib": _vm_status("VmHWM") if reset else None,
        "rss_at_phase_start_mib": {**rss, "end": {"rss_mib": _vm_status("VmRSS")}},
        "peak_rss_process_mib": peak_rss_mib(),  # incl. synthesising the chunks and their vectors
        "synth_s": round(synth_s, 2),
        "payload_indexes": index.manifest.payload_indexes,
        "graph_fields": index.manifest.graph_fields,
        "describe": describe(),
    }
    out.write_text(json.dumps(res, indent=2) + "\n")
    log(f"built n={n} in {res['build_s']}s {res['phases_s']} disk={res['disk_mib']}MiB")


# --------------------------------------------------------------------------- child: search


def _count(index: Any, where: Any) -> int:
    """Points matching `where` (engine internals: the library has no count-with-filter API)."""
    import qdrant_edge as qe

    from querywise.index.engine import _edge_filter

    return int(index.engine._shard.count(qe.CountRequest(exact=True, filter=_edge_filter(where))))


def _recall(approx: list[list[str]], exact: list[list[str]]) -> float:
    vals = [len(set(a) & set(e)) / len(e) for a, e in zip(approx, exact, strict=True) if e]
    return round(float(np.mean(vals)), 4) if vals else float("nan")


def do_search(n: int, m: int, efc: int, efs: list[int], main_ef: int, latency: bool, out: Path,
              filtered: str = "graph") -> None:
    from bench.retrieval.synthetic_corpus import FILTER, query_vectors
    from querywise.conditions import parse_where
    from querywise.index import Index

    texts, qv, _ = query_vectors()
    dense = [v.tolist() for v in qv]
    rss0 = peak_rss_mib()
    t = time.perf_counter()
    load0 = os.getloadavg()[0]
    index = Index.open(index_path(n, m, efc, filtered), settings=_settings(m, efc, main_ef, filtered))
    open_s = time.perf_counter() - t
    sparse = [index.lexicon.query_vector(q) for q in texts]  # first pass loads stop words and stemmer
    t = time.perf_counter()
    sparse = [index.lexicon.query_vector(q) for q in texts]
    sparse_s = (time.perf_counter() - t) / len(texts)
    where = parse_where(FILTER)
    n_match = _count(index, where)

    def ids(hits: list[Any]) -> list[str]:
        return [h.id for h in hits]

    def run(mode: Any, i: int, w: Any, exact: bool = False) -> list[Any]:
        return index.query(mode=mode, k=K, dense=dense[i], sparse=sparse[i], where=w, exact=exact)

    nq = len(texts)
    for i in range(min(20, nq)):  # warm-up: page cache, lazy structures
        for mode in MODES:
            run(mode, i, None)
            run(mode, i, where)
    res: dict[str, Any] = {
        "n": n, "m": m, "ef_construct": efc, "filtered_search": filtered, "n_queries": nq, "open_s": round(open_s, 3),
        "filter": FILTER, "filter_matches": int(n_match), "filter_selectivity": round(n_match / n, 4),
        "query_analysis_ms": round(sparse_s * 1000, 3),
    }
    exact: dict[str, list[list[str]]] = {}
    exact_lat: dict[str, list[float]] = {}
    for label, w in (("none", None), ("filter", where)):
        lat, got = [], []
        for i in range(nq):
            t = time.perf_counter()
            got.append(ids(run("dense", i, w, exact=True)))
            lat.append(time.perf_counter() - t)
        exact[label], exact_lat[label] = got, lat
    # "filter" is also `filtered_search = "exact"`: the matches read through the payload index, all scored
    res["exact_dense_latency"] = {k: percentiles(v) for k, v in exact_lat.items()}
    sweep = []
    for ef in efs:
        index.settings = _settings(m, efc, ef, filtered)
        row: dict[str, Any] = {"ef": ef}
        for label, w in (("none", None), ("filter", where)):
            lat, got = [], []
            for i in range(nq):
                t = time.perf_counter()
                got.append(ids(run("dense", i, w)))
                lat.append(time.perf_counter() - t)
            row[f"recall@10_{label}"] = _recall(got, exact[label])
            row[f"dense_{label}"] = percentiles(lat)
        sweep.append(row)
        log(f"n={n} m={m} efc={efc} ef={ef}: recall {row['recall@10_none']} / filtered {row['recall@10_filter']}"
            f"  p50 {row['dense_none']['p50_ms']}ms / {row['dense_filter']['p50_ms']}ms")
    res["ef_sweep"] = sweep
    if latency:
        index.settings = _settings(m, efc, main_ef, filtered)
        res["ef"] = main_ef
        lat_table: dict[str, Any] = {}
        for mode in MODES:
            for label, w in (("none", None), ("filter", where)):
                lat = []
                for i in range(nq):
                    t = time.perf_counter()
                    run(mode, i, w)
                    lat.append(time.perf_counter() - t)
                lat_table[f"{mode}_{label}"] = percentiles(lat)
        # the same queries straight to the engine without payload: what fetching payload (text) costs
        from querywise.index.engine import EngineQuery

        s_ = index.settings.index
        for mode in MODES:
            lat = []
            for i in range(nq):
                q = EngineQuery(mode=mode, limit=K, dense=dense[i], sparse=sparse[i], depth=s_.depth, rrf_k=s_.rrf_k,
                                hnsw_ef=max(s_.hnsw_ef, K), with_payload=False)
                t = time.perf_counter()
                index.engine.query(q)
                lat.append(time.perf_counter() - t)
            lat_table[f"{mode}_none_engine_no_payload"] = percentiles(lat)
        res["latency"] = lat_table
        res["latency_note"] = (
            "index.query(k=10) with precomputed query vectors, payload (text) returned; BM25 query analysis "
            "(query_analysis_ms) and query embedding (query_embedding in scale.json) come on top"
        )
    res["peak_rss_search_mib"] = peak_rss_mib()
    res["load_avg_1min_start_end"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    res["rss_before_open_mib"] = rss0
    index.close()
    out.write_text(json.dumps(res))


# --------------------------------------------------------------------------- parent


def _child(args: list[str], out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.retrieval.scale", *args, "--out", str(out)]
    log("$ " + " ".join(cmd[1:]))
    subprocess.run(cmd, check=True, cwd=ROOT)
    return json.loads(out.read_text())


def _build(n: int, flags: list[str], out: Path, segment_chunks: int | None) -> dict[str, Any]:
    """One build in a child process, its vectors in the library's embedding cache beforehand."""
    from bench.retrieval.synthetic_corpus import cached_synth_embedder

    cached_synth_embedder(n).close()  # filled here once, not in the measured process
    segments = [] if segment_chunks is None else ["--segment-chunks", str(segment_chunks)]
    return _child(["--build", str(n), *flags, *segments], out)


def query_embedding_timing() -> dict[str, Any]:
    """Embed the 200 queries one at a time with the real model (what a search pays once per query)."""
    from bench.retrieval.synthetic_corpus import query_texts, real_embedder

    texts = query_texts()
    t = time.perf_counter()
    emb = real_embedder()
    load_s = time.perf_counter() - t
    single = latency(lambda q: emb.embed([q]), texts, warm=5)
    return {"model_id": emb.model_id, "model_load_s": round(load_s, 2), "single_query": single}


def filtered_options(search: dict[str, Any], ef_row: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(filtered_search mode, filtered recall@10, filtered p95 ms) a build offers at one ef: its own
    walk (graph or ACORN) and, on any build, the exact scan of the matches (recall 1 by definition)."""
    walk = search["filtered_search"]
    return [(walk, ef_row["recall@10_filter"], ef_row["dense_filter"]["p95_ms"]),
            ("exact", 1.0, search["exact_dense_latency"]["filter"]["p95_ms"])]


def pick(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Cheapest build (time) with an ef (`hnsw_ef`, the smallest) whose unfiltered recall meets
    RECALL_MIN and a filtered mode and ef (`filtered_search`, `hnsw_ef_filtered`) meeting
    RECALL_MIN_FILTERED within FILTERED_P95_MAX_MS (of those, the one with the lowest p95)."""
    ok = []
    for b in runs:
        rows = b["search"]["ef_sweep"]
        ef = next((r["ef"] for r in rows if r["recall@10_none"] >= RECALL_MIN), None)
        good = [(*o, r["ef"]) for r in rows for o in filtered_options(b["search"], r)
                if o[1] >= RECALL_MIN_FILTERED and o[2] <= FILTERED_P95_MAX_MS]
        filtered = min(good, key=lambda o: (o[2], o[3])) if good else None
        if ef is not None and filtered is not None:
            ok.append((b["build"]["build_s"], b, ef, filtered))
    if not ok:
        return None
    build_s, b, ef, (walk, recall, p95, ef_filtered) = min(ok, key=lambda x: (x[0], x[2]))
    mode, fields = _walk(walk)
    return {"m": b["m"], "ef_construct": b["ef_construct"], "ef": ef, "built_for": b["filtered_search"], "build_s": build_s,
            "filtered_search": mode, "graph_fields": fields, "hnsw_ef_filtered": ef_filtered, "filtered_recall@10": recall, "filtered_p95_ms": p95,
            "segment_chunks": b["build"].get("segment_chunks", 0), "recall": next(r for r in b["search"]["ef_sweep"] if r["ef"] == ef)}


def _spec(text: str) -> tuple[int, int, str]:
    """"m:ef_construct[:graph|graph=FIELD+FIELD|acorn]" (an "exact" build is an "acorn" one: no per-value links)."""
    parts = text.split(":")
    filtered = parts[2] if len(parts) > 2 else "graph"
    return int(parts[0]), int(parts[1]), "acorn" if filtered == "exact" else filtered


def followup(a: argparse.Namespace, command: str) -> None:
    """A deeper look at one size (e.g. a wider ef sweep) with --hnsw m:ef_construct:ef[:graph|graph=FIELD+FIELD|acorn]."""
    started = time.time()
    n = a.followup
    m, efc, ef, filtered = _hnsw(a.hnsw)
    tmp = WORK / "scale-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    flags = ["--m", str(m), "--efc", str(efc), "--filtered-search", filtered]
    b = _build(n, flags, tmp / f"fu-b-{n}.json", a.segment_chunks)
    srch = _child(["--search", str(n), *flags, "--efs", a.efs, "--ef", str(ef), "--latency"], tmp / f"fu-s-{n}.json")
    if not a.keep_indexes:
        shutil.rmtree(index_path(n, m, efc, filtered), ignore_errors=True)
    path = RESULTS / a.results_name
    data = json.loads(path.read_text()) if path.exists() else {}
    machine = data.pop("machine", None)
    from bench.report import machine_info

    info = machine_info()
    info["command"] = command
    data.setdefault("followups", []).append({"n": n, "m": m, "ef_construct": efc, "ef": ef, "filtered_search": filtered,
                                             "machine": info, "build": b, "search": srch, "wall_s": round(time.time() - started, 1)})
    # The builds compared at this size (graph links or none): what `[index]` defaults should be.
    same = [f for f in data["followups"] if f["n"] == n and "filtered_search" in f]
    data["followup_pick"] = {"n": n, "compared": [(f["m"], f["ef_construct"], f["filtered_search"], f["build"].get("segment_chunks", 0))
                                                  for f in same],
                             "pick": pick(same)}
    path.write_text(json.dumps({"machine": machine or info, **data}, indent=2, ensure_ascii=False) + "\n")
    log(f"appended a follow-up at n={n} to {path}")


def _hnsw(text: str | None) -> tuple[int, int, int, str]:
    parts = (text or ":".join(map(str, LIB_DEFAULT))).split(":")
    return int(parts[0]), int(parts[1]), int(parts[2]), parts[3] if len(parts) > 3 else "graph"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,400000", help="comma-separated chunk counts")
    ap.add_argument("--tune-size", type=int, default=100_000, help="size of the HNSW tuning sweep (0: skip)")
    ap.add_argument("--tune-builds", default=",".join(TUNE_BUILDS), help="m:ef_construct:graph|acorn,...")
    ap.add_argument("--efs", default=",".join(map(str, TUNE_EFS)), help="search ef values swept at the tuning size")
    ap.add_argument("--hnsw", default=None, help="m:ef_construct:ef[:graph|acorn] for the size runs (default: the "
                    "tuning pick, else the library default)")
    ap.add_argument("--followup", type=int, default=0,
                    help="one more build+search at this size with --hnsw and --efs; appended to "
                    "'followups' in the existing results file")
    ap.add_argument("--segment-chunks", type=int, default=None, help="[index] segment_chunks of the builds (default: the library's)")
    ap.add_argument("--keep-indexes", action="store_true", help="keep index folders in bench/work/indexes")
    ap.add_argument("--command", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--results-name", default="scale.json", help="file name in bench/results/")
    # child modes
    ap.add_argument("--build", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--search", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--m", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--efc", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--ef", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--latency", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--filtered-search", default="graph", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.build:
        do_build(a.build, a.m, a.efc, a.out, a.filtered_search, a.segment_chunks)
        return
    if a.search:
        do_search(a.search, a.m, a.efc, [int(x) for x in a.efs.split(",")], a.ef, a.latency, a.out, a.filtered_search)
        return

    command = a.command or "python -m bench.retrieval.scale " + " ".join(sys.argv[1:])
    if a.followup:
        followup(a, command)
        return
    started = time.time()
    tmp = WORK / "scale-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    from bench.retrieval.synthetic_corpus import describe, query_vectors, sentence_vectors

    sentence_vectors()
    query_vectors()
    result: dict[str, Any] = {"synthetic_corpus": describe(), "k": K,
                              "recall_thresholds": {"unfiltered": RECALL_MIN, "filtered": RECALL_MIN_FILTERED,
                                                    "filtered_p95_max_ms": FILTERED_P95_MAX_MS}}
    out_name = a.results_name

    def save() -> None:
        result["wall_s"] = round(time.time() - started, 1)
        write_json(out_name, result, command)

    result["query_embedding"] = query_embedding_timing()
    log(f"query embedding: {result['query_embedding']}")

    chosen = None
    if a.tune_size:
        tune: list[dict[str, Any]] = []
        for spec in a.tune_builds.split(","):
            m, efc, filtered = _spec(spec)
            flags = ["--m", str(m), "--efc", str(efc), "--filtered-search", filtered]
            b = _build(a.tune_size, flags, tmp / f"b-{m}-{efc}-{filtered}.json", a.segment_chunks)
            s = _child(["--search", str(a.tune_size), *flags, "--efs", a.efs, "--ef", str(LIB_DEFAULT[2])],
                       tmp / f"s-{m}-{efc}-{filtered}.json")
            tune.append({"m": m, "ef_construct": efc, "filtered_search": filtered, "build": b, "search": s})
            result["hnsw_tuning"] = {"n": a.tune_size, "runs": tune}
            save()
        chosen = pick(tune)
        for r in tune:  # keep only the picked build: the size run at the tuning size reuses it
            key = (r["m"], r["ef_construct"], r["filtered_search"])
            if not a.keep_indexes and not (chosen and key == (chosen["m"], chosen["ef_construct"], chosen["built_for"])):
                shutil.rmtree(index_path(a.tune_size, *key), ignore_errors=True)
        result["hnsw_tuning"]["pick"] = chosen
        save()
        log(f"HNSW pick: {chosen}")
    if a.hnsw:
        m, efc, ef, filtered = _hnsw(a.hnsw)
    elif chosen:
        m, efc, ef, filtered = chosen["m"], chosen["ef_construct"], chosen["ef"], chosen["built_for"]
    else:
        m, efc, ef, filtered = _hnsw(None)
    result["hnsw_used"] = {"m": m, "ef_construct": efc, "ef": ef, "filtered_search_build": filtered}
    result["sizes"] = []
    flags = ["--m", str(m), "--efc", str(efc), "--filtered-search", filtered]
    for n in [int(x) for x in a.sizes.split(",") if x]:
        reuse = [r for r in result.get("hnsw_tuning", {}).get("runs", [])
                 if (r["build"]["n"], r["m"], r["ef_construct"], r["filtered_search"]) == (n, m, efc, filtered)
                 and index_path(n, m, efc, filtered).exists()]
        if reuse:
            b = {**reuse[0]["build"], "reused_from": "hnsw_tuning"}
            log(f"n={n}: reusing the tuning build of m={m} ef_construct={efc} {filtered}")
        else:
            b = _build(n, flags, tmp / f"size-b-{n}.json", a.segment_chunks)
        efs = sorted({ef, *(e for e in (ef // 2, ef * 2) if e >= K)})
        s = _child(["--search", str(n), *flags, "--efs", ",".join(map(str, efs)), "--ef", str(ef), "--latency"],
                   tmp / f"size-s-{n}.json")
        result["sizes"].append({"n": n, "build": b, "search": s})
        if not a.keep_indexes and n != 100_000:  # bm25_engines reuses the 100k index
            shutil.rmtree(index_path(n, m, efc, filtered), ignore_errors=True)
        save()
    save()
    log(f"wrote {RESULTS / out_name}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    main()

"""Where a search's time goes: SciFact's test queries through the public API, one at a time.

    python -m bench.retrieval.query_latency [--index DIR] [--n 300] [--against SRC [--before-index DIR]] [--cprofile] [--clock cpu]

The index is SciFact as the README builds it (`querywise index SCIFACT --index DIR --skip-invalid`,
default settings: 10,122 chunks), made once in bench/work/query-latency-scifact unless `--index`
names one. It is opened as a user's code opens it (`Index.open(DIR, settings=...)`) and every test
query is searched once (`search(q, mode="hybrid", k=100)`, the query embedding included: each query
is new to the index's in-memory cache). Each stage of that call is timed where it runs, by timing
proxies put around the objects the index calls (the tokenizer, the ONNX session, the lexicon, the
Qdrant shard, the fusion, the hits' lines of chunks.jsonl and the assembly steps), so the breakdown
is of the real path, not a copy.
`--clock cpu` times them on the searching thread's CPU clock instead of the wall: on a shared
machine the wall is mostly its load, the CPU what each stage costs where it runs (bench/results/
query_latency_cpu.md; ONNX Runtime's second intra-op thread is not in it).

The same folder is opened once per query embedder compared (the default; ONNX Runtime's session as
it was before its threads stopped spinning after each call; one intra-op thread; threads that never
spin), and each query is also embedded alone by fp32 and int8: every query goes through all of them
in an order that rotates query by query, so that load on a shared machine falls on all alike, and
each variant's ranking is compared with the default's.

`--against SRC` also runs the public search of another querywise source tree (say the main
branch's src/) and of this one in two child processes, alternated query by query: the before and
after of a change on the same queries and load, with the ranked ids of both compared; each call
starts once both children are quiet (bench/retrieval/peers' rule). A change to what a build writes
is compared with `--before-index`, a folder SRC's own code built from the same corpus.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import ROOT, WORK, datasets, log, percentiles
from bench.report import load_line, publish

COMMAND = ".venv/bin/python -m bench.retrieval.query_latency"
K = 100
DEFAULT_INDEX = WORK / "query-latency-scifact"
WARM = 5  # queries searched first and not counted (lazy imports, first-call allocations)


class Stopwatch:
    """Seconds per stage of the current search, summed over the calls a stage makes, on `clock`
    (the wall; or `time.thread_time`, the CPU of the thread that searches: load-proof, though it
    leaves out what ONNX Runtime's other intra-op thread spends)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.now: dict[str, float] = defaultdict(float)
        self.clock = clock

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = self.clock()
            try:
                return fn(*args, **kwargs)
            finally:
                self.now[stage] += self.clock() - t0

        return timed

    def take(self) -> dict[str, float]:
        out, self.now = dict(self.now), defaultdict(float)
        return out


class Timed:
    """Stands in for `target`, timing the methods named in `stages` (method -> stage)."""

    def __init__(self, target: Any, watch: Stopwatch, stages: dict[str, str]) -> None:
        self._target, self._watch, self._stages = target, watch, stages

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        return self._watch.wrap(self._stages[name], attr) if name in self._stages else attr


def instrument(index: Any, watch: Stopwatch) -> None:
    """Put timing proxies around what `index.search` calls (timing only: every call goes through)."""
    import querywise.index.engine as engine_module

    outer = index.embedder  # loads the model, as a first search would
    model = getattr(outer, "inner", outer)
    model._tokenizer = Timed(model._tokenizer, watch, {"encode": "embed.tokenize", "encode_batch": "embed.tokenize"})
    model._session = Timed(model._session, watch, {"run": "embed.onnx"})
    model.embed = watch.wrap("embed.model", model.embed)
    if outer is not model:
        outer.embed = watch.wrap("embed", outer.embed)
    index.lexicon.query_vector = watch.wrap("bm25.analysis", index.lexicon.query_vector)
    engine = index.engine
    engine._shard = Timed(engine._shard, watch, {"query": "engine.lists", "query_batch": "engine.lists", "retrieve": "engine.payloads"})
    engine.query = watch.wrap("engine", engine.query)
    gen = index._gen
    if getattr(gen, "lines", None) is not None:  # hits read from chunks.jsonl, not the shard (index.chunk_lines)
        gen.lines = Timed(gen.lines, watch, {"lines": "payloads.lines", "json_array": "payloads.lines"})
    if not hasattr(engine_module.fuse, "__wrapped__"):  # one wrapper for every index: run_query reads it at call time
        timed = watch.wrap("engine.fuse", engine_module.fuse)
        timed.__wrapped__ = engine_module.fuse  # type: ignore[attr-defined]
        engine_module.fuse = timed
    index._run = watch.wrap("run", index._run)


def breakdown(times: dict[str, float], total: float) -> dict[str, float]:
    """Exclusive seconds per stage of one search (each parent minus the children timed inside it)."""
    t = defaultdict(float, times)
    embed = t["embed"] or t["embed.model"]
    return {
        "total": total,
        "embed.tokenize": t["embed.tokenize"],
        "embed.onnx": t["embed.onnx"],
        "embed.pool+wrap": embed - t["embed.tokenize"] - t["embed.onnx"],
        "bm25.analysis": t["bm25.analysis"],
        "engine.lists": t["engine.lists"],
        "engine.fuse": t["engine.fuse"],
        "engine.payloads": t["engine.payloads"],
        "engine.other": t["engine"] - t["engine.lists"] - t["engine.fuse"] - t["engine.payloads"],
        "payloads.lines": t["payloads.lines"],
        "assembly": t["run"] - t["engine"] - t["payloads.lines"],
        "other": total - embed - t["bm25.analysis"] - t["run"],
    }


def ensure_index(path: Path) -> Path:
    """SciFact built by `querywise index` with the default settings (once)."""
    if (path / "CURRENT").is_file():
        return path
    cmd = [sys.executable, "-m", "querywise", "index", str(datasets.SCIFACT), "--index", str(path), "--skip-invalid"]
    log("$ " + " ".join(cmd))
    subprocess.run(cmd, cwd=ROOT, check=True)
    return path


def query_embedders(settings: Any) -> dict[str, Any]:
    """The query embedders compared, each as an index's own (None: the one `Index.open` makes
    from the settings, as a user's code gets it): ONNX Runtime's session options for one short text."""
    from querywise.embed import MemoryCachedEmbedder
    from querywise.embed._onnx import FP32_MODEL_ID, OnnxEmbedder, export_fp32_onnx

    if settings.embedding.kind == "onnx-int8":  # the variants below are fp32 sessions: an int8 index refuses them
        return {"default": None}
    model = export_fp32_onnx(settings.cache_dir / "embeddings" / "models")

    def session(**options: Any) -> Any:
        return MemoryCachedEmbedder(OnnxEmbedder(model, model_id=FP32_MODEL_ID, **options))

    return {
        "default": None,
        "spinning kept after a call": MemoryCachedEmbedder(spinning_kept(OnnxEmbedder(model, model_id=FP32_MODEL_ID), model)),
        "1 thread": session(threads=1),
        "no spinning": session(spinning=False),
    }


def spinning_kept(embedder: Any, model: Any) -> Any:
    """`embedder` with the session querywise had before its threads stopped spinning after each
    call: ONNX Runtime's defaults, all graph optimisations."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    embedder._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    return embedder


def measure(searches: dict[str, Any], embedders: dict[str, Any], watch: Stopwatch, queries: Sequence[str],
            profiler: cProfile.Profile | None) -> tuple[dict[str, list[dict[str, float]]], dict[str, list[float]], dict[str, list[list[str]]], list[float]]:
    """Every query searched once by every index and embedded once by every embedder, in an order
    rotating query by query (so that load falls on all alike); the first `WARM` are not counted."""
    names = [*(("search", n) for n in searches), *(("embed", n) for n in embedders)]
    stages: dict[str, list[dict[str, float]]] = {n: [] for n in searches}
    ranked: dict[str, list[list[str]]] = {n: [] for n in searches}
    seconds: dict[str, list[float]] = {n: [] for n in embedders}
    loads: list[float] = []
    for i, q in enumerate([*queries[:WARM], *queries]):
        counted = i >= WARM
        for kind, name in names[i % len(names):] + names[: i % len(names)]:
            if kind == "embed":
                t0 = watch.clock()
                embedders[name].embed([q])
                if counted:
                    seconds[name].append(watch.clock() - t0)
                continue
            watch.take()
            if profiler is not None and counted:
                profiler.enable()
            t0 = watch.clock()
            hits = searches[name].search(q, mode="hybrid", k=K)
            total = watch.clock() - t0
            if profiler is not None:
                profiler.disable()
            if counted:
                stages[name].append(breakdown(watch.take(), total))
                ranked[name].append([h.id for h in hits])
        if counted and i % 50 == 0:
            loads.append(os.getloadavg()[0])
    return stages, seconds, ranked, loads


def embed_only(settings: Any) -> dict[str, Any]:
    """Embedders timed alone on each query (no search): fp32 and int8 with the default session."""
    from querywise.embed._onnx import OnnxEmbedder

    models = settings.cache_dir / "embeddings" / "models"
    return {"fp32": OnnxEmbedder.fp32(export_dir=models), "int8": OnnxEmbedder.int8(export_dir=models)}


def against(src: Path, index: Path, config: Path | None, queries: Sequence[str], before_index: Path | None = None) -> dict[str, Any]:
    """The public search of `src`'s querywise and of this tree's, alternated query by query in two
    children (bench/retrieval/peers' serving protocol); p50/p95 of each and whether they rank alike.
    `before_index`: the folder `src` searches (one its own code built), when a change is in the build."""
    from bench.retrieval.peers_builders import Worker, interleave

    cases = [argparse.Namespace(id=str(i), message=q) for i, q in enumerate(queries)]
    workers = {}
    for name, tree, folder in (("before", src, before_index or index), ("after", ROOT / "src", index)):
        cmd = [sys.executable, "-m", "bench.retrieval.peers", "--serve", "--system", "querywise", "--index-dir", str(folder)]
        if config is not None:
            cmd += ["--config", str(config)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT)])}
        workers[name] = Worker(name, cmd, env)
    timed = interleave(workers, cases)
    for w in workers.values():
        w.close()
    same = sum(timed.runs["before"][c.id] == timed.runs["after"][c.id] for c in cases)
    before, after = (np.asarray(timed.seconds[n]) for n in ("before", "after"))
    return {"before_src": str(src), "after_src": str(ROOT / "src"), "before_index": str(before_index or index), "after_index": str(index),
            **{n: percentiles(s) for n, s in timed.seconds.items()},
            "paired_ratio": round(float(np.median(after / before)), 3), "queries_ranked_identically": same, "n": len(cases)}


def summary(rows: Sequence[dict[str, float]]) -> dict[str, dict[str, float]]:
    return {stage: percentiles([r[stage] for r in rows]) for stage in rows[0]}


def render(data: dict[str, Any]) -> str:
    """The stages of a search per query embedder, the embedders alone, the before and after."""
    stages = data["search_stages_ms"]
    names = list(stages)
    out = ["# Where a search's time goes", "",
           f"Command: `{data['machine']['command']}`. {load_line(data['machine'])} 1-minute load during the run: "
           f"{', '.join(str(x) for x in data['load_avg_1min'])}.", "",
           f"{data['n_queries']} SciFact test queries, each once, through `Index.open(DIR).search(q, mode=\"hybrid\", k={data['k']})` "
           f"on {data['index']} ({data['n_chunks']:,} chunks, {data['embedder']}), the query embedding included; the query "
           "embedders' searches in an order rotating query by query. Exclusive ms per stage, p50 / p95"
           + (", on the CPU clock of the thread that searches (what ONNX Runtime's second intra-op thread spends is not in it)."
              if data.get("clock") == "cpu" else "."), "",
           "| stage | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for stage in stages["default"]:
        out.append(f"| {stage} | " + " | ".join(f"{stages[n][stage]['p50_ms']:.3f} / {stages[n][stage]['p95_ms']:.3f}" for n in names) + " |")
    out.append("| ranked as default (queries) | " + " | ".join(str(data["ranked_as_default"][n]) for n in names) + " |")
    out += ["", "The query embedding alone (no search), the same queries interleaved, on the same clock: " + "; ".join(
        f"{n} p50 {p['p50_ms']:.3f} ms, p95 {p['p95_ms']:.3f} ms" for n, p in data["query_embedding_ms"].items()) + "."]
    if "against" in data:
        a = data["against"]
        folders = f" on {a['before_index']}, after on {a['after_index']}" if a.get("before_index", a.get("after_index")) != a.get("after_index") else ""
        out += ["", f"Before and after, two processes alternated query by query (`--against {a['before_src']}`; before{folders or ' and after on the same index'}), "
                "each call started once both were quiet (peers' `wait_quiet`): before p50 "
                f"{a['before']['p50_ms']:.3f} ms, p95 {a['before']['p95_ms']:.3f}; after p50 {a['after']['p50_ms']:.3f} ms, p95 "
                f"{a['after']['p95_ms']:.3f}; after over before, the median over queries: {a.get('paired_ratio', float('nan')):.3f}; "
                f"{a['queries_ranked_identically']} of {a['n']} queries ranked identically."]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, help=f"an index folder `querywise index` built (default: SciFact in {DEFAULT_INDEX})")
    ap.add_argument("--config", type=Path, help="the TOML it is opened with (default settings when absent)")
    ap.add_argument("--n", type=int, default=300, help="test queries (SciFact has 300)")
    ap.add_argument("--against", type=Path, help="another querywise src/ to compare the public search with, alternated")
    ap.add_argument("--before-index", type=Path, help="with --against: the index folder that src/ searches (default: --index)")
    ap.add_argument("--cprofile", action="store_true", help="profile the searches (their timings then carry the profiler)")
    ap.add_argument("--results-name", default="query_latency", help="the result files' stem in bench/results")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time the stages on the wall or on the searching thread's CPU (time.thread_time: a busy machine's waits left out)")
    args = ap.parse_args(argv)

    from querywise.config import Settings, load_settings
    from querywise.index import Index

    _, by_id, _ = datasets.scifact_test()
    queries = list(by_id.values())[: args.n]
    path = ensure_index(args.index or DEFAULT_INDEX)
    settings = load_settings(args.config) if args.config else Settings()
    load_before = os.getloadavg()[0]
    watch = Stopwatch(time.thread_time if args.clock == "cpu" else time.perf_counter)
    searches = {name: Index.open(path, settings=settings, embedder=embedder) for name, embedder in query_embedders(settings).items()}
    for index in searches.values():
        instrument(index, watch)
    embedders = embed_only(settings)
    profiler = cProfile.Profile() if args.cprofile else None
    stages, seconds, ranked, loads = measure(searches, embedders, watch, queries, profiler)
    first = next(iter(searches.values()))
    result: dict[str, Any] = {
        "index": str(path), "n_chunks": first.manifest.n_chunks, "embedder": first.manifest.embedder, "k": K, "mode": "hybrid",
        "n_queries": len(queries), "load_avg_1min": [round(load_before, 2), *(round(x, 2) for x in loads)],
        "search_stages_ms": {name: summary(rows) for name, rows in stages.items()},
        "ranked_as_default": {name: sum(a == b for a, b in zip(r, ranked["default"], strict=True)) for name, r in ranked.items()},
        "query_embedding_ms": {name: percentiles(s) for name, s in seconds.items()},
        "cprofile": args.cprofile, "clock": args.clock,
    }
    for index in searches.values():
        index.close()
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        result["cprofile_top"] = out.getvalue().splitlines()[:60]
    if args.against:
        result["against"] = against(args.against, path, args.config, queries, args.before_index)
    names = list(result["search_stages_ms"])
    log(f"{'p50 / p95 ms':18s} " + " | ".join(f"{n[:22]:>22s}" for n in names))
    for stage in result["search_stages_ms"]["default"]:
        log(f"{stage:18s} " + " | ".join(f"{result['search_stages_ms'][n][stage]['p50_ms']:9.3f} {result['search_stages_ms'][n][stage]['p95_ms']:9.3f}   " for n in names))
    log(f"ranked as default: {result['ranked_as_default']}")
    for name, p in result["query_embedding_ms"].items():
        log(f"embed alone, {name:12s} p50 {p['p50_ms']:7.3f}  p95 {p['p95_ms']:7.3f}")
    if "against" in result:
        a = result["against"]
        log(f"before p50 {a['before']['p50_ms']} p95 {a['before']['p95_ms']} / after p50 {a['after']['p50_ms']} p95 {a['after']['p95_ms']};"
            f" identical rankings {a['queries_ranked_identically']}/{a['n']}")
    log(f"load {result['load_avg_1min']}")
    command = " ".join([COMMAND, *(argv if argv is not None else sys.argv[1:])])
    log(f"wrote {publish(args.results_name, result, command=command, render=render)}")


if __name__ == "__main__":
    main()

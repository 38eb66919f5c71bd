"""A search right after other work (caches evicted, threads asleep) against back to back, phase by phase (#39).

    python -m bench.retrieval.query_cold --index DIR --config TOML [--between torch|numpy|sleep] [--sleep-ms 0] [--n 300]
                                        [--variants default,2-threads] [--results-name query_cold]

bench/retrieval/peers times each of querywise's calls right after three torch-based peers ran the
same query in their own processes and went quiet (`peers_builders.wait_quiet`): our process has
slept meanwhile, its caches hold the peers' data and its ONNX Runtime threads are parked. Back to
back on a quiet machine the same index searched in 3.06 ms; in the peers' run, 7.7 ms.

Here every SciFact test query is searched through the public API (`Index.open(DIR,
settings=load_settings(TOML)).search(q, mode="hybrid", k=100)`, its query embedding included: the
in-memory query cache is emptied before each call) twice in a row per query embedder variant:
*cold*, right after `--between` ran (torch: the query embedded by sentence-transformers on torch
three times in another process, as the three torch peers do, then peers' wait until quiet;
numpy: another process reads and writes ~200 MB then goes quiet; sleep: only `--sleep-ms`), then
*warm*, at once. The variants (the index's own embedder and the same int8 model with other ONNX
Runtime session options) rotate query by query, so load falls on all alike; each variant's hits
(ids and scores) are compared with the default's. Each call is timed phase by phase with
bench/retrieval/query_latency's proxies (wall), and on the process's CPU clock (both ONNX threads).

Writes bench/results/<results-name>.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import datasets, log, percentiles
from bench.report import load_line, publish
from bench.retrieval.interference import LineChild
from bench.retrieval.peers_builders import wait_quiet
from bench.retrieval.query_latency import K, Stopwatch, breakdown, instrument

COMMAND = ".venv/bin/python -m bench.retrieval.query_cold"
WARM = 5  # queries searched first and not counted
PEERS = 3  # torch-based peers whose calls run before each of ours in bench/retrieval/peers
NUMPY_MB = 200


def disturber(kind: str) -> LineChild:
    """A child process that, for each line it is sent, does `kind`'s work (torch: embed the text
    `PEERS` times with sentence-transformers; numpy: read and write `NUMPY_MB` MB), then answers."""
    return LineChild(["-m", "bench.retrieval.query_cold", "--child", kind])


def serve_child(kind: str) -> None:
    """The child's loop (see `disturber`)."""
    work: Callable[[str], Any]
    if kind == "torch":
        from sentence_transformers import SentenceTransformer

        from querywise.embed import model_dir

        model = SentenceTransformer(str(model_dir()), device="cpu")
        model.encode(["warm-up"])

        def work(text: str) -> None:
            for _ in range(PEERS):
                model.encode([text])
    else:
        buf = np.ones(NUMPY_MB * (1 << 20) // 8)

        def work(_: str) -> None:
            buf.__iadd__(1.0)  # read and write every byte: the caches hold this, not the searcher's data
    print("ready", flush=True)
    for line in sys.stdin:
        work(json.loads(line))
        print("ok", flush=True)


def variants(settings: Any, names: Sequence[str]) -> dict[str, Any]:
    """The query embedders compared (None: the index's own, as `Index.open` makes it from the
    settings): the index's model on ONNX Runtime sessions with other options. `threads` caps the
    texts an int8 embedder runs at once, each on one thread: "2-threads" puts its queries back
    on a session of one intra-op thread per core, as querywise ran them before this benchmark."""
    from querywise.embed import MemoryCachedEmbedder
    from querywise.embed._onnx import OnnxEmbedder

    export = settings.cache_dir / "embeddings" / "models"
    int8 = settings.embedding.kind == "onnx-int8"
    options: dict[str, dict[str, Any]] = {"default": {}, "1-thread": {"threads": 1}, "no-spinning": {"spinning": False},
                                          "2-threads": {}, "2-threads-no-spinning": {"spinning": False}}
    out: dict[str, Any] = {}
    for name in names:
        if name == "default":
            out[name] = None
            continue
        model = OnnxEmbedder.int8(export_dir=export, **options[name]) if int8 else OnnxEmbedder.fp32(export_dir=export, **options[name])
        if name.startswith("2-threads"):
            model._session = model._new_session(None)  # one intra-op thread per core
        out[name] = MemoryCachedEmbedder(model)
    return out


def timed_search(index: Any, watch: Stopwatch, q: str) -> tuple[dict[str, float], list[tuple[str, float]]]:
    """One search with an empty query cache: its phases (wall), its process CPU, its hits."""
    index.embedder.lru.get = lambda texts: [None] * len(texts)  # every call embeds its query, as a new query does
    watch.take()
    cpu0, t0 = time.process_time(), time.perf_counter()
    hits = index.search(q, mode="hybrid", k=K)
    total, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {**breakdown(watch.take(), total), "process_cpu": cpu}, [(h.id, h.score) for h in hits]


def measure(indexes: dict[str, Any], before: Callable[[str], None], queries: Sequence[str]) -> dict[str, Any]:
    """Each query: per variant (rotating), `before`, the cold search, then the warm one at once."""
    watch = Stopwatch()
    for index in indexes.values():
        instrument(index, watch)
    names = list(indexes)
    rows: dict[str, dict[str, list[dict[str, float]]]] = {n: {"cold": [], "warm": []} for n in names}
    hits: dict[str, list[list[tuple[str, float]]]] = {n: [] for n in names}
    loads: list[float] = []
    for i, q in enumerate([*queries[:WARM], *queries]):
        for name in names[i % len(names):] + names[: i % len(names)]:
            before(q)
            cold, found = timed_search(indexes[name], watch, q)
            warm, again = timed_search(indexes[name], watch, q)
            if i >= WARM:
                rows[name]["cold"].append(cold)
                rows[name]["warm"].append(warm)
                hits[name].append(found)
                assert found == again, "the same query searched twice gave other hits"
        if i % 50 == 0:
            loads.append(round(os.getloadavg()[0], 2))
    return {"rows": rows, "hits": hits, "loads": loads}


def summarise(rows: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    """p50/p90/p95 per phase, cold and warm, and the paired cold/warm ratio of the whole call."""
    out: dict[str, Any] = {}
    for when, calls in rows.items():
        out[when] = {stage: {**percentiles([c[stage] for c in calls]),
                             "p90_ms": round(float(np.percentile([c[stage] * 1e3 for c in calls], 90)), 3)} for stage in calls[0]}
    cold, warm = (np.asarray([c["total"] for c in rows[w]]) for w in ("cold", "warm"))
    out["cold_over_warm_paired"] = round(float(np.median(cold / warm)), 3)
    return out


def render(data: dict[str, Any]) -> str:
    names = list(data["variants"])
    stages = list(data["variants"][names[0]]["cold"])
    out = ["# A search after other work (cold) against back to back (warm)", "",
           f"Command: `{data['machine']['command']}`. {load_line(data['machine'])} 1-minute load during the run: "
           f"{', '.join(map(str, data['load_avg_1min']))}.", "",
           f"{data['n_queries']} SciFact test queries through `Index.open(DIR, settings=load_settings(TOML)).search(q, mode=\"hybrid\", "
           f"k={data['k']})` on {data['index']} ({data['embedder']}), the query cache emptied before each call. Cold: right after "
           f"{data['between']}; warm: the same query again at once. Variants rotate query by query: default is the index's own embedder "
           "as the code that ran makes it, the others the same model on another ONNX Runtime session (`variants`; 2-threads: one "
           "intra-op thread per core). ms, p50 / p90 (wall per phase, exclusive; process_cpu: the CPU of all its threads).", ""]
    header = "| phase | " + " | ".join(f"{n} cold | {n} warm" for n in names) + " |"
    out += [header, "|---|" + "---|---|" * len(names)]
    for stage in stages:
        cells = [f"{data['variants'][n][w][stage]['p50_ms']:.3f} / {data['variants'][n][w][stage]['p90_ms']:.3f}"
                 for n in names for w in ("cold", "warm")]
        out.append(f"| {stage} | " + " | ".join(cells) + " |")
    out += ["", "Cold over warm, the median over queries of the same query's ratio: " + "; ".join(
        f"{n} {data['variants'][n]['cold_over_warm_paired']:.2f}" for n in names) + ".",
        "Hits (ids and scores) identical to the default's: " + "; ".join(
        f"{n} {data['same_hits_as_default'][n]} of {data['n_queries']}" for n in names) + "."]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, help="an index folder `querywise index` built (default: query_latency's SciFact)")
    ap.add_argument("--config", type=Path, help="the TOML it is opened with (default settings when absent)")
    ap.add_argument("--n", type=int, default=300, help="test queries (SciFact has 300)")
    ap.add_argument("--between", choices=("torch", "numpy", "sleep"), default="torch", help="what runs before each cold search")
    ap.add_argument("--sleep-ms", type=float, default=0.0, help="then this long a sleep")
    ap.add_argument("--variants", default="default,2-threads", help="query embedders compared, comma separated")
    ap.add_argument("--results-name", default="query_cold", help="the result files' stem in bench/results")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # a disturber's process
    args = ap.parse_args(argv)
    if args.child:
        serve_child(args.child)
        return

    from bench.retrieval.query_latency import DEFAULT_INDEX, ensure_index
    from querywise.config import Settings, load_settings
    from querywise.index import Index

    _, by_id, _ = datasets.scifact_test()
    queries = list(by_id.values())[: args.n]
    path = ensure_index(args.index or DEFAULT_INDEX)
    settings = load_settings(args.config) if args.config else Settings()
    load_before = round(os.getloadavg()[0], 2)
    indexes = {n: Index.open(path, settings=settings, embedder=e) for n, e in variants(settings, args.variants.split(",")).items()}
    child = disturber(args.between) if args.between != "sleep" else None
    pause = args.sleep_ms / 1e3

    def before(q: str) -> None:
        if child is not None:
            child.send(q)
            wait_quiet([child.proc.pid, os.getpid()])  # bench/retrieval/peers' rule between two calls
        if pause:
            time.sleep(pause)

    try:
        got = measure(indexes, before, queries)
    finally:
        if child is not None:
            child.close()
    first = next(iter(indexes.values()))
    between = {"torch": f"the query embedded {PEERS} times by sentence-transformers (torch) in another process, then peers' wait until quiet",
               "numpy": f"another process read and wrote {NUMPY_MB} MB, then peers' wait until quiet", "sleep": "nothing"}[args.between]
    result: dict[str, Any] = {
        "index": str(path), "embedder": first.manifest.embedder, "k": K, "n_queries": len(queries),
        "between": between + (f", then {args.sleep_ms:g} ms of sleep" if pause else ""),
        "load_avg_1min": [load_before, *got["loads"], round(os.getloadavg()[0], 2)],
        "variants": {n: summarise(r) for n, r in got["rows"].items()},
        "same_hits_as_default": {n: sum(a == b for a, b in zip(h, got["hits"]["default"], strict=True)) for n, h in got["hits"].items()},
    }
    for index in indexes.values():
        index.close()
    for name, v in result["variants"].items():
        log(f"{name:22s} cold p50 {v['cold']['total']['p50_ms']:7.3f} p90 {v['cold']['total']['p90_ms']:7.3f} | warm p50 "
            f"{v['warm']['total']['p50_ms']:7.3f} p90 {v['warm']['total']['p90_ms']:7.3f} | onnx cold {v['cold']['embed.onnx']['p50_ms']:.3f} "
            f"warm {v['warm']['embed.onnx']['p50_ms']:.3f} | paired {v['cold_over_warm_paired']} | same hits {result['same_hits_as_default'][name]}")
    log(f"load {result['load_avg_1min']}")
    command = " ".join([COMMAND, *(argv if argv is not None else sys.argv[1:])])
    log(f"wrote {publish(args.results_name, result, command=command, render=render)}")


if __name__ == "__main__":
    main()

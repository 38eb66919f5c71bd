"""Why a search is slower interleaved with the peers than alone, and what its query embedding cannot go under (#39).

    python -m bench.retrieval.query_gap [--index DIR] [--n 300] [--idle-ms 90] [--touch-mb 1024]

bench/retrieval/peers.py measured querywise's public search at p50 14.7 ms interleaved query by
query with LlamaIndex and LangChain, against 8.4 ms alone near idle. Three explanations are told
apart here, on the same queries, with the machine's load stated:

**The floor.** ONNX Runtime's call on one query of n tokens (2 to 128), fp32 and int8, on one
intra-op thread, the lengths alternated, process CPU ms per call (CPU time, not the wall: the
wall of a shared machine is its load). The part that does not grow with n (the intercept of a
line fitted to the medians) is the weights, read from memory once per call whatever the length:
at a query's length the encoder is a matrix-vector product, bound by how fast 6 layers of weights
(fp32 42.5 MB, int8 a quarter) stream through the core.

**The gap.** Every SciFact test query is searched once under each condition through the public API
(`Index.open(DIR).search(q, mode="hybrid", k=100)`, its embedding included: the query cache is
emptied), the conditions in an order rotating query by query:

- back to back: right after the previous search (and the same with a query session of one
  intra-op thread: what the default's second, spinning thread costs in CPU and saves in wall);
- after `idle` ms of sleep: this process idle as it is while the peers take their turn (a core
  that went idle, ONNX Runtime's threads asleep);
- after another process spun `idle` ms on a few bytes: the cores busy, the caches left as they were;
- after another process read and wrote `touch` MB (about `idle` ms or more): the caches and TLB
  evicted, as a peer's model (90 MB of torch weights) and Python vector store evict them;
- served by a child over bench/retrieval/peers' pipe protocol (`peers_builders.Worker`, the child
  timing its own call as peers.py does), with the driver's round trip around it: whether the
  harness itself adds time to what it reports.

For each: the wall ms, the ONNX call's part (a timing proxy on the session, as query_latency's),
the process's CPU ms (the child's read from /proc), p50, and the median over queries of the
condition's wall over the same query's back to back.

Writes bench/results/query_gap.json and .md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from bench import ROOT, datasets, log, percentiles
from bench.report import load_line, publish
from bench.retrieval.peers_builders import Worker, cpu_seconds
from bench.retrieval.query_latency import DEFAULT_INDEX, Stopwatch, breakdown, ensure_index, instrument

COMMAND = ".venv/bin/python -m bench.retrieval.query_gap"
K = 100
WARM = 5
LENGTHS = (2, 8, 16, 32, 64, 128)
FLOOR_ROUNDS = 60
ONE_THREAD = "back to back, one intra-op thread"  # the same search with a session of one thread: its CPU against the default's


class Helper:
    """Another process that, when asked, sleeps, spins or reads and writes a large buffer."""

    def __init__(self, touch_mb: int, idle_s: float) -> None:
        cmd = [sys.executable, "-m", "bench.retrieval.query_gap", "--helper", str(touch_mb), "--idle-ms", str(idle_s * 1e3)]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._pipes()[1].readline()  # "ready": the buffer is allocated and touched once

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        return self.proc.stdin, self.proc.stdout

    def do(self, what: str) -> float:
        """Run `what` ("sleep", "spin" or "touch") in the helper; the seconds it took there."""
        stdin, stdout = self._pipes()
        stdin.write(what + "\n")
        stdin.flush()
        return float(stdout.readline())

    def close(self) -> None:
        self._pipes()[0].close()
        self.proc.wait()


def serve_helper(touch_mb: int, idle_s: float) -> None:
    """The helper's loop: one line in, the seconds its work took out."""
    buf = np.ones(touch_mb * 2**20 // 8, dtype=np.float64)
    print("ready", flush=True)
    for line in sys.stdin:
        t0 = time.perf_counter()
        what = line.strip()
        if what == "touch":
            buf += 1.0  # every cache line read and written: what was cached before is gone
        elif what == "spin":
            while time.perf_counter() - t0 < idle_s:
                pass
        else:
            time.sleep(idle_s)
        print(time.perf_counter() - t0, flush=True)


def floor(n_rounds: int) -> dict[str, Any]:
    """Process CPU ms of one ONNX call per query length, fp32 and int8, one thread, alternated;
    the fitted ms per call that does not grow with the length, and the ms per token."""
    import onnxruntime as ort

    from querywise.config import Settings
    from querywise.embed._onnx import export_fp32_onnx, export_int8_onnx

    models = Settings().cache_dir / "embeddings" / "models"
    out: dict[str, Any] = {}
    rng = np.random.default_rng(0)
    sessions = {}
    for name, path in (("fp32", export_fp32_onnx(models)), ("int8", export_int8_onnx(models))):
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = 1
        sessions[name] = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feeds = {}
    for n in LENGTHS:
        ids = rng.integers(1000, 30000, size=(1, n))
        feeds[n] = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    cpu: dict[tuple[str, int], list[float]] = {(s, n): [] for s in sessions for n in LENGTHS}
    keys = list(cpu)
    for key in keys:
        sessions[key[0]].run(None, feeds[key[1]])
    for i in range(n_rounds):
        for name, n in keys[i % len(keys):] + keys[: i % len(keys)]:
            c0 = time.process_time()
            sessions[name].run(None, feeds[n])
            cpu[(name, n)].append(time.process_time() - c0)
    for name in sessions:
        p50 = [float(np.median(cpu[(name, n)])) * 1e3 for n in LENGTHS]
        slope, intercept = np.polyfit(LENGTHS, p50, 1)
        out[name] = {"cpu_ms_p50": dict(zip(map(str, LENGTHS), (round(x, 3) for x in p50), strict=True)),
                     "fixed_ms": round(float(intercept), 3), "ms_per_token": round(float(slope), 4)}
    return out


def gap(index_dir: Path, queries: Sequence[str], idle_s: float, touch_mb: int) -> dict[str, Any]:
    """Each query searched once per condition, the conditions rotating query by query."""
    from querywise.config import Settings
    from querywise.embed import MemoryCachedEmbedder, OnnxEmbedder, VectorLru
    from querywise.index import Index

    helper = Helper(touch_mb, idle_s)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    child = Worker("child", [sys.executable, "-m", "bench.retrieval.peers", "--serve", "--system", "querywise", "--index-dir", str(index_dir)], env)
    settings = Settings()
    index = Index.open(index_dir, settings=settings)
    embedder = index.embedder
    assert isinstance(embedder, MemoryCachedEmbedder)
    embedder.lru = VectorLru(0)  # every search embeds its query, as a new query does
    one_thread = OnnxEmbedder.fp32(export_dir=settings.cache_dir / "embeddings" / "models", threads=1)
    searches = {"": index, ONE_THREAD: Index.open(index_dir, settings=settings, embedder=MemoryCachedEmbedder(one_thread, cache_size=0))}
    watch = Stopwatch()
    for opened in searches.values():
        instrument(opened, watch)
    before: dict[str, Callable[[], object]] = {
        "back to back": lambda: None,
        f"after {idle_s * 1e3:.0f} ms of sleep": lambda: helper.do("sleep"),
        f"after another process spun {idle_s * 1e3:.0f} ms": lambda: helper.do("spin"),
        f"after another process read and wrote {touch_mb} MB": lambda: helper.do("touch"),
        ONE_THREAD: lambda: None,
    }
    names = [*before, "child over the peers' pipe"]
    wall: dict[str, list[float]] = {n: [] for n in names}
    onnx: dict[str, list[float]] = {n: [] for n in names[:-1]}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    round_trip: list[float] = []
    loads = [round(os.getloadavg()[0], 2)]
    try:
        for i, q in enumerate([*(f"warm-up {q}" for q in queries[:WARM]), *queries]):  # warm-ups new to every cache
            counted = i >= WARM
            for name in names[i % len(names):] + names[: i % len(names)]:
                if name not in before:
                    c0, t0 = cpu_seconds(child.proc.pid), time.perf_counter()
                    _, took = child.search(q)
                    driver, spent = time.perf_counter() - t0, cpu_seconds(child.proc.pid) - c0
                    if counted:
                        wall[name].append(took)
                        cpu[name].append(spent)
                        round_trip.append(driver - took)
                    continue
                before[name]()
                watch.take()
                c0, t0 = time.process_time(), time.perf_counter()
                searches.get(name, index).search(q, mode="hybrid", k=K)
                took, spent = time.perf_counter() - t0, time.process_time() - c0
                if counted:
                    wall[name].append(took)
                    cpu[name].append(spent)
                    onnx[name].append(breakdown(watch.take(), took)["embed.onnx"])
            if counted and i % 50 == 0:
                loads.append(round(os.getloadavg()[0], 2))
    finally:
        helper.close()
        child.close()
        for opened in searches.values():
            opened.close()
    base, base_cpu = np.asarray(wall["back to back"]), np.asarray(cpu["back to back"])
    return {
        "conditions": {n: {"wall": percentiles(wall[n]), "cpu": percentiles(cpu[n]),
                           **({"onnx": percentiles(onnx[n])} if n in onnx else {}),
                           "paired_over_back_to_back": round(float(np.median(np.asarray(wall[n]) / base)), 3),
                           "cpu_paired_over_back_to_back": round(float(np.median(np.asarray(cpu[n]) / base_cpu)), 3)} for n in names},
        "driver_round_trip_minus_child": percentiles(round_trip), "load_avg_1min": loads,
    }


def render(data: dict[str, Any]) -> str:
    f = data["floor"]
    out = ["# Interleaved against alone: what slows a search, and the floor of its query embedding", "",
           f"Command: `{data['machine']['command']}`. {load_line(data['machine'])} 1-minute load during the gap's run: "
           f"{', '.join(map(str, data['gap']['load_avg_1min']))}.", "",
           "## The floor: one ONNX call on one query, by its length", "",
           f"Process CPU ms per call, p50 of {data['floor_rounds']} alternated calls, one intra-op thread (CPU time: the wall of "
           "a shared machine is its load). `fixed` is the intercept of a line fitted to the medians: what a call costs whatever "
           "the length, the encoder's weights streamed from memory once per call.", "",
           "| model | " + " | ".join(f"{n} tokens" for n in LENGTHS) + " | fixed ms | ms per token |",
           "|---|" + "---|" * (len(LENGTHS) + 2)]
    for name, r in f.items():
        out.append(f"| {name} | " + " | ".join(f"{r['cpu_ms_p50'][str(n)]:.2f}" for n in LENGTHS) + f" | {r['fixed_ms']:.2f} | {r['ms_per_token']:.3f} |")
    g = data["gap"]
    out += ["", "## The gap: one search after each condition", "",
            f"{data['n_queries']} SciFact test queries, each searched once per condition through `Index.open(DIR).search(q, "
            f"mode=\"hybrid\", k={data['k']})` on {data['index']} (the query embedding included), the conditions rotating query "
            "by query. Wall and ONNX ms of the call, CPU ms of the process that searched (both ONNX threads), p50; paired: the "
            "median over queries of the condition's wall (CPU) over the same query's back to back. On a busy machine the wall "
            "is mostly waiting for a core; the CPU is what the search itself costs, cold caches included.", "",
            "| before the search | wall p50 | wall p95 | ONNX p50 | CPU p50 | wall paired | CPU paired |", "|---|---|---|---|---|---|---|"]
    for name, c in g["conditions"].items():
        onnx = f"{c['onnx']['p50_ms']:.2f}" if "onnx" in c else "-"
        out.append(f"| {name} | {c['wall']['p50_ms']:.2f} | {c['wall']['p95_ms']:.2f} | {onnx} | {c['cpu']['p50_ms']:.2f} | "
                   f"{c['paired_over_back_to_back']:.2f} | {c.get('cpu_paired_over_back_to_back', float('nan')):.2f} |")
    rt = g["driver_round_trip_minus_child"]
    out += ["", f"The peers' pipe round trip around the child's call (the driver's wall less the child's own timing, not part of "
            f"any figure peers.py reports): p50 {rt['p50_ms']:.3f} ms, p95 {rt['p95_ms']:.3f} ms."]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, help="an index folder `querywise index` built (default: query_latency's SciFact)")
    ap.add_argument("--n", type=int, default=300, help="test queries (SciFact has 300)")
    ap.add_argument("--idle-ms", type=float, default=90.0, help="how long the helper sleeps or spins")
    ap.add_argument("--touch-mb", type=int, default=1024, help="how much the helper reads and writes")
    ap.add_argument("--helper", type=int, help=argparse.SUPPRESS)  # a child: the helper, with this many MB
    args = ap.parse_args(argv)
    if args.helper is not None:
        serve_helper(args.helper, args.idle_ms / 1e3)
        return

    _, by_id, _ = datasets.scifact_test()
    queries = list(by_id.values())[: args.n]
    index_dir = ensure_index(args.index or DEFAULT_INDEX)
    result: dict[str, Any] = {"index": str(index_dir), "k": K, "n_queries": len(queries), "floor_rounds": FLOOR_ROUNDS,
                              "floor": floor(FLOOR_ROUNDS)}
    for name, r in result["floor"].items():
        log(f"floor {name}: {r}")
    result["gap"] = gap(index_dir, queries, args.idle_ms / 1e3, args.touch_mb)
    for name, c in result["gap"]["conditions"].items():
        log(f"{name:50s} wall p50 {c['wall']['p50_ms']:7.2f} cpu p50 {c['cpu']['p50_ms']:7.2f} paired {c['paired_over_back_to_back']:.2f}"
            f" cpu paired {c['cpu_paired_over_back_to_back']:.2f}")
    log(f"round trip {result['gap']['driver_round_trip_minus_child']}; load {result['gap']['load_avg_1min']}")
    command = " ".join([COMMAND, *(argv if argv is not None else sys.argv[1:])])
    log(f"wrote {publish('query_gap', result, command=command, render=render)}")


if __name__ == "__main__":
    main()

"""Why a search is slower interleaved with the peers than alone: a paired experiment (#39).

    python -m bench.retrieval.interference [--index DIR] [--n 300] [--settle-ms 50]

bench/retrieval/peers.py times every system's public call query by query, each system in its own
child, one right after the other. The peers embed with PyTorch, whose intra-op pool is OpenMP
(libgomp): once a parallel region ends, its worker threads keep spinning for a while (libgomp's
GOMP_SPINCOUNT; OMP_WAIT_POLICY=PASSIVE makes them sleep), on cores the next system's call needs.

Here every SciFact test query is searched through querywise's public API
(`Index.open(DIR).search(q, mode="hybrid", k=100)`, its query embedding included: the in-memory
query cache is emptied) once under each condition, the conditions in an order rotating query by
query, so the machine's load falls on all of them alike and each condition is paired with the
others on the same query:

- alone: after `settle` ms of idle (whatever ran before has stopped);
- back to back: right after the previous search (bench/retrieval/query_latency's loop);
- after the same query embedded by sentence-transformers on torch in this process (what a user
  who also runs a torch model pays), then the same with a `gc.collect()`, a 5 ms sleep or `settle`
  ms of sleep in between;
- after the same query embedded in another process (peers.py's layout): torch's defaults, torch
  with OMP_WAIT_POLICY=PASSIVE, torch with one thread, and the default again with `settle` ms in
  between, and the default until no thread of it runs (`peers_builders.wait_quiet`, the rule
  bench/retrieval/peers now keeps between two calls). For each, the CPU time that process burns
  in the `settle` ms after it answered (/proc/PID/task/*/schedstat) says whether its threads
  still spin.

Writes bench/results/interference.json and .md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from bench import ROOT, datasets, log, percentiles
from bench.report import load_line, publish
from bench.retrieval.peers_builders import cpu_seconds, wait_quiet

COMMAND = ".venv/bin/python -m bench.retrieval.interference"
K = 100
WARM = 5


class LineChild:
    """A child process (`python ARGS...`) that does its work for each JSON line it is sent, then
    answers one line (it prints "ready" once first): the other process of these benchmarks."""

    def __init__(self, args: Sequence[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, env={**os.environ, **(env or {})},
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._pipes()[1].readline()  # "ready"

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        return self.proc.stdin, self.proc.stdout

    def send(self, text: str) -> None:
        stdin, stdout = self._pipes()
        stdin.write(json.dumps(text) + "\n")
        stdin.flush()
        stdout.readline()

    def close(self) -> None:
        self._pipes()[0].close()
        self.proc.wait()


def Encoder(env: dict[str, str]) -> LineChild:  # noqa: N802 (reads as the class it was)
    """A child process embedding each query it is sent with sentence-transformers on torch."""
    return LineChild(["-m", "bench.retrieval.interference", "--encoder"], env)


def serve_encoder() -> None:
    """The child's loop: load the packaged model in sentence-transformers, embed each line."""
    from sentence_transformers import SentenceTransformer

    from querywise.embed import model_dir

    if os.environ.get("INTERFERENCE_TORCH_THREADS"):
        import torch

        torch.set_num_threads(int(os.environ["INTERFERENCE_TORCH_THREADS"]))
    model = SentenceTransformer(str(model_dir()), device="cpu")
    model.encode(["warm-up"])
    print("ready", flush=True)
    for line in sys.stdin:
        model.encode([json.loads(line)])
        print("ok", flush=True)


def conditions(settle: float, here: Any, children: dict[str, LineChild]) -> dict[str, Callable[[str], None]]:
    """What runs before a condition's search (given its query)."""

    def then(*steps: Callable[[str], None]) -> Callable[[str], None]:
        def run(q: str) -> None:
            for step in steps:
                step(q)

        return run

    def sleep(seconds: float) -> Callable[[str], None]:
        return lambda _: time.sleep(seconds)

    def encode_here(q: str) -> None:
        here.encode([q])

    def collect(_: str) -> None:
        gc.collect()

    out: dict[str, Callable[[str], None]] = {
        "alone": sleep(settle),
        "back to back": lambda _: None,
        "after torch, same process": encode_here,
        "after torch, same process, gc.collect()": then(encode_here, collect),
        "after torch, same process, 5 ms sleep": then(encode_here, sleep(0.005)),
        f"after torch, same process, {settle * 1e3:.0f} ms sleep": then(encode_here, sleep(settle)),
    }
    for name, child in children.items():
        out[f"after torch, other process ({name})"] = child.send
    if "default" in children:
        default = children["default"]

        def quiet(_: str) -> None:  # bench/retrieval/peers' rule between two calls
            wait_quiet([default.proc.pid])

        out[f"after torch, other process (default), {settle * 1e3:.0f} ms sleep"] = then(default.send, sleep(settle))
        out["after torch, other process (default), until quiet"] = then(default.send, quiet)
    return out


def spin_after(children: dict[str, LineChild], queries: Sequence[str], settle: float) -> dict[str, dict[str, float]]:
    """CPU ms each child burns in the `settle` seconds after answering a query (its threads spinning)."""
    out: dict[str, dict[str, float]] = {}
    for name, child in children.items():
        burnt = []
        for q in queries:
            child.send(q)
            before = cpu_seconds(child.proc.pid)
            time.sleep(settle)
            burnt.append(cpu_seconds(child.proc.pid) - before)
        out[name] = percentiles(burnt)
    return out


def measure(index: Any, before: dict[str, Callable[[str], None]], queries: Sequence[str]) -> tuple[dict[str, list[float]], list[float]]:
    """Each query searched once per condition, the conditions rotating query by query."""
    names = list(before)
    seconds: dict[str, list[float]] = {n: [] for n in names}
    loads: list[float] = []
    for i, q in enumerate([*queries[:WARM], *queries]):
        for name in names[i % len(names):] + names[: i % len(names)]:
            before[name](q)
            t0 = time.perf_counter()
            index.search(q, mode="hybrid", k=K)
            took = time.perf_counter() - t0
            if i >= WARM:
                seconds[name].append(took)
        if i % 50 == 0:
            loads.append(round(os.getloadavg()[0], 2))
    return seconds, loads


def render(data: dict[str, Any]) -> str:
    rows = data["search_ms"]
    alone = rows["alone"]["p50_ms"]
    out = ["# A search interleaved with torch: what slows it", "",
           f"Command: `{data['machine']['command']}`. {load_line(data['machine'])} 1-minute load during the run: "
           f"{', '.join(map(str, data['load_avg_1min']))}. torch {data['torch']} ({data['torch_parallel']}).", "",
           f"{data['n_queries']} SciFact test queries, each searched once per condition through `Index.open(DIR).search(q, "
           f"mode=\"hybrid\", k={data['k']})` on {data['index']} (the query embedding included), the conditions rotating query by "
           "query. The paired ratio is the median over queries of this condition's time over the same query's time alone.", "",
           "| before the search | p50 ms | p95 ms | p50 / alone | paired median ratio |", "|---|---|---|---|---|"]
    for name, p in rows.items():
        out.append(f"| {name} | {p['p50_ms']:.2f} | {p['p95_ms']:.2f} | {p['p50_ms'] / alone:.2f} | {data['paired_ratio'][name]:.2f} |")
    out += ["", f"CPU ms a torch process burns in the {data['settle_ms']} ms after it answered a query (its threads still spinning), "
            f"{data['spin_queries']} queries:", "", "| torch process | p50 | p95 |", "|---|---|---|",
            *(f"| {n} | {p['p50_ms']:.1f} | {p['p95_ms']:.1f} |" for n, p in data["cpu_after_answer_ms"].items())]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, help="an index folder `querywise index` built (default: query_latency's SciFact)")
    ap.add_argument("--n", type=int, default=300, help="test queries (SciFact has 300)")
    ap.add_argument("--settle-ms", type=float, default=50.0, help="the idle time that counts as alone")
    ap.add_argument("--encoder", action="store_true", help=argparse.SUPPRESS)  # a child: torch embeds what it is sent
    args = ap.parse_args(argv)
    if args.encoder:
        serve_encoder()
        return

    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from bench.retrieval.query_latency import DEFAULT_INDEX, ensure_index
    from querywise.embed import MemoryCachedEmbedder, VectorLru, model_dir
    from querywise.index import Index

    _, by_id, _ = datasets.scifact_test()
    queries = list(by_id.values())[: args.n]
    settle = args.settle_ms / 1e3
    load_before = round(os.getloadavg()[0], 2)
    index = Index.open(ensure_index(args.index or DEFAULT_INDEX))
    embedder = index.embedder
    assert isinstance(embedder, MemoryCachedEmbedder)
    embedder.lru = VectorLru(0)  # every search embeds its query, as a new query does
    here = SentenceTransformer(str(model_dir()), device="cpu")
    here.encode(["warm-up"])
    children = {"default": Encoder({}), "OMP_WAIT_POLICY=PASSIVE": Encoder({"OMP_WAIT_POLICY": "PASSIVE"}),
                "1 thread": Encoder({"INTERFERENCE_TORCH_THREADS": "1"})}
    try:
        seconds, loads = measure(index, conditions(settle, here, children), queries)
        spin = spin_after(children, queries[:50], settle)
    finally:
        for child in children.values():
            child.close()
        index.close()
    alone = np.asarray(seconds["alone"])
    result = {
        "index": str(index.root), "k": K, "n_queries": len(queries), "settle_ms": args.settle_ms,
        "torch": torch.__version__, "torch_parallel": f"ATen backend OpenMP, {torch.get_num_threads()} threads",
        "load_avg_1min": [load_before, *loads],
        "search_ms": {n: percentiles(s) for n, s in seconds.items()},
        "paired_ratio": {n: round(float(np.median(np.asarray(s) / alone)), 3) for n, s in seconds.items()},
        "spin_queries": min(50, len(queries)), "cpu_after_answer_ms": spin,
    }
    for name, p in result["search_ms"].items():
        log(f"{name:55s} p50 {p['p50_ms']:7.2f}  p95 {p['p95_ms']:7.2f}  paired {result['paired_ratio'][name]:.2f}")
    log(f"cpu after answer: {spin}; load {result['load_avg_1min']}")
    command = " ".join([COMMAND, *(argv if argv is not None else sys.argv[1:])])
    log(f"wrote {publish('interference', result, command=command, render=render)}")


if __name__ == "__main__":
    main()

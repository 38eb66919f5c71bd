"""Query embeddings under concurrency: the model called per request vs `BatchingEmbedder`.

    .venv/bin/python -m bench.service.embed_batching

C client threads each embed distinct short queries (one text per call, as a plan does) for a
fixed number of calls; reported: throughput and per-call latency p50 / p95, for the packaged
model (ONNX fp32) called directly from every thread and through the batching thread, and the
mean batch size it formed. Writes bench/results/embed_batching.json and .md.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from bench import log, percentiles
from bench.report import publish

COMMAND = ".venv/bin/python -m bench.service.embed_batching"
CLIENTS = (1, 4, 16, 50)
CALLS_PER_CLIENT = 60


def _run(embedder: Any, clients: int) -> dict[str, Any]:
    latencies: list[float] = []
    lock = threading.Lock()

    def client(c: int) -> None:
        mine = []
        for i in range(CALLS_PER_CLIENT):
            text = f"does the warranty of product {c}-{i} cover water damage after {i % 7} months?"
            t0 = time.perf_counter()
            embedder.embed([text])
            mine.append(time.perf_counter() - t0)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    return {"clients": clients, "calls": len(latencies), "per_s": round(len(latencies) / wall, 1), **percentiles(latencies)}


def main() -> None:
    from querywise.config import Settings
    from querywise.embed import BatchingEmbedder, CachedEmbedder, embedder_for

    e = embedder_for(Settings())
    model = e.inner if isinstance(e, CachedEmbedder) else e
    model.embed(["warm up"])
    rows = []
    for clients in CLIENTS:
        direct = _run(model, clients)
        batcher = BatchingEmbedder(model)
        batched = _run(batcher, clients)
        batched["mean_batch"] = round(batcher.batched / max(1, batcher.calls), 2)
        batcher.close()
        rows.append({"direct": direct, "batched": batched})
        log(str(rows[-1]))
    publish("embed_batching", {"calls_per_client": CALLS_PER_CLIENT, "rows": rows}, command=COMMAND, render=markdown)


def markdown(result: dict[str, Any]) -> str:
    """embed_batching.md from embed_batching.json."""
    lines = ["# Query embeddings under concurrency: direct vs batched", "", f"Command: `{result['machine']['command']}`. The packaged all-MiniLM-L6-v2 "
             f"(ONNX fp32), one short query per call, {result['calls_per_client']} calls per client thread, 2 cores.", "",
             "| clients | direct calls/s | direct p50 / p95 ms | batched calls/s | batched p50 / p95 ms | mean batch |", "|---|---|---|---|---|---|"]
    for r in result["rows"]:
        d, b = r["direct"], r["batched"]
        lines.append(f"| {d['clients']} | {d['per_s']} | {d['p50_ms']} / {d['p95_ms']} | {b['per_s']} | {b['p50_ms']} / {b['p95_ms']} | {b['mean_batch']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

"""Which MatMuls to keep in fp32: candidate int8 recipes ranked cheaply, before any nDCG.

    python -m bench.retrieval.int8_rank [--rounds 3]

Each candidate (`CANDIDATES`: ONNX Runtime's dynamic quantization, weights per channel, some
MatMuls left in fp32 via `nodes_to_exclude`, or another quantizer option) is made in memory from
the fp32 export (`querywise.embed.quantize_int8`) and measured on a fixed sample of the choosing
set, SciFact + Medline (seed 0: 300 SciFact and 200 Medline documents, every test query of both):

- agreement with fp32: the smallest, 1st-percentile and mean cosine between a text's vector and
  fp32's, over the documents and over the queries;
- speed: tokens (truncated at 256) embedded per CPU-second on one thread, 120 other documents of
  the same collections (seed 1), each text alone (as `OnnxEmbedder.int8` runs; before 2026-12-05
  18:30, in batches of 1,024 padded tokens) for fp32 and the candidate, each round
  timing fp32 then the candidate back to back; the median of the rounds' ratios. CPU time on one
  thread, not wall time on two, so the other processes of a shared machine cancel out.

The MatMuls' FLOPs per token (per layer: Q, K, V and the attention output 384 x 384 each, the
feed-forward's two 384 x 1,536) say what each exclusion costs before measuring it: the share of
the encoder's weight FLOPs left in fp32 is the "fp32 share" column. `INT8_VARIANTS["mixed"]` was
chosen by a first run of these candidates on the same sample (the best mean agreement at >= ~1.6x
fp32: it ran 1.57x at load 7-20, the FFN outputs 0-2 plus FFN input 0 1.48x); on a quieter machine
the latter ran 1.62x and agrees marginally better (it was not measured for nDCG). Neither holds
the nDCG@10 bar (bench/results/int8.md), so `onnx-int8` stays per channel.
Nothing is cached on disk: candidates are not embedders a user can pick.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench import DATA, log
from bench.report import publish

COMMAND = "python -m bench.retrieval.int8_rank"
LAYERS = 6


def _layer(i: int, *parts: str) -> tuple[str, ...]:
    return tuple(f"encoder.layer.{i}.{p}" for p in parts)


_ALL = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
        "intermediate.dense", "output.dense")
_FLOPS = {"attention.self.query": 1, "attention.self.key": 1, "attention.self.value": 1, "attention.output.dense": 1,
          "intermediate.dense": 4, "output.dense": 4}  # in units of 384 x 384 multiply-adds per token


def candidates() -> dict[str, Any]:
    """name -> Int8Recipe: the quantizer's per-channel call, then the exclusions measured."""
    from querywise.embed import INT8_VARIANTS, Int8Recipe

    def keep(*names: str) -> Any:
        return Int8Recipe(fp32_matmuls=names)

    def ffn(*layers: int) -> tuple[str, ...]:
        return tuple(n for i in layers for n in _layer(i, "output.dense"))

    return {
        "per-channel": INT8_VARIANTS["per-channel"],
        "FFN output, layer 0": keep(*ffn(0)),
        "FFN output, layers 0-1": keep(*ffn(0, 1)),
        "FFN output, layers 0-2 (mixed)": INT8_VARIANTS["mixed"],
        "FFN output, layers 0-3": keep(*ffn(0, 1, 2, 3)),
        "FFN output, every layer": keep(*ffn(*range(LAYERS))),
        "FFN output 0-2 + FFN input 0": keep(*ffn(0, 1, 2), *_layer(0, "intermediate.dense")),
        "FFN input, every layer": keep(*(n for i in range(LAYERS) for n in _layer(i, "intermediate.dense"))),
        "attention output, every layer": keep(*(n for i in range(LAYERS) for n in _layer(i, "attention.output.dense"))),
        "attention Q and K, every layer": keep(*(n for i in range(LAYERS) for n in _layer(i, "attention.self.query", "attention.self.key"))),
        "first layer": keep(*_layer(0, *_ALL)),
        "last layer": keep(*_layer(LAYERS - 1, *_ALL)),
        "first two layers": keep(*_layer(0, *_ALL), *_layer(1, *_ALL)),
    }


def fp32_share(recipe: Any) -> float:
    """The share of the encoder's weight FLOPs per token that ``recipe`` leaves in fp32."""
    kept = sum(_FLOPS[name.split(".", 3)[3]] for name in recipe.fp32_matmuls)
    return kept / (sum(_FLOPS.values()) * LAYERS)


def _sample() -> tuple[list[str], list[str], list[str]]:
    """Documents and queries for agreement (seed 0), other documents for speed (seed 1)."""
    from bench import datasets
    from querywise.index.points import SearchTexts

    collections = [datasets.scifact("test"), datasets.beir(DATA / "medline", "test")]
    texts = [list(SearchTexts(chunks)) for chunks, _ in collections]
    pick, other = random.Random(0), random.Random(1)
    docs = pick.sample(texts[0], 300) + pick.sample(texts[1], 200)
    chosen = set(docs)
    speed = other.sample([t for t in texts[0] if t not in chosen], 80) + other.sample([t for t in texts[1] if t not in chosen], 40)
    queries = [c.message for _, cases in collections for c in cases]
    return docs, queries, speed


def _agreement(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> dict[str, float]:
    cos = np.sum(a * b, axis=1)
    return {"min": round(float(cos.min()), 4), "p1": round(float(np.percentile(cos, 1)), 4), "mean": round(float(cos.mean()), 5)}


def _cpu_seconds(embedder: Any, texts: Sequence[str]) -> float:
    started = time.process_time()
    embedder.embed(texts)
    return time.process_time() - started


def run(rounds: int) -> dict[str, Any]:
    from querywise.embed import OnnxEmbedder, export_fp32_onnx, quantize_int8

    docs, queries, speed = _sample()
    fp32_model = export_fp32_onnx(None)

    def embedder(model: Any, name: str) -> Any:
        return OnnxEmbedder(model, model_id=name, threads=1, batch_size=1, batch_tokens=0)  # each text alone, as OnnxEmbedder.int8

    fp32 = embedder(fp32_model, "fp32")
    ref_docs, ref_queries = fp32.embed(docs), fp32.embed(queries)
    tokens = sum(min(n, fp32.window or n) for n in fp32.token_counts(speed))
    _cpu_seconds(fp32, speed)  # warm-up
    rows = []
    for name, recipe in candidates().items():
        e = embedder(quantize_int8(fp32_model, recipe), name)
        row: dict[str, Any] = {"candidate": name, "fp32_matmuls": list(recipe.fp32_matmuls),
                               "fp32_share": round(fp32_share(recipe), 3),
                               "documents": _agreement(e.embed(docs), ref_docs), "queries": _agreement(e.embed(queries), ref_queries)}
        ratios, rates = [], []
        for _ in range(rounds):
            base, own = _cpu_seconds(fp32, speed), _cpu_seconds(e, speed)
            ratios.append(base / own)
            rates.append(tokens / own)
        row["speedup"] = round(statistics.median(ratios), 2)
        row["speedups"] = [round(r, 2) for r in ratios]
        row["tokens_per_cpu_s"] = round(statistics.median(rates))
        log(f"{name}: documents {row['documents']}, queries {row['queries']}, {row['speedup']}x fp32")
        rows.append(row)
    return {"sample": {"documents": len(docs), "queries": len(queries), "speed_texts": len(speed), "speed_tokens": tokens,
                       "rounds": rounds}, "rows": rows}


def markdown(result: dict[str, Any]) -> str:
    m, s = result["machine"], result["sample"]
    lines = ["## int8 recipes ranked against fp32 (`bench/retrieval/int8_rank.py`)", "",
             f"Command: `{m['command']}`; {m['date']}, {m['cores']} cores ({m['cpu']}), load average at the end {m['load_avg_at_write']}.", "",
             f"Choosing set SciFact + Medline: {s['documents']} documents and {s['queries']} test queries for agreement; "
             f"speed on {s['speed_texts']} other documents ({s['speed_tokens']:,} tokens), one thread, tokens per CPU-second, "
             f"median of {s['rounds']} rounds each timing fp32 then the candidate on the same texts. "
             "fp32 share: the encoder's weight FLOPs left in fp32.", "",
             "| candidate (MatMuls kept in fp32) | fp32 share | documents: min cosine | 1st pct | mean | queries: min | 1st pct | mean | "
             "speed-up over fp32 | tokens / CPU-s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        d, q = r["documents"], r["queries"]
        lines.append(f"| {r['candidate']} | {r['fp32_share']:.0%} | {d['min']} | {d['p1']} | {d['mean']} | {q['min']} | {q['p1']} | "
                     f"{q['mean']} | {r['speedup']:.2f}x | {r['tokens_per_cpu_s']:,} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="speed rounds per candidate (default 3)")
    args = ap.parse_args(argv)
    publish("int8-rank", run(args.rounds), command=COMMAND + (f" --rounds {args.rounds}" if args.rounds != 3 else ""),
            render=markdown)
    log("wrote bench/results/int8-rank.json and .md")


if __name__ == "__main__":
    main()

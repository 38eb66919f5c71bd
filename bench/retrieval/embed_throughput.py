"""Embedding throughput and agreement of each querywise.embed path, on real SciFact text.

    python -m bench.retrieval.embed_throughput [--kinds torch,onnx,onnx-int8] [--repeats 3]

Also: each path's useful GFLOP/s (the model's FLOPs at the texts' token lengths) as a share of
this machine's measured GEMM peak (`bench/retrieval/machine_peak.py`), so "near the CPU's limit"
is a number; int8 against both the fp32 and the int8 (MatMulInteger) peak.

Texts come from ../shared/data/scifact/corpus.jsonl.gz (read, never copied): (a) 2,000 sentences
of 5-15 words, (b) 500 passages made of the first 100 words of an abstract, (c) 300 whole
abstracts with their title, as an index embeds them (most past the 256-token window); all sampled
with a fixed seed. The ONNX path is also run at each ``--batch-tokens`` cap (0: 64 texts a
batch whatever their length), which is how its default cap was chosen. Each path embeds each set ``--repeats`` times at one batch size after a warm-up,
the paths taking turns; the best run is reported. Agreement is the smallest cosine between a
path's vector and torch fp32's for the same text; "ref" is the largest deviation from the score
figures of ../shared/reference/helpcentre.json (the acceptance test's own case list). Writes
bench/results/embed_throughput.json and prints a markdown table.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import re
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import RESULTS, ROOT, datasets
from bench.report import cpu_name
from bench.retrieval.machine_peak import gemm_rates, model_flops
from querywise.embed import (
    Embedder,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    export_fp32_onnx,
)

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def load_texts(seed: int = 0) -> dict[str, list[str]]:
    """The two workloads, built from SciFact abstracts."""
    sentences: list[str] = []
    passages: list[str] = []
    abstracts: list[str] = []
    for row in datasets.scifact_records():
        text = row["text"]
        abstracts.append(f"{row['title']}\n{text}" if row.get("title") else text)
        words = text.split()
        if len(words) >= 100:
            passages.append(" ".join(words[:100]))
        sentences += [s for s in SENTENCE_END.split(text) if 5 <= len(s.split()) <= 15]
    rng = random.Random(seed)
    return {
        "short (5-15 words)": rng.sample(sorted(set(sentences)), 2000),
        "passage (100 words)": rng.sample(passages, 500),
        "abstract (title + text)": rng.sample(abstracts, 300),
    }


def build(kind: str, batch_size: int, export_dir: Path) -> Embedder:
    if kind == "torch":
        return SentenceTransformerEmbedder(batch_size=batch_size)
    if kind == "onnx":
        return OnnxEmbedder.fp32(export_dir=export_dir, batch_size=batch_size)
    if kind == "onnx-int8":
        return OnnxEmbedder.int8(export_dir=export_dir)  # each text alone: its vectors do not depend on the batch
    raise SystemExit(f"unknown kind {kind!r}")


def reference_deviation(embedder: Embedder, shared: Path) -> dict[str, Any] | None:
    """Largest |score - reference| and how many rank figures differ, over the acceptance cases."""
    path = ROOT / "tests" / "accept" / "test_embeddings_reference.py"
    if not (shared / "reference" / "helpcentre.json").is_file():
        return None
    spec = importlib.util.spec_from_file_location("_accept_reference", path)
    assert spec is not None and spec.loader is not None
    module = sys.modules.setdefault(spec.name, importlib.util.module_from_spec(spec))
    if not hasattr(module, "CASES"):
        spec.loader.exec_module(module)
    world = module.WORLD
    chunk_ids = list(world["chunks"])
    collections = {
        "chunks": (chunk_ids, embedder.embed([world["chunks"][i] for i in chunk_ids])),
        "catalog": (
            [p["name"] for p in world["catalog"]],
            embedder.embed([f"{p['name']}. {p['description']}" for p in world["catalog"]]),
        ),
    }
    state = {"embedder": embedder, **collections}
    worst, worst_case, rank_misses, known_bad = 0.0, "", 0, []
    for case in module.CASES:
        if not isinstance(case, module.Case):  # a figure the test marks as inconsistent data
            known_bad.append(case.values[0].name)
            continue
        ranked = module._ranked(state, case)
        ids = [item for item, _ in ranked]
        cosine = dict(ranked)
        for item, want in (*case.top, *case.scores):
            if abs(cosine[item] - want) > worst:
                worst, worst_case = abs(cosine[item] - want), f"{case.name}: {item}"
        prefix = [item for item, _ in case.top] or list(case.order)
        rank_misses += ids[: len(prefix)] != prefix
        rank_misses += sum(ids.index(item) + 1 != rank for item, rank in case.ranks)
    return {
        "max_abs_score_deviation": round(worst, 5),
        "worst_figure": worst_case,
        "rank_figures_differing": rank_misses,
        "excluded_as_inconsistent_reference": known_bad,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", default="torch,onnx,onnx-int8")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-tokens", default="0,512,1024,2048,4096",
                        help="token caps per batch the ONNX path is also run at")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument(
        "--out", type=Path, default=RESULTS / "embed_throughput.json"
    )
    args = parser.parse_args()

    texts = load_texts()
    import onnxruntime
    import sentence_transformers
    import torch

    load_before = os.getloadavg()
    peaks = [gemm_rates()]  # measured before and after the embedding runs; the best of both kept
    kinds = args.kinds.split(",")
    embedders: dict[str, Embedder] = {}
    rows: dict[str, dict[str, Any]] = {}
    best: dict[tuple[str, str], float] = {}
    vectors: dict[tuple[str, str], np.ndarray] = {}
    with tempfile.TemporaryDirectory() as tmp:
        export_dir = Path(tmp)
        started = time.perf_counter()
        export_fp32_onnx(export_dir)
        export_s = time.perf_counter() - started
        for kind in kinds:
            started = time.perf_counter()
            embedders[kind] = build(kind, args.batch_size, export_dir)
            rows[kind] = {
                "kind": kind,
                "model_id": embedders[kind].model_id,
                "load_s": round(time.perf_counter() - started, 2),
            }
            for batch in texts.values():
                embedders[kind].embed(batch[: args.batch_size])  # warm-up: first-call allocations
        # Paths take turns within each repeat, so a burst of other work on the machine hits
        # them alike instead of whichever happened to run then.
        for _ in range(args.repeats):
            for kind, embedder in embedders.items():
                for workload, batch in texts.items():
                    started = time.perf_counter()
                    vectors[kind, workload] = embedder.embed(batch)
                    seconds = time.perf_counter() - started
                    best[kind, workload] = min(best.get((kind, workload), seconds), seconds)
        peaks.append(gemm_rates())
        peak = {engine: max(p[engine]["peak"] for p in peaks) for engine in peaks[0]}
        fp32_peak = max(v for engine, v in peak.items() if "fp32" in engine)
        counter = next((e for e in embedders.values() if isinstance(e, OnnxEmbedder)), None)
        for kind, row in rows.items():
            for workload, batch in texts.items():
                row[f"{workload} texts/s"] = round(len(batch) / best[kind, workload], 1)
                if counter is not None and counter.window is not None:
                    # Useful work: the model's FLOPs at each text's length after truncation, padding excluded.
                    useful = model_flops([min(n, counter.window) for n in counter.token_counts(batch)]) / best[kind, workload] / 1e9
                    row[f"{workload} useful GFLOP/s"] = round(useful, 1)
                    row[f"{workload} share of fp32 GEMM peak"] = round(useful / fp32_peak, 3)
                    if "int8" in kind:
                        row[f"{workload} share of int8 GEMM peak"] = round(useful / peak["onnxruntime MatMulInteger int8"], 3)
                if ("torch", workload) in vectors:
                    cosines = np.sum(vectors[kind, workload] * vectors["torch", workload], axis=1)
                    row[f"{workload} min cosine vs torch"] = round(float(cosines.min()), 6)
            row["reference"] = reference_deviation(embedders[kind], args.shared)
        sweep = batch_tokens_sweep(texts, args, export_dir) if "onnx" in kinds else []

    result = {
        "command": " ".join(["python", "-m", "bench.retrieval.embed_throughput", *map(shlex.quote, sys.argv[1:])]),
        "machine": {
            "cpu": cpu_name(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(),
            "onnxruntime": onnxruntime.__version__,
            "sentence_transformers": sentence_transformers.__version__,
            "numpy": np.__version__,
            # Other work on the machine skews every number: the 1-minute load before and after
            # (after includes this run's own threads, about 2).
            "load_average_1m": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        },
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "statistic": "best of repeats",
        "texts": {name: len(batch) for name, batch in texts.items()},
        "onnx_export_s": round(export_s, 2),
        # Each engine's GFLOP/s (GOP/s for int8) at each shape, before and after the runs: a share
        # of the machine is the useful rate over the best fp32 peak (numpy or ONNX Runtime).
        "gemm": {"runs": peaks, "peak": peak, "fp32_peak": fp32_peak},
        "rows": list(rows.values()),
        "onnx_batch_tokens": {"default": (OnnxEmbedder.fp32.__kwdefaults__ or {})["batch_tokens"], "sweep": sweep},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(_markdown(result))


def batch_tokens_sweep(texts: dict[str, list[str]], args: argparse.Namespace, export_dir: Path) -> list[dict[str, Any]]:
    """The ONNX path's texts/s at each cap on a batch's padded tokens, best of the repeats."""
    caps = [int(x) for x in args.batch_tokens.split(",") if x.strip()]
    if not caps:
        return []
    embedders = {cap: OnnxEmbedder.fp32(export_dir=export_dir, batch_size=args.batch_size, batch_tokens=cap) for cap in caps}
    best: dict[tuple[int, str], float] = {}
    for _ in range(args.repeats):
        for cap, embedder in embedders.items():  # caps take turns, as the paths do
            for workload, batch in texts.items():
                started = time.perf_counter()
                embedder.embed(batch)
                seconds = time.perf_counter() - started
                best[cap, workload] = min(best.get((cap, workload), seconds), seconds)
    return [{"batch_tokens": cap, **{f"{w} texts/s": round(len(b) / best[cap, w], 1) for w, b in texts.items()}} for cap in caps]


def _markdown(result: dict[str, Any]) -> str:
    names = list(result["texts"])
    header = [
        "path",
        "model_id",
        "load s",
        *(f"{n} /s" for n in names),
        *(f"{n} min cos vs torch" for n in names),
        "ref max abs dev",
        "ref ranks off",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in result["rows"]:
        ref = row["reference"] or {}
        cells = [
            row["kind"],
            row["model_id"],
            str(row["load_s"]),
            *(str(row[f"{n} texts/s"]) for n in names),
            *(str(row.get(f"{n} min cosine vs torch", "-")) for n in names),
            str(ref.get("max_abs_score_deviation", "-")),
            str(ref.get("rank_figures_differing", "-")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    machine = result["machine"]
    load_before, load_after = machine["load_average_1m"]
    lines.append("")
    lines.append(
        f"{machine['cores']} cores ({machine['cpu']}), torch {machine['torch']} "
        f"({machine['torch_threads']} threads), onnxruntime {machine['onnxruntime']}, "
        f"load average {load_before} before, {load_after} after; "
        f"batch {result['batch_size']}, best of {result['repeats']}; "
        f"one-time ONNX export {result['onnx_export_s']} s. `{result['command']}`"
    )
    if gemm := result.get("gemm"):
        peak = gemm["peak"]
        lines += ["", "Efficiency: the model's useful FLOPs (21.2 MFLOP a token + 9,216 x L for attention, L the text's tokens "
                  "after truncation, padding excluded) a second, as a share of this machine's measured GEMM peak: "
                  + ", ".join(f"{engine} {rate} G/s" for engine, rate in peak.items()) + " (best shape, best of the runs before and after).",
                  "", "| path | workload | useful GFLOP/s | share of the fp32 peak | share of the int8 peak |", "|---|---|---|---|---|"]
        for row in result["rows"]:
            for n in names:
                if f"{n} useful GFLOP/s" in row:
                    lines.append(f"| {row['kind']} | {n} | {row[f'{n} useful GFLOP/s']} | {row[f'{n} share of fp32 GEMM peak']:.1%} | "
                                 f"{row[f'{n} share of int8 GEMM peak']:.1%} |" if f"{n} share of int8 GEMM peak" in row else
                                 f"| {row['kind']} | {n} | {row[f'{n} useful GFLOP/s']} | {row[f'{n} share of fp32 GEMM peak']:.1%} | - |")
    if result.get("onnx_batch_tokens", {}).get("sweep"):
        lines += ["", "| ONNX batch_tokens | " + " | ".join(f"{n} /s" for n in names) + " |", "|" + "---|" * (len(names) + 1)]
        for row in result["onnx_batch_tokens"]["sweep"]:
            default = " (default)" if row["batch_tokens"] == result["onnx_batch_tokens"]["default"] else ""
            lines.append(f"| {row['batch_tokens'] or 'none, 64 a batch'}{default} | " + " | ".join(str(row[f"{n} texts/s"]) for n in names) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()

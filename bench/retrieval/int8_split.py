"""Outlier channels split off into fp32 MatMuls for the int8 embedder, chosen on SciFact's train side.

    python -m bench.retrieval.int8_split [--rounds 3] [--sensitivity 150]

Candidates (`querywise.embed.Int8Recipe`, made in memory from the fp32 export by
`querywise.embed.quantize_int8`): "smoothed" as shipped (outlier channels divided into the weights,
ratio 3), the same with the embedding tables left fp32, and `_smooth.split_outliers` (each
MatMul input's channels whose maximum on the package's `CALIBRATION_TEXTS` exceeds ratio x the
median channel's are multiplied in a small fp32 MatMul beside the int8 one; the embedding tables
fp32): on every MatMul, and on the feed-forward outputs only (the input after GELU) with the
other MatMuls smoothed as shipped, at several ratios. Split everywhere, the extra full-size Adds
cost about a quarter of int8's speed (an exploration before this script: ratio 2, 751 channels,
1.57x fp32's speed against smoothed's 2.24x; ratio 3, 143 channels, 1.64x).

Choosing set and measures: `bench.retrieval.int8_smooth`'s (SciFact's train side only, seed 0:
400 train-side abstracts and 400 train claims for agreement with fp32, 80 + 80 others for CPU ms
per text on one thread, each text alone, fp32 timed beside each candidate in every round).

`--sensitivity N`: which MatMul's int8 error costs most. Each of the 36 MatMuls kept in fp32 alone
on top of "smoothed", mean 1 - cosine to fp32 over the first N abstracts and N claims of the same
choosing set (x 1e4): a drop names a MatMul whose quantization error matters.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from bench import log
from bench.report import publish
from bench.retrieval.int8_smooth import _agreement, _sample, speed

COMMAND = "python -m bench.retrieval.int8_split"
SPLIT_RATIOS = (2.0, 3.0, 4.0)
KINDS = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense", "intermediate.dense", "output.dense")


def candidates() -> dict[str, Any]:
    from querywise.embed import INT8_VARIANTS, Int8Recipe
    from querywise.embed._onnx import ffn_output

    smoothed = INT8_VARIANTS["smoothed"]
    out = {"smoothed (as shipped)": smoothed, "smoothed, embedding tables fp32": Int8Recipe(outlier_ratio=smoothed.outlier_ratio, int8_embeddings=False)}
    every = tuple(f"encoder.layer.{i}.{k}" for i in range(6) for k in KINDS)
    out["split everywhere, ratio 3"] = Int8Recipe(outlier_split=3.0, split_matmuls=every, int8_embeddings=False)
    ffn = tuple(ffn_output(i) for i in range(6))
    out.update({f"split the FFN outputs at ratio {r:g}, smooth the rest": replace(smoothed, outlier_split=r, split_matmuls=ffn, int8_embeddings=False)
                for r in SPLIT_RATIOS})
    return out


def _embedder(model: Any, name: str) -> Any:
    from querywise.embed import OnnxEmbedder

    return OnnxEmbedder(model, model_id=name, threads=1, batch_size=1, batch_tokens=0)  # each text alone, one thread


def _error(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> float:
    """Mean 1 - cosine, x 1e4."""
    return round(float(1 - np.sum(a * b, axis=1).mean()) * 1e4, 2)


def sensitivity(fp32_model: Any, s: dict[str, list[str]], n: int) -> list[dict[str, Any]]:
    """Each MatMul kept in fp32 alone on top of "smoothed": its error against fp32's."""
    from querywise.embed import INT8_VARIANTS, Int8Recipe, quantize_int8

    docs, claims = s["documents"][:n], s["claims"][:n]
    fp32 = _embedder(fp32_model, "fp32")
    ref_d, ref_c = fp32.embed(docs), fp32.embed(claims)
    ratio = INT8_VARIANTS["smoothed"].outlier_ratio
    rows = []
    for name in ("(none)", *(f"encoder.layer.{i}.{k}" for i in range(6) for k in KINDS)):
        recipe = Int8Recipe(outlier_ratio=ratio, fp32_matmuls=() if name == "(none)" else (name,))
        e = _embedder(quantize_int8(fp32_model, recipe), name)
        rows.append({"fp32_matmul": name, "documents": _error(e.embed(docs), ref_d), "claims": _error(e.embed(claims), ref_c)})
        log(f"sensitivity {rows[-1]}")
    return rows


def run(rounds: int, n_sensitivity: int) -> dict[str, Any]:
    from querywise.embed import export_fp32_onnx, quantize_int8

    s = _sample()
    fp32_model = export_fp32_onnx(None)
    fp32 = _embedder(fp32_model, "fp32")
    ref = {k: fp32.embed(s[k]) for k in ("documents", "claims")}
    rows = []
    for name, recipe in candidates().items():
        e = _embedder(quantize_int8(fp32_model, recipe), name)
        row: dict[str, Any] = {"candidate": name, "recipe": repr(recipe)}
        for k in ("documents", "claims"):
            vectors = e.embed(s[k])
            row[k] = _agreement(vectors, ref[k]) | {"error_1e4": _error(vectors, ref[k])}
        for k in ("speed_documents", "speed_claims"):
            row[k] = speed(e, fp32, s[k], rounds)
        log(f"{name}: documents {row['documents']}, claims {row['claims']}, {row['speed_documents']}, {row['speed_claims']}")
        rows.append(row)
    out: dict[str, Any] = {"sample": {k: len(v) for k, v in s.items()} | {"rounds": rounds}, "rows": rows}
    if n_sensitivity:
        out["sensitivity"] = {"n": n_sensitivity, "rows": sensitivity(fp32_model, s, n_sensitivity)}
    return out


def markdown(result: dict[str, Any]) -> str:
    m, s = result["machine"], result["sample"]
    lines = ["## Outlier channels split off into fp32 for int8, chosen on SciFact's train side (`bench/retrieval/int8_split.py`)", "",
             f"Command: `{m['command']}`; {m['date']}, {m['cores']} cores ({m['cpu']}), load average at the end {m['load_avg_at_write']}.", "",
             f"Agreement with fp32 over {s['documents']} train-side abstracts and {s['claims']} train claims, each text alone "
             "(error: mean 1 - cosine x 1e4); "
             f"speed on {s['speed_documents']} other abstracts and {s['speed_claims']} other claims, CPU ms per text on one thread, "
             f"median of {s['rounds']} rounds (fp32 timed beside each candidate: compare speed-ups, not ms, across rows).", "",
             "| candidate | abstracts: error | mean cosine | 1st pct | min | claims: error | mean cosine | 1st pct | min | "
             "ms / abstract (fp32) | speed-up | ms / claim (fp32) | speed-up |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        d, q, sd, sq = r["documents"], r["claims"], r["speed_documents"], r["speed_claims"]
        lines.append(f"| {r['candidate']} | {d['error_1e4']} | {d['mean']} | {d['p1']} | {d['min']} | {q['error_1e4']} | {q['mean']} | {q['p1']} | {q['min']} | "
                     f"{sd['ms']} ({sd['fp32_ms']}) | {sd['speedup']:.2f}x | {sq['ms']} ({sq['fp32_ms']}) | {sq['speedup']:.2f}x |")
    if "sensitivity" in result:
        sens = result["sensitivity"]
        lines += ["", f"### Sensitivity: one MatMul kept in fp32 on top of \"smoothed\" (first {sens['n']} abstracts and claims above)", "",
                  "Mean 1 - cosine to fp32 x 1e4; \"(none)\" is smoothed itself. Lower than it: that MatMul's int8 error matters.", "",
                  "| MatMul kept fp32 | abstracts | claims |", "|---|---|---|"]
        lines += [f"| {r['fp32_matmul']} | {r['documents']} | {r['claims']} |" for r in sens["rows"]]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="speed rounds per candidate (default 3)")
    ap.add_argument("--sensitivity", type=int, default=0, metavar="N", help="also keep each MatMul in fp32 alone, on N texts of each kind")
    args = ap.parse_args(argv)
    flags = (f" --rounds {args.rounds}" if args.rounds != 3 else "") + (f" --sensitivity {args.sensitivity}" if args.sensitivity else "")
    publish("int8-split", run(args.rounds, args.sensitivity), command=COMMAND + flags, render=markdown)
    log("wrote bench/results/int8-split.json and .md")


if __name__ == "__main__":
    main()

"""How near the embedder runs to this machine's GEMM peak (#39): per CPU-second, so the load of others does not count.

    python -m bench.retrieval.embed_efficiency [--texts 24] [--repeats 5]

On a shared machine a wall-clock rate is mostly the share of the cores this process got: the 23%
of embed_throughput.json was measured at load 6-8 on 2 cores. Here every rate is work over CPU
time (one thread: that thread's CPU time; the embedder: the process's), best and median of the
repeats, every configuration taking its turn in each repeat:
- the realistic peaks: ONNX Runtime's own MatMul (fp32) and MatMulInteger (int8) at the shapes a
  batch of 1,024 tokens (4 abstracts of 256) runs through all-MiniLM-L6-v2, one thread; the
  model's mix of them (projections, feed-forward, and attention's batched products, which stay
  fp32 in the dynamically quantized model) is the peak the embedder is compared with;
- the embedder on SciFact abstracts (title + text; the set that chose the defaults) and Medline
  abstracts (the set that reports them): the plain graph the embedder runs against the fused one
  (`_graph.bert_onnx(fused=True)`: ONNX Runtime's Attention and BiasGelu), on batches capped at
  1,024, 512 and 256 padded tokens; int8, and int8 with ONNX Runtime's SkipLayerNormalization
  fusion on (the embedder turns it off: `_onnx.UNFUSED`); two threads sleeping, as a build runs;
  useful tokens against the padded tokens each cap runs;
- where an embedding's time goes, by operator type (ONNX Runtime's profiler): both fp32 graphs,
  int8 with and without that fusion.
Writes bench/results/embed_efficiency.json and .md.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import datasets, log
from bench.report import publish
from bench.retrieval.machine_peak import model_flops

COMMAND = "python -m bench.retrieval.embed_efficiency"
TOKENS, SEQ, HEADS, HEAD_DIM, HIDDEN, FFN = 1024, 256, 12, 32, 384, 1536
BATCH = TOKENS // SEQ
SPIN_KEY = "session.intra_op.allow_spinning"


def _session(model: Any, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _matmul(k: int, n: int, int8: bool) -> Any:
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    kind = TensorProto.UINT8 if int8 else TensorProto.FLOAT
    a = helper.make_tensor_value_info("a", kind, ["m", k])
    y = helper.make_tensor_value_info("y", TensorProto.INT32 if int8 else TensorProto.FLOAT, ["m", n])
    weights = rng.integers(-127, 128, (k, n)).astype(np.int8) if int8 else rng.standard_normal((k, n)).astype(np.float32)
    node = helper.make_node("MatMulInteger" if int8 else "MatMul", ["a", "b"], ["y"])
    graph = helper.make_graph([node], "g", [a], [y], initializer=[numpy_helper.from_array(weights, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _dynamic_matmul(k: int, n: int) -> Any:
    """What the int8 embedder runs for a projection: ONNX Runtime's DynamicQuantizeMatMul (fp32 in,
    the activations quantized to uint8 per call, int8 weights scaled per output channel, the bias
    added, fp32 out), the product the quantizer's MatMulInteger + scale + bias fuse into."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["m", k])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["m", n])
    inits = [numpy_helper.from_array(rng.integers(-127, 128, (k, n)).astype(np.int8), "b"),
             numpy_helper.from_array((rng.random(n) * 0.01).astype(np.float32), "scale"),
             numpy_helper.from_array(np.zeros(n, dtype=np.int8), "zero"),
             numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "bias")]
    node = helper.make_node("DynamicQuantizeMatMul", ["a", "b", "scale", "zero", "bias"], ["y"], domain="com.microsoft")
    graph = helper.make_graph([node], "g", [a], [y], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def _batched(shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> Any:
    from onnx import TensorProto, helper

    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, list(shape_a))
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, list(shape_b))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "g", [a, b], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _thread_rate(run: Callable[[], object], flops: float, repeats: int) -> float:
    run()
    best = float("inf")
    for _ in range(repeats):
        started = time.thread_time()
        run()
        best = min(best, time.thread_time() - started)
    return round(flops / best / 1e9, 1)


def _runner(session: Any, feeds: dict[str, np.ndarray]) -> Callable[[], object]:
    return lambda: session.run(None, feeds)


def gemm_peaks(repeats: int) -> dict[str, Any]:
    """G(FL)OP per CPU-second of one thread at each of the model's shapes, and the model's mix."""
    rng = np.random.default_rng(0)
    rates: dict[str, float] = {}
    for int8 in (False, True):
        for k, n in ((HIDDEN, HIDDEN), (HIDDEN, FFN), (FFN, HIDDEN)):
            s = _session(_matmul(k, n, int8), 1)
            x = rng.integers(0, 256, (TOKENS, k)).astype(np.uint8) if int8 else rng.standard_normal((TOKENS, k)).astype(np.float32)
            rates[f"{'int8' if int8 else 'fp32'} {TOKENS}x{k}x{n}"] = _thread_rate(_runner(s, {"a": x}), 2 * TOKENS * k * n, repeats)
    for k, n in ((HIDDEN, HIDDEN), (HIDDEN, FFN), (FFN, HIDDEN)):
        x = rng.standard_normal((TOKENS, k)).astype(np.float32)
        rates[f"int8-dynamic {TOKENS}x{k}x{n}"] = _thread_rate(_runner(_session(_dynamic_matmul(k, n), 1), {"a": x}), 2 * TOKENS * k * n, repeats)
    heads = BATCH * HEADS
    attention = {"QK^T": ((heads, SEQ, HEAD_DIM), (heads, HEAD_DIM, SEQ)), "PV": ((heads, SEQ, SEQ), (heads, SEQ, HEAD_DIM))}
    for name, (sa, sb) in attention.items():
        s = _session(_batched(sa, sb), 1)
        a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
        rates[f"fp32 attention {name}"] = _thread_rate(_runner(s, {"a": a, "b": b}), 2 * heads * SEQ * SEQ * HEAD_DIM, repeats)
    # One layer's work at 1,024 tokens, each part at its own rate: the time the mix needs.
    parts = {"proj": 4 * 2 * TOKENS * HIDDEN * HIDDEN, "ffn": 2 * TOKENS * HIDDEN * FFN, "att": 2 * heads * SEQ * SEQ * HEAD_DIM}
    mix = {}
    for p in ("fp32", "int8", "int8-dynamic"):
        seconds = (parts["proj"] / rates[f"{p} {TOKENS}x{HIDDEN}x{HIDDEN}"] + parts["ffn"] / rates[f"{p} {TOKENS}x{HIDDEN}x{FFN}"]
                   + parts["ffn"] / rates[f"{p} {TOKENS}x{FFN}x{HIDDEN}"] + parts["att"] / rates["fp32 attention QK^T"]
                   + parts["att"] / rates["fp32 attention PV"])
        mix[p] = round((parts["proj"] + 2 * parts["ffn"] + 2 * parts["att"]) / seconds, 1)
    return {"per_shape": rates, "model_mix": mix}


def _embedder(model: Path | bytes, threads: int, spinning: bool, batch_tokens: int, unfused: Sequence[str] | None = None) -> Any:
    """The embedder on ``model``; ``unfused``: the graph optimizers turned off (None: its own, `UNFUSED`)."""
    from querywise.embed import OnnxEmbedder
    from querywise.embed._onnx import UNFUSED

    return OnnxEmbedder(model, model_id="bench", threads=threads, spinning=spinning, batch_tokens=batch_tokens,
                        unfused=UNFUSED if unfused is None else unfused)


def _variants(models: dict[str, Path | bytes]) -> dict[str, Any]:
    """Each configuration measured, by its row's name: (model, threads, spinning, batch tokens[,
    graph optimizers turned off: the embedder's own when not given])."""
    specs: dict[str, tuple[str, int, bool, int] | tuple[str, int, bool, int, tuple[str, ...]]] = {
        "fp32, 1 thread, 1,024-token batches (the former default)": ("fp32", 1, True, 1024),
        "fp32 fused graph, 1 thread, 1,024-token batches": ("fused", 1, True, 1024),
        "fp32, 1 thread, 512-token batches (the default)": ("fp32", 1, True, 512),
        "fp32 fused graph, 1 thread, 512-token batches": ("fused", 1, True, 512),
        "fp32, 1 thread, 256-token batches": ("fp32", 1, True, 256),
        "int8, 1 thread, 1,024-token batches (the default)": ("int8", 1, True, 1024),
        "int8, 1 thread, 1,024-token batches, SkipLayerNormalization fused (before d0ae077)": ("int8", 1, True, 1024, ()),
        "int8, 1 thread, 512-token batches": ("int8", 1, True, 512),
        "fp32, 2 threads sleeping, 512-token batches (a build's)": ("fp32", 2, False, 512),
    }
    return {name: _embedder(models[spec[0]], spec[1], spec[2], spec[3], spec[4] if len(spec) > 4 else None) for name, spec in specs.items()}


def padding(lengths: Sequence[int], caps: Sequence[int]) -> dict[str, Any]:
    """Useful tokens (each text's, truncated) against the tokens run once batches are padded."""
    from querywise.embed._base import length_sorted_batches

    useful = sum(lengths)
    rows = {}
    for cap in caps:
        padded = sum(len(b) * max(lengths[i] for i in b) for b in length_sorted_batches(lengths, 64, cap))
        rows[str(cap)] = {"padded_tokens": padded, "padded_share": round(1 - useful / padded, 4)}
    return {"useful_tokens": useful, "by_batch_tokens": rows}


def build_like_sample(texts: Sequence[str], lengths: Sequence[int], n: int, run: int = 8) -> list[str]:
    """``n`` texts padded as a build pads them: a build embeds thousands of texts a call, so each
    batch holds neighbours in the length order, nearly equal; a few random texts would be
    padded far more. Runs of ``run`` neighbours at evenly spaced places of the length order."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    starts = np.linspace(0, len(order) - run, max(1, n // run)).astype(int)
    return [texts[i] for s in starts for i in order[s : s + run]]


def embedder_rates(texts: Sequence[str], variants: dict[str, Any], repeats: int, n: int) -> dict[str, Any]:
    """Useful GFLOP per CPU-second (and per wall second) of each configuration on ``n`` of
    ``texts``, taking turns; the padding of the whole of ``texts``."""
    first = next(iter(variants.values()))
    every = [min(c, first.window) for c in first.token_counts(texts)]
    texts = build_like_sample(texts, every, n)
    lengths = [min(c, first.window) for c in first.token_counts(texts)]
    flops = model_flops(lengths)
    for e in variants.values():
        e.embed(texts[:4])
    cpu: dict[str, list[float]] = {n: [] for n in variants}
    wall: dict[str, list[float]] = {n: [] for n in variants}
    for _ in range(repeats):
        for name, e in variants.items():
            c, w = time.process_time(), time.perf_counter()
            e.embed(texts)
            cpu[name].append(time.process_time() - c)
            wall[name].append(time.perf_counter() - w)
    return {"texts": len(texts), "useful_gflop": round(flops / 1e9, 2), "padding": padding(lengths, (1024, 512, 256)),
            "padding_whole_set": padding(every, (1024, 512, 256)),
            "rows": {n: {"per_cpu_second": round(flops / min(cpu[n]) / 1e9, 1),
                         "median_per_cpu_second": round(flops / float(np.median(cpu[n])) / 1e9, 1),
                         "per_wall_second": round(flops / min(wall[n]) / 1e9, 1)} for n in variants}}


def operator_profile(texts: Sequence[str], model: Path | bytes, unfused: Sequence[str] | None = None) -> dict[str, float]:
    """Share of the model's kernel time by operator type, on one thread (``unfused``: the
    optimizers turned off; None: the embedder's own)."""
    import onnxruntime as ort

    from querywise.embed._onnx import UNFUSED

    e = _embedder(model, 1, True, 1024)
    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(tmp) / "profile")
        e._session = ort.InferenceSession(model if isinstance(model, bytes) else str(model), options, providers=["CPUExecutionProvider"],
                                          disabled_optimizers=list(UNFUSED if unfused is None else unfused))
        e.embed(texts)
        events = json.loads(Path(e._session.end_profiling()).read_text(encoding="utf-8"))
    by: Counter[str] = Counter()
    for ev in events:
        if ev.get("cat") == "Node" and ev["name"].endswith("_kernel_time"):
            by[ev["args"]["op_name"]] += ev["dur"]
    total = sum(by.values()) or 1
    return {op: round(d / total, 3) for op, d in by.most_common() if d / total >= 0.001}


def _abstracts(records: Iterable[dict[str, Any]], n: int) -> list[str]:
    return [f"{r['title']}\n{r['text']}".strip() for _, r in zip(range(n), records, strict=False)]


def _medline_records() -> Iterator[dict[str, Any]]:
    with open(datasets.DATA / "medline" / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)


def _agreement(texts: Sequence[str], plain: Any, fused: Any) -> dict[str, float]:
    a, b = plain.embed(texts), fused.embed(texts)
    return {"texts": len(texts), "min_cosine": round(float(np.min(np.sum(a * b, axis=1))), 8),
            "max_abs_difference": float(np.max(np.abs(a - b)))}


def run(n_texts: int, repeats: int, n_agreement: int) -> dict[str, Any]:
    import os

    from querywise.config import default_cache_dir
    from querywise.embed import export_fp32_onnx, export_int8_onnx, model_dir
    from querywise.embed._graph import bert_onnx

    load_before = os.getloadavg()[0]
    export_dir = default_cache_dir() / "embeddings" / "models"
    fp32, int8 = export_fp32_onnx(export_dir), export_int8_onnx(export_dir)
    assert isinstance(fp32, Path) and isinstance(int8, Path)
    models: dict[str, Path | bytes] = {"fp32": fp32, "int8": int8, "fused": bert_onnx(model_dir(), fused=True)}
    sets = {"scifact": _abstracts(datasets.scifact_records(), 10**6), "medline": _abstracts(_medline_records(), 10**6)}
    variants = _variants(models)
    plain, fused = variants["fp32, 1 thread, 1,024-token batches (the former default)"], variants["fp32 fused graph, 1 thread, 1,024-token batches"]
    # Mixed lengths: whole abstracts, and their first sentences (short texts, single-text batches).
    whole = _abstracts(datasets.scifact_records(), n_agreement // 2) + _abstracts(_medline_records(), n_agreement // 2)
    agreement = _agreement([*whole, *(t.split(". ")[0] for t in whole)], plain, fused)
    peaks = gemm_peaks(repeats * 5)
    rates = {name: embedder_rates(texts, variants, repeats, n_texts) for name, texts in sets.items()}
    profiled: dict[str, tuple[str, tuple[str, ...] | None]] = {
        "plain fp32": ("fp32", None), "fused fp32": ("fused", None), "int8": ("int8", None),
        "int8 (SkipLayerNormalization fused, before d0ae077)": ("int8", ()),
    }
    profiles = {g: operator_profile(sets["scifact"][:n_texts], models[m], unfused) for g, (m, unfused) in profiled.items()}
    for per_set in rates.values():
        for name, row in per_set["rows"].items():
            for key, suffix in (("per_cpu_second", ""), ("median_per_cpu_second", "_median")):
                for kind in ("fp32", "int8", "int8-dynamic") if name.startswith("int8") else ("fp32",):
                    row[f"share_of_{kind}_mix{suffix}"] = round(row[key] / peaks["model_mix"][kind], 3)
    log(f"peaks {peaks['model_mix']}, embedder {rates}")
    return {"texts": n_texts, "repeats": repeats, "gemm": peaks, "embedder": rates, "fused_agreement": agreement,
            "operator_share": profiles, "load_avg_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


def markdown(result: dict[str, Any]) -> str:
    m, g, a = result["machine"], result["gemm"], result["fused_agreement"]
    lines = ["## Embedding efficiency per CPU-second (`bench/retrieval/embed_efficiency.py`)", "",
             f"Command: `{m['command']}`; {m['date']}, {m['cores']} cores ({m['cpu']}), 1-minute load {result['load_avg_1min'][0]} "
             f"before, {result['load_avg_1min'][1]} after. Useful work: "
             "21.2 MFLOP a token + 9,216 x L for attention, padding excluded; best and median of "
             f"{result['repeats']} turns; rates are work over CPU time, so other processes' load does not count "
             "(their contention for the caches does). SciFact chose the defaults, Medline reports them.", "",
             "Realistic peaks, one thread of ONNX Runtime at the model's shapes (G(FL)OP per CPU-second): "
             + ", ".join(f"{k} {v}" for k, v in g["per_shape"].items())
             + f"; the model's mix: **fp32 {g['model_mix']['fp32']}**, **int8 {g['model_mix']['int8']}** (attention stays fp32)"
             + (f", **int8 with dynamic quantization {g['model_mix']['int8-dynamic']}** (each projection as the embedder runs it: "
                "DynamicQuantizeMatMul, the activations quantized per call)" if "int8-dynamic" in g["model_mix"] else "") + ".", "",
             f"The fused graph against the plain one (the embedder's) on {a['texts']:,} texts (SciFact and Medline abstracts, half whole, half their first sentence): smallest cosine "
             f"{a['min_cosine']}, largest absolute difference {a['max_abs_difference']:.1e}.", ""]
    for name, per_set in result["embedder"].items():
        pad = per_set["padding"]
        whole = per_set["padding_whole_set"]
        lines += [f"### {name}: {per_set['texts']} abstracts, runs of 8 neighbours in the length order ({per_set['useful_gflop']} useful GFLOP, "
                  f"{pad['useful_tokens']:,} useful tokens)", "",
                  "Padded share of the tokens run, this sample / the whole set embedded in one call: "
                  + ", ".join(f"{cap} tokens a batch {r['padded_share']:.1%} / {whole['by_batch_tokens'][cap]['padded_share']:.1%}"
                              for cap, r in pad["by_batch_tokens"].items()) + ".", "",
                  "| embedder | useful GFLOP per CPU-second, best (median) | per wall second | share of the fp32 mix, best (median) | share of the int8 mix "
                  "| share of the int8 mix with dynamic quantization |",
                  "|---|---|---|---|---|---|"]
        for row_name, r in per_set["rows"].items():
            int8, dynamic = ((f"{r[f'share_of_{k}_mix']:.0%} ({r[f'share_of_{k}_mix_median']:.0%})" if f"share_of_{k}_mix" in r else "-")
                             for k in ("int8", "int8-dynamic"))
            lines.append(f"| {row_name} | {r['per_cpu_second']} ({r['median_per_cpu_second']}) | {r['per_wall_second']} | "
                         f"{r['share_of_fp32_mix']:.0%} ({r['share_of_fp32_mix_median']:.0%}) | {int8} | {dynamic} |")
        lines.append("")
    for graph, share in result["operator_share"].items():
        lines.append(f"Where the {graph} graph's time goes (ONNX Runtime's profiler, one thread, SciFact): "
                     + ", ".join(f"{op} {v:.1%}" for op, v in share.items()) + ".")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=48, help="abstracts of each set embedded per turn")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--agreement", type=int, default=600, help="abstracts embedded by both graphs (and as many first sentences)")
    args = ap.parse_args(argv)
    publish("embed_efficiency", run(args.texts, args.repeats, args.agreement), command=COMMAND + (f" --texts {args.texts}" if args.texts != 48 else "") + (f" --repeats {args.repeats}" if args.repeats != 5 else "")
            + (f" --agreement {args.agreement}" if args.agreement != 600 else ""),
            render=markdown)
    log("wrote bench/results/embed_efficiency.json and .md")


if __name__ == "__main__":
    main()

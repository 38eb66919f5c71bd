"""One int8 product for the query, key and value projections (and for W1's two halves)? Cost and vectors (#39).

    python -m bench.retrieval.int8_qkv [--texts 200] [--skip 0] [--medline-texts 100] [--medline-skip 0] [--repeats 3] [--agreement 100] [--out int8_qkv]

The default int8 recipe as the embedder runs it (`_INT8_FORM` 3), and that graph with the chains
of int8 products that share one quantized input merged (`shared_products`: one MatMulInteger over
the weights side by side, one dequantisation, a Split): each layer's query, key and value ("Q, K, V
one product"), the split feed-forward's ordinary and outlier W1 columns ("W1 one product"), both;
and a second session of the embedder's graph (the noise of the cost).

- vectors: ``--agreement`` SciFact abstracts (from ``--skip``) and as many Medline abstracts (from
  ``--medline-skip``), each whole and its first sentence: hidden states bit for bit, each text
  alone (as `OnnxEmbedder.int8` runs a build's texts), and the pooled vectors in padded batches of 8;
- nodes: the unpadded branch as ONNX Runtime runs it, after its fusions; and the kernel time of the
  int8 products and the Splits (ONNX Runtime's profiler, the SciFact texts timed, one pass each);
- cost: CPU seconds of each graph on ``--texts`` SciFact abstracts (from ``--skip``) and
  ``--medline-texts`` Medline abstracts (from ``--medline-skip``), each text alone on a one-thread
  session with the embedder's settings, the graphs taking turns text by text (order rotated every
  text); ratio to the embedder's graph;
- the projections alone: three products, one, one and its Split, on random int8 weights of the
  model's shape ([L, 384] x 3 x [384, 384]), one thread, taking turns 400 times: where the time goes.

Choose on SciFact abstracts 0-199 and Medline 0-99 (the defaults); report on 3000-3199 and Medline
900-999 (``--skip 3000 --medline-skip 900``).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench import datasets, log
from bench.report import publish
from bench.retrieval.embed_efficiency import _abstracts, _medline_records
from bench.retrieval.int8_attention import _ids, agreement, cost
from bench.retrieval.int8_ffn import node_counts
from bench.retrieval.int8_profile import profile

COMMAND = "python -m bench.retrieval.int8_qkv"
SHIPPED, NOISE = "the embedder's graph (_INT8_FORM 3)", "the same, a second session"
QKV_ONE, W1_ONE, BOTH = "Q, K, V one product (+ Split)", "W1 one product (+ Split)", "both"
PRODUCT_OPS = ("MatMulIntegerToFloat", "DynamicQuantizeMatMul", "DynamicQuantizeLinear")
HIDDEN = 384  # all-MiniLM-L6-v2's width: the projections' shape in the isolated timing
# Why no form without the copy was built (the reasons hold for any figures, so they are prose here).
NO_COPY = ("Without the copy: the heads-in-place attention (`_attention`) reads each head at a stride with `FusedMatMul`, "
           "which pairs head i of one operand with head i of the other; in one [seq, 3 x 384] tensor the query's head i "
           "and the key's sit at different offsets of the same rows, so Q·K^T cannot read both from it (nor scores·V "
           "the value). ONNX Runtime's attention kernels that take the three side by side were measured in "
           "int8_attention.md (QAttention, MultiHeadAttention): slower than heads in place, or other vectors. For W1, "
           "the ordinary columns' int8 product must not see the outlier columns (its activation scale is their range), "
           "and the fp32 side product reading all columns would multiply every column in fp32, not the few outlier ones; so the "
           "two halves must be copied apart.")


def _models() -> dict[str, bytes]:
    import onnx

    from bench.retrieval.shared_products import QKV, W1, merge_shared_products
    from querywise.embed import INT8_DEFAULT, INT8_VARIANTS, model_dir
    from querywise.embed._graph import bert_onnx
    from querywise.embed._onnx import _quantize_spec
    from querywise.embed._quantize import quantize

    shipped = quantize(bert_onnx(model_dir()), **_quantize_spec(INT8_VARIANTS[INT8_DEFAULT]))

    def merged(*groups: tuple[str, ...]) -> bytes:
        model = onnx.load_model_from_string(shipped)
        for only in groups:
            if merge_shared_products(model, only) == 0:
                raise RuntimeError(f"nothing merged for {only}: the graph is not the quantizer's form")
        return model.SerializeToString()

    return {SHIPPED: shipped, NOISE: shipped, QKV_ONE: merged(QKV), W1_ONE: merged(W1), BOTH: merged(QKV, W1)}


def padded_agreement(models: dict[str, bytes], texts: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Each model's pooled vectors in padded batches of 8 (the If's masked branch) against the first's."""
    from querywise.embed import OnnxEmbedder

    def vectors(name: str) -> np.ndarray:
        return OnnxEmbedder(models[name], model_id=name, threads=1, batch_size=8, batch_tokens=4096).embed(texts)

    names = list(models)
    base = vectors(names[0])
    out = {}
    for name in names[1:]:
        v = vectors(name)
        out[name] = {"bit_equal": bool(np.array_equal(v, base)), "max_abs": float(np.max(np.abs(v - base)))}
    return out


def _projection_sessions() -> dict[str, Any]:
    """The query, key and value projections of one layer alone, from the float input: three
    products, one, and one then its Split (the quantizer's nodes; ONNX Runtime fuses them)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    parts = [(rng.integers(-127, 128, (HIDDEN, HIDDEN), dtype=np.int8), np.zeros(HIDDEN, np.int8),
              rng.random(HIDDEN, dtype=np.float32) * 0.01, rng.random(HIDDEN, dtype=np.float32)) for _ in range(3)]

    def chain(tag: str, arrays: tuple[np.ndarray, ...], nodes: list[Any], inits: list[Any]) -> str:
        inits += [numpy_helper.from_array(a, f"{kind}{tag}") for kind, a in zip("wzsb", arrays, strict=True)]
        nodes += [helper.make_node("Mul", ["xs", f"s{tag}"], [f"m{tag}"]),
                  helper.make_node("MatMulInteger", ["xq", f"w{tag}", "xz", f"z{tag}"], [f"i{tag}"]),
                  helper.make_node("Cast", [f"i{tag}"], [f"c{tag}"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", [f"c{tag}", f"m{tag}"], [f"r{tag}"]),
                  helper.make_node("Add", [f"r{tag}", f"b{tag}"], [f"y{tag}"])]
        return f"y{tag}"

    def session(kind: str) -> Any:
        nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"])]
        inits: list[Any] = []
        if kind == "three products":
            outs = [chain(str(i), p, nodes, inits) for i, p in enumerate(parts)]
        else:
            outs = [chain("all", tuple(np.concatenate(a, axis=-1) for a in zip(*parts, strict=True)), nodes, inits)]
        if kind == "one product + Split":
            inits.append(numpy_helper.from_array(np.array([HIDDEN] * 3, dtype=np.int64), "widths"))
            nodes.append(helper.make_node("Split", [outs[0], "widths"], ["q", "k", "v"], axis=-1))
            outs = ["q", "k", "v"]
        graph = helper.make_graph(nodes, kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", HIDDEN])],
                                  [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])

    return {kind: session(kind) for kind in ("three products", "one product", "one product + Split")}


def projections(lengths: Sequence[int], calls: int = 400) -> dict[str, dict[str, float]]:
    """Microseconds of CPU per call of each form of the projections, by input length, taking turns."""
    out = {}
    for length in lengths:
        sessions = _projection_sessions()
        x = np.random.default_rng(1).standard_normal((1, length, HIDDEN), dtype=np.float32)
        names = list(sessions)
        spent = dict.fromkeys(names, 0.0)
        for i in range(calls):
            k = i % len(names)
            for name in names[k:] + names[:k]:
                started = time.thread_time()
                sessions[name].run(None, {"x": x})
                spent[name] += time.thread_time() - started
        out[str(length)] = {n: round(s / calls * 1e6, 1) for n, s in spent.items()}
    return out


def run(n_texts: int, skip: int, n_medline: int, medline_skip: int, repeats: int, n_agreement: int) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    models = _models()
    scifact = _abstracts(datasets.scifact_records(), skip + max(n_texts, n_agreement))[skip:]
    medline = _abstracts(_medline_records(), medline_skip + max(n_medline, n_agreement))[medline_skip:]
    whole = scifact[:n_agreement] + medline[:n_agreement]
    texts = [*whole, *(t.split(". ")[0] for t in whole)]
    timed = {n: m for n, m in models.items() if n != NOISE}
    alone = agreement(timed, _ids(texts))
    padded = padded_agreement(timed, texts)
    log(f"alone {alone}, padded {padded}")
    nodes = {n: node_counts(m) for n, m in timed.items()}
    cost_ids = _ids(scifact[:n_texts])
    kernels = {n: profile(m, cost_ids)["by_op_ms"] for n, m in timed.items()}
    costs = {"scifact": cost(models, cost_ids, repeats), "medline": cost(models, _ids(medline[:n_medline]), repeats)}
    log(f"cost {costs}")
    micro = projections((64, 128, 243))
    log(f"projections {micro}")
    return {"texts": n_texts, "skip": skip, "medline_texts": n_medline, "medline_skip": medline_skip, "repeats": repeats,
            "agreement_texts": len(texts), "alone": alone, "padded": padded, "nodes": nodes, "kernel_ms": kernels, "cost": costs, "projections": micro,
            "load_avg_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


def verdict(result: dict[str, Any]) -> str:
    """Which merge pays: at least 1% less CPU on both collections, beyond the second session's distance."""
    ratios = {corpus: result["cost"][corpus]["ratio"] for corpus in ("scifact", "medline")}
    noise = max(abs(1 - ratios[c][NOISE]) for c in ratios)
    kept = [n for n in ratios["scifact"] if n not in (SHIPPED, NOISE) and all(ratios[c][n] <= min(0.99, 1 - noise) for c in ratios)]
    slower = [n for n in ratios["scifact"] if n not in (SHIPPED, NOISE) and all(ratios[c][n] > 1 + noise for c in ratios)]
    why = (" One product saves the other products' own work (each handles the quantized input anew), but the Split copies "
           "the whole product's output again (each row's column blocks into new tensors), and in the graph that copy cost "
           "as much as the product saved or more (kernel table below; alone, last table, the projections save more and the "
           "copy costs less)." if slower else "")
    return (f"**Pays** (≥ 1% less CPU on both, beyond the second session's {noise:.2%}): {', '.join(kept) or 'none'}. "
            f"Slower on both: {', '.join(slower) or 'none'}.{why}\n\n{NO_COPY}")


def markdown(result: dict[str, Any]) -> str:
    m, r = result["machine"], result
    n = r["agreement_texts"] // 4
    lines = ["## One int8 product for Q, K and V, and for W1's two halves (`bench/retrieval/int8_qkv.py`)", "",
             f"Command: `{m['command']}`; {m['date']}, {m['cores']} cores ({m['cpu']}), 1-minute load {r['load_avg_1min'][0]} before, "
             f"{r['load_avg_1min'][1]} after. Cost: SciFact abstracts {r['skip']}-{r['skip'] + r['texts'] - 1} and Medline "
             f"{r['medline_skip']}-{r['medline_skip'] + r['medline_texts'] - 1}, each alone on one thread, the graphs taking turns text by "
             f"text ({r['repeats']} passes); ratio of CPU seconds to the embedder's graph. Vectors: {r['agreement_texts']} texts (SciFact "
             f"{r['skip']}-{r['skip'] + n - 1} and Medline {r['medline_skip']}-{r['medline_skip'] + n - 1}, whole and first sentence), "
             "hidden states each text alone, pooled vectors in padded batches of 8.", "",
             "| graph | CPU ratio, SciFact | CPU s per pass, SciFact | CPU ratio, Medline | CPU s per pass, Medline | alone: hidden states bit for bit (largest difference) | padded batches: bit for bit (largest difference) |",
             "|---|---|---|---|---|---|---|"]
    for name in r["cost"]["scifact"]["ratio"]:
        cells = []
        for corpus in ("scifact", "medline"):
            c = r["cost"][corpus]
            cells += [f"**{c['ratio'][name]}**", str(c["cpu_s"][name])]
        for check in ("alone", "padded"):
            a = r[check].get(name)
            cells.append(f"{a['bit_equal']} ({a.get('max_abs_hidden', a.get('max_abs', 0)):.2g})" if a else "–")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", verdict(r)]
    names = list(r["nodes"])
    lines += ["", "Nodes of the unpadded branch as ONNX Runtime runs it (after its fusions):", "",
              "| operator | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for op in dict.fromkeys(op for name in names for op in r["nodes"][name]):
        lines.append(f"| {op} | " + " | ".join(str(r["nodes"][name].get(op, "")) for name in names) + " |")
    lines += ["", f"Kernel ms of the int8 products and the Splits (ONNX Runtime's profiler, SciFact {r['skip']}-{r['skip'] + r['texts'] - 1}, "
              "one pass each; they move with others' load):", "", "| operator | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for op in (*PRODUCT_OPS, "Split"):
        lines.append(f"| {op} | " + " | ".join(f"{r['kernel_ms'][name].get(op, 0):,.1f}" for name in names) + " |")
    lines.append("| all kernels | " + " | ".join(f"{sum(r['kernel_ms'][name].values()):,.1f}" for name in names) + " |")
    forms = list(next(iter(r["projections"].values())))
    lines += ["", "One layer's Q, K and V projections alone (from the float input; random int8 weights of the model's shape), "
              "µs of CPU per call, one thread, the forms taking turns 400 times:", "",
              "| tokens | " + " | ".join(forms) + " |", "|---|" + "---|" * len(forms)]
    for length, row in r["projections"].items():
        lines.append(f"| {length} | " + " | ".join(str(row[f]) for f in forms) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=200, help="SciFact abstracts timed")
    ap.add_argument("--skip", type=int, default=0, help="start at this SciFact abstract")
    ap.add_argument("--medline-texts", type=int, default=100, help="Medline abstracts timed")
    ap.add_argument("--medline-skip", type=int, default=0, help="start at this Medline abstract")
    ap.add_argument("--repeats", type=int, default=3, help="passes of the turn-by-turn cost")
    ap.add_argument("--agreement", type=int, default=100, help="SciFact and Medline abstracts compared (each whole and first sentence)")
    ap.add_argument("--out", default="int8_qkv", help="result file stem under bench/results")
    args = ap.parse_args(argv)
    command = COMMAND + "".join(f" --{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v != ap.get_default(k))
    publish(args.out, run(args.texts, args.skip, args.medline_texts, args.medline_skip, args.repeats, args.agreement),
            command=command, render=markdown)
    log(f"wrote bench/results/{args.out}.json and .md")


if __name__ == "__main__":
    main()

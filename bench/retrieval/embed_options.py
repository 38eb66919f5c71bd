"""What might lift fp32 embedding per CPU-second (#39: >= 80% of the machine's peak): session options,
IOBinding, batch caps, and each bias Add folded into its projection (Gemm).

    python -m bench.retrieval.embed_options [--repeats 3] [--peak 184.8]

The embedder (`OnnxEmbedder`, one thread, 512-token batches) against the same embedder with one
change each: ONNX Runtime's memory pattern off, its CPU arena off, denormals as zero, outputs
written through IOBinding into a preallocated array, 384-token batches, and the exported graph
rewritten so that each MatMul by a weight followed by the Add of its bias is one Gemm (the 2-D
product with the bias inside the kernel, between two Reshapes). Rates are useful GFLOP
(`machine_peak.model_flops`) per CPU-second on embed_efficiency's samples (48 SciFact and 48 Medline
abstracts, runs of 8 neighbours in the length order), best and median of the turns, every variant
taking its turn in each; shares are of ``--peak`` (embed_efficiency's fp32 model mix, measured
beside it: 0 measures it here). Each variant's smallest cosine to the embedder's vectors says
whether it keeps them. Writes bench/results/embed_options.json and .md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench import datasets, log
from bench.report import publish
from bench.retrieval.embed_efficiency import _abstracts, _medline_records, build_like_sample, gemm_peaks, operator_profile
from bench.retrieval.machine_peak import model_flops

COMMAND = "python -m bench.retrieval.embed_options"


def gemm_graph(data: bytes) -> bytes:
    """``data`` with each MatMul(x, W) whose only consumer is Add(., b) (W, b weights) written as
    Reshape(x, [-1, K]) -> Gemm(., W, b) -> Reshape(., [batch, seq, N])."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load_model_from_string(data)
    graph = model.graph
    weights = {i.name: i for i in graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    pre = [helper.make_node("Shape", ["input_ids"], ["gemm_batch_seq"])]
    constants: list[Any] = []
    widths: set[int] = set()
    nodes: list[Any] = []
    folded: set[int] = set()
    for node in graph.node:
        if id(node) in folded:
            continue
        after = consumers.get(node.output[0], []) if node.op_type == "MatMul" else []
        if node.op_type == "MatMul" and node.input[1] in weights and len(after) == 1 and after[0].op_type == "Add":
            add = after[0]
            bias = [i for i in add.input if i != node.output[0]]
            if len(bias) == 1 and bias[0] in weights and len(weights[bias[0]].dims) == 1:
                k, n = weights[node.input[1]].dims
                for width in (k, n):
                    if width not in widths:
                        widths.add(width)
                        constants += [numpy_helper.from_array(np.array([-1, width], dtype=np.int64), f"gemm_2d_{width}"),
                                      numpy_helper.from_array(np.array([width], dtype=np.int64), f"gemm_w_{width}")]
                        pre.append(helper.make_node("Concat", ["gemm_batch_seq", f"gemm_w_{width}"], [f"gemm_3d_{width}"], axis=0))
                i = len(folded)
                nodes += [helper.make_node("Reshape", [node.input[0], f"gemm_2d_{k}"], [f"gemm_in_{i}"]),
                          helper.make_node("Gemm", [f"gemm_in_{i}", node.input[1], bias[0]], [f"gemm_out_{i}"]),
                          helper.make_node("Reshape", [f"gemm_out_{i}", f"gemm_3d_{n}"], [add.output[0]])]
                folded.add(id(add))
                continue
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(pre + nodes)
    graph.initializer.extend(constants)
    out: bytes = model.SerializeToString()
    return out


def _embedder(model: Path | bytes, *, batch_tokens: int = 512, entries: Sequence[tuple[str, str]] = (),
              mem_pattern: bool = True, arena: bool = True, iobinding: bool = False) -> Any:
    import onnxruntime as ort

    from querywise.embed import OnnxEmbedder
    from querywise.embed._onnx import SPIN_STOP, mean_pool_normalise

    class Variant(OnnxEmbedder):
        def _new_session(self, threads: int | None) -> ort.InferenceSession:
            options = ort.SessionOptions()
            options.log_severity_level = 3
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            if threads is not None:
                options.intra_op_num_threads = threads
            options.enable_mem_pattern = mem_pattern
            options.enable_cpu_mem_arena = arena
            options.add_session_config_entry(SPIN_STOP, "1")
            for key, value in entries:
                options.add_session_config_entry(key, value)
            return ort.InferenceSession(self._source, options, providers=["CPUExecutionProvider"], disabled_optimizers=self._unfused)

        def _run(self, batch: Sequence[npt.NDArray[np.int64]], session: ort.InferenceSession | None = None) -> Any:
            if not iobinding:
                return super()._run(batch, session)
            session = session or self._session
            width = max(len(e) for e in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, tokens in enumerate(batch):
                ids[row, : len(tokens)] = tokens
                mask[row, : len(tokens)] = 1
            hidden = np.empty((len(batch), width, self.dim), dtype=np.float32)
            binding = session.io_binding()
            binding.bind_cpu_input("input_ids", ids)
            binding.bind_cpu_input("attention_mask", mask)
            if "token_type_ids" in self._inputs:
                binding.bind_cpu_input("token_type_ids", np.zeros_like(ids))
            binding.bind_output("last_hidden_state", "cpu", 0, np.float32, list(hidden.shape), hidden.ctypes.data)
            session.run_with_iobinding(binding)
            return mean_pool_normalise(hidden, mask)

    return Variant(model, model_id="bench", threads=1, batch_tokens=batch_tokens)


def run(repeats: int, peak: float) -> dict[str, Any]:
    from querywise.config import default_cache_dir
    from querywise.embed import export_fp32_onnx

    load = [round(os.getloadavg()[0], 2)]
    path = export_fp32_onnx(default_cache_dir() / "embeddings" / "models")
    plain = path if isinstance(path, bytes) else path.read_bytes()
    gemm = gemm_graph(plain)
    variants = {
        "the embedder (1 thread, 512-token batches)": _embedder(plain),
        "memory pattern off": _embedder(plain, mem_pattern=False),
        "CPU arena off": _embedder(plain, arena=False),
        "denormals as zero": _embedder(plain, entries=(("session.set_denormal_as_zero", "1"),)),
        "IOBinding, output preallocated": _embedder(plain, iobinding=True),
        "384-token batches": _embedder(plain, batch_tokens=384),
        "bias Adds folded into Gemm": _embedder(gemm),
        "bias Adds folded into Gemm, 384-token batches": _embedder(gemm, batch_tokens=384),
    }
    if not peak:
        peak = float(gemm_peaks(repeats * 3)["model_mix"]["fp32"])
    first = next(iter(variants.values()))
    sets = {"scifact": _abstracts(datasets.scifact_records(), 10**6), "medline": _abstracts(_medline_records(), 10**6)}
    result: dict[str, Any] = {"repeats": repeats, "fp32_peak": peak, "sets": {}}
    for name, texts in sets.items():
        sample = build_like_sample(texts, [min(c, 256) for c in first.token_counts(texts)], 48)
        flops = model_flops([min(c, 256) for c in first.token_counts(sample)])
        reference = first.embed(sample)
        cosine = {v: float(np.min(np.sum(e.embed(sample) * reference, axis=1))) for v, e in variants.items()}
        cpu: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(repeats):
            for v, e in variants.items():
                started = time.process_time()
                e.embed(sample)
                cpu[v].append(time.process_time() - started)
        result["sets"][name] = {v: {"best": round(flops / min(cpu[v]) / 1e9, 1), "median": round(flops / float(np.median(cpu[v])) / 1e9, 1),
                                    "min_cosine": round(cosine[v], 8)} for v in variants}
        if name == "scifact":
            result["profile_gemm"] = operator_profile(sample, gemm)
        log(f"{name}: {result['sets'][name]}")
    load.append(round(os.getloadavg()[0], 2))
    result["load_avg_1min"] = load
    return result


def markdown(result: dict[str, Any]) -> str:
    m, peak = result["machine"], result["fp32_peak"]
    lines = ["## What might lift fp32 embedding per CPU-second (`bench/retrieval/embed_options.py`)", "",
             f"Command: `{m['command']}`; {m['date']}, {m['cores']} cores ({m['cpu']}), 1-minute load {result['load_avg_1min'][0]} before, "
             f"{result['load_avg_1min'][1]} after. Useful GFLOP per CPU-second, best (median) of {result['repeats']} alternated turns; "
             f"share of the fp32 model mix's peak, {peak} GFLOP per CPU-second. SciFact and Medline samples as embed_efficiency's.", ""]
    for name, rows in result["sets"].items():
        lines += [f"### {name}", "", "| variant | GFLOP per CPU-second, best (median) | share of peak, best (median) | smallest cosine to the embedder's |",
                  "|---|---|---|---|"]
        for v, r in rows.items():
            lines.append(f"| {v} | {r['best']} ({r['median']}) | {r['best'] / peak:.0%} ({r['median'] / peak:.0%}) | {r['min_cosine']:.8f} |")
        lines.append("")
    profile = ", ".join(f"{op} {share:.1%}" for op, share in result["profile_gemm"].items())
    lines += [f"Where the Gemm graph's time goes (ONNX Runtime's profiler, one thread, SciFact): {profile}.", ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peak", type=float, default=0.0, help="the fp32 model mix's GFLOP per CPU-second (0: measure it)")
    opts = ap.parse_args(sys.argv[1:] if argv is None else argv)
    result = run(opts.repeats, opts.peak)
    command = COMMAND + f" --repeats {opts.repeats}" + (f" --peak {opts.peak}" if opts.peak else "")
    publish("embed_options", result, command=command, render=markdown)
    log("wrote embed_options.json and .md")


if __name__ == "__main__":
    main()
